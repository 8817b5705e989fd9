import CatalogKit
import CatalogTestSupport
import Testing
import Time

/// The policy's rules, pure: aggregates in, verdict out (defaults: suspect at 3 installs,
/// quarantine at 20 production installs from as many networks, a 24 h window, 48 h of grace, a
/// minimum rate of 0.5).
@Suite struct FeedbackPolicyTests {
    static let now = Timestamp(iso8601: "2026-03-10T12:00:00Z")!
    static let windowStart = Timestamp(iso8601: "2026-03-09T12:00:00Z")!
    static let earlier = Timestamp(iso8601: "2026-03-08T09:30:00Z")!

    static func rows(
        _ environment: ReportEnvironment?, installs: Int, platform: Platform? = .iOS, requested: Int = 0, invalidWhenRequested: Int = 0
    ) -> ReportAggregate {
        ReportAggregate(
            app: "com.example.app", identifier: "com.example.x", platform: platform, environment: environment, reports: installs,
            installs: installs, firstSeen: Timestamp(iso8601: "2026-03-10T08:00:00Z")!,
            lastSeen: Timestamp(iso8601: "2026-03-10T11:00:00Z")!,
            appVersions: ["2.3"], storefronts: ["USA"], feedRevisions: [4], requestedReports: requested,
            invalidWhenRequested: invalidWhenRequested)
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var aggregates: [ReportAggregate]
        var previous: Verdict? = nil
        var status: Verdict.Status?
        var reason: String? = nil
        var testDescription: String { name }
    }

    static let quarantinedEarlier = Verdict(
        status: .quarantined, reason: "reported invalid by 21 production installs from 21 networks in the last 24 h", since: earlier)
    static let suspectEarlier = Verdict(
        status: .suspect, reason: "reported invalid by 3 installs (3 production) in the last 24 h", since: earlier)

    static let cases: [Case] = [
        Case(name: "no reports, no verdict", aggregates: [], status: nil),
        Case(name: "one install below suspect", aggregates: [rows(.production, installs: 2)], status: nil),
        Case(
            name: "suspect threshold exactly reached", aggregates: [rows(.production, installs: 3)], status: .suspect,
            reason: "reported invalid by 3 installs (3 production) in the last 24 h"),
        Case(
            name: "installs of every environment count toward suspect",
            aggregates: [rows(.production, installs: 1), rows(.sandbox, installs: 1), rows(nil, installs: 1)], status: .suspect,
            reason: "reported invalid by 3 installs (1 production, 1 sandbox, 1 unspecified) in the last 24 h"),
        Case(name: "one production install below quarantine", aggregates: [rows(.production, installs: 19)], status: .suspect),
        Case(
            name: "quarantine threshold exactly reached", aggregates: [rows(.production, installs: 20)], status: .quarantined,
            reason: "reported invalid by 20 production installs from 20 networks in the last 24 h"),
        Case(
            name: "production installs add up across platforms",
            aggregates: [rows(.production, installs: 12, platform: .iOS), rows(.production, installs: 8, platform: .macOS)],
            status: .quarantined),
        Case(
            name: "sandbox only never quarantines", aggregates: [rows(.sandbox, installs: 500)], status: .suspect,
            reason: "reported invalid by 500 installs (500 sandbox) in the last 24 h"),
        Case(
            name: "xcode and unspecified never quarantine", aggregates: [rows(.xcode, installs: 50), rows(nil, installs: 50)],
            status: .suspect),
        Case(
            name: "sandbox installs do not top up production ones",
            aggregates: [rows(.production, installs: 19), rows(.sandbox, installs: 30)], status: .suspect),
        Case(
            name: "invalid rate below the minimum blocks quarantine",
            aggregates: [rows(.production, installs: 25, requested: 100, invalidWhenRequested: 49)], status: .suspect,
            reason:
                "reported invalid by 25 installs (25 production) in the last 24 h, invalid rate 0.49, below the 0.5 needed to quarantine"),
        Case(
            name: "invalid rate exactly the minimum quarantines",
            aggregates: [rows(.production, installs: 25, requested: 100, invalidWhenRequested: 50)], status: .quarantined,
            reason: "reported invalid by 25 production installs from 25 networks in the last 24 h, invalid rate 0.5"),
        Case(
            name: "unknown invalid rate does not block quarantine", aggregates: [rows(.production, installs: 23)], status: .quarantined,
            reason: "reported invalid by 23 production installs from 23 networks in the last 24 h"),
        Case(
            name: "only production requests make the rate",
            aggregates: [
                rows(.production, installs: 23, requested: 25, invalidWhenRequested: 23),
                rows(.sandbox, installs: 5, requested: 1000, invalidWhenRequested: 5),
            ],
            status: .quarantined, reason: "reported invalid by 23 production installs from 23 networks in the last 24 h, invalid rate 0.92"),
        Case(name: "quarantine is sticky without reports", aggregates: [], previous: quarantinedEarlier, status: .quarantined),
        Case(
            name: "quarantine is sticky below every threshold", aggregates: [rows(.production, installs: 1)], previous: quarantinedEarlier,
            status: .quarantined),
        Case(name: "a suspect without reports is dropped", aggregates: [], previous: suspectEarlier, status: nil),
        Case(
            name: "a suspect reaching quarantine is quarantined", aggregates: [rows(.production, installs: 20)], previous: suspectEarlier,
            status: .quarantined),
    ]

