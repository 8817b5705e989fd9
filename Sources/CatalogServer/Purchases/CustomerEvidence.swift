import AppStore
import Foundation
import GooglePlay
import HTTPTypes
import Hummingbird
import Ledger

/// What an app presents as evidence of who it is: an App Store signed transaction (and optionally
/// its AppTransaction), a base64 legacy receipt with the device identifier, or a Google Play
/// purchase's JSON and signature; plus the customer's `appAccountToken` when it has one (the same
/// UUID on both stores). `POST …/purchases` records it; `POST …/customers/lookup`, and any endpoint
/// that answers by what a customer owns, read by it. Members it does not name are ignored, so an
/// endpoint can add its own beside them.
struct PresentedEvidence: Decodable, Sendable {
    var signedTransaction: String?
    var signedAppTransaction: String?
    var receipt: String?
    var deviceId: String?
    /// Google Play Billing's `Purchase.getOriginalJson()`.
    var originalJson: String?
    /// Google Play Billing's `Purchase.getSignature()`.
    var signature: String?
    var appAccountToken: String?

    /// Whether it is Google Play's evidence: the App Store's is verified otherwise.
    var isGooglePlay: Bool { originalJson != nil || signature != nil }
}

/// A Google Play purchase verified offline, with the app's Play settings that verified it.
struct VerifiedPlayPurchase: Sendable {
    /// What Google signed: a moment's state, not the purchase's now.
    var purchase: PlayPurchase
    /// Its purchase token: the purchase's key in the ledger.
    var token: String
    /// Its Play product id, one the catalog sells.
    var productId: String
    /// The app's Play settings at the revision served.
    var app: PlayApp
}

/// Evidence verified against one app's settings: its transactions, and the customer who presents it.
struct VerifiedEvidence: Sendable {
    /// The App Store's: a receipt's entries of products the catalog knows, or the one signed
    /// transaction. Empty for Google Play's, whose state Google's API gives.
    var transactions: [JWSTransactionDecodedPayload]
    /// The `appAccountToken` the app sent beside the evidence.
    var appAccountToken: String?
    /// Who presents it: ``CustomerKey/of(_:appAccount:)`` of the first transaction, from what
    /// the purchase itself signs (or the token sent beside it), never from an AppTransaction.
    var claimant: CustomerKey
    /// What became of the AppTransaction sent beside the transaction, if one was.
    var appTransaction: AccountEvidenceUse?
    /// Google Play's purchase, when the evidence is one.
    var googlePlay: VerifiedPlayPurchase?

    /// The instant an answer to the presenting app is given at: `now`, or the presented purchases'
    /// own latest date when it is later. The server's clock counts whole seconds and Apple's may run
    /// ahead of it, and a purchase answered as not held yet, the moment it was made, is one the app
    /// would wrongly lock.
    func answeredAt(_ now: Date) -> Date {
        max(now, transactions.compactMap(\.purchaseDate).max() ?? now)
    }

    /// The purchase whose binding decides whose the evidence is: Google Play's purchase token, or
    /// the App Store's first transaction's original transaction.
    var purchase: PurchaseReference? {
        if let play = googlePlay { return PurchaseReference(.googlePlay, play.token) }
        let first = transactions.first
        return (first?.originalTransactionId ?? first?.transactionId).map { PurchaseReference(.appStore, $0) }
    }
}

/// Why presented evidence was not taken: a refusal of the evidence itself (counted, with its stable
/// code), or a request that is not evidence at all (400).
enum EvidenceFailure: Error {
    case refusal(PurchaseRefusal)
    case badRequest(String)
}

