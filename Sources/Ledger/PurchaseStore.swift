import Foundation

/// Where a piece of evidence came from: the store's notification, or the app's own request.
public enum EvidenceSource: String, Sendable, Hashable, Codable {
    /// A store's notification (`POST /v1/apps/{app}/notifications/app-store`).
    case notification
    /// The app's request (`POST /v1/apps/{app}/purchases`).
    case app
    /// The store's server API, asked by this server (a customer's history, imported or reconciled):
    /// like a notification, the store reports and claims for no one.
    case storeAPI
}

/// A store's notification as it arrived, kept whole so that the ledger can be rebuilt from it
/// (`catalog purchases rebuild`).
public struct RawNotification: Sendable, Hashable {
    /// The store's order of arrival; 0 before it is stored.
    public var sequence: Int64
    /// The app it was posted to.
    public var app: String
    /// The store that sent it.
    public var marketplace: Marketplace
    /// The store's id of the notification, the same for every retry of it (the App Store's `notificationUUID`).
    public var notificationId: String
    /// The store's type of notification.
    public var notificationType: String?
    /// Its subtype.
    public var subtype: String?
    /// The environment it names.
    public var environment: String?
    /// When the store signed it.
    public var signedDate: Date?
    /// When this server received it.
    public var receivedAt: Date
    /// The request body, as posted.
    public var body: String

