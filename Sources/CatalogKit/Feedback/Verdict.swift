import Time

/// What the feedback policy concluded about one identifier, with the evidence behind it.
public struct Verdict: Sendable, Hashable {
    /// How far the policy went with an identifier.
    public enum Status: String, Sendable, Hashable, CaseIterable {
        /// Reported invalid often enough for an editor to look; still offered.
        case suspect
        /// Left out of `products.json`, and listed as known in `catalog.json`, until released.
        case quarantined
    }

    /// Whether the identifier is suspect or quarantined.
    public var status: Status
    /// Why, in one sentence: editors read it in the feedback file, apps in `catalog.json`.
    public var reason: String
    /// When the identifier got this status.
    public var since: Timestamp
    /// The reports that led to it; nil for a verdict an editor wrote by hand.
    public var evidence: VerdictEvidence?
    /// What the reports' pattern points at; nil for a verdict an editor wrote by hand.
    public var cause: ProbableCause?
    /// A suspect with a quarantine's evidence that the quarantine budget (or a store-wide alert)
    /// kept on sale: it waits for an editor's `catalog feedback quarantine`.
    public var awaitingEditor: Bool
    /// Who confirmed this quarantine; nil for one the policy decided. A confirmed quarantine is
    /// an editor's decision and does not count against the budget.
    public var confirmedBy: String?

    /// A verdict with its reason and the moment it took effect; evidence and cause are absent from
    /// one an editor wrote by hand.
    public init(
        status: Status, reason: String, since: Timestamp, evidence: VerdictEvidence? = nil, cause: ProbableCause? = nil,
        awaitingEditor: Bool = false, confirmedBy: String? = nil
    ) {
        self.status = status
        self.reason = reason
        self.since = since
        self.evidence = evidence
        self.cause = cause
        self.awaitingEditor = awaitingEditor
        self.confirmedBy = confirmedBy
    }

    /// Off sale by the policy's own decision: what the quarantine budget counts.
    public var isAutomaticQuarantine: Bool { status == .quarantined && confirmedBy == nil }
}

/// Why an identifier is probably reported invalid, read from the pattern of its reports and its
/// publication history: in words for editors, and as a stable code for tools.
public struct ProbableCause: Sendable, Hashable {
    /// A cause as a stable code, as the feedback file and the editor API write it.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// First published recently: the App Store may still be propagating it.
        case propagationWindow = "propagation-window"
        /// Reported from one platform while the product is offered on several.
        case onePlatform = "one-platform"
        /// Reported from a few storefronts while the app's reports come from more.
        case someStorefronts = "some-storefronts"
        /// Reported only by app versions from some version on, while older ones report too.
        case newAppVersions = "new-app-versions"
        /// Reported only by sandbox or Xcode installs.
        case sandboxOnly = "sandbox-only"
        /// From many networks, every platform, version and storefront seen.
        case everywhere
    }

    /// The cause, for tools.
    public var code: Code
    /// The cause in words for editors, with what to check.
    public var explanation: String

    /// A cause with its code and its explanation.
    public init(_ code: Code, _ explanation: String) {
        self.code = code
        self.explanation = explanation
    }
}

/// Something wrong with a whole app rather than one of its products, raised by a feedback run.
public struct AppAlert: Sendable, Hashable {
    /// What is wrong with the app, as a stable code.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// Every requested identifier failing, from many networks, or most of the app's
        /// identifiers failing at once: agreements, the bundle identifier or the App Store.
        case storeWideFailure = "store-wide-failure"
    }

    /// What is wrong, for tools.
    public var code: Code
    /// One sentence: what is wrong, what to check, and the evidence.
    public var message: String
    /// When the alert was first raised; it holds while its condition does.
    public var since: Timestamp

    /// An alert first raised at `since`.
    public init(code: Code, message: String, since: Timestamp) {
        self.code = code
        self.message = message
        self.since = since
    }

    static let storeWideAdvice = "store-wide failure: check agreements, bundle identifier, App Store status"
}

/// Distinct installs that reported an identifier invalid, by environment.
public struct InstallCounts: Sendable, Hashable {
    /// Installs that reported from the production App Store.
    public var production = 0
    /// Installs that reported from the sandbox.
    public var sandbox = 0
    /// Installs that reported from Xcode's local StoreKit testing.
    public var xcode = 0
    /// Reports that did not say which environment they came from.
    public var unspecified = 0

    /// Counts by environment, each zero unless given.
    public init(production: Int = 0, sandbox: Int = 0, xcode: Int = 0, unspecified: Int = 0) {
        self.production = production
        self.sandbox = sandbox
        self.xcode = xcode
        self.unspecified = unspecified
    }

