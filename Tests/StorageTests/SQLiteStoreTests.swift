import CatalogKit
import CatalogServer
import Foundation
import Ledger
import Synchronization
import Testing

@testable import Storage

@Suite struct SQLiteStoreTests {
    /// This test's own folder, made anew for each test (a suite's init runs before each one);
    /// every test that creates it removes it when done.
    private let folder: URL

    init() {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("sqlite-store-\(UUID().uuidString)")
    }

    private func removeFolder() {
        try? FileManager.default.removeItem(at: folder)
    }

    /// A fresh store in a folder that does not exist yet: opening creates both.
    private func withStore(_ body: (SQLiteStore) async throws -> Void) async throws {
        let store = try await SQLiteStore.open(path: folder.appendingPathComponent("var/catalog.sqlite").path)
        try await body(store)
        try await store.close()
    }

    /// One of the checks every engine passes, on a fresh store; the folder is removed afterwards.
    private func conformance(_ check: (SQLiteStore) async throws -> Void) async throws {
        defer { removeFolder() }
        try await withStore(check)
    }

    /// While the store stalls (another connection holds its write lock), the group committer
    /// queues reports up to its bound and refuses the next at once, instead of holding them in
    /// memory without limit; every report it queued is stored once the lock goes.
    @Test func aStalledStoreRefusesPastTheQueueAndLosesNothing() async throws {
        defer { removeFolder() }
        try await withStore { store in
            let blocker = try SQLiteConnection(path: store.path)
            try blocker.execute("BEGIN IMMEDIATE")
            let committer = GroupCommitter(store: store, maximumBatch: 64, maximumQueued: 10)
            let results = Mutex<[Int: Result<StoreOutcome, any Error>]>([:])
            // One report goes to the (stalled) commit, ten wait, the twelfth finds the queue full.
            for index in 0..<12 {
                committer.submit(StoreConformance.report(["com.example.a"], id: "report-\(index)")) { result in
                    results.withLock { $0[index] = result }
                }
            }
            let refusedAtOnce = results.withLock { $0[11] }
            #expect(refusedAtOnce != nil, "the report past the queue waited instead of being refused")
            if case .failure(let error)? = refusedAtOnce {
                #expect(error is CommitQueueFull, "\(error)")
            } else {
                Issue.record("the report past the queue was accepted")
            }
            try blocker.execute("ROLLBACK")
            for _ in 0..<300 where results.withLock({ $0.count }) < 12 { try await Task.sleep(for: .milliseconds(50)) }
            let stored = results.withLock { results in (0..<11).filter { if case .success(.stored)? = results[$0] { true } else { false } }
            }
            #expect(stored.count == 11, "every queued report is stored")
            let count = try await store.aggregate(AggregateQuery()).first?.reports
            #expect(count == 11)
        }
    }

    /// The purchase committer reaches the store only as `any PurchaseStore`: through it, the SQLite
    /// store's own `record(_:completion:)` must answer from its writer's queue (outside any task), so
    /// that the next batch starts there at once. A default in a protocol extension alone would be called
    /// instead (no dynamic dispatch without a requirement) and put a task between every two
    /// batches.
    @Test func purchasesThroughTheProtocolAreAnsweredOnTheWritersQueue() async throws {
        defer { removeFolder() }
        try await withStore { store in
            let purchases: any PurchaseStore = store
            let submission = PurchaseStoreConformance.notification(PurchaseStoreConformance.transaction())
            let answeredInATask = await withCheckedContinuation { continuation in
                purchases.record([submission]) { result in
                    #expect(throws: Never.self) { try result.get() }
                    continuation.resume(returning: withUnsafeCurrentTask { $0 != nil })
                }
            }
            #expect(!answeredInATask, "the store's own record(_:completion:) was passed over for the protocol's default")
        }
    }

    /// `catalog backup`: a consistent copy that opens as a store of its own; never over a file.
    @Test func backupIsAStoreOfItsOwnAndNeverOverwrites() async throws {
        defer { removeFolder() }
        try await withStore { store in
            _ = try await store.store((0..<50).map { StoreConformance.report(["com.example.a"], id: "report-\($0)", install: "i\($0)") })
            let copy = folder.appendingPathComponent("copy.sqlite").path
            try await store.backup(to: copy)
            let copied = try await SQLiteStore.open(path: copy)
            let count = try await copied.aggregate(AggregateQuery()).first?.reports
            #expect(count == 50)
            try await copied.close()
            do {
                try await store.backup(to: copy)
                Issue.record("a backup overwrote a file")
            } catch {}
        }
    }

    @Test func deduplicates() async throws { try await conformance(StoreConformance.deduplicates) }
    @Test func recordsNotificationsOnce() async throws { try await conformance(PurchaseStoreConformance.recordsNotificationsOnce) }
    @Test func shuffledAndDuplicatedNotificationsGiveOneLedger() async throws {
        try await conformance(PurchaseStoreConformance.shuffledAndDuplicatedNotificationsGiveOneLedger)
    }
    @Test func keepsOrTransfersByPolicy() async throws { try await conformance(PurchaseStoreConformance.keepsOrTransfersByPolicy) }
    @Test func anAppAccountClaimsACustomerKnownOnlyByApplesKeys() async throws {
        try await conformance(PurchaseStoreConformance.anAppAccountClaimsACustomerKnownOnlyByApplesKeys)
    }