    /// A notification to store (or one read back, with its `sequence`).
    public init(
        sequence: Int64 = 0, app: String, marketplace: Marketplace = .appStore, notificationId: String, notificationType: String?,
        subtype: String?, environment: String?, signedDate: Date?, receivedAt: Date, body: String
    ) {
        self.sequence = sequence
        self.app = app
        self.marketplace = marketplace
        self.notificationId = notificationId
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

/// Verified evidence to record in one go: a store's notification with the payloads it carries, or
/// what an app sent. Everything in it has been verified and bound to `app` by its store's adapter
/// before it gets here, and is in the ledger's terms.
public struct PurchaseSubmission: Sendable {
    /// The app.
    public var app: String
    /// When it was received.
    public var receivedAt: Date
    /// Where it came from.
    public var source: EvidenceSource
    /// The notification, kept raw; nil for an app's request.
    public var notification: RawNotification?
    /// What the store says happened, for the developer's webhook (``WebhookEventType``): a
    /// notification's type as its store's adapter reads it (nil when it changes no entitlement), or
    /// the state a store's answer gives a subscription when that state is the change (Google Play's
    /// expiry, grace period, hold). Nil otherwise: each transaction then says (``WebhookEvent/derive(from:outcome:)``).
    public var storeEvent: WebhookEventType?
    /// A replay of a stored notification (`catalog purchases rebuild`): its raw row is not written again.
    public var isReplay: Bool
    /// The verified transactions, each with the JSON its store keeps.
    public var transactions: [Kept<LedgerTransaction>]
    /// The verified subscription states, each with the JSON its store keeps.
    public var states: [Kept<SubscriptionState>]
    /// The app account the app named beside its evidence (an app's request only): it names the
    /// account presenting a purchase whose store signed none (``PurchaseRecorder``).
    public var appAccount: String?
    /// The app's policy for a purchase presented by another customer.
    public var transferPolicy: PurchaseTransferPolicy
    /// Whether the app has a webhook (`webhookURL`): the events the submission causes are written
    /// to the outbox only then (docs/purchases.md, "Webhooks").
    public var sendsWebhooks: Bool

    /// Evidence of `app` to record.
    public init(
        app: String, receivedAt: Date, source: EvidenceSource, notification: RawNotification? = nil,
        storeEvent: WebhookEventType? = nil, isReplay: Bool = false, transactions: [Kept<LedgerTransaction>] = [],
        states: [Kept<SubscriptionState>] = [], appAccount: String? = nil, transferPolicy: PurchaseTransferPolicy = .keep,
        sendsWebhooks: Bool = true
    ) {
        self.app = app
        self.receivedAt = receivedAt
        self.source = source
        self.notification = notification
        self.storeEvent = storeEvent
        self.isReplay = isReplay
        self.transactions = transactions
        self.states = states
        self.appAccount = appAccount
        self.transferPolicy = transferPolicy
        self.sendsWebhooks = sendsWebhooks
    }
}

/// A purchase's identity: its store and its key there.
public struct PurchaseReference: Sendable, Hashable, Codable, Comparable {
    /// The store.
    public var marketplace: Marketplace
    /// The purchase's key in it (the App Store's original transaction id).
    public var key: String

    /// A reference to purchase `key` of `marketplace`.
    public init(_ marketplace: Marketplace, _ key: String) {
        self.marketplace = marketplace
        self.key = key
    }

    /// By store, then key.
    public static func < (a: Self, b: Self) -> Bool { (a.marketplace.rawValue, a.key) < (b.marketplace.rawValue, b.key) }
}

/// A purchase presented by a customer other than the one it is bound to, and moved (`transfer`). The
/// store keeps every one (`purchase_transfers`); stores written before refused claims were kept apart
/// (``RefusedClaim``) also hold refusals here, read back as such.
public struct TransferEvent: Sendable, Hashable, Codable {
    /// Moved to the claimant (`transfer`), or refused (`keep`, in rows written before refused claims were kept apart).
    public enum Outcome: String, Sendable, Hashable, Codable {
        /// The purchase moved.
        case transferred
        /// The purchase stayed; the claimant was refused.
        case refused
    }

    /// The purchase.
    public var purchase: PurchaseReference
    /// The customer it was bound to.
    public var fromCustomer: Int64
    /// The customer who presented it.
    public var toCustomer: Int64
    /// What happened.
    public var outcome: Outcome
    /// When.
    public var at: Date

    /// An event.
    public init(purchase: PurchaseReference, fromCustomer: Int64, toCustomer: Int64, outcome: Outcome, at: Date) {
        self.purchase = purchase
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
    /// The customer's keys, by store, kind and value.
    public var keys: [CustomerKey]
    /// The purchases bound to the customer.
    public var purchases: [PurchaseReference]
    /// Every stored version of every transaction of those purchases.
    public var transactions: [LedgerTransaction]
    /// Every stored subscription state of those purchases.
    public var states: [SubscriptionState]
    /// Transfers to or from the customer, oldest first.
    public var transfers: [TransferEvent]
    /// Claims refused on the customer's purchases (`keep`), by purchase and claimant.
    public var refusedClaims: [RefusedClaim]

    /// A record.
    public init(
        id: Int64, app: String, keys: [CustomerKey], purchases: [PurchaseReference], transactions: [LedgerTransaction],
        states: [SubscriptionState], transfers: [TransferEvent], refusedClaims: [RefusedClaim] = []
    ) {
        self.id = id
        self.app = app
        self.keys = keys
        self.purchases = purchases
        self.transactions = transactions
        self.states = states
        self.transfers = transfers
        self.refusedClaims = refusedClaims
    }

    /// The customer's ledger in `environment`.
    public func ledger(environment: LedgerEnvironment, catalog: LedgerCatalog) -> Ledger {
        Ledger(transactions: transactions, states: states, environment: environment, catalog: catalog)
    }

    /// The customer's ledger in each environment of their evidence, production first: the ones
    /// whose environment does not unlock (``Ledger/unlocks``) show what was bought and grant nothing.
    public func ledgers(catalog: LedgerCatalog) -> [Ledger] {
        environments.map { ledger(environment: $0, catalog: catalog) }
    }

    /// The environments the customer's evidence is of, production first.
    public var environments: [LedgerEnvironment] {
        let named = Set(transactions.compactMap(\.environment))
        return named.sorted { ($0 == .production ? 0 : 1, $0.rawValue) < ($1 == .production ? 0 : 1, $1.rawValue) }
    }
}

/// Customers, their purchases and the stores' notifications, in SQLite or PostgreSQL
/// (docs/purchases.md, "Storage"). The ledger is not stored as state: every signed payload is, and
/// ``Ledger`` derives purchases and periods from them, so that the order they arrived in never matters.
public protocol PurchaseStore: Sendable {
    /// Records each submission in one durable transaction; outcomes in the order of `submissions`.
    /// A notification whose id the app already has changes nothing (`duplicate`).
    func record(_ submissions: [PurchaseSubmission]) async throws -> [PurchaseOutcome]
    /// ``record(_:)`` for a caller that does not wait (the group committer): `completion` gets what
    /// it returns. A store that commits on a thread of its own calls back from there, so that its
    /// caller can go on to the next batch without a hop; the default runs ``record(_:)`` in a task.
    /// A requirement, not only an extension: callers hold `any PurchaseStore`, and only a
    /// requirement reaches the store's own.
    func record(_ submissions: [PurchaseSubmission], completion: @escaping @Sendable (Result<[PurchaseOutcome], any Error>) -> Void)
    /// The customer of `app` that `id` names: an app account, a store's account id, a purchase key
    /// or a transaction id; nil when none does.
    func customer(app: String, id: String) async throws -> CustomerRecord?
    /// Stored notifications in order of arrival, after `sequence`, at most `limit`; only `app`'s when given.
    func notifications(app: String?, after sequence: Int64, limit: Int) async throws -> [RawNotification]
    /// Deletes the payloads that notifications brought (not the raw notifications, the customers,
    /// their bindings or what apps sent), before a rebuild replays the notifications; returns how many.
    func clearNotificationEvidence(app: String?) async throws -> Int
}

extension PurchaseStore {
    /// Runs ``record(_:)`` in a high-priority task and calls `completion` with what it returns or throws.
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
    /// The purchase.
    public var purchase: PurchaseReference
    /// Who presented it; nil for the row that counts the claimants past the bound.
    public var claimant: CustomerKey?
    /// How many times.
    public var count: Int
    /// The first time.
    public var firstAt: Date
    /// The last time.
    public var lastAt: Date

    /// A row of refused claims.
    public init(purchase: PurchaseReference, claimant: CustomerKey?, count: Int, firstAt: Date, lastAt: Date) {
        self.purchase = purchase
        self.claimant = claimant
        self.count = count
        self.firstAt = firstAt
        self.lastAt = lastAt
    }
}
