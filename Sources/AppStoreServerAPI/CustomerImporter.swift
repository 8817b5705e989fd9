import AppStore
import Foundation
import Ledger

/// Records a customer's whole App Store history into the ledger from any one of their
/// transaction ids (docs/app-store-api.md, "Import"): `Get Transaction History` (v2) page by page,
/// and for subscribers `Get All Subscription Statuses` for their renewal infos; every transaction
/// and renewal info verified by the app's verifier, as evidence that arrives by itself is. What the
/// store holds already is not recorded again, so an import can be run twice, or resumed.
public struct CustomerImporter: Sendable {
    /// What importing did.
    public struct Summary: Sendable, Hashable {
        /// Customers whose history was read.
        public var customers = 0
        /// Purchases recorded (every transaction, renewals included).
        public var purchases = 0
        /// Subscription periods among them (transactions of auto-renewable subscriptions).
        public var periods = 0
        /// Transactions or renewal infos that did not verify, and ids Apple does not know.
        public var refused = 0
        /// API calls made.
        public var calls = 0
        /// Why each refusal, the first ``keptRefusals`` of them: an import of a big file with a
        /// wrong app stays bounded in memory.
        public var refusals: [String] = []
        /// How many refusals a summary keeps the reasons of.
        public static let keptRefusals = 100

        /// Nothing done yet.
        public init() {}

        /// Counts a refusal, keeping its reason while fewer than ``keptRefusals`` are kept.
        mutating func refuse(_ reason: String) {
            refused += 1
            if refusals.count < Self.keptRefusals { refusals.append(reason) }
        }

        /// Adds `other`'s counts.
        public mutating func add(_ other: Summary) {
            customers += other.customers
            purchases += other.purchases
            periods += other.periods
            refused += other.refused
            calls += other.calls
            refusals += other.refusals.prefix(max(0, Self.keptRefusals - refusals.count))
        }
    }

    let app: AppPurchases
    /// One client per environment the app accepts, production first.
    let clients: [AppStoreServerAPIClient]
    let store: any PurchaseStore
    let now: @Sendable () -> Date

    /// An importer for `app`, asking `clients` in order: a transaction id production does not know
    /// is asked of the sandbox, as Apple advises.
    public init(
        app: AppPurchases, clients: [AppStoreServerAPIClient], store: any PurchaseStore, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.app = app
        self.clients = clients
        self.store = store
        self.now = now
    }

    /// Imports the customer who made `transactionId`. A transaction id no environment knows is a
    /// refusal, not an error; the API's other errors are thrown.
    public func importCustomer(_ transactionId: String) async throws -> Summary {
        var summary = Summary()
        for (index, client) in clients.enumerated() {
            do {
                try await importHistory(transactionId, client: client, into: &summary)
                summary.customers += 1
                return summary
            } catch let error as AppStoreAPIError where error.code == 4_040_010 || error.code == 4_000_006 {
                // Not this environment's (or not a transaction id at all): the next one, or a refusal.
                if index == clients.count - 1 || error.code == 4_000_006 {
                    summary.refuse("\(transactionId): \(error)")
                    return summary
                }
            }
        }
        return summary
    }

    /// Imports the customer of every id in `ids` (a file's lines), `concurrency` at a time. After
    /// each batch the line reached is kept under `stream` (``PollPosition``, its window the lines),
    /// so that a run stopped anywhere resumes at the batch it was in; `progress` sees the lines done
    /// and the summary so far after each. An id that is not a transaction id's digits is refused
    /// without a call.
    public func importAll(
        _ ids: [String], stream: String, positions: any PollPositionStore, concurrency: Int = 4,
        progress: @Sendable (Int, Summary) -> Void = { _, _ in }
    ) async throws -> Summary {
        var position =
            try await positions.pollPosition(app: app.bundleId, marketplace: .appStore, stream: stream)
            ?? PollPosition(
                app: app.bundleId, marketplace: .appStore, stream: stream, windowStart: 0, windowEnd: Int64(ids.count), cursor: nil,
                done: false, updatedAt: now())
        var summary = Summary()
        var line = Int(clamping: max(0, position.windowStart))
        let batch = max(1, concurrency)
        while line < ids.count {
            let end = min(ids.count, line + batch)
            let results = try await withThrowingTaskGroup(of: Summary.self) { group in
                for id in ids[line..<end] {
                    group.addTask {
                        guard !id.isEmpty, id.utf8.count <= 64, id.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
                            var refused = Summary()
                            refused.refuse("\(id.prefix(64)): not a transaction id")
                            return refused
                        }
                        return try await importCustomer(id)
                    }
                }
                var total = Summary()
                for try await result in group { total.add(result) }
                return total
            }
            summary.add(results)
            line = end
            position.windowStart = Int64(line)
            position.windowEnd = Int64(ids.count)
            position.done = line >= ids.count
            position.updatedAt = now()
            try await positions.savePollPosition(position)
            progress(line, summary)
        }
        return summary
    }

    private func importHistory(_ transactionId: String, client: AppStoreServerAPIClient, into summary: inout Summary) async throws {
        var revision: String?
        var subscriptions = false
        repeat {
            let page = try await client.transactionHistory(transactionId, revision: revision)
            summary.calls += 1
            var transactions: [Kept<LedgerTransaction>] = []
            for signed in page.signedTransactions ?? [] {
                do {
                    let transaction = try await app.verifier.verifyAndDecodeTransaction(signed)
                    transactions.append(Kept(transaction))
                    if transaction.type == .autoRenewableSubscription {
                        subscriptions = true
                        summary.periods += 1
                    }
                } catch {
                    summary.refuse("\(transactionId): a transaction of its history: \(error)")
                }
            }
            try await record(transactions: transactions, states: [])
            summary.purchases += transactions.count
            if page.hasMore == true {
                guard let next = page.revision, !next.isEmpty, next != revision else {
                    throw AppStoreAPIError(.malformed, operation: "transactionHistory", message: "hasMore without a new revision")
                }
                revision = next
            } else {
                revision = nil
            }
        } while revision != nil
        guard subscriptions else { return }
        // The renewal infos: grace periods, billing retry and the renewal's product.
        let statuses = try await client.subscriptionStatuses(transactionId)
        summary.calls += 1
        var states: [Kept<SubscriptionState>] = []
        for group in statuses.data ?? [] {
            for last in group.lastTransactions ?? [] {
                guard let signed = last.signedRenewalInfo else { continue }
                do {
                    states.append(Kept(try await app.verifier.verifyAndDecodeRenewalInfo(signed)))
                } catch {
                    summary.refuse("\(transactionId): a renewal info: \(error)")
                }
            }
        }
        try await record(transactions: [], states: states)
    }

    /// One page's evidence, recorded as the store's API's: it binds to the customer the store
    /// signed (their app account, else their store account), and claims for no one.
    private func record(transactions: [Kept<LedgerTransaction>], states: [Kept<SubscriptionState>]) async throws {
        guard !transactions.isEmpty || !states.isEmpty else { return }
        _ = try await store.record([
            PurchaseSubmission(
                app: app.bundleId, receivedAt: now(), source: .storeAPI, transactions: transactions, states: states,
                transferPolicy: app.transferPolicy, sendsWebhooks: app.webhookURL != nil)
        ])
    }
}
