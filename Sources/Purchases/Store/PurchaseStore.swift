import Foundation

/// Where a piece of evidence came from: the App Store's notification, or the app's own request.
public enum EvidenceSource: String, Sendable, Hashable, Codable {
    /// `POST /v1/apps/{app}/notifications/app-store`.
    case notification
    /// `POST /v1/apps/{app}/purchases`.
    case app
}

/// A notification as it arrived, kept whole so that the ledger can be rebuilt from it
/// (`catalog purchases rebuild`).
public struct RawNotification: Sendable, Hashable {
    /// The store's order of arrival; 0 before it is stored.
    public var sequence: Int64
    /// The app it was posted to.
    public var app: String
    /// Apple's id of the notification: the same for every retry of it.
    public var notificationUUID: String
    /// Apple's `notificationType`.
    public var notificationType: String?
    /// Apple's `subtype`.
    public var subtype: String?
    /// The environment it names.
    public var environment: String?
    /// When the App Store signed it.
    public var signedDate: Date?
    /// When this server received it.
    public var receivedAt: Date
    /// The request body, as posted.
    public var body: String

    /// A notification to store (or one read back, with its `sequence`).
    public init(
        sequence: Int64 = 0, app: String, notificationUUID: String, notificationType: String?, subtype: String?, environment: String?,
        signedDate: Date?, receivedAt: Date, body: String
    ) {
        self.sequence = sequence
        self.app = app
        self.notificationUUID = notificationUUID
        self.notificationType = notificationType
        self.subtype = subtype
        self.environment = environment
        self.signedDate = signedDate
        self.receivedAt = receivedAt
        self.body = body
    }
}

/// What happens when a purchase already bound to one customer is presented by another
/// (the catalog's `transferPolicy`).
public enum PurchaseTransferPolicy: String, Sendable, Hashable, Codable {
    /// The purchase moves to the customer who presented it last.
    case transfer
    /// The purchase stays with its first customer; the other is refused.
    case keep
}

/// Verified evidence to record in one go: a notification with its nested payloads, or what an app
/// sent. Everything in it has been verified and bound to `app` before it gets here.
public struct PurchaseSubmission: Sendable {
    /// The app.
    public var app: String
    /// When it was received.
    public var receivedAt: Date
    /// Where it came from.
    public var source: EvidenceSource
    /// The notification, kept raw; nil for an app's request.
    public var notification: RawNotification?
    /// A replay of a stored notification (`catalog purchases rebuild`): its raw row is not written again.
    public var isReplay: Bool
    /// The verified transactions.
    public var transactions: [JWSTransactionDecodedPayload]
    /// The verified renewal infos.
    public var renewalInfos: [JWSRenewalInfoDecodedPayload]
    /// The `appAccountToken` the app sent beside its evidence (an app's request only): it names the
    /// app account presenting a purchase whose transaction signs none (``PurchaseRecorder``).
    public var appAccountToken: String?
    /// The app's policy for a purchase presented by another customer.
    public var transferPolicy: PurchaseTransferPolicy

    /// Evidence of `app` to record.
    public init(
        app: String, receivedAt: Date, source: EvidenceSource, notification: RawNotification? = nil, isReplay: Bool = false,
        transactions: [JWSTransactionDecodedPayload] = [], renewalInfos: [JWSRenewalInfoDecodedPayload] = [],
        appAccountToken: String? = nil, transferPolicy: PurchaseTransferPolicy = .keep
    ) {
        self.app = app
        self.receivedAt = receivedAt
        self.source = source
        self.notification = notification
        self.isReplay = isReplay
        self.transactions = transactions
        self.renewalInfos = renewalInfos
        self.appAccountToken = appAccountToken
        self.transferPolicy = transferPolicy
    }
}

/// A purchase presented by a customer other than the one it is bound to, and moved (`transfer`). The
/// store keeps every one (`purchase_transfers`); stores written before refused claims were kept apart
/// (``RefusedClaim``) also hold refusals here, read back as such.
public struct TransferEvent: Sendable, Hashable, Codable {
    /// Moved to the claimant (`transfer`), or refused (`keep`).
    public enum Outcome: String, Sendable, Hashable, Codable {
        /// The purchase moved.
        case transferred
        /// The purchase stayed; the claimant was refused.
        case refused
    }

