import CatalogClient
import CatalogServer
import Foundation
import Testing

/// Invalid-identifier reports from `CatalogClient` to the real report endpoint of `catalog serve`,
/// stored in a real SQLite file that the tests read back.
@Suite struct ReportTests {
    static let ids = ["com.example.client.coins", "com.example.client.gems"]
    static let gone = "com.example.client.gone"

    /// The AppTransaction the app passes goes out with the report, and the server accepts it
    /// (one it cannot verify leaves the report unverified, never refused); one too large for
    /// the server is left out rather than sinking the report.
    @Test func aReportCarriesTheAppTransaction() async throws {
        let fixture = try ServedCatalog(ids: Self.ids)
        defer { fixture.remove() }
        try await fixture.serve { server, counters in
            let client = fixture.client(server: server) { $0.sendsReportsAutomatically = false }
            try await client.reportInvalidIdentifiers(
                [Self.gone], environment: .production, appTransaction: "eyJhbGciOiJFUzI1NiJ9.e30.c2ln")
            try await client.reportInvalidIdentifiers(
                ["com.example.client.gone2"], environment: .production, appTransaction: String(repeating: "a", count: 20_000))
            let queued = try FileManager.default.contentsOfDirectory(
                at: fixture.clientDirectory.appendingPathComponent("data/reports"), includingPropertiesForKeys: nil
            ).filter { $0.pathExtension == "json" }.sorted { $0.lastPathComponent < $1.lastPathComponent }
            let bodies = try queued.map { String(decoding: try Data(contentsOf: $0), as: UTF8.self) }
            #expect(bodies.count == 2)
            #expect(bodies.first?.contains(#""appTransaction":"eyJhbGciOiJFUzI1NiJ9.e30.c2ln""#) == true, "\(bodies)")
            #expect(!(bodies.last?.contains("appTransaction") == true))
            let delivery = await client.sendPendingReports()
            #expect(delivery.sent == 2)
            let stored = try await counters.storedReports()
            #expect(stored == [Self.gone: 1, "com.example.client.gone2": 1])
        }
    }

    @Test func aReportCarriesWhatTheServerAggregates() async throws {
        let fixture = try ServedCatalog(ids: Self.ids)
        defer { fixture.remove() }
        try await fixture.serve { server, counters in
            let client = fixture.client(server: server) {
                $0.feed = .catalog
                $0.sendsReportsAutomatically = false
            }
            let list = await client.products(platform: .iOS, appVersion: "2.3.1")
            let queued = try await client.reportInvalidIdentifiers(
                [Self.gone, Self.gone], requested: list.identifiers + [Self.gone], environment: .production, storefront: "USA")
            #expect(queued.count == 1)
            let delivery = await client.sendPendingReports()
            #expect(delivery.sent == 1)
            #expect(delivery.pending == 0)
            let aggregates = try await counters.store.aggregate(.init(app: ServedCatalog.app))
            #expect(aggregates.map(\.identifier) == [Self.gone])
            let aggregate = try #require(aggregates.first)
            #expect(aggregate.reports == 1)
            #expect(aggregate.installs == 1)
            #expect(aggregate.platform == .iOS)
            #expect(aggregate.environment == .production)
            #expect(aggregate.appVersions == ["2.3.1"])
            #expect(aggregate.storefronts == ["USA"])
            #expect(aggregate.feedRevisions == [1])
            #expect(aggregate.requestedReports == 1)
        }
    }