    /// Installs of every environment, summed.
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
    /// Reports that named the identifier invalid.
    public var reports: Int
    /// Distinct installs among those reports, by environment.
    public var installs: InstallCounts
    /// The share of production requests for the identifier that came back invalid, each network
    /// one voice (``NetworkEvidence/invalidRate``), to two decimals; nil without network
    /// evidence, or when no production report said it asked for the identifier.
    public var invalidRate: Double?
    /// When the first of those reports was received.
    public var firstSeen: Timestamp
    /// When the last of those reports was received.
    public var lastSeen: Timestamp
    /// Distinct values, sorted.
    public var platforms: [String]
    /// Distinct app versions of those reports, sorted numerically.
    public var appVersions: [String]
    /// Distinct storefronts of those reports, such as `USA`, sorted.
    public var storefronts: [String]
    /// Distinct feed revisions of those reports, ascending.
    public var feedRevisions: [Int]
    /// What can quarantine (``NetworkEvidence``): distinct networks of production product
    /// reports, their installs at most the policy's per network, and verified installs.
    public var networks: Int
    /// Unverified production installs, at most the policy's `installsPerNetwork` from each network.
    public var networkInstalls: Int
    /// Distinct verified installs: the App Store vouches for each, so no network cap applies.
    public var verifiedInstalls: Int

    /// The installs the quarantine threshold is compared with.
    public var countedInstalls: Int { networkInstalls + verifiedInstalls }

    /// Evidence with every field given; the lists and the network counts are empty unless given.
    public init(
        countedFrom: Timestamp, reports: Int, installs: InstallCounts, invalidRate: Double?, firstSeen: Timestamp, lastSeen: Timestamp,
        platforms: [String] = [], appVersions: [String] = [], storefronts: [String] = [], feedRevisions: [Int] = [],
        networks: Int = 0, networkInstalls: Int = 0, verifiedInstalls: Int = 0
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
        self.networks = networks
        self.networkInstalls = networkInstalls
        self.verifiedInstalls = verifiedInstalls
    }

    /// One identifier's aggregates summed up, with its network evidence; nil when there are no
    /// aggregates.
    ///
    /// Installs are summed over platforms: an install runs on one platform, so it is in one
    /// aggregate of its environment (a client that sometimes leaves out its platform could be
    /// counted twice; the policy's thresholds are far above that noise).
    public init?(_ aggregates: [ReportAggregate], network: NetworkEvidence? = nil, countedFrom: Timestamp) {
        guard let first = aggregates.first else { return nil }
        var installs = InstallCounts()
        for aggregate in aggregates { installs[aggregate.environment] += aggregate.installs }
        self.init(
            countedFrom: countedFrom, reports: aggregates.reduce(0) { $0 + $1.reports }, installs: installs,
            invalidRate: network?.invalidRate.map(Self.shown),
            firstSeen: aggregates.map(\.firstSeen).min() ?? first.firstSeen, lastSeen: aggregates.map(\.lastSeen).max() ?? first.lastSeen,
            platforms: Set(aggregates.compactMap(\.platform)).sorted().map(\.name),
            appVersions: Set(aggregates.flatMap(\.appVersions)).sorted(by: Self.versionOrder),
            storefronts: Set(aggregates.flatMap(\.storefronts)).sorted(),
            feedRevisions: Set(aggregates.flatMap(\.feedRevisions)).sorted(),
            networks: network?.networks ?? 0, networkInstalls: network?.networkInstalls ?? 0,
            verifiedInstalls: network?.verifiedInstalls ?? 0)
    }

    /// Versions numerically (`2.3` before `10.0`), as the store sorts them.
    static func versionOrder(_ left: String, _ right: String) -> Bool {
        if let a = AppVersion(left), let b = AppVersion(right), a != b { return a < b }
        return left < right
    }

    /// The rate as the file and the reason show it: rounded to two decimals, so that a verdict
    /// read back from the file equals the one written.
    static func shown(_ rate: Double) -> Double {
        (rate * 100).rounded() / 100
    }
}

/// A change of one identifier's verdict, as `catalog feedback` and `catalog build` print it.
public struct VerdictChange: Sendable, Hashable, CustomStringConvertible {
    /// What happened to the verdict.
    public enum Kind: String, Sendable, Hashable {
        /// The identifier became suspect.
        case suspect
        /// The identifier was quarantined: by the policy or an editor, or (in a build) taken off sale.
        case quarantined
        /// A suspect with a quarantine's evidence, kept on sale by the budget or a store-wide alert.
        case awaitingEditor = "suspect (awaiting an editor)"
        /// A suspect that the reports no longer support.
        case noLongerSuspect = "no longer suspect"
        /// An editor released it, or (in a build) it is offered again.
        case released
    }

    /// The app's bundle identifier.
    public var app: String
    /// The product identifier whose verdict changed.
    public var identifier: String
    /// What changed.
    public var kind: Kind
    /// Why, in one sentence, printed in parentheses; nil when the change needs none.
    public var reason: String?

    /// A change, with its reason when it has one.
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
