import CatalogKit
import CatalogServer
import Foundation
import Storage
import Testing
import Time

/// What every `ReportStore` must do, the same on SQLite and PostgreSQL: each engine's test case
/// runs these checks against a fresh, real store.
enum StoreConformance {
    static let noon = Timestamp(year: 2026, month: 11, day: 20, hour: 12, minute: 0, second: 0)!

    static func report(
        _ invalid: [String], id: String = UUID().uuidString.lowercased(), app: String = "com.example.app", at moment: Timestamp = noon,
        requested: [String]? = nil, platform: Platform? = .iOS, environment: ReportEnvironment? = .production,
        install: String? = "install-1", version: String? = "2.3", storefront: String? = "USA", revision: Int? = 7,
        network: String? = nil, verified: String? = nil
    ) -> InvalidIdentifierReport {
        InvalidIdentifierReport(
            app: app, reportID: id, receivedAt: moment, invalid: invalid, requested: requested, platform: platform,
            appVersion: version.flatMap(AppVersion.init), environment: environment, storefront: storefront, feedRevision: revision,
            installID: install, network: network, verifiedInstall: verified)
    }

    /// Quarantine evidence counts production product reports by network: one network's
    /// invented installs count as `installsPerNetwork`, whatever platforms and environments they
    /// claim; verified installs count without the cap; store-wide and unrequested reports, and
    /// reports stored without a network, count for nothing.
    static func countsNetworks(_ store: any ReportStore) async throws {
        let product = ["com.example.a", "com.example.ok"]
        var reports: [InvalidIdentifierReport] = []
        // One network, 50 invented installs over every platform and environment.
        for index in 0..<50 {
            reports.append(
                report(
                    ["com.example.a"], requested: product, platform: Platform.allCases[index % Platform.allCases.count],
                    environment: index % 2 == 0 ? .production : .sandbox, install: "invented-\(index)", network: "n-attacker"))
        }
        // Three genuine networks, two installs on the second.
        for (network, install) in [("n1", "i1"), ("n2", "i2"), ("n2", "i3"), ("n3", "i4")] {
            reports.append(report(["com.example.a"], requested: product, install: install, network: network))
        }
        // A network whose reports name no install counts as one install.
        reports.append(report(["com.example.a"], requested: product, install: nil, network: "n4"))
        // Two verified installs on the attacker's network.
        reports.append(report(["com.example.a"], requested: product, install: "v1", network: "n-attacker", verified: "tx-1"))
        reports.append(report(["com.example.a"], requested: product, install: "v2", network: "n-attacker", verified: "tx-2"))
        // Not product evidence: every requested id invalid, no requested list, no network.
        reports.append(report(["com.example.a", "com.example.ok"], requested: product, install: "s1", network: "n5"))
        reports.append(report(["com.example.a"], requested: nil, install: "u1", network: "n6"))
        reports.append(report(["com.example.a"], requested: product, install: "old", network: nil))
        _ = try await store.store(reports)

        let one = try await store.networkEvidence(AggregateQuery(app: "com.example.app", installsPerNetwork: 1))
        #expect(one.map(\.identifier) == ["com.example.a"])
        #expect(one.first?.networks == 5, "attacker, n1 to n4")
        #expect(one.first?.networkInstalls == 5, "one install per network")
        #expect(one.first?.verifiedInstalls == 2)
        #expect(one.first?.countedInstalls == 7)
        let two = try await store.networkEvidence(AggregateQuery(app: "com.example.app", installsPerNetwork: 2))
        #expect(two.first?.networkInstalls == 7, "attacker 2, n1 1, n2 2, n3 1, n4 1")
        let narrowed = try await store.networkEvidence(
            AggregateQuery(app: "com.example.app", identifier: "com.example.ok", installsPerNetwork: 1))
        #expect(narrowed == [], "only the store-wide report named it")

        let storeWide = try await store.storeWideEvidence(AggregateQuery(app: "com.example.app", installsPerNetwork: 1))
        #expect(storeWide == NetworkEvidence(app: "com.example.app", identifier: nil, reports: 1, networks: 1, networkInstalls: 1))
        let otherApp = try await store.storeWideEvidence(AggregateQuery(app: "com.example.game", installsPerNetwork: 1))
        #expect(otherApp == nil)
    }