    /// A report queued by one process is sent by the next: a new client on the same directory,
    /// sending by itself as soon as it starts.
    @Test func theQueueSurvivesARestartOfTheClient() async throws {
        let fixture = try ServedCatalog(ids: Self.ids)
        defer { fixture.remove() }
        let offline = fixture.client(server: try await closedServerURL()) { $0.sendsReportsAutomatically = false }
        try await offline.reportInvalidIdentifiers([Self.gone], environment: .production)
        let failed = await offline.sendPendingReports()
        #expect(failed.sent == 0)
        #expect(failed.pending == 1)
        #expect(failed.error?.code == .transport)
        #expect(failed.nextAttempt != nil, "a failed delivery schedules the next one")
        #expect(try fixture.queuedReports().count == 1)

        try await fixture.serve { server, counters in
            // No call to send: the new client resumes the queue on its own, after the back-off.
            let relaunched = fixture.client(server: server)
            var stored: [String: Int] = [:]
            for _ in 0..<100 where stored.isEmpty {
                try await Task.sleep(nanoseconds: 50_000_000)
                stored = try await counters.storedReports()
            }
            #expect(stored == [Self.gone: 1])
            for _ in 0..<100 where try !fixture.queuedReports().isEmpty { try await Task.sleep(nanoseconds: 50_000_000) }
            #expect(try fixture.queuedReports() == [], "a delivered report leaves the queue")
            withExtendedLifetime(relaunched) {}
        }
    }

    /// The app is killed after the server stored a report but before the client removed it from
    /// the queue: the next launch sends it again, with the same reportId, and the server keeps one.
    @Test func aRetriedReportIsStoredOnce() async throws {
        let fixture = try ServedCatalog(ids: Self.ids)
        defer { fixture.remove() }
        try await fixture.serve { server, counters in
            let client = fixture.client(server: server) { $0.sendsReportsAutomatically = false }
            try await client.reportInvalidIdentifiers([Self.gone], environment: .production)
            let file = try #require(try fixture.queuedReports().first)
            let saved = try Data(contentsOf: file)
            let first = await client.sendPendingReports()
            #expect(first.sent == 1)
            #expect(try fixture.queuedReports() == [])

            try saved.write(to: file)  // as if the removal never happened
            let relaunched = fixture.client(server: server) { $0.sendsReportsAutomatically = false }
            let second = await relaunched.sendPendingReports()
            #expect(second.sent == 1, "the server acknowledges the retry")
            #expect(try fixture.queuedReports() == [])
            let accepted = try await counters.requests("reports", 202)
            #expect(accepted == 2, "both deliveries reached the server")
            let stored = try await counters.storedReports()
            #expect(stored == [Self.gone: 1], "the server stored the report once")
        }
    }

    /// A 429 stops the round, and the client waits as long as `Retry-After` says: further rounds,
    /// even from a relaunched app, send nothing until then.
    @Test func a429IsHonouredUntilRetryAfter() async throws {
        let fixture = try ServedCatalog(ids: Self.ids)
        defer { fixture.remove() }
        try await fixture.serve(perInstall: RateLimit(perMinute: 1, burst: 1)) { server, counters in
            let client = fixture.client(server: server) { $0.sendsReportsAutomatically = false }
            try await client.reportInvalidIdentifiers([Self.gone], environment: .production)
            let first = await client.sendPendingReports()
            #expect(first.sent == 1)

            try await client.reportInvalidIdentifiers(["com.example.client.gone2"], environment: .production)
            try await client.reportInvalidIdentifiers(["com.example.client.gone3"], environment: .production)
            let limited = await client.sendPendingReports()
            #expect(limited.sent == 0)
            #expect(limited.pending == 2)
            #expect(limited.error?.status == 429)
            // One token a minute: the server asks for about a minute, and the client keeps to it
            // rather than to its own, much shorter, back-off.
            let retryAfter = try #require(limited.error?.retryAfter)
            #expect(retryAfter >= 30)
            let nextAttempt = try #require(limited.nextAttempt)
            #expect(nextAttempt > Date().addingTimeInterval(20))
            var limitedRequests = try await counters.requests("reports", 429)
            #expect(limitedRequests == 1, "the round stopped at the first 429")

            let again = await client.sendPendingReports()
            let relaunched = await fixture.client(server: server) { $0.sendsReportsAutomatically = false }.sendPendingReports()
            for round in [again, relaunched] {
                #expect(round.sent == 0)
                #expect(round.pending == 2)
                #expect(round.nextAttempt == nextAttempt)
            }
            limitedRequests = try await counters.requests("reports", 429)
            #expect(limitedRequests == 1, "no request while Retry-After runs")
            let stored = try await counters.storedReports()
            #expect(stored == [Self.gone: 1])
        }
    }