    @Test(arguments: cases)
    func verdict(_ example: Case) {
        let verdict = FeedbackPolicy().verdict(
            for: example.aggregates, countedFrom: Self.windowStart, at: Self.now, previous: example.previous)
        #expect(verdict?.status == example.status)
        if let reason = example.reason { #expect(verdict?.reason == reason) }
    }

    /// A held quarantine keeps its reason, time and evidence, so the published reason and the
    /// file do not change while it holds.
    @Test func stickyQuarantineIsUnchanged() {
        let verdict = FeedbackPolicy().verdict(
            for: [Self.rows(.production, installs: 40)], countedFrom: Self.windowStart, at: Self.now, previous: Self.quarantinedEarlier)
        #expect(verdict == Self.quarantinedEarlier)
    }

    /// A suspect stays suspect since it first was; a new verdict starts now.
    @Test func sinceIsWhenTheStatusBegan() {
        let policy = FeedbackPolicy()
        let kept = policy.verdict(
            for: [Self.rows(.production, installs: 5)], countedFrom: Self.windowStart, at: Self.now, previous: Self.suspectEarlier)
        #expect(kept?.since == Self.earlier)
        #expect(kept?.reason == "reported invalid by 5 installs (5 production) in the last 24 h")
        let escalated = policy.verdict(
            for: [Self.rows(.production, installs: 20)], countedFrom: Self.windowStart, at: Self.now, previous: Self.suspectEarlier)
        #expect(escalated?.since == Self.now)
    }

    @Test func evidenceSumsTheAggregates() throws {
        let aggregates = [
            Self.rows(.production, installs: 20, platform: .iOS, requested: 3, invalidWhenRequested: 2),
            Self.rows(.sandbox, installs: 2, platform: .macOS),
            ReportAggregate(
                app: "com.example.app", identifier: "com.example.x", platform: nil, environment: .production, reports: 4, installs: 1,
                firstSeen: Timestamp(iso8601: "2026-03-10T07:00:00Z")!, lastSeen: Timestamp(iso8601: "2026-03-10T11:30:00Z")!,
                appVersions: ["10.0", "2.3"], storefronts: ["FRA"], feedRevisions: [3], requestedReports: 1, invalidWhenRequested: 1),
        ]
        let verdict = try #require(FeedbackPolicy().verdict(for: aggregates, countedFrom: Self.windowStart, at: Self.now, previous: nil))
        #expect(verdict.status == .quarantined)
        #expect(
            verdict.evidence
                == VerdictEvidence(
                    countedFrom: Self.windowStart, reports: 26, installs: InstallCounts(production: 21, sandbox: 2), invalidRate: 0.75,
                    firstSeen: Timestamp(iso8601: "2026-03-10T07:00:00Z")!, lastSeen: Timestamp(iso8601: "2026-03-10T11:30:00Z")!,
                    platforms: ["iOS", "macOS"], appVersions: ["2.3", "10.0"], storefronts: ["FRA", "USA"], feedRevisions: [3, 4],
                    networks: 21, networkInstalls: 21))
        #expect(verdict.reason == "reported invalid by 21 production installs from 21 networks in the last 24 h, invalid rate 0.75")
    }

