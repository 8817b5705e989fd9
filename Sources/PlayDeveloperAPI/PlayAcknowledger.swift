import Foundation
import GooglePlay
import Ledger

/// Records what Google said of a purchase in the ledger: the acknowledger's and the voided
/// purchases poll's one way into it.
public typealias PlayLedgerRecorder = @Sendable (_ app: String, _ values: PlayLedgerValues) async throws -> Void

/// Tells Google Play of each purchase it must hear of within its window (docs/google-play.md,
/// "Acknowledgement"), from the durable outbox: Google refunds and revokes a purchase not
/// acknowledged (or consumed) within three days of its payment. Each attempt first asks Google for
/// the purchase's state now, records it in the ledger, and sends only what Google does not have: a
/// purchase Google shows acknowledged is done without a call, so that one acknowledgement is never
/// sent twice, a restart between Google's answer and the outbox's write included.
public struct PlayAcknowledger: Sendable {
    /// How long Google gives: three days from payment.
    public static let window: TimeInterval = 3 * 24 * 3600
    /// How long before a deadline a pending acknowledgement counts as at risk in `/metrics`.
    public static let alertBefore: TimeInterval = 24 * 3600
    /// How long a purchase still pending payment waits before it is looked at again.
    public static let pendingRecheck: TimeInterval = 3600

    /// Where acknowledgements wait.
    public let store: any StoreAcknowledgementStore
    /// The app's client; nil when the app names no service account.
    let client: @Sendable (String) async -> PlayDeveloperAPIClient?
    /// The app's Play catalog, to map what Google says.
    let catalog: @Sendable (String) async -> PlayCatalog
    /// Records what Google said of a purchase in the ledger.
    let record: PlayLedgerRecorder
    let now: @Sendable () -> Date

    /// An acknowledger.
    public init(
        store: any StoreAcknowledgementStore, client: @escaping @Sendable (String) async -> PlayDeveloperAPIClient?,
        catalog: @escaping @Sendable (String) async -> PlayCatalog,
        record: @escaping PlayLedgerRecorder,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.store = store
        self.client = client
        self.catalog = catalog
        self.record = record
        self.now = now
    }

    /// The outbox entry for a purchase the app presented, verified: what to tell Google, by when.
    public static func acknowledgement(
        of purchase: PlayPurchase, app: String, catalog: PlayCatalog, seenAt: Date
    ) -> StoreAcknowledgement? {
        guard let token = purchase.purchaseToken, let product = purchase.productId else { return nil }
        let action = catalog.acknowledgementAction(productId: product, isSubscription: catalog.isSubscription(product))
        let paid =
            purchase.state == .purchased ? purchase.purchaseTime.map { Date(timeIntervalSince1970: Double($0) / 1000) } ?? seenAt : nil
        return StoreAcknowledgement(
            app: app, marketplace: .googlePlay, purchaseKey: token, productId: product, action: action,
            state: purchase.acknowledged == true && action != .consumeProduct ? .done : .pending, nextAttemptAt: seenAt,
            deadline: paid.map { $0.addingTimeInterval(window) }, updatedAt: seenAt)
    }

    /// What one pass did.
    public struct Summary: Sendable, Hashable {
        /// Sent to Google, or found done there.
        public var done = 0
        /// Nothing to do any more.
        public var moot = 0
        /// Refused by Google for good.
        public var failed = 0
        /// Past their deadline.
        public var expired = 0
        /// Tried again later.
        public var deferred = 0
    }

    /// One pass over the due acknowledgements, soonest deadline first.
    public func runDue(limit: Int = 100) async throws -> Summary {
        var summary = Summary()
        for acknowledgement in try await store.dueAcknowledgements(at: now(), limit: limit) {
            let next = await handle(acknowledgement)
            try await store.saveAcknowledgement(next)
            switch next.state {
            case .done: summary.done += 1
            case .moot: summary.moot += 1
            case .failed: summary.failed += 1
            case .expired: summary.expired += 1
            case .pending: summary.deferred += 1
            }
        }
        return summary
    }

