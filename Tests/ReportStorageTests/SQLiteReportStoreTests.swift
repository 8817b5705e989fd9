import CatalogKit
import Foundation
@testable import ReportStorage
import Synchronization
import XCTest

final class SQLiteReportStoreTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("sqlite-store-\(UUID().uuidString)")
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: folder)
    }

    /// A fresh store in a folder that does not exist yet: opening creates both.
    private func withStore(_ body: (SQLiteReportStore) async throws -> Void) async throws {
        let store = try await SQLiteReportStore.open(path: folder.appendingPathComponent("var/catalog.sqlite").path)
        try await body(store)
        try await store.close()
    }

    /// While the store stalls (another connection holds its write lock), the group committer
    /// queues reports up to its bound and refuses the next at once, instead of holding them in
    /// memory without limit; every report it queued is stored once the lock goes.
    func testAStalledStoreRefusesPastTheQueueAndLosesNothing() async throws {
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
            XCTAssertNotNil(refusedAtOnce, "the report past the queue waited instead of being refused")
            if case .failure(let error)? = refusedAtOnce {
                XCTAssertTrue(error is CommitQueueFull, "\(error)")
            } else {
                XCTFail("the report past the queue was accepted")
            }
            try blocker.execute("ROLLBACK")
            for _ in 0..<300 where results.withLock({ $0.count }) < 12 { try await Task.sleep(for: .milliseconds(50)) }
            let stored = results.withLock { results in (0..<11).filter { if case .success(.stored)? = results[$0] { true } else { false } } }
            XCTAssertEqual(stored.count, 11, "every queued report is stored")
            let count = try await store.aggregate(AggregateQuery()).first?.reports
            XCTAssertEqual(count, 11)
        }
    }

    /// `catalog backup`: a consistent copy that opens as a store of its own; never over a file.
    func testBackupIsAStoreOfItsOwnAndNeverOverwrites() async throws {
        try await withStore { store in
            _ = try await store.store((0..<50).map { StoreConformance.report(["com.example.a"], id: "report-\($0)", install: "i\($0)") })
            let copy = folder.appendingPathComponent("copy.sqlite").path
            try await store.backup(to: copy)
            let copied = try await SQLiteReportStore.open(path: copy)
            let count = try await copied.aggregate(AggregateQuery()).first?.reports
            XCTAssertEqual(count, 50)
            try await copied.close()
            do {
                try await store.backup(to: copy)
                XCTFail("a backup overwrote a file")
            } catch {}
        }
    }

    func testDeduplicates() async throws { try await withStore(StoreConformance.deduplicates) }
    func testAggregates() async throws { try await withStore(StoreConformance.aggregates) }
    func testFilters() async throws { try await withStore(StoreConformance.filters) }
    func testCountsPerDay() async throws { try await withStore(StoreConformance.countsPerDay) }
    func testPrunes() async throws { try await withStore(StoreConformance.prunes) }
    func testCountsNetworks() async throws { try await withStore(StoreConformance.countsNetworks) }
    func testPrunesToTheQuota() async throws { try await withStore(StoreConformance.prunesToTheQuota) }
    func testKeepsOrRefusesNULs() async throws { try await withStore(StoreConformance.keepsOrRefusesNULs) }
    func testGroupCommits() async throws { try await withStore(StoreConformance.groupCommits) }
    func testKeepsTokensAndTheAuditLog() async throws { try await withStore(StoreConformance.keepsTokensAndTheAuditLog) }

    /// WAL with synchronous FULL, read back from the connection that commits: a library that
    /// resets it after setup (GRDB's DatabasePool does) would fail here.
    func testCommitsAreFullySynchronousInWALMode() async throws {
        try await withStore { store in
            let settings = try await store.durabilitySettings()
            XCTAssertEqual(settings.synchronous, 2, "PRAGMA synchronous must be FULL (2)")
            XCTAssertEqual(settings.journalMode, "wal")
        }
    }

    /// Reports survive closing and reopening, and reopening does not migrate twice.
    func testReopenKeepsReports() async throws {
        try await withStore { store in _ = try await store.store([StoreConformance.report(["com.example.a"])]) }
        try await withStore { store in
            let counts = try await store.aggregate(AggregateQuery()).map(\.reports)
            XCTAssertEqual(counts, [1])
        }
    }

    func testUnwritablePathIsAClearError() async throws {
        do {
            _ = try await SQLiteReportStore.open(path: "/proc/catalog.sqlite")
            XCTFail("opened a store under /proc")
        } catch {
            XCTAssertTrue("\(error)".contains("/proc/catalog.sqlite"), "the message names the file: \(error)")
        }
    }

    func testStoreURLs() throws {
        XCTAssertEqual(try StoreURL(parsing: "sqlite:var/catalog.sqlite"), .sqlite(path: "var/catalog.sqlite"))
        XCTAssertEqual(try StoreURL(parsing: "sqlite:///tmp/x.sqlite"), .sqlite(path: "/tmp/x.sqlite"))
        guard case .postgres(let address) = try StoreURL(parsing: "postgres://catalog:secret@127.0.0.1:5433/reports") else {
            return XCTFail("not a PostgreSQL URL")
        }
        XCTAssertEqual([address.user, address.password, address.host, address.database], ["catalog", "secret", "127.0.0.1", "reports"])
        XCTAssertEqual(address.port, 5433)
        XCTAssertEqual("\(StoreURL.postgres(address))", "postgres://catalog@127.0.0.1:5433/reports", "no password in logs")
        for bad in ["", "sqlite:", "mysql://x/y", "postgres://127.0.0.1/db", "postgres://u@127.0.0.1/"] {
            XCTAssertThrowsError(try StoreURL(parsing: bad), bad)
        }
    }
}