extension AppPurchases {
    /// Verifies `evidence` as the app's own (bundle id, Apple id, environments, Xcode certificate),
    /// checks that the catalog knows its product, and names who presents it. The one path from
    /// presented evidence to verified transactions, for recording and for reading alike.
    func verify(_ evidence: PresentedEvidence, app: String) async throws(EvidenceFailure) -> VerifiedEvidence {
        if let token = evidence.appAccountToken, UUID(uuidString: token) == nil {
            throw .badRequest("appAccountToken must be a UUID")
        }
        var transactions: [JWSTransactionDecodedPayload] = []
        var appTransactionUse: AccountEvidenceUse?
        do {
            switch (evidence.signedTransaction, evidence.receipt) {
            case (let jws?, nil):
                let transaction = try await verifier.verifyAndDecodeTransaction(jws)
                if let product = transaction.productId, catalog.products[product] == nil {
                    throw PurchaseRefusal(.unknownProduct, "the catalog of '\(app)' has no product '\(product.prefix(64))'")
                }
                if let appJWS = evidence.signedAppTransaction {
                    let appTransaction = try await verifier.verifyAndDecodeAppTransaction(appJWS)
                    guard appTransaction.receiptType == transaction.environment else {
                        throw PurchaseRefusal(.wrongApp, "the AppTransaction's environment is not the transaction's")
                    }
                    appTransactionUse = Self.use(of: appTransaction, beside: transaction)
                }
                transactions = [transaction]
            case (nil, let base64?):
                guard let bytes = Data(base64Encoded: base64, options: .ignoreUnknownCharacters) else {
                    throw PurchaseRefusal(.malformed, "receipt is not base64")
                }
                var device: [UInt8]?
                if let deviceId = evidence.deviceId {
                    guard let parsed = PurchaseEndpoints.bytes(hex: deviceId) else {
                        throw EvidenceFailure.badRequest("deviceId must be hex (a UUID's dashes and a MAC's colons allowed)")
                    }
                    device = parsed
                } else if requiresDeviceId {
                    // A receipt is no secret (support tickets, logs, backups): without the device it
                    // was issued to, a copy would prove someone else's purchases.
                    throw PurchaseRefusal(
                        .notAuthenticated,
                        "this app requires the device identifier with a receipt (deviceId: identifierForVendor's 16 bytes, or the Mac's MAC address, as hex); a receipt proves a purchase only with the device it was issued to"
                    )
                }
                let receipt = try await verifier.verifyAndDecodeReceipt([UInt8](bytes), deviceIdentifier: device)
                transactions = receipt.transactions(types: productTypes)
                guard !transactions.isEmpty else {
                    throw PurchaseRefusal(.unknownProduct, "the receipt names no purchase of a product the catalog of '\(app)' knows")
                }
            default:
                throw EvidenceFailure.badRequest("send exactly one of signedTransaction, receipt and originalJson")
            }
        } catch let failure as EvidenceFailure {
            throw failure
        } catch let refusal as PurchaseRefusal {
            throw .refusal(refusal)
        } catch {
            throw .refusal(PurchaseRefusal(.malformed, "\(error)"))
        }
        guard let first = transactions.first, let claimant = CustomerKey.of(LedgerTransaction(first), appAccount: evidence.appAccountToken)
        else {
            throw .refusal(PurchaseRefusal(.malformed, "the transaction names no transaction id"))
        }
        return VerifiedEvidence(
            transactions: transactions, appAccountToken: evidence.appAccountToken, claimant: claimant, appTransaction: appTransactionUse)
    }

    /// An AppTransaction counts only when the transaction signs its `appTransactionId` (iOS 18.4 and
    /// later): then both name the same Apple account. An AppTransaction names an Apple account and
    /// says nothing of whose purchase a transaction is: otherwise someone else's would join a cheap
    /// purchase of one's own to that account's customer.
    static func use(of appTransaction: AppTransaction, beside transaction: JWSTransactionDecodedPayload) -> AccountEvidenceUse {
        guard let signed = transaction.appTransactionId, !signed.isEmpty else {
            return AccountEvidenceUse(
                used: false,
                reason:
                    "the transaction signs no appTransactionId (it was signed before iOS 18.4), so the AppTransaction cannot be tied to it")
        }
        guard signed == appTransaction.appTransactionId else {
            return AccountEvidenceUse(used: false, reason: "the AppTransaction's appTransactionId is not the one the transaction signs")
        }
        return AccountEvidenceUse(used: true, reason: nil)
    }
}

