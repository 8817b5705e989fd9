import Foundation

/// What became of a store's consumption request (the App Store's `CONSUMPTION_REQUEST`: a
/// customer asked for a refund, and the store asks what the developer knows), kept so that each
/// is answered once, across restarts, and what was sent is shown (docs/app-store-api.md,
/// "Consumption requests").
public struct ConsumptionAnswer: Sendable, Hashable {
    /// Where the answer stands.
    public enum State: String, Sendable, Hashable {
        /// Not answered yet: tried again at ``ConsumptionAnswer/nextAttemptAt``.
        case pending
        /// Sent, and the store took it.
        case sent
        /// Not to be answered: the app does not answer consumption requests.
        case skipped
        /// The store refused the answer, or the request could not be read.
        case failed
        /// The store's window closed before an answer could be sent.
        case expired
    }

    /// The app asked.
    public var app: String
    /// The store that asked.
    public var marketplace: Marketplace
    /// The request's notification.
    public var notificationId: String
    /// The transaction the refund is asked for.
    public var transactionId: String?
    /// Where it stands.
    public var state: State
    /// Attempts made to answer.
    public var attempts: Int
    /// When a pending answer is tried again.
    public var nextAttemptAt: Date?
    /// The JSON sent (or, pending, to be sent).
    public var body: String?
    /// The store's answer status, when one came.
    public var status: Int?
    /// Why it failed, was skipped, or is still pending.
    public var error: String?
    /// When this state was written.
    public var updatedAt: Date

    /// An answer.
    public init(
        app: String, marketplace: Marketplace, notificationId: String, transactionId: String?, state: State, attempts: Int,
        nextAttemptAt: Date?, body: String?, status: Int?, error: String?, updatedAt: Date
    ) {
        self.app = app
        self.marketplace = marketplace
        self.notificationId = notificationId
        self.transactionId = transactionId
        self.state = state
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.body = body
        self.status = status
        self.error = error
        self.updatedAt = updatedAt
    }
}

/// Where consumption answers are kept, beside the notifications that asked for them.
public protocol ConsumptionAnswerStore: Sendable {
    /// The App Store's consumption requests to answer at `now`, oldest first, at most `limit`: those
    /// with no answer yet, and those pending and due; each with its answer so far.
    func dueConsumptionRequests(at now: Date, limit: Int) async throws -> [(notification: RawNotification, answer: ConsumptionAnswer?)]
    /// Keeps `answer`, replacing the one of the same notification.
    func saveConsumptionAnswer(_ answer: ConsumptionAnswer) async throws
    /// The answers about `transactionIds` of `app`, oldest first: for a customer's page.
    func consumptionAnswers(app: String, transactionIds: [String]) async throws -> [ConsumptionAnswer]
}
