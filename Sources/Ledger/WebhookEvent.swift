import Crypto
import Foundation

/// What changed in a customer's entitlements, as a webhook names it (docs/purchases.md, "Webhooks").
public enum WebhookEventType: String, Sendable, Hashable, Codable, CaseIterable {
    /// A purchase or subscription began (or began again: a resubscription, an upgrade, a reversed refund).
    case started
    /// A subscription renewed (or its store extended it).
    case renewed
    /// A subscription ended.
    case expired
    /// A renewal failed and the billing grace period keeps access on.
    case inGracePeriod
    /// A renewal failed and the store retries billing; access is off.
    case billingRetry
    /// The store refunded or revoked a purchase.
    case refundedOrRevoked
    /// A purchase moved to another customer (the app's `transfer` policy).
    case transferred
}

/// One event in the store's outbox: written in the same transaction as the evidence that caused
/// it, and sent until the receiver accepts it or the retries give up.
public struct WebhookEvent: Sendable, Hashable {
    /// The outbox's order; 0 before it is stored.
    public var sequence: Int64
    /// The event's id, for the receiver's deduplication: derived from what caused it, so that the
    /// same change told twice (the app's request and the store's notification) is one event.
    public var id: String
    /// The app.
    public var app: String
    /// What changed.
    public var type: WebhookEventType
    /// The customer the purchase is bound to when the event was written; nil when none.
    public var customerId: Int64?
    /// The store of the purchase.
    public var marketplace: Marketplace
    /// The purchase's key in its store (the App Store's original transaction id).
    public var purchaseKey: String
    /// The transaction the event is about.
    public var transactionId: String?
    /// Its product.
    public var productId: String?
    /// Its environment (`Production`, `Sandbox`).
    public var environment: String?
    /// When the store signed the evidence (nil for a transfer, which the server decides).
    public var occurredAt: Date?
    /// When the event was written.
    public var createdAt: Date
    /// Delivery attempts made so far.
    public var attempts: Int

    /// An event.
    public init(
        sequence: Int64 = 0, id: String, app: String, type: WebhookEventType, customerId: Int64?, marketplace: Marketplace = .appStore,
        purchaseKey: String, transactionId: String?, productId: String?, environment: String?, occurredAt: Date?, createdAt: Date,
        attempts: Int = 0
    ) {
        self.sequence = sequence
        self.id = id
        self.app = app
        self.type = type
        self.customerId = customerId
        self.marketplace = marketplace
        self.purchaseKey = purchaseKey
        self.transactionId = transactionId
        self.productId = productId
        self.environment = environment
        self.occurredAt = occurredAt
        self.createdAt = createdAt
        self.attempts = attempts
    }

    /// The events one recorded submission causes: for a notification, the one its store's adapter
    /// read its type as (``PurchaseSubmission/storeEvent``), for each transaction it carries;
    /// otherwise by each transaction (revoked: refunded; else the state the store's answer gives,
    /// when it gives one; else the first of its purchase: started, a later one: renewed); plus one per
    /// transfer made. None for a duplicate notification.
    public static func derive(from submission: PurchaseSubmission, outcome: PurchaseOutcome) -> [WebhookEvent] {
        guard !outcome.duplicate else { return [] }
        var events: [WebhookEvent] = []
        for transaction in submission.transactions.map(\.value) {
            guard let transactionId = transaction.transactionId, let key = transaction.purchase else { continue }
            let type: WebhookEventType?
            if submission.notification != nil {
                type = submission.storeEvent
            } else if transaction.revocationDate != nil {
                type = .refundedOrRevoked
            } else {
                type = submission.storeEvent ?? (transaction.isRenewal ? .renewed : .started)
            }
            guard let type else { continue }
            events.append(
                WebhookEvent(
                    id: eventId(identity(submission.app, type, transaction.marketplace, key) + [transactionId]), app: submission.app,
                    type: type, customerId: outcome.customerId, marketplace: transaction.marketplace, purchaseKey: key,
                    transactionId: transactionId, productId: transaction.productId, environment: transaction.environment?.rawValue,
                    occurredAt: transaction.signedDate, createdAt: submission.receivedAt))
        }
        for transfer in outcome.transfers where transfer.outcome == .transferred {
            let moved = submission.transactions.map(\.value).first {
                $0.marketplace == transfer.purchase.marketplace && $0.purchase == transfer.purchase.key
            }
            events.append(
                WebhookEvent(
                    id: eventId(
                        identity(submission.app, .transferred, transfer.purchase.marketplace, transfer.purchase.key) + [
                            String(transfer.fromCustomer), String(transfer.toCustomer), String(Int64(transfer.at.timeIntervalSince1970)),
                        ]), app: submission.app, type: .transferred, customerId: transfer.toCustomer,
                    marketplace: transfer.purchase.marketplace, purchaseKey: transfer.purchase.key, transactionId: moved?.transactionId,
                    productId: moved?.productId, environment: moved?.environment?.rawValue, occurredAt: nil,
                    createdAt: submission.receivedAt))
        }
        return events
    }

    /// What an event's id is derived from, before what is particular to it: the app, the type and the
    /// purchase, the App Store's purchases named as they were before stores were told apart (so an
    /// event told twice across that change is still one event).
    private static func identity(_ app: String, _ type: WebhookEventType, _ marketplace: Marketplace, _ key: String) -> [String] {
        marketplace == .appStore ? [app, type.rawValue, key] : [app, type.rawValue, marketplace.rawValue, key]
    }

    /// A UUID-shaped id from the first 16 bytes of the SHA-256 of `parts`, each ended by a NUL so that
    /// no two lists of parts run together into one.
    static func eventId(_ parts: [String]) -> String {
        var hash = SHA256()
        for part in parts {
            hash.update(data: Array(part.utf8))
            hash.update(data: [0])
        }
        // By a table, not `String(format:)`: one event is derived inside every notification's write
        // transaction, and Foundation's formatting of 16 bytes cost 3% of the server's time under
        // `scripts/bench-purchases notifications` (perf), all of it on the single writer.
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for (index, byte) in hash.finalize().prefix(16).enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

/// The outbox of webhook events, in the same store as the evidence (docs/purchases.md, "Webhooks").
/// The stores write events inside ``PurchaseStore/record(_:)``'s transaction; these read and settle them.
public protocol WebhookOutbox: Sendable {
    /// Pending events due at `now`, oldest first, at most `limit`: only the oldest pending event of
    /// each customer, so that a customer's events reach the receiver in order.
    func dueWebhookEvents(at now: Date, limit: Int) async throws -> [WebhookEvent]
    /// Every pending event, due or not, oldest first (what a stopped delivery left).
    func pendingWebhookEvents(limit: Int) async throws -> [WebhookEvent]
    /// The receiver accepted event `sequence`.
    func markWebhookDelivered(_ sequence: Int64, attempts: Int, at now: Date) async throws
    /// An attempt at event `sequence` failed with `error`: try again at `retryAt`, or never (nil: the
    /// event is dead).
    func markWebhookFailed(_ sequence: Int64, attempts: Int, retryAt: Date?, error: String, at now: Date) async throws
    /// The state of the event with id `id` (`pending`, `delivered`, `dead`), and its attempts; nil when none.
    func webhookState(id: String) async throws -> (state: String, attempts: Int)?
}