/// The customer that presented evidence proves the caller to be, with what reading them needs.
struct EvidencedCustomer: Sendable {
    /// The customer, as the store holds them now.
    let record: CustomerRecord
    /// The app's purchase settings at its published revision (the ledger catalog above all).
    let settings: AppPurchases
    /// The evidence, verified.
    let evidence: VerifiedEvidence
}

/// A request an endpoint refuses, with the answer to give.
struct EndpointRefusal: Error {
    var response: Response
}

extension PurchaseEndpoints {
    /// What an app that asks by evidence sends, at most: a receipt in base64 is the largest part.
    static let maximumEvidenceBytes = maximumPurchaseBytes

    /// The evidence in `request`'s body, after the checks every endpoint that takes evidence makes in
    /// this order: POST, the network's rate (`limiter`; 429 with `Retry-After`, before anything is
    /// read), a published app and its settings, JSON, at most 512 KiB. Also the body's bytes, for an
    /// endpoint that reads members of its own beside the evidence, and the revision served.
    func presentedEvidence(
        _ request: Request, app: String, revision: Int?, networkKey: String?, limiter: RateLimiter?
    ) async -> Result<(evidence: PresentedEvidence, body: String, settings: AppPurchases, revision: Int), EndpointRefusal> {
        guard request.method == .post else {
            return .failure(EndpointRefusal(response: CatalogResponder.methodNotAllowed(request, allow: "POST")))
        }
        if let wait = limiter?.take(networkKey ?? "unknown") {
            var response = JSONError.response(.tooManyRequests, "too many requests from this network; retry after \(wait) s")
            response.headers[.retryAfter] = String(wait)
            return .failure(EndpointRefusal(response: response))
        }
        let settings: AppPurchases
        let served: Int
        switch await prepare(request, app: app, revision: revision, limit: Self.maximumEvidenceBytes) {
        case .failure(let refusal): return .failure(refusal)
        case .success(let (found, number)): (settings, served) = (found, number)
        }
        switch await Self.body(request, limit: Self.maximumEvidenceBytes) {
        case .failure(let refusal): return .failure(refusal)
        case .success(let text):
            guard let decoded = try? JSONDecoder().decode(PresentedEvidence.self, from: Data(text.utf8)) else {
                return .failure(
                    EndpointRefusal(
                        response: JSONError.response(
                            .badRequest,
                            "the body must be a JSON object with signedTransaction or receipt, or Google Play's originalJson and signature (strings), and optionally signedAppTransaction, deviceId and appAccountToken"
                        )))
            }
            return .success((decoded, text, settings, served))
        }
    }

    /// `evidence` verified as `app`'s at `revision`: Google Play's by the app's licence key
    /// (``verifyPlay(_:app:revision:endpoint:)``), the App Store's by ``AppPurchases/verify(_:app:)``.
    /// The one path from presented evidence to verified evidence; refusals are counted under `endpoint`.
    func verifyEvidence(_ evidence: PresentedEvidence, app: String, settings: AppPurchases, revision: Int, endpoint: String) async
        -> Result<VerifiedEvidence, EndpointRefusal>
    {
        if evidence.isGooglePlay { return await verifyPlay(evidence, app: app, revision: revision, endpoint: endpoint) }
        do {
            return .success(try await settings.verify(evidence, app: app))
        } catch {
            switch error {
            case .refusal(let refusal): return .failure(EndpointRefusal(response: refuse(refusal, endpoint: endpoint)))
            case .badRequest(let message): return .failure(EndpointRefusal(response: JSONError.response(.badRequest, message)))
            }
        }
    }