    /// A cut later than the window says from when it counted.
    @Test func reasonNamesALaterCountingStart() {
        let start = Timestamp(iso8601: "2026-03-10T02:00:00Z")!
        let verdict = FeedbackPolicy().verdict(for: [Self.rows(.production, installs: 20)], countedFrom: start, at: Self.now, previous: nil)
        #expect(verdict?.reason == "reported invalid by 20 production installs from 20 networks since 2026-03-10T02:00:00Z")
    }

    struct Start: Sendable, CustomTestStringConvertible {
        var name: String
        var firstPublishedAt: Timestamp?
        var releasedAt: Timestamp?
        var expected: Timestamp
        var testDescription: String { name }
    }

    static func hoursBeforeNow(_ hours: Int64, seconds: Int64 = 0) -> Timestamp {
        Timestamp(secondsSince1970: now.secondsSince1970 - hours * 3600 + seconds)
    }

    static let starts: [Start] = [
        Start(name: "never published, never released: the window", expected: windowStart),
        Start(name: "grace long over: the window", firstPublishedAt: hoursBeforeNow(200), expected: windowStart),
        Start(name: "grace ended exactly at the window's start", firstPublishedAt: hoursBeforeNow(72), expected: windowStart),
        Start(name: "grace ended inside the window", firstPublishedAt: hoursBeforeNow(60), expected: hoursBeforeNow(12)),
        Start(name: "grace ends exactly now", firstPublishedAt: hoursBeforeNow(48), expected: now),
        Start(name: "still in grace: after now", firstPublishedAt: hoursBeforeNow(47), expected: hoursBeforeNow(-1)),
        Start(name: "released inside the window: the second after", releasedAt: hoursBeforeNow(3), expected: hoursBeforeNow(3, seconds: 1)),
        Start(name: "released before the window: the window", releasedAt: hoursBeforeNow(30), expected: windowStart),
        Start(
            name: "the later of grace and release", firstPublishedAt: hoursBeforeNow(58), releasedAt: hoursBeforeNow(20),
            expected: hoursBeforeNow(10)),
    ]

    @Test(arguments: starts)
    func countingStart(_ example: Start) {
        let start = FeedbackPolicy().countingStart(at: Self.now, firstPublishedAt: example.firstPublishedAt, releasedAt: example.releasedAt)
        #expect(start == example.expected)
    }

    @Test func policyThresholdsAreTheCatalogs() {
        var policy = FeedbackPolicy()
        policy.suspectAfterInstalls = 1
        policy.quarantineAfterInstalls = 2
        policy.minimumInvalidRate = 0.9
        #expect(
            policy.verdict(for: [Self.rows(.production, installs: 1)], countedFrom: Self.windowStart, at: Self.now, previous: nil)?.status
                == .suspect)
        #expect(
            policy.verdict(for: [Self.rows(.production, installs: 2)], countedFrom: Self.windowStart, at: Self.now, previous: nil)?.status
                == .quarantined)
        #expect(
            policy.verdict(
                for: [Self.rows(.production, installs: 2, requested: 10, invalidWhenRequested: 8)], countedFrom: Self.windowStart,
                at: Self.now,
                previous: nil)?.status == .suspect)
    }
}

extension FeedbackPolicyTests {
    /// Network evidence of genuine reports: every production install, and every production
    /// request, from a network of its own, so that the rate by network is the rate by report.
    static func genuine(_ aggregates: [ReportAggregate]) -> NetworkEvidence? {
        let production = aggregates.filter { $0.environment == .production }
        let installs = production.reduce(0) { $0 + $1.installs }
        guard installs > 0 else { return nil }
        return NetworkEvidence(
            app: "com.example.app", identifier: "com.example.x", reports: installs, networks: installs, networkInstalls: installs,
            requestWeight: Double(production.reduce(0) { $0 + $1.requestedReports }),
            invalidWeight: Double(production.reduce(0) { $0 + $1.invalidWhenRequested }))
    }