    /// The purchase (its original transaction).
    public var originalTransactionId: String
    /// The customer it was bound to.
    public var fromCustomer: Int64
    /// The customer who presented it.
    public var toCustomer: Int64
    /// What happened.
    public var outcome: Outcome
    /// When.
    public var at: Date

    /// An event.
    public init(originalTransactionId: String, fromCustomer: Int64, toCustomer: Int64, outcome: Outcome, at: Date) {
        self.originalTransactionId = originalTransactionId
        self.fromCustomer = fromCustomer
        self.toCustomer = toCustomer
        self.outcome = outcome
        self.at = at
    }
}

/// What recording one submission did.
public struct PurchaseOutcome: Sendable, Hashable {
    /// The notification was already stored: nothing changed.
    public var duplicate: Bool
    /// The customer the evidence's purchases are bound to now (the last one's, for several).
    public var customerId: Int64?
    /// Set when the claimant was refused (`bound-to-another-customer`); the evidence is still kept,
    /// bound to its first customer.
    public var refusal: PurchaseRefusal?
    /// The transfers it made.
    public var transfers: [TransferEvent]
    /// How many claims it refused (`keep`): recorded against the purchase, and no customer made for them.
    public var refusedClaims: Int

    /// An outcome.
    public init(
        duplicate: Bool = false, customerId: Int64? = nil, refusal: PurchaseRefusal? = nil, transfers: [TransferEvent] = [],
        refusedClaims: Int = 0
    ) {
        self.duplicate = duplicate
        self.customerId = customerId
        self.refusal = refusal
        self.transfers = transfers
        self.refusedClaims = refusedClaims
    }
}

/// One customer as the store knows them: keys, and every signed payload of every purchase bound to
/// them, from which ``Ledger`` derives purchases and periods.
public struct CustomerRecord: Sendable, Hashable {
    /// The store's id of the customer.
    public var id: Int64
    /// The app.
    public var app: String
    /// The customer's keys, by kind then value.
    public var keys: [CustomerKey]
    /// The original transactions bound to the customer.
    public var originalTransactionIds: [String]
    /// Every stored version of every transaction of those purchases.
    public var transactions: [JWSTransactionDecodedPayload]
    /// Every stored renewal info of those purchases.
    public var renewalInfos: [JWSRenewalInfoDecodedPayload]
    /// Transfers to or from the customer, oldest first.
    public var transfers: [TransferEvent]
    /// Claims refused on the customer's purchases (`keep`), by purchase and claimant.
    public var refusedClaims: [RefusedClaim]

    /// A record.
    public init(
        id: Int64, app: String, keys: [CustomerKey], originalTransactionIds: [String], transactions: [JWSTransactionDecodedPayload],
        renewalInfos: [JWSRenewalInfoDecodedPayload], transfers: [TransferEvent], refusedClaims: [RefusedClaim] = []
    ) {
        self.id = id
        self.app = app
        self.keys = keys
        self.originalTransactionIds = originalTransactionIds
        self.transactions = transactions
        self.renewalInfos = renewalInfos
        self.transfers = transfers
        self.refusedClaims = refusedClaims
    }

    /// The customer's ledger in `environment`.
    public func ledger(environment: AppStoreEnvironment, catalog: LedgerCatalog) -> Ledger {
        Ledger(transactions: transactions, renewalInfos: renewalInfos, environment: environment, catalog: catalog)
    }

    /// The customer's ledger in each environment of their evidence, production first: the ones
    /// whose environment does not unlock (``Ledger/unlocks``) show what was bought and grant nothing.
    public func ledgers(catalog: LedgerCatalog) -> [Ledger] {
        environments.map { ledger(environment: $0, catalog: catalog) }
    }

    /// The environments the customer's evidence is of, production first.
    public var environments: [AppStoreEnvironment] {
        let named = Set(transactions.compactMap(\.environment))
        return named.sorted { ($0 == .production ? 0 : 1, $0.rawValue) < ($1 == .production ? 0 : 1, $1.rawValue) }
    }
}

