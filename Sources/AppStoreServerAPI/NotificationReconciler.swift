import AppStore
import Foundation
import Ledger

/// Reads an app's notification history from the App Store Server API (`Get Notification
/// History`) and records every notification the store lacks, through the path the notification
/// endpoint takes: the same verifier, the same submission, duplicates ignored by
/// `notificationUUID` and the ledger unchanged by the order of arrival (docs/app-store-api.md,
/// "Reconciliation").
///
/// Its position is a window of first-send times and Apple's pagination token within it, kept after
/// every page is recorded: a run stopped anywhere starts again at the page it was reading, whose
/// notifications, recorded already, are duplicates. A finished window's end is where the next one
/// starts, less ``overlap``, so that a notification Apple added to the history late is still read.
public struct NotificationReconciler: Sendable {
    /// What a run did.
    public struct Summary: Sendable, Hashable {
        /// Pages read.
        public var pages = 0
        /// Notifications in them.
        public var received = 0
        /// Notifications the store did not have, now recorded.
        public var stored = 0
        /// Notifications the store had already.
        public var duplicates = 0
        /// Notifications that did not verify (each logged by ``NotificationReconciler/run(since:progress:)``'s caller).
        public var refused = 0
        /// The window read, in milliseconds since 1970.
        public var windowStart: Int64 = 0
        /// Its end.
        public var windowEnd: Int64 = 0
        /// Whether the window was read to its end.
        public var done = false
        /// How far behind the history the position is, in seconds: from the position to now.
        public var behind: TimeInterval = 0
        /// The notifications refused, with why: the first ``CustomerImporter/Summary/keptRefusals``.
        public var refusals: [String] = []

        /// Counts a refusal, keeping its reason while fewer than the importer's bound are kept.
        mutating func refuse(_ reason: String) {
            refused += 1
            if refusals.count < CustomerImporter.Summary.keptRefusals { refusals.append(reason) }
        }
    }

    /// How far back a first run reads: the days over which Apple retries a notification.
    public static let firstLookback: TimeInterval = 3 * 86_400
    /// How much of the previous window a run reads again.
    public static let overlap: TimeInterval = 3_600
    /// How long before now a window ends: the history of the last minute may still be filling.
    public static let settle: TimeInterval = 60

    let app: AppPurchases
    let client: AppStoreServerAPIClient
    let store: any PurchaseStore
    let positions: any PollPositionStore
    let now: @Sendable () -> Date

    /// A reconciler of `app`'s notifications in the client's environment, recording into `store`.
    public init(
        app: AppPurchases, client: AppStoreServerAPIClient, store: any PurchaseStore, positions: any PollPositionStore,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.app = app
        self.client = client
        self.store = store
        self.positions = positions
        self.now = now
    }

    /// The stream its position is kept under.
    public var stream: String { Self.stream(client.environment) }

    /// The stream of `environment`'s notification history.
    public static func stream(_ environment: AppStoreAPIEnvironment) -> String { "notificationHistory/\(environment.rawValue)" }

    /// How far back Apple keeps history: 180 days in production, 30 in the sandbox (less an hour,
    /// so that a window started now is still inside when its last page is read).
    var history: TimeInterval { (client.environment == .production ? 180 : 30) * 86_400 - 3_600 }

    /// Reads from where the last run stopped (or, with `since`, a new window from that moment) up
    /// to a minute ago, recording page by page; `progress` sees the summary after every page.
    /// Throws the API's error after keeping the position of the last page recorded.
    @discardableResult
    public func run(since: Date? = nil, progress: @Sendable (Summary) -> Void = { _ in }) async throws -> Summary {
        let started = now()
        let end = Self.milliseconds(started.addingTimeInterval(-Self.settle))
        let earliest = Self.milliseconds(started.addingTimeInterval(-history))
        let saved = try await positions.pollPosition(app: app.bundleId, marketplace: .appStore, stream: stream)
        var position: PollPosition
        if let since {
            position = fresh(start: Self.milliseconds(since), end: end, earliest: earliest)
        } else if let saved, !saved.done {
            position = saved
        } else {
            let start =
                saved.map { $0.windowEnd - Int64(Self.overlap * 1000) }
                ?? Self.milliseconds(started.addingTimeInterval(-Self.firstLookback))
            position = fresh(start: start, end: end, earliest: earliest)
        }
        var summary = Summary(windowStart: position.windowStart, windowEnd: position.windowEnd)
        guard position.windowStart < position.windowEnd else {
            summary.done = true
            summary.behind = max(0, started.timeIntervalSince1970 - Double(position.windowStart) / 1000)
            return summary
        }
        let request = NotificationHistoryRequest(startDate: position.windowStart, endDate: position.windowEnd)
        var restarted = false
        while true {
            let page: NotificationHistoryResponse
            do {
                page = try await client.notificationHistory(request, paginationToken: position.cursor)
            } catch {
                // The kept token is no longer Apple's (expired): read the window again from its start;
                // what was recorded is recorded once.
                guard !restarted, position.cursor != nil, error.code == 4_000_014 || error.code == 4_000_017 else { throw error }
                restarted = true
                position.cursor = nil
                continue
            }
            let items = page.notificationHistory ?? []
            var submissions: [PurchaseSubmission] = []
            for item in items {
                guard let signed = item.signedPayload else {
                    summary.refuse("a history entry without signedPayload")
                    continue
                }
                // The body Apple would have posted to the notification URL.
                let body = #"{"signedPayload":"\#(signed)"}"#
                do {
                    let verified = try await app.verifier.verifyAndDecodeNotification(body)
                    guard
                        let submission = PurchaseSubmission.notification(
                            verified, app: app.bundleId, body: body, receivedAt: now(), transferPolicy: app.transferPolicy,
                            sendsWebhooks: app.webhookURL != nil)
                    else { throw PurchaseRefusal(.malformed, "the notification has no notificationUUID") }
                    submissions.append(submission)
                } catch {
                    summary.refuse("\(error)")
                }
            }
            let outcomes = try await store.record(submissions)
            summary.pages += 1
            summary.received += items.count
            summary.duplicates += outcomes.filter(\.duplicate).count
            summary.stored += outcomes.filter { !$0.duplicate }.count
            if page.hasMore == true {
                guard let token = page.paginationToken, !token.isEmpty else {
                    throw AppStoreAPIError(.malformed, operation: "notificationHistory", message: "hasMore without a paginationToken")
                }
                position.cursor = token
            } else {
                position.cursor = nil
                position.done = true
            }
            position.updatedAt = now()
            try await positions.savePollPosition(position)
            summary.done = position.done
            summary.behind = behind(position)
            progress(summary)
            if position.done { return summary }
        }
    }

    /// A new window from `start` (no earlier than Apple keeps) to `end`.
    func fresh(start: Int64, end: Int64, earliest: Int64) -> PollPosition {
        PollPosition(
            app: app.bundleId, marketplace: .appStore, stream: stream, windowStart: max(start, earliest), windowEnd: end, cursor: nil,
            done: false, updatedAt: now())
    }

    /// Seconds from what is known to be recorded to now.
    func behind(_ position: PollPosition) -> TimeInterval {
        let reached = position.done ? position.windowEnd : position.windowStart
        return max(0, now().timeIntervalSince1970 - Double(reached) / 1000)
    }

    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded(.down)) }
}