    /// The invalid rate counts voices, not reports (issue 35): each network weighs its distinct
    /// installs among the production reports that asked for the identifier, at most
    /// `installsPerNetwork`, and adds that weight times the share of its own requests that came
    /// back invalid; a verified install is a voice of weight one; reports stored without a
    /// network are one network together; sandbox reports and other apps do not count; an
    /// identifier without quarantine evidence has no row, whatever its rate. Every share here is
    /// a multiple of 1/2, so that both engines' sums are exact and equal.
    static func countsTheInvalidRateByNetwork(_ store: any ReportStore) async throws {
        let requested = ["com.example.x", "com.example.ok"]
        var reports: [InvalidIdentifierReport] = [
            // n1: one install, its one request invalid: share 1.
            report(["com.example.x"], requested: requested, install: "i1", network: "n1"),
            // n2: two installs, one of two requests invalid: share 1/2.
            report(["com.example.x"], requested: requested, install: "i2", network: "n2"),
            report(["com.example.ok2"], requested: requested + ["com.example.ok2"], install: "i3", network: "n2"),
            // Verified installs, on the attacker's network: tx-1 share 1, tx-2 share 0.
            report(["com.example.x"], requested: requested, install: "v1", network: "n-attacker", verified: "tx-1"),
            report(["com.example.x"], requested: requested, install: "v1", network: "n-attacker", verified: "tx-1"),
            report(["com.example.ok2"], requested: requested + ["com.example.ok2"], install: "v2", network: "n-attacker", verified: "tx-2"),
            // Stored before networks were recorded: two installs, one of two requests invalid.
            report(["com.example.x"], requested: requested, install: "old1"),
            report(["com.example.ok2"], requested: requested + ["com.example.ok2"], install: "old2"),
            // Not counted: sandbox, and another app.
            report(["com.example.ok2"], requested: requested + ["com.example.ok2"], environment: .sandbox, install: "s1", network: "n3"),
            report(["com.example.x"], app: "com.example.game", requested: requested, install: "g1", network: "n4"),
        ]
        // The attacker's network: 40 invented installs ask for x and name only another id invalid.
        for index in 0..<40 {
            reports.append(
                report(
                    ["com.example.ok2"], requested: requested + ["com.example.ok2"], install: "invented-\(index)", network: "n-attacker"))
        }
        _ = try await store.store(reports)

        // Voices: n1 1 of 1, n2 1/2 of 1, tx-1 1 of 1, tx-2 0 of 1, no network 1/2 of 1, attacker 0 of 1.
        let one = try await store.networkEvidence(AggregateQuery(app: "com.example.app", identifier: "com.example.x"))
        #expect(one.count == 1)
        #expect(one.first?.requestWeight == 6)
        #expect(one.first?.invalidWeight == 3)
        #expect(one.first?.invalidRate == 0.5, "by report it was 5 of 48")
        // Two installs a network: n2, the attacker and the reports without a network weigh two each.
        let two = try await store.networkEvidence(
            AggregateQuery(app: "com.example.app", identifier: "com.example.x", installsPerNetwork: 2))
        #expect(two.first?.requestWeight == 9)
        #expect(two.first?.invalidWeight == 4)
        // The whole app at once: the same row for x. ok2 has evidence of its own (three counted
        // installs, as x; ties by name); ok, asked for and never named invalid, has no row.
        let app = try await store.networkEvidence(AggregateQuery(app: "com.example.app"))
        #expect(app.map(\.identifier) == ["com.example.ok2", "com.example.x"])
        #expect(app.first?.invalidRate == 1, "n2, tx-2, the reports without a network and the attacker: 4 of 4")
        #expect(app.first { $0.identifier == "com.example.x" } == one.first)
        let storeWide = try await store.storeWideEvidence(AggregateQuery(app: "com.example.app"))
        #expect(storeWide == nil)
    }

