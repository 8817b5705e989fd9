import AppStore
import CatalogKit
import Foundation
import Ledger

/// Answers the App Store's consumption requests (docs/app-store-api.md, "Consumption requests"):
/// for each `CONSUMPTION_REQUEST` stored, and not answered yet, `Send Consumption Information` is
/// called within Apple's twelve hours, with what the app's settings say (consent, sample content,
/// refund preference) and what the ledger knows (whether the transaction was delivered, how much of
/// a non-renewing subscription has run). Each answer's state is kept: a request is answered once,
/// across restarts; what was sent is kept for the customer's page.
public struct ConsumptionResponder: Sendable {
    /// What a pass did.
    public struct Summary: Sendable, Hashable {
        /// Answers Apple took.
        public var sent = 0
        /// Requests of apps that do not answer.
        public var skipped = 0
        /// Answers Apple refused, or requests that could not be read.
        public var failed = 0
        /// Requests whose twelve hours ran out.
        public var expired = 0
        /// Still pending: tried again later.
        public var deferred = 0
        /// The API throttled the pass, which stopped there.
        public var throttled = false

        /// Nothing done yet.
        public init() {}
    }

    /// Apple's window: an answer is due within 12 hours of the request.
    public static let window: TimeInterval = 12 * 3_600

    let store: any PurchaseStore
    let answers: any ConsumptionAnswerStore
    let settings: @Sendable (String) async -> AppPurchases?
    let clients: @Sendable (AppPurchases) async -> [AppStoreServerAPIClient]
    let now: @Sendable () -> Date

    /// A responder reading the requests and the ledger from `store` and `answers`, each app's
    /// settings from `settings`, calling the API through `clients`.
    public init(
        store: any PurchaseStore, answers: any ConsumptionAnswerStore, settings: @escaping @Sendable (String) async -> AppPurchases?,
        clients: @escaping @Sendable (AppPurchases) async -> [AppStoreServerAPIClient], now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.store = store
        self.answers = answers
        self.settings = settings
        self.clients = clients
        self.now = now
    }

    /// Answers every request due now, at most `limit`.
    @discardableResult
    public func answerDue(limit: Int = 50) async throws -> Summary {
        var summary = Summary()
        for (notification, previous) in try await answers.dueConsumptionRequests(at: now(), limit: limit) {
            let answer = await answer(notification, previous: previous)
            try await answers.saveConsumptionAnswer(answer)
            switch answer.state {
            case .sent: summary.sent += 1
            case .skipped: summary.skipped += 1
            case .failed: summary.failed += 1
            case .expired: summary.expired += 1
            case .pending:
                summary.deferred += 1
                if answer.status == 429 {
                    // Apple asks for less: the rest waits for the next pass.
                    summary.throttled = true
                    return summary
                }
            }
        }
        return summary
    }

    /// The answer to one request, sent if it is to be.
    func answer(_ notification: RawNotification, previous: ConsumptionAnswer?) async -> ConsumptionAnswer {
        let at = now()
        let attempts = (previous?.attempts ?? 0) + 1
        var answer = ConsumptionAnswer(
            app: notification.app, marketplace: notification.marketplace, notificationId: notification.notificationId,
            transactionId: previous?.transactionId, state: .failed, attempts: attempts, nextAttemptAt: nil, body: previous?.body,
            status: nil, error: nil, updatedAt: at)
        guard let app = await settings(notification.app) else {
            // Not published here yet, or its record unreadable for a moment: later.
            answer.state = .pending
            answer.nextAttemptAt = at.addingTimeInterval(300)
            answer.error = "the app's purchase settings cannot be read"
            return answer
        }
        let verified: SignedDataVerifier.VerifiedNotification
        do {
            verified = try await app.verifier.verifyAndDecodeNotification(notification.body)
        } catch {
            answer.error = "the request no longer verifies: \(error)"
            return answer
        }
        guard let transaction = verified.transaction, let transactionId = transaction.transactionId else {
            answer.error = "the request names no transaction"
            return answer
        }
        answer.transactionId = transactionId
        let deadline = (verified.payload.signedDate ?? notification.receivedAt).addingTimeInterval(Self.window)
        guard let consumption = app.consumption else {
            answer.state = .skipped
            answer.error = "answerConsumptionRequests is off: Apple asks for no answer without the customer's consent"
            return answer
        }
        guard at < deadline else {
            answer.state = .expired
            answer.error = "Apple's twelve hours ran out"
            return answer
        }
        let environment: AppStoreAPIEnvironment = verified.payload.app.environment == .sandbox ? .sandbox : .production
        guard let client = await clients(app).first(where: { $0.environment == environment }) else {
            answer.error = "no App Store Server API key for the \(environment.rawValue) environment"
            return answer
        }
        let request: ConsumptionRequest
        do {
            request = try await body(transaction, app: app, settings: consumption)
        } catch {
            answer.state = .pending
            answer.nextAttemptAt = min(deadline, at.addingTimeInterval(300))
            answer.error = "the ledger cannot be read: \(error)"
            return answer
        }
        answer.body = Self.json(request)
        do {
            try await client.sendConsumptionInformation(transactionId, request)
            answer.state = .sent
            answer.status = 202
            answer.error = nil
        } catch {
            answer.status = error.status
            answer.error = error.description
            if AppStoreServerAPIClient.isRetryable(error) {
                // Again before the window closes: sooner at first, never past it.
                answer.state = .pending
                answer.nextAttemptAt = min(deadline.addingTimeInterval(-60), at.addingTimeInterval(60 * Double(min(attempts, 30))))
            }
        }
        return answer
    }

    /// The answer from the settings and the ledger.
    func body(_ transaction: JWSTransactionDecodedPayload, app: AppPurchases, settings: ConsumptionSettings) async throws
        -> ConsumptionRequest
    {
        let id = transaction.transactionId ?? ""
        let record = try await store.customer(app: app.bundleId, id: id)
        // The ledger granted the purchase's entitlements from the moment it recorded it, bound to its customer.
        let delivered = record?.transactions.contains { $0.transactionId == id } ?? false
        var percentage: Int?
        if transaction.type == .nonRenewingSubscription, let product = transaction.productId,
            let duration = app.catalog.products[product]?.duration, let start = transaction.purchaseDate
        {
            let end = duration.added(to: start)
            let share = end > start ? now().timeIntervalSince(start) / end.timeIntervalSince(start) : 1
            percentage = Int((min(max(share, 0), 1) * 100_000).rounded(.down))
        }
        if !delivered, percentage != nil { percentage = 0 }
        var preference = settings.refundPreference
        // A prorated refund needs a share strictly between none and all.
        if preference == .grantProrated, !(percentage.map { $0 > 0 && $0 < 100_000 } ?? false) { preference = nil }
        return ConsumptionRequest(
            customerConsented: true, sampleContentProvided: settings.sampleContentProvided,
            deliveryStatus: delivered ? "DELIVERED" : "UNDELIVERED_OTHER", consumptionPercentage: percentage,
            refundPreference: preference?.apple)
    }

    static func json(_ request: ConsumptionRequest) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try? encoder.encode(request)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