    /// A 4xx other than 429 will not change with retries: the report is dropped and logged.
    @Test func aRefusedReportIsDroppedAndLogged() async throws {
        let fixture = try ServedCatalog(ids: Self.ids)
        defer { fixture.remove() }
        let log = LogRecorder()
        try await fixture.serve { server, counters in
            let client = fixture.client(server: server) {
                $0.app = "com.example.unknown"
                $0.sendsReportsAutomatically = false
                $0.log = log.record
            }
            try await client.reportInvalidIdentifiers([Self.gone], environment: .sandbox)
            let delivery = await client.sendPendingReports()
            #expect(delivery.dropped == 1)
            #expect(delivery.pending == 0)
            #expect(delivery.error?.status == 404)
            #expect(delivery.nextAttempt == nil)
            #expect(try fixture.queuedReports() == [])
            #expect(
                log.messages.contains { $0.contains("dropped") && $0.contains("no published app 'com.example.unknown'") }, "\(log.messages)"
            )
            let notFound = try await counters.requests("reports", 404)
            #expect(notFound == 1, "not retried")
        }
    }

    /// More identifiers than one report may carry (1000, 64 KiB) go out as several reports, all
    /// accepted; identifiers the server would refuse are left out rather than sinking the report.
    @Test func largeReportsAreSplitWithinTheServersLimits() async throws {
        let padding = String(repeating: "x", count: 60)
        let many = (0..<2500).map { "com.example.client.\(padding).\($0)" }
        let fixture = try ServedCatalog(ids: Self.ids, retired: many)
        defer { fixture.remove() }
        try await fixture.serve { server, counters in
            let client = fixture.client(server: server) { $0.sendsReportsAutomatically = false }
            let queued = try await client.reportInvalidIdentifiers(many + ["not an id"], requested: many, environment: .production)
            #expect(queued.count >= 3)
            let delivery = await client.sendPendingReports()
            #expect(delivery.sent == queued.count)
            #expect(delivery.dropped == 0)
            let stored = try await counters.storedReports()
            #expect(stored.count == 2500)
            #expect(stored.values.allSatisfy { $0 == 1 })
        }
    }

    /// The install id is random, kept across launches, and within the server's syntax.
    @Test func theInstallIDIsMadeOnceAndKept() async throws {
        let fixture = try ServedCatalog(ids: Self.ids)
        defer { fixture.remove() }
        let server = try await closedServerURL()
        let first = fixture.client(server: server) { $0.sendsReportsAutomatically = false }
        try await first.reportInvalidIdentifiers([Self.gone], environment: .production)
        let second = fixture.client(server: server) { $0.sendsReportsAutomatically = false }
        try await second.reportInvalidIdentifiers([Self.gone], environment: .production)
        let installs = try fixture.queuedReports().map { file -> String in
            let object = try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any]
            return try #require(object?["installId"] as? String)
        }
        #expect(installs.count == 2)
        #expect(Set(installs).count == 1, "one install, one id")
        #expect(installs[0].count == 22, "128 random bits in base64url")
        #expect(installs[0].allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
        let other = try ServedCatalog(ids: Self.ids)
        defer { other.remove() }
        let elsewhere = other.client(server: server) { $0.sendsReportsAutomatically = false }
        try await elsewhere.reportInvalidIdentifiers([Self.gone], environment: .production)
        let otherFile = try #require(try other.queuedReports().first)
        let otherObject = try JSONSerialization.jsonObject(with: Data(contentsOf: otherFile)) as? [String: Any]
        #expect((otherObject?["installId"] as? String) != installs[0])
    }
}

/// Log lines a client wrote, for tests that check what it said.
final class LogRecorder: Sendable {
    private let lines = NSLockedArray()

    var messages: [String] { lines.values }

    var record: @Sendable (String) -> Void { { [lines] in lines.append($0) } }
}

final class NSLockedArray: @unchecked Sendable {
    // @unchecked: `storage` is only touched while `lock` is held.
    private let lock = NSLock()
    private var storage: [String] = []

    func append(_ line: String) {
        lock.lock()
        storage.append(line)
        lock.unlock()
    }

    var values: [String] {
        lock.lock()
        defer { lock.unlock() }
        return storage
    }
}