    /// Text with a NUL inside is stored whole or refused, never cut at the NUL.
    static func keepsOrRefusesNULs(_ store: any CatalogStore) async throws {
        let summary = "before\u{0}after"
        do {
            try await store.appendAudit(AuditEntry(at: noon, actor: "a\u{0}b", action: .publish, app: nil, summary: summary))
        } catch {
            return  // refused (PostgreSQL does not store NUL in text): acceptable, nothing cut short
        }
        let entries = try await store.auditLog(app: nil, limit: 1)
        #expect(entries.first?.summary == summary)
        #expect(entries.first?.actor == "a\u{0}b")
    }

    /// Past the per-app quota the oldest reports go first; other apps keep theirs.
    static func prunesToTheQuota(_ store: any ReportStore) async throws {
        var reports: [InvalidIdentifierReport] = []
        for index in 0..<10 {
            reports.append(
                report(["com.example.old"], at: Timestamp(secondsSince1970: noon.secondsSince1970 + Int64(index)), install: "i\(index)"))
        }
        for index in 0..<5 {
            reports.append(
                report(
                    ["com.example.new"], at: Timestamp(secondsSince1970: noon.secondsSince1970 + 100 + Int64(index)), install: "j\(index)"))
        }
        reports.append(report(["com.example.a"], app: "com.example.game"))
        _ = try await store.store(reports)
        let pruned = try await store.prune(keepingPerApp: 6)
        #expect(pruned == ["com.example.app": 9])
        let left = try await store.aggregate(AggregateQuery(app: "com.example.app"))
        #expect(left.map { "\($0.identifier) \($0.reports)" }.sorted() == ["com.example.new 5", "com.example.old 1"])
        let game = try await store.aggregate(AggregateQuery(app: "com.example.game"))
        #expect(game.first?.reports == 1)
        let again = try await store.prune(keepingPerApp: 6)
        #expect(again == [:])
    }

    /// The attack on the quota: 25 genuine networks report an identifier, then one network floods
    /// the app past its quota. Pruning the oldest first deleted the genuine evidence and kept the
    /// flood; pruning the heaviest network first leaves every genuine report and cuts the flood.
    static func quotaPrunesTheHeaviestNetworkFirst(_ store: any ReportStore) async throws {
        var reports: [InvalidIdentifierReport] = []
        for network in 0..<25 {
            for copy in 0..<2 {
                reports.append(
                    report(
                        ["com.example.genuine"], at: Timestamp(secondsSince1970: noon.secondsSince1970 + Int64(network * 2 + copy)),
                        requested: ["com.example.genuine", "com.example.ok"], install: "g\(network)-\(copy)", network: "n\(network)"))
            }
        }
        for index in 0..<100 {
            reports.append(
                report(
                    ["com.example.flood"], at: Timestamp(secondsSince1970: noon.secondsSince1970 + 1_000 + Int64(index)),
                    install: "f\(index)", network: "n-flood"))
        }
        _ = try await store.store(reports)
        let pruned = try await store.prune(keepingPerApp: 60)
        #expect(pruned == ["com.example.app": 90])
        let left = try await store.aggregate(AggregateQuery(app: "com.example.app"))
        #expect(left.map { "\($0.identifier) \($0.reports)" }.sorted() == ["com.example.flood 10", "com.example.genuine 50"])
        // Evidence still counts every genuine network.
        let evidence = try await store.networkEvidence(AggregateQuery(app: "com.example.app"))
        #expect(evidence.first { $0.identifier == "com.example.genuine" }?.networks == 25)
        // Level with the others, the flood and the genuine networks lose alike: down to one each.
        let level = try await store.prune(keepingPerApp: 26)
        #expect(level == ["com.example.app": 34])
        let after = try await store.aggregate(AggregateQuery(app: "com.example.app"))
        #expect(after.map { "\($0.identifier) \($0.reports)" }.sorted() == ["com.example.flood 1", "com.example.genuine 25"])
    }

