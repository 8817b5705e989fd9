import Crypto
import Foundation

/// What changed in a customer's entitlements, as a webhook names it (docs/purchases.md, "Webhooks").
public enum WebhookEventType: String, Sendable, Hashable, Codable, CaseIterable {
    /// A purchase or subscription began (or began again: a resubscription, an upgrade, a reversed refund).
    case started
    /// A subscription renewed (or Apple extended it).
    case renewed
    /// A subscription ended.
    case expired
    /// A renewal failed and the billing grace period keeps access on.
    case inGracePeriod
    /// A renewal failed and Apple retries billing; access is off.
    case billingRetry
    /// Apple refunded or revoked a purchase.
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
    /// same change told twice (the app's request and Apple's notification) is one event.
    public var id: String
    /// The app.
    public var app: String
    /// What changed.
    public var type: WebhookEventType
    /// The customer the purchase is bound to when the event was written; nil when none.
    public var customerId: Int64?
    /// The purchase (its original transaction).
    public var originalTransactionId: String
    /// The transaction the event is about.
    public var transactionId: String?
    /// Its product.
    public var productId: String?
    /// Its environment, Apple's name (`Production`, `Sandbox`).
    public var environment: String?
    /// When the App Store signed the evidence (nil for a transfer, which the server decides).
    public var occurredAt: Date?
    /// When the event was written.
    public var createdAt: Date
    /// Delivery attempts made so far.
    public var attempts: Int

    /// An event.
    public init(
        sequence: Int64 = 0, id: String, app: String, type: WebhookEventType, customerId: Int64?, originalTransactionId: String,
        transactionId: String?, productId: String?, environment: String?, occurredAt: Date?, createdAt: Date, attempts: Int = 0
    ) {
        self.sequence = sequence
        self.id = id
        self.app = app
        self.type = type
        self.customerId = customerId
        self.originalTransactionId = originalTransactionId
        self.transactionId = transactionId
        self.productId = productId
        self.environment = environment
        self.occurredAt = occurredAt
        self.createdAt = createdAt
        self.attempts = attempts
    }

    /// The event type a notification's type and subtype mean (docs/purchases.md, "Webhooks"); nil
    /// for those that change no entitlement (renewal preferences, price changes, consumption
    /// requests, `TEST`, unknown types).
    public static func type(notification: String?, subtype: String?) -> WebhookEventType? {
        switch (notification ?? "", subtype ?? "") {
        case ("SUBSCRIBED", _), ("ONE_TIME_CHARGE", _), ("REFUND_REVERSED", _): .started
        // An upgrade takes effect at once, with a new transaction of the new product.
        case ("DID_CHANGE_RENEWAL_PREF", "UPGRADE"), ("OFFER_REDEEMED", "UPGRADE"): .started
        case ("DID_RENEW", _), ("RENEWAL_EXTENDED", _): .renewed
        case ("EXPIRED", _): .expired
        case ("DID_FAIL_TO_RENEW", "GRACE_PERIOD"): .inGracePeriod
        // Apple keeps retrying after the grace period: access is off, the subscription not over.
        case ("DID_FAIL_TO_RENEW", _), ("GRACE_PERIOD_EXPIRED", _): .billingRetry
        case ("REFUND", _), ("REVOKE", _): .refundedOrRevoked
        default: nil
        }
    }

    /// The events one recorded submission causes: by its notification's type and subtype, or, for
    /// an app's request, by each transaction (revoked: refunded; the first of its purchase: started;
    /// a later one: renewed); plus one per transfer made. None for a duplicate notification.
    public static func derive(from submission: PurchaseSubmission, outcome: PurchaseOutcome) -> [WebhookEvent] {
        guard !outcome.duplicate else { return [] }
        var events: [WebhookEvent] = []
        for transaction in submission.transactions {
            guard let transactionId = transaction.transactionId else { continue }
            let type: WebhookEventType?
            if let notification = submission.notification {
                type = Self.type(notification: notification.notificationType, subtype: notification.subtype)
            } else if transaction.revocationDate != nil {
                type = .refundedOrRevoked
            } else {
                type = (transaction.originalTransactionId ?? transactionId) == transactionId ? .started : .renewed
            }
            guard let type else { continue }
            let original = transaction.originalTransactionId ?? transactionId
            events.append(
                WebhookEvent(
                    id: eventId([submission.app, type.rawValue, original, transactionId]), app: submission.app, type: type,
                    customerId: outcome.customerId, originalTransactionId: original, transactionId: transactionId,
                    productId: transaction.productId, environment: transaction.environment?.rawValue, occurredAt: transaction.signedDate,
                    createdAt: submission.receivedAt))
        }
        for transfer in outcome.transfers where transfer.outcome == .transferred {
            let product = submission.transactions.first { ($0.originalTransactionId ?? $0.transactionId) == transfer.originalTransactionId }
            events.append(
                WebhookEvent(
                    id: eventId([
                        submission.app, WebhookEventType.transferred.rawValue, transfer.originalTransactionId,
                        String(transfer.fromCustomer),
                        String(transfer.toCustomer), String(Int64(transfer.at.timeIntervalSince1970)),
                    ]), app: submission.app, type: .transferred, customerId: transfer.toCustomer,
                    originalTransactionId: transfer.originalTransactionId, transactionId: product?.transactionId,
                    productId: product?.productId, environment: product?.environment?.rawValue, occurredAt: nil,
                    createdAt: submission.receivedAt))
        }
        return events
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
