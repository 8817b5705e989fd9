import Foundation
import GooglePlay
import Ledger

/// Reads what Google voided (refunds, chargebacks, revocations) and revokes it in the ledger
/// (docs/google-play.md, "Voided purchases"): `purchases.voidedpurchases.list` over the time since the
/// last read, page by page, the position kept after each page, so that a stopped poll resumes where
/// it was. A voided order the ledger holds gets a version revoked at its voiding time; one it never
/// saw is counted and left.
public struct PlayVoidedPoller: Sendable {
    /// The history's name among the poll positions.
    public static let stream = "voidedPurchases"
    /// How far back Google keeps voided purchases: the first poll reads all of it.
    public static let retention: TimeInterval = 30 * 24 * 3600

    let positions: any PollPositionStore
    let purchases: any PurchaseStore
    let record: PlayLedgerRecorder
    let now: @Sendable () -> Date

    /// A poller keeping its positions in `positions`, finding voided orders in `purchases`.
    public init(
        positions: any PollPositionStore, purchases: any PurchaseStore,
        record: @escaping PlayLedgerRecorder,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.positions = positions
        self.purchases = purchases
        self.record = record
        self.now = now
    }

    /// What one poll did.
    public struct Summary: Sendable, Hashable {
        /// Orders revoked in the ledger.
        public var revoked = 0
        /// Voided orders the ledger never saw.
        public var unknown = 0
        /// Pages read.
        public var pages = 0
    }

    /// Reads `app`'s voided purchases from where the last poll ended (30 days back at first) to now.
    public func poll(app: String, client: PlayDeveloperAPIClient) async throws -> Summary {
        let end = now()
        let earliest = end.addingTimeInterval(-Self.retention + 60)
        var position = try await positions.pollPosition(app: app, marketplace: .googlePlay, stream: Self.stream)
        if position == nil || position?.done == true {
            // A new window from the last one's end: voided purchases are listed by when Google voided them.
            let start = position.map { Date(timeIntervalSince1970: Double($0.windowEnd) / 1000) } ?? earliest
            position = PollPosition(
                app: app, marketplace: .googlePlay, stream: Self.stream, windowStart: Self.milliseconds(max(start, earliest)),
                windowEnd: Self.milliseconds(end), cursor: nil, done: false, updatedAt: end)
        }
        guard var position else { return Summary() }
        var summary = Summary()
        while !position.done {
            let page = try await client.voidedPurchases(
                from: Date(timeIntervalSince1970: Double(position.windowStart) / 1000),
                to: Date(timeIntervalSince1970: Double(position.windowEnd) / 1000), pageToken: position.cursor)
            summary.pages += 1
            for voided in page.voidedPurchases ?? [] {
                if try await revoke(voided, app: app) { summary.revoked += 1 } else { summary.unknown += 1 }
            }
            position.cursor = page.tokenPagination?.nextPageToken
            position.done = position.cursor == nil
            position.updatedAt = now()
            try await positions.savePollPosition(position)
        }
        return summary
    }

    /// Revokes the order `voided` names, from its latest version in the ledger; false when the ledger
    /// has none.
    func revoke(_ voided: PlayVoidedPurchase, app: String) async throws -> Bool {
        guard let order = voided.orderId, let customer = try await purchases.customer(app: app, id: order) else { return false }
        let versions = customer.transactions.filter { $0.marketplace == .googlePlay && $0.transactionId == order }
        guard let latest = versions.max(by: { ($0.signedDate ?? .distantPast) < ($1.signedDate ?? .distantPast) }) else { return false }
        guard latest.revocationDate == nil else { return true }
        guard let values = voided.revoking(latest, at: now()) else { return false }
        try await record(app, values)
        return true
    }

    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded(.down)) }
}
