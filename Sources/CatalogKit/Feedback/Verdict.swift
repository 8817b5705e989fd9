import PropertyList

/// What the feedback policy concluded about one identifier, with the evidence behind it.
public struct Verdict: Sendable, Hashable {
    public enum Status: String, Sendable, Hashable, CaseIterable {
        /// Reported invalid often enough for an editor to look; still offered.
        case suspect
        /// Left out of `products.json`, and listed as known in `catalog.json`, until released.
        case quarantined
    }

    public var status: Status
    /// Why, in one sentence: editors read it in the feedback file, apps in `catalog.json`.
    public var reason: String
    /// When the identifier got this status.
    public var since: Timestamp
    /// The reports that led to it; nil for a verdict an editor wrote by hand.
    public var evidence: VerdictEvidence?

    public init(status: Status, reason: String, since: Timestamp, evidence: VerdictEvidence? = nil) {
        self.status = status
        self.reason = reason
        self.since = since
        self.evidence = evidence
    }
}

/// Distinct installs that reported an identifier invalid, by environment.
public struct InstallCounts: Sendable, Hashable {
    public var production = 0
    public var sandbox = 0
    public var xcode = 0
    /// Reports that did not say which environment they came from.
    public var unspecified = 0

    public init(production: Int = 0, sandbox: Int = 0, xcode: Int = 0, unspecified: Int = 0) {
        self.production = production
        self.sandbox = sandbox
        self.xcode = xcode
        self.unspecified = unspecified
    }

    public var total: Int { production + sandbox + xcode + unspecified }

    /// The counts by name, in this fixed order, leaving out zeros: how the file and the reason show them.
    public var nonZero: [(name: String, count: Int)] {
        [("production", production), ("sandbox", sandbox), ("xcode", xcode), ("unspecified", unspecified)].filter { $0.count > 0 }
    }

    subscript(environment: ReportEnvironment?) -> Int {
        get {
            switch environment {
            case .production: production
            case .sandbox: sandbox
            case .xcode: xcode
            case nil: unspecified
            }
        }
        set {
            switch environment {
            case .production: production = newValue
            case .sandbox: sandbox = newValue
            case .xcode: xcode = newValue
            case nil: unspecified = newValue
            }
        }
    }
}

/// The reports behind a verdict, summed over platforms and environments.
public struct VerdictEvidence: Sendable, Hashable {
    /// Reports received from this moment on were counted (see ``FeedbackPolicy/countingStart(at:firstPublishedAt:releasedAt:)``).
    public var countedFrom: Timestamp
    public var reports: Int
    public var installs: InstallCounts
    /// The share of production requests for the identifier that came back invalid, to two
    /// decimals; nil when no production report said what it requested.
    public var invalidRate: Double?
    public var firstSeen: Timestamp
    public var lastSeen: Timestamp
    /// Distinct values, sorted.
    public var platforms: [String]
    public var appVersions: [String]
    public var storefronts: [String]
    public var feedRevisions: [Int]

    public init(
        countedFrom: Timestamp, reports: Int, installs: InstallCounts, invalidRate: Double?, firstSeen: Timestamp, lastSeen: Timestamp,
        platforms: [String] = [], appVersions: [String] = [], storefronts: [String] = [], feedRevisions: [Int] = []
    ) {
        self.countedFrom = countedFrom
        self.reports = reports
        self.installs = installs
        self.invalidRate = invalidRate
        self.firstSeen = firstSeen
        self.lastSeen = lastSeen
        self.platforms = platforms
        self.appVersions = appVersions
        self.storefronts = storefronts
        self.feedRevisions = feedRevisions
    }

    /// One identifier's aggregates summed up; nil when there are none.
    ///
    /// Installs are summed over platforms: an install runs on one platform, so it is in one
    /// aggregate of its environment (a client that sometimes leaves out its platform could be
    /// counted twice; the policy's thresholds are far above that noise).
    public init?(_ aggregates: [ReportAggregate], countedFrom: Timestamp) {
        guard let first = aggregates.first else { return nil }
        var installs = InstallCounts()
        for aggregate in aggregates { installs[aggregate.environment] += aggregate.installs }
        self.init(
            countedFrom: countedFrom, reports: aggregates.reduce(0) { $0 + $1.reports }, installs: installs,
            invalidRate: Self.invalidRate(of: aggregates).map(Self.shown),
            firstSeen: aggregates.map(\.firstSeen).min() ?? first.firstSeen, lastSeen: aggregates.map(\.lastSeen).max() ?? first.lastSeen,
            platforms: Set(aggregates.compactMap(\.platform)).sorted().map(\.name),
            appVersions: Set(aggregates.flatMap(\.appVersions)).sorted(by: Self.versionOrder),
            storefronts: Set(aggregates.flatMap(\.storefronts)).sorted(),
            feedRevisions: Set(aggregates.flatMap(\.feedRevisions)).sorted())
    }

    /// Versions numerically (`2.3` before `10.0`), as the store sorts them.
    private static func versionOrder(_ left: String, _ right: String) -> Bool {
        if let a = AppVersion(left), let b = AppVersion(right), a != b { return a < b }
        return left < right
    }

    /// The share of requests that came back invalid among the reports that can quarantine
    /// (production), exactly; nil when none of them said what it requested.
    static func invalidRate(of aggregates: [ReportAggregate]) -> Double? {
        let counted = aggregates.filter { $0.environment?.canQuarantine == true }
        let requested = counted.reduce(0) { $0 + $1.requestedReports }
        guard requested > 0 else { return nil }
        return Double(counted.reduce(0) { $0 + $1.invalidWhenRequested }) / Double(requested)
    }

    /// The rate as the file and the reason show it: rounded to two decimals, so that a verdict
    /// read back from the file equals the one written.
    static func shown(_ rate: Double) -> Double {
        (rate * 100).rounded() / 100
    }
}

/// A change of one identifier's verdict, as `catalog feedback` and `catalog build` print it.
public struct VerdictChange: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        case suspect
        case quarantined
        /// A suspect that the reports no longer support.
        case noLongerSuspect = "no longer suspect"
        /// An editor released it, or (in a build) it is offered again.
        case released
    }

    public var app: String
    public var identifier: String
    public var kind: Kind
    public var reason: String?

    public init(app: String, identifier: String, kind: Kind, reason: String? = nil) {
        self.app = app
        self.identifier = identifier
        self.kind = kind
        self.reason = reason
    }

    /// `com.example.app: quarantined com.example.x (reported invalid by …)`.
    public var description: String {
        "\(app): \(kind.rawValue) \(identifier)" + (reason.map { " (\($0))" } ?? "")
    }
}