/// Customers, their purchases and the App Store's notifications, in SQLite or PostgreSQL
/// (docs/purchases.md, "Storage"). The ledger is not stored as state: every signed payload is, and
/// ``Ledger`` derives purchases and periods from them, so that the order they arrived in never matters.
public protocol PurchaseStore: Sendable {
    /// Records each submission in one durable transaction; outcomes in the order of `submissions`.
    /// A notification whose `notificationUUID` the app already has changes nothing (`duplicate`).
    func record(_ submissions: [PurchaseSubmission]) async throws -> [PurchaseOutcome]
    /// The customer of `app` that `id` names: an `appAccountToken`, an `appTransactionId`, an
    /// original transaction id or a transaction id; nil when none does.
    func customer(app: String, id: String) async throws -> CustomerRecord?
    /// Stored notifications in order of arrival, after `sequence`, at most `limit`; only `app`'s when given.
    func notifications(app: String?, after sequence: Int64, limit: Int) async throws -> [RawNotification]
    /// Deletes the payloads that notifications brought (not the raw notifications, the customers,
    /// their bindings or what apps sent), before a rebuild replays the notifications; returns how many.
    func clearNotificationEvidence(app: String?) async throws -> Int
}

extension PurchaseStore {
    /// ``record(_:)`` for a caller that does not wait: `completion` gets what it returns.
    public func record(_ submissions: [PurchaseSubmission], completion: @escaping @Sendable (Result<[PurchaseOutcome], any Error>) -> Void)
    {
        Task(priority: .high) {
            do {
                completion(.success(try await record(submissions)))
            } catch {
                completion(.failure(error))
            }
        }
    }
}

/// Claims refused on one purchase under `keep`: another app account presented a purchase its
/// customer holds. Kept against the purchase (no customer is made for the claimant), one row per
/// claimant key up to ``PurchaseRecorder/refusedClaimantsKept``, further claimants together in one
/// row whose claimant is nil.
public struct RefusedClaim: Sendable, Hashable {
    /// The purchase (its original transaction).
    public var originalTransactionId: String
    /// Who presented it; nil for the row that counts the claimants past the bound.
    public var claimant: CustomerKey?
    /// How many times.
    public var count: Int
    /// The first time.
    public var firstAt: Date
    /// The last time.
    public var lastAt: Date

    /// A row of refused claims.
    public init(originalTransactionId: String, claimant: CustomerKey?, count: Int, firstAt: Date, lastAt: Date) {
        self.originalTransactionId = originalTransactionId
        self.claimant = claimant
        self.count = count
        self.firstAt = firstAt
        self.lastAt = lastAt
    }
}

/// Signed payloads as the stores keep them: JSON with sorted keys and Apple's millisecond dates, and
/// its SHA-256 to tell versions apart.
public enum StoredPayload {
    /// The JSON of `payload`.
    public static func encode<Payload: Encodable>(_ payload: Payload) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .millisecondsSince1970
        return (try? encoder.encode(payload)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// `json` decoded; nil when it does not decode (never for what ``encode(_:)`` wrote).
    public static func decode<Payload: Decodable>(_ type: Payload.Type, _ json: String) -> Payload? {
        try? AppStoreJSON.decoder().decode(type, from: Data(json.utf8))
    }
}

extension PurchaseSubmission {
    /// A verified notification as the endpoint records it, and as `catalog purchases rebuild`
    /// replays it: its raw body, its nested transaction and renewal info. Nil when it carries no
    /// `notificationUUID` (at most 128 bytes), which every notification must have.
    public static func notification(
        _ verified: SignedDataVerifier.VerifiedNotification, app: String, body: String, receivedAt: Date,
        transferPolicy: PurchaseTransferPolicy
    ) -> PurchaseSubmission? {
        guard let uuid = verified.payload.notificationUUID, !uuid.isEmpty, uuid.utf8.count <= 128 else { return nil }
        let raw = RawNotification(
            app: app, notificationUUID: uuid, notificationType: verified.payload.notificationType?.rawValue,
            subtype: verified.payload.subtype?.rawValue, environment: verified.payload.app.environment?.rawValue,
            signedDate: verified.payload.signedDate, receivedAt: receivedAt, body: body)
        return PurchaseSubmission(
            app: app, receivedAt: receivedAt, source: .notification, notification: raw,
            transactions: verified.transaction.map { [$0] } ?? [],
            renewalInfos: verified.renewalInfo.map { [$0] } ?? [], transferPolicy: transferPolicy)
    }
}