    @Test func refusedClaimsAreKeptBounded() async throws {
        try await conformance(PurchaseStoreConformance.refusedClaimsAreKeptBounded)
    }

    @Test func theFirstNamedCustomerTakesAPlaceholder() async throws {
        try await conformance(PurchaseStoreConformance.theFirstNamedCustomerTakesAPlaceholder)
    }
    @Test func rebuildsFromRawNotifications() async throws { try await conformance(PurchaseStoreConformance.rebuildsFromRawNotifications) }
    @Test func aggregates() async throws { try await conformance(StoreConformance.aggregates) }
    @Test func filters() async throws { try await conformance(StoreConformance.filters) }
    @Test func countsPerDay() async throws { try await conformance(StoreConformance.countsPerDay) }
    @Test func prunes() async throws { try await conformance(StoreConformance.prunes) }
    @Test func countsNetworks() async throws { try await conformance(StoreConformance.countsNetworks) }
    @Test func countsTheInvalidRateByNetwork() async throws { try await conformance(StoreConformance.countsTheInvalidRateByNetwork) }
    @Test func prunesToTheQuota() async throws { try await conformance(StoreConformance.prunesToTheQuota) }
    @Test func quotaPrunesTheHeaviestNetworkFirst() async throws {
        try await conformance(StoreConformance.quotaPrunesTheHeaviestNetworkFirst)
    }
    @Test func keepsOrRefusesNULs() async throws { try await conformance(StoreConformance.keepsOrRefusesNULs) }
    @Test func groupCommits() async throws { try await conformance(StoreConformance.groupCommits) }
    @Test func keepsTokensAndTheAuditLog() async throws { try await conformance(StoreConformance.keepsTokensAndTheAuditLog) }
    @Test func keepsTokenChangesAndTheirEntriesTogether() async throws {
        let path = folder.appendingPathComponent("var/catalog.sqlite").path
        try await conformance { store in
            try await StoreConformance.keepsTokenChangesAndTheirEntriesTogether(store) {
                // Another connection, as an operator's sqlite3 would be: every audit insert fails from now on.
                let sqlite = Process()
                sqlite.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                sqlite.arguments = [
                    "sqlite3", path,
                    "CREATE TRIGGER audit_down BEFORE INSERT ON audit_log BEGIN SELECT RAISE(ABORT, 'audit log down'); END;",
                ]
                try sqlite.run()
                sqlite.waitUntilExit()
                #expect(sqlite.terminationStatus == 0)
            }
        }
    }

    /// WAL with synchronous FULL, read back from the connection that commits: a library that
    /// resets it after setup (GRDB's DatabasePool does) would fail here.
    @Test func commitsAreFullySynchronousInWALMode() async throws {
        defer { removeFolder() }
        try await withStore { store in
            let settings = try await store.durabilitySettings()
            #expect(settings.synchronous == 2, "PRAGMA synchronous must be FULL (2)")
            #expect(settings.journalMode == "wal")
        }
    }

    /// Reports survive closing and reopening, and reopening does not migrate twice.
    @Test func reopenKeepsReports() async throws {
        defer { removeFolder() }
        try await withStore { store in _ = try await store.store([StoreConformance.report(["com.example.a"])]) }
        try await withStore { store in
            let counts = try await store.aggregate(AggregateQuery()).map(\.reports)
            #expect(counts == [1])
        }
    }

    @Test func unwritablePathIsAClearError() async throws {
        do {
            _ = try await SQLiteStore.open(path: "/proc/catalog.sqlite")
            Issue.record("opened a store under /proc")
        } catch {
            #expect("\(error)".contains("/proc/catalog.sqlite"), "the message names the file: \(error)")
        }
    }

    @Test func storeURLs() throws {
        #expect(try StoreURL(parsing: "sqlite:var/catalog.sqlite") == .sqlite(path: "var/catalog.sqlite"))
        #expect(try StoreURL(parsing: "sqlite:///tmp/x.sqlite") == .sqlite(path: "/tmp/x.sqlite"))
        guard case .postgres(let address) = try StoreURL(parsing: "postgres://catalog:secret@127.0.0.1:5433/reports") else {
            Issue.record("not a PostgreSQL URL")
            return
        }
        #expect(
            ([address.user, address.password, address.host, address.database] as [String?]) == [
                "catalog", "secret", "127.0.0.1", "reports",
            ])
        #expect(address.port == 5433)
        #expect("\(StoreURL.postgres(address))" == "postgres://catalog@127.0.0.1:5433/reports", "no password in logs")
        for bad in ["", "sqlite:", "mysql://x/y", "postgres://127.0.0.1/db", "postgres://u@127.0.0.1/"] {
            #expect(throws: (any Error).self, "\(bad)") { try StoreURL(parsing: bad) }
        }
    }
}