    /// Whatever one network sends, it is one network's worth: 500 invented installs from one
    /// network, then from two, are suspects; verified installs count without the network cap.
    @Test func networksNotInstallsQuarantine() {
        let policy = FeedbackPolicy()
        let flood = [Self.rows(.production, installs: 500)]
        let oneNetwork = NetworkEvidence(app: "com.example.app", identifier: "com.example.x", reports: 500, networks: 1, networkInstalls: 1)
        let suspect = policy.verdict(for: flood, network: oneNetwork, countedFrom: Self.windowStart, at: Self.now, previous: nil)
        #expect(suspect?.status == .suspect)
        #expect(suspect?.evidence?.networks == 1 && suspect?.evidence?.installs.production == 500)
        let nineteen = NetworkEvidence(app: "com.example.app", identifier: "com.example.x", reports: 500, networks: 19, networkInstalls: 19)
        #expect(
            policy.verdict(for: flood, network: nineteen, countedFrom: Self.windowStart, at: Self.now, previous: nil)?.status == .suspect)
        let verified = NetworkEvidence(
            app: "com.example.app", identifier: "com.example.x", reports: 500, networks: 2, networkInstalls: 2, verifiedInstalls: 18)
        let quarantined = policy.verdict(for: flood, network: verified, countedFrom: Self.windowStart, at: Self.now, previous: nil)
        #expect(quarantined?.status == .quarantined)
        #expect(
            quarantined?.reason == "reported invalid by 2 production installs from 2 networks and 18 verified installs in the last 24 h")
        #expect(policy.verdict(for: flood, network: nil, countedFrom: Self.windowStart, at: Self.now, previous: nil)?.status == .suspect)
    }

    /// The rate the policy compares is the networks' (``NetworkEvidence/invalidRate``), not the
    /// reports': 25 networks and one flood of 500 reports asking for the id are 25 of 525 by
    /// report and 25 voices of 26 by network.
    @Test func theInvalidRateIsCountedByNetwork() {
        let policy = FeedbackPolicy()
        let diluted = [Self.rows(.production, installs: 25, requested: 525, invalidWhenRequested: 25)]
        let network = NetworkEvidence(
            app: "com.example.app", identifier: "com.example.x", reports: 25, networks: 25, networkInstalls: 25, requestWeight: 26,
            invalidWeight: 25)
        let verdict = policy.verdict(for: diluted, network: network, countedFrom: Self.windowStart, at: Self.now, previous: nil)
        #expect(verdict?.status == .quarantined)
        #expect(verdict?.evidence?.invalidRate == 0.96)
        #expect(verdict?.reason == "reported invalid by 25 production installs from 25 networks in the last 24 h, invalid rate 0.96")

        var outvoted = network
        outvoted.invalidWeight = 12.5
        #expect(
            policy.verdict(for: diluted, network: outvoted, countedFrom: Self.windowStart, at: Self.now, previous: nil)?.status
                == .suspect, "12.5 of 26: below 0.5")
    }

    @Test func budgetIsAShareWithAFloorOfOne() {
        let policy = FeedbackPolicy()
        #expect(policy.quarantineBudget(sellable: 0) == 1)
        #expect(policy.quarantineBudget(sellable: 3) == 1)
        #expect(policy.quarantineBudget(sellable: 19) == 1)
        #expect(policy.quarantineBudget(sellable: 20) == 2)
        #expect(policy.quarantineBudget(sellable: 1000) == 100)
    }
}

extension FeedbackPolicy {
    /// The verdict on genuine reports (``FeedbackPolicyTests/genuine(_:)``).
    func verdict(for aggregates: [ReportAggregate], countedFrom: Timestamp, at now: Timestamp, previous: Verdict?) -> Verdict? {
        verdict(for: aggregates, network: FeedbackPolicyTests.genuine(aggregates), countedFrom: countedFrom, at: now, previous: previous)
    }
}