    /// The customer `evidence` proves the caller to be: the evidence verified as `app`'s (the same
    /// path as `POST …/purchases`), its purchase bound to a customer, and the claimant it names (its
    /// signed or sent `appAccountToken`, its `appTransactionId`, else the purchase itself) one of that
    /// customer's keys. Reads only: it binds and transfers nothing, and asks no store. Refusals are
    /// counted under `endpoint`.
    ///
    /// - 404 when no customer holds the purchase yet (the app sends it to `POST …/purchases` first);
    /// - 409 `bound-to-another-customer` when the purchase is bound to someone other than the claimant
    ///   (a leaked transaction presented with another account's token, or a purchase transferred away);
    /// - the evidence's own refusals as for purchases (400, 403, 422).
    func customer(presenting evidence: PresentedEvidence, app: String, settings: AppPurchases, revision: Int, endpoint: String) async
        -> Result<EvidencedCustomer, EndpointRefusal>
    {
        let verified: VerifiedEvidence
        switch await verifyEvidence(evidence, app: app, settings: settings, revision: revision, endpoint: endpoint) {
        case .failure(let refusal): return .failure(refusal)
        case .success(let found): verified = found
        }
        return await holder(of: verified, app: app, endpoint: endpoint).map {
            EvidencedCustomer(record: $0, settings: settings, evidence: verified)
        }
    }

    /// The customer that holds the verified evidence's purchase, when the claimant it names is one of
    /// that customer's keys: the one rule by which an app reads a customer, after recording its
    /// purchase (`POST …/purchases`) or without (`POST …/customers/lookup`, `POST …/content`). The
    /// errors are those of ``customer(presenting:app:settings:revision:endpoint:)``.
    func holder(of verified: VerifiedEvidence, app: String, endpoint: String) async -> Result<CustomerRecord, EndpointRefusal> {
        guard let purchase = verified.purchase else {
            return .failure(
                EndpointRefusal(
                    response: refuse(PurchaseRefusal(.malformed, "the transaction names no transaction id"), endpoint: endpoint)))
        }
        let record: CustomerRecord?
        do {
            record = try await store.customer(app: app, id: purchase.key)
        } catch {
            return .failure(EndpointRefusal(response: JSONError.response(.serviceUnavailable, "the purchase store does not answer")))
        }
        // The key lookup tries account tokens and store ids before bindings; only the purchase's own
        // binding says whose it is.
        guard let record, record.purchases.contains(purchase) else {
            return .failure(
                EndpointRefusal(
                    response: JSONError.response(
                        .notFound, "no customer of '\(app)' holds this purchase yet; send it to POST /v1/apps/\(app)/purchases first")))
        }
        // A customer no app account names yet waits for its first one to claim it by presenting a purchase.
        if !record.keys.contains(verified.claimant), !record.keys.contains(where: { $0.kind == .appAccount }) {
            return .failure(
                EndpointRefusal(
                    response: JSONError.response(
                        .notFound, "no customer of '\(app)' has claimed this purchase yet; send it to POST /v1/apps/\(app)/purchases first")
                ))
        }
        guard record.keys.contains(verified.claimant) else {
            return .failure(
                EndpointRefusal(
                    response: refuse(
                        PurchaseRefusal(
                            .boundToAnotherCustomer,
                            "this purchase belongs to another customer than the \(verified.claimant.kind.rawValue) it was presented with"),
                        endpoint: endpoint)))
        }
        return .success(record)
    }

    /// `POST /v1/apps/{app}/customers/lookup[?at=RFC3339]`: the app reads its own customer by
    /// presenting evidence of them, and gets what `GET …/customers/{id}` answers a backend.
    func lookup(_ request: Request, app: String, revision: Int?, networkKey: String?, now: Date) async -> Response {
        let at: Date
        switch Self.instant(of: request, default: now) {
        case .failure(let refusal): return refusal.response
        case .success(let instant): at = instant
        }
        let presented: PresentedEvidence
        let settings: AppPurchases
        let served: Int
        switch await presentedEvidence(request, app: app, revision: revision, networkKey: networkKey, limiter: lookupsByAddress) {
        case .failure(let refusal): return refusal.response
        case .success(let read): (presented, settings, served) = (read.evidence, read.settings, read.revision)
        }
        switch await customer(presenting: presented, app: app, settings: settings, revision: served, endpoint: "lookup") {
        case .failure(let refusal): return refusal.response
        case .success(let found):
            return Self.ok(CustomerAnswer(found.record, at: at, catalog: settings.catalog, full: true).json)
        }
    }
}