    /// A retried report (same app and reportId) is stored once, also within one batch; the same
    /// reportId in another app is another report.
    static func deduplicates(_ store: any ReportStore) async throws {
        let first = report(["com.example.a"], id: "11111111-1111-1111-1111-111111111111")
        let firstTime = try await store.store([first])
        #expect(firstTime == [.stored])
        let retried = try await store.store([first, first])
        #expect(retried == [.duplicate, .duplicate])
        var otherApp = first
        otherApp.app = "com.example.game"
        let second = report(["com.example.a"], id: "22222222-2222-2222-2222-222222222222")
        let mixed = try await store.store([otherApp, second, second])
        #expect(mixed == [.stored, .stored, .duplicate])
        let aggregates = try await store.aggregate(AggregateQuery())
        #expect(aggregates.map(\.reports).reduce(0, +) == 3)
    }

    /// Per app × identifier × platform × environment, with distinct installs, the seen range,
    /// distinct facts, the invalid rate and the most-affected-first order.
    static func aggregates(_ store: any ReportStore) async throws {
        let later = Timestamp(secondsSince1970: noon.secondsSince1970 + 3600)
        _ = try await store.store([
            report(["com.example.a", "com.example.b"], requested: ["com.example.a", "com.example.b", "com.example.c"], install: "i1"),
            report(
                ["com.example.a"], at: later, requested: ["com.example.a", "com.example.c"], install: "i2", version: "2.4",
                storefront: "FRA", revision: 8),
            report(["com.example.a"], requested: ["com.example.a"], install: "i2"),
            report(["com.example.a"], install: nil),
            report(["com.example.a"], platform: .macOS, environment: .sandbox, install: "i9"),
            report(["com.example.b"], requested: ["com.example.b"], install: "i3", version: "10.0"),
            report([], requested: ["com.example.b"], install: "i4"),
        ])
        let aggregates = try await store.aggregate(AggregateQuery(app: "com.example.app"))
        #expect(
            aggregates.map { "\($0.identifier) \($0.platform?.name ?? "-") \($0.environment?.rawValue ?? "-")" }
                == ["com.example.a iOS production", "com.example.b iOS production", "com.example.a macOS sandbox"])
        let a = aggregates[0]
        #expect(a.reports == 4)
        #expect(a.installs == 2)
        #expect(a.firstSeen == noon)
        #expect(a.lastSeen == later)
        #expect(a.appVersions == ["2.3", "2.4"])
        #expect(a.storefronts == ["FRA", "USA"])
        #expect(a.feedRevisions == [7, 8])
        #expect(a.requestedReports == 3)
        #expect(a.invalidWhenRequested == 3)
        let b = aggregates[1]
        #expect(b.reports == 2)
        #expect(b.installs == 2)
        #expect(b.appVersions == ["2.3", "10.0"], "versions sort numerically")
        #expect(b.requestedReports == 3)
        #expect(b.invalidWhenRequested == 2)
        let invalidRate = try #require(b.invalidRate)
        #expect(abs(invalidRate - 2.0 / 3.0) <= 1e-9)
        #expect(aggregates[2].invalidRate == nil, "no report of it said what was requested")
    }

    /// `since`, `app` and `identifier` narrow what is counted.
    static func filters(_ store: any ReportStore) async throws {
        let later = Timestamp(secondsSince1970: noon.secondsSince1970 + 600)
        _ = try await store.store([
            report(["com.example.a"], install: "old"),
            report(["com.example.a"], at: later, install: "new"),
            report(["com.example.b"], at: later, install: "new"),
            report(["com.example.a"], app: "com.example.game", at: later, install: "game"),
        ])
        let recent = try await store.aggregate(AggregateQuery(app: "com.example.app", identifier: "com.example.a", since: later))
        #expect(recent.map { "\($0.app) \($0.identifier) \($0.reports)" } == ["com.example.app com.example.a 1"])
        let all = try await store.aggregate(AggregateQuery())
        #expect(all.map(\.reports).reduce(0, +) == 4)
        #expect(Set(all.map(\.app)) == Set(["com.example.app", "com.example.game"]))
    }

    /// Retention: raw reports received before the cut are deleted and counted.
    /// Per UTC day, oldest first, only days with reports: midnight starts a new day, other apps,
    /// other identifiers and reports before `since` do not count.
    static func countsPerDay(_ store: any ReportStore) async throws {
        let day = noon.secondsSince1970 / DailyReportCount.secondsPerDay
        let midnight = Timestamp(secondsSince1970: day * DailyReportCount.secondsPerDay)
        let justBefore = Timestamp(secondsSince1970: midnight.secondsSince1970 - 1)
        let threeDaysEarlier = Timestamp(secondsSince1970: noon.secondsSince1970 - 3 * DailyReportCount.secondsPerDay)
        _ = try await store.store([
            report(["com.example.a", "com.example.b"]),
            report(["com.example.a"], at: midnight),
            report(["com.example.a"], at: justBefore),
            report(["com.example.a"], at: threeDaysEarlier),
            report(["com.example.b"]),
            report(["com.example.a"], app: "com.example.game"),
        ])
        let counts = try await store.dailyCounts(app: "com.example.app", identifier: "com.example.a", since: threeDaysEarlier)
        #expect(
            counts == [
                DailyReportCount(day: day - 3, reports: 1), DailyReportCount(day: day - 1, reports: 1),
                DailyReportCount(day: day, reports: 2),
            ])
        let recent = try await store.dailyCounts(app: "com.example.app", identifier: "com.example.a", since: midnight)
        #expect(recent == [DailyReportCount(day: day, reports: 2)])
        let none = try await store.dailyCounts(app: "com.example.app", identifier: "com.example.unknown", since: threeDaysEarlier)
        #expect(none == [])
    }

    static func prunes(_ store: any ReportStore) async throws {
        let later = Timestamp(secondsSince1970: noon.secondsSince1970 + 60)
        _ = try await store.store([report(["com.example.a"]), report(["com.example.a"]), report(["com.example.a"], at: later)])
        let pruned = try await store.prune(receivedBefore: later)
        #expect(pruned == 2)
        let prunedAgain = try await store.prune(receivedBefore: later)
        #expect(prunedAgain == 0)
        let remaining = try await store.aggregate(AggregateQuery()).map(\.reports)
        #expect(remaining == [1])
    }

    /// Many reports submitted concurrently through group commit are all stored, each once.
    static func groupCommits(_ store: any ReportStore) async throws {
        let committer = GroupCommitter(store: store, maximumBatch: 64)
        let outcomes = try await withThrowingTaskGroup(of: StoreOutcome.self) { group in
            for index in 0..<500 {
                group.addTask { try await committer.submit(report(["com.example.a"], id: "report-\(index % 400)", install: "i\(index)")) }
            }
            return try await group.reduce(into: [StoreOutcome]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 == .stored }.count == 400)
        #expect(outcomes.filter { $0 == .duplicate }.count == 100)
        let storedOnce = try await store.aggregate(AggregateQuery()).first?.reports
        #expect(storedOnce == 400)
    }

    /// Tokens: only hashes kept, one active token per name, revocation, and the audit log in order.
    /// A token and its audit entry are written together or not at all. `breakAudit` makes every
    /// later audit insert fail (a trigger). The CLI used to create (or revoke) and then append the
    /// entry in two steps: with the audit log down, the token was created anyway, unaudited.
    static func keepsTokenChangesAndTheirEntriesTogether(_ store: any CatalogStore, breakAudit: () async throws -> Void) async throws {
        let alice = EditorToken(name: "alice", role: .editor, secretHash: TokenSecret.hash("secret-a"), createdAt: noon)
        try await store.createToken(alice, audit: AuditEntry(at: noon, actor: "ops", action: .tokenCreate, summary: "created alice"))
        #expect(try await store.auditLog(app: nil, limit: 10).map(\.summary) == ["created alice"])
        try await breakAudit()
        let bob = EditorToken(name: "bob", role: .editor, secretHash: TokenSecret.hash("secret-b"), createdAt: noon)
        await #expect(throws: (any Error).self) {
            try await store.createToken(bob, audit: AuditEntry(at: noon, actor: "ops", action: .tokenCreate, summary: "created bob"))
        }
        #expect(try await store.tokens().map(\.name) == ["alice"], "no token without its entry")
        await #expect(throws: (any Error).self) {
            try await store.revokeToken(
                named: "alice", at: noon, audit: AuditEntry(at: noon, actor: "ops", action: .tokenRevoke, summary: "revoked alice"))
        }
        #expect(try await store.activeToken(secretHash: alice.secretHash) != nil, "no revocation without its entry")
        #expect(try await store.auditLog(app: nil, limit: 10).map(\.summary) == ["created alice"])
    }

    static func keepsTokensAndTheAuditLog(_ store: any CatalogStore) async throws {
        let alice = EditorToken(name: "alice", role: .editor, secretHash: TokenSecret.hash("secret-a"), createdAt: noon)
        try await store.createToken(alice)
        do {
            try await store.createToken(
                EditorToken(name: "alice", role: .viewer, secretHash: TokenSecret.hash("secret-b"), createdAt: noon))
            Issue.record("a second active token named alice")
        } catch is TokenNameTaken {}
        let later = Timestamp(secondsSince1970: noon.secondsSince1970 + 60)
        let revoked = try await store.revokeToken(named: "alice", at: later)
        #expect(revoked)
        let revokedAgain = try await store.revokeToken(named: "alice", at: later)
        #expect(!revokedAgain)
        try await store.createToken(EditorToken(name: "alice", role: .viewer, secretHash: TokenSecret.hash("secret-c"), createdAt: later))
        let tokens = try await store.tokens()
        #expect(tokens.map(\.role) == [.editor, .viewer])
        #expect(tokens.first?.revokedAt == later)
        let current = try await store.activeToken(secretHash: TokenSecret.hash("secret-c"))
        #expect(current?.role == .viewer)
        #expect(current?.name == "alice")
        let revokedToken = try await store.activeToken(secretHash: TokenSecret.hash("secret-a"))
        #expect(revokedToken == nil, "a revoked token no longer matches")
        let unknown = try await store.activeToken(secretHash: TokenSecret.hash("secret-z"))
        #expect(unknown == nil)

        for (offset, app) in ["com.example.app", nil, "com.example.game"].enumerated() {
            try await store.appendAudit(
                AuditEntry(
                    at: Timestamp(secondsSince1970: noon.secondsSince1970 + Int64(offset)), actor: "alice", action: .publish, app: app,
                    summary: "entry \(offset)", beforeHash: offset == 0 ? nil : "b\(offset)", afterHash: "a\(offset)"))
        }
        let all = try await store.auditLog(app: nil, limit: 10)
        #expect(all.map(\.summary) == ["entry 2", "entry 1", "entry 0"], "newest first")
        #expect(all.map(\.sequence) == all.map(\.sequence).sorted(by: >))
        #expect(all.last?.beforeHash == nil)
        #expect(all.first?.afterHash == "a2")
        let app = try await store.auditLog(app: "com.example.app", limit: 10)
        #expect(app.map(\.summary) == ["entry 0"])
        let one = try await store.auditLog(app: nil, limit: 1)
        #expect(one.count == 1)
    }
}