    /// The acknowledgement after one attempt.
    func handle(_ acknowledgement: StoreAcknowledgement) async -> StoreAcknowledgement {
        var next = acknowledgement
        let now = now()
        next.attempts += 1
        next.updatedAt = now
        func deferred(_ error: String) -> StoreAcknowledgement {
            if let deadline = next.deadline, now >= deadline {
                next.state = .expired
                next.error = "the deadline passed before Google could be told (\(error))"
                next.nextAttemptAt = nil
            } else {
                next.error = error
                next.nextAttemptAt = now.addingTimeInterval(Self.delay(after: next.attempts, deadline: next.deadline, now: now))
            }
            return next
        }
        func finished(_ state: StoreAcknowledgement.State, _ error: String? = nil) -> StoreAcknowledgement {
            next.state = state
            next.error = error
            next.nextAttemptAt = nil
            return next
        }
        guard let client = await client(acknowledgement.app) else {
            return deferred("the app names no service account (playServiceAccountKeyFile)")
        }
        let catalog = await catalog(acknowledgement.app)
        let token = acknowledgement.purchaseKey
        do {
            // What Google says now, kept in the ledger whatever is sent next.
            let acknowledged: Bool
            // A notification names no product: the answer does.
            var product = acknowledgement.productId
            if acknowledgement.action.isSubscription {
                let purchase = try await client.subscriptionPurchase(token)
                try await record(acknowledgement.app, purchase.ledgerValues(token: token, answeredAt: now, catalog: catalog))
                if product.isEmpty { product = purchase.lineItems?.first?.productId ?? "" }
                if acknowledgement.action == .refreshSubscription { return finished(.done) }
                switch purchase.subscriptionState {
                case PlaySubscriptionPurchase.State.pending?:
                    next.nextAttemptAt = now.addingTimeInterval(Self.pendingRecheck)
                    next.error = "payment pending"
                    return next
                case PlaySubscriptionPurchase.State.pendingPurchaseCanceled?, PlaySubscriptionPurchase.State.expired?:
                    if purchase.acknowledgementState != "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED" {
                        return finished(.moot, "the subscription ended before it was acknowledged")
                    }
                default: break
                }
                if next.deadline == nil, let start = purchase.startTime.flatMap(RFC3339.parse) {
                    next.deadline = start.addingTimeInterval(Self.window)
                }
                acknowledged = purchase.acknowledgementState == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"
            } else {
                let purchase = try await client.productPurchase(token)
                try await record(acknowledgement.app, purchase.ledgerValues(token: token, answeredAt: now, catalog: catalog))
                if product.isEmpty { product = purchase.productLineItem?.first?.productId ?? "" }
                if acknowledgement.action == .refreshProduct { return finished(.done) }
                switch purchase.purchaseStateContext?.purchaseState {
                case PlayProductPurchase.State.pending?:
                    next.nextAttemptAt = now.addingTimeInterval(Self.pendingRecheck)
                    next.error = "payment pending"
                    return next
                case PlayProductPurchase.State.cancelled?:
                    return finished(.moot, "the purchase was cancelled or refunded")
                default: break
                }
                if next.deadline == nil, let paid = purchase.purchaseCompletionTime.flatMap(RFC3339.parse) {
                    next.deadline = paid.addingTimeInterval(Self.window)
                }
                let consumed = purchase.productLineItem?.first?.productOfferDetails?.consumptionState == "CONSUMPTION_STATE_CONSUMED"
                acknowledged =
                    acknowledgement.action == .consumeProduct
                    ? consumed : purchase.acknowledgementState == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"
            }
            next.productId = product
            if acknowledged { return finished(.done) }
            switch acknowledgement.action {
            case .acknowledgeSubscription: try await client.acknowledgeSubscription(productId: product, token: token)
            case .acknowledgeProduct: try await client.acknowledgeProduct(productId: product, token: token)
            case .consumeProduct: try await client.consumeProduct(productId: product, token: token)
            case .refreshSubscription, .refreshProduct: break
            }
            return finished(.done)
        } catch let error as PlayAPIError {
            switch error.kind {
            case .gone, .refused: return finished(.failed, error.description)
            default: return deferred(error.description)
            }
        } catch {
            // The ledger could not be written: the next attempt asks again.
            return deferred("cannot record Google's answer: \(error)")
        }
    }

    /// The wait before attempt `attempts + 1`: doubling from a minute to an hour, and never more than
    /// a quarter of the time left before the deadline (at least 30 s), so that an outage that ends
    /// in time leaves attempts enough.
    static func delay(after attempts: Int, deadline: Date?, now: Date) -> TimeInterval {
        var delay = min(60 * pow(2, Double(min(attempts - 1, 10))), 3600)
        if let deadline { delay = min(delay, max(30, deadline.timeIntervalSince(now) / 4)) }
        return delay
    }

    /// What `/metrics` shows of the outbox at `now`: pending acknowledgements, those within
    /// ``alertBefore`` of their deadline, and the nearest deadline.
    public static func backlog(_ pending: [StoreAcknowledgement], now: Date) -> (pending: Int, atRisk: Int, nearestDeadline: Date?) {
        let deadlines = pending.compactMap(\.deadline)
        return (pending.count, deadlines.filter { $0.timeIntervalSince(now) < alertBefore }.count, deadlines.min())
    }
}
