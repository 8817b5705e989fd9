import Foundation

/// What a store must be told of a purchase before its deadline, or it takes the purchase back
/// (Google Play refunds and revokes a purchase not acknowledged within three days): kept in a
/// durable outbox from the moment the purchase is seen, sent by the node that calls the store's
/// API, and never sent once done (docs/google-play.md, "Acknowledgement").
public struct StoreAcknowledgement: Sendable, Hashable {
    /// What the store is told.
    public enum Action: String, Sendable, Hashable {
        /// A subscription is the app's (Play's `purchases.subscriptions.acknowledge`).
        case acknowledgeSubscription
        /// A one-time product is the app's and stays owned (`purchases.products.acknowledge`).
        case acknowledgeProduct
        /// A consumable is used up, which also acknowledges it (`purchases.products.consume`).
        case consumeProduct
        /// Nothing to tell: the store said a subscription changed (a notification), and its state now
        /// is asked and recorded.
        case refreshSubscription
        /// Nothing to tell: the store said a one-time purchase changed; its state now is asked and recorded.
        case refreshProduct

        /// Whether it is about a subscription.
        public var isSubscription: Bool { self == .acknowledgeSubscription || self == .refreshSubscription }
    }

    /// Where it stands.
    public enum State: String, Sendable, Hashable, CaseIterable {
        /// Not done yet: tried again at ``StoreAcknowledgement/nextAttemptAt``.
        case pending
        /// Done: the store has it acknowledged (by this server, or already when it looked).
        case done
        /// Nothing to do: the purchase was cancelled, refunded or expired first.
        case moot
        /// The store refused it for good; ``StoreAcknowledgement/error`` says why.
        case failed
        /// The deadline passed before it could be done.
        case expired
    }

    /// The app.
    public var app: String
    /// The store.
    public var marketplace: Marketplace
    /// The purchase (Play's purchase token).
    public var purchaseKey: String
    /// The store's product id, which the store's call names.
    public var productId: String
    /// What to tell the store.
    public var action: Action
    /// Where it stands.
    public var state: State
    /// Attempts made.
    public var attempts: Int
    /// When a pending one is tried next.
    public var nextAttemptAt: Date?
    /// When the store takes the purchase back if it is not done; nil while the purchase is pending
    /// payment (the window starts when it is paid).
    public var deadline: Date?
    /// Why it failed, is moot, or is still pending.
    public var error: String?
    /// When this state was written.
    public var updatedAt: Date

    /// An acknowledgement.
    public init(
        app: String, marketplace: Marketplace, purchaseKey: String, productId: String, action: Action, state: State = .pending,
        attempts: Int = 0, nextAttemptAt: Date?, deadline: Date?, error: String? = nil, updatedAt: Date
    ) {
        self.app = app
        self.marketplace = marketplace
        self.purchaseKey = purchaseKey
        self.productId = productId
        self.action = action
        self.state = state
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.deadline = deadline
        self.error = error
        self.updatedAt = updatedAt
    }
}

/// Where acknowledgements wait: written by any node that sees a purchase, sent by the one that calls
/// the store's API.
public protocol StoreAcknowledgementStore: Sendable {
    /// Keeps `acknowledgement` unless one for its purchase is kept already; whether it was new.
    func enqueueAcknowledgement(_ acknowledgement: StoreAcknowledgement) async throws -> Bool
    /// Asks for the purchase's state to be asked again (`acknowledgement`, a refresh), unless its
    /// entry is pending already: a pending acknowledgement asks the store's state anyway, and must
    /// not be replaced.
    func requestRefresh(_ acknowledgement: StoreAcknowledgement) async throws
    /// The pending acknowledgements due at `now` (their next attempt reached), soonest deadline
    /// first, at most `limit`.
    func dueAcknowledgements(at now: Date, limit: Int) async throws -> [StoreAcknowledgement]
    /// Replaces the acknowledgement of the same purchase.
    func saveAcknowledgement(_ acknowledgement: StoreAcknowledgement) async throws
    /// Every acknowledgement of `state`, for `/metrics` and the alert before a deadline.
    func acknowledgements(in state: StoreAcknowledgement.State) async throws -> [StoreAcknowledgement]
}
