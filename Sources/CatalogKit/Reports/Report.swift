import Time

/// Where a report's app was running when the store answered (docs/contract.md section 4).
public enum ReportEnvironment: String, CaseIterable, Sendable, Hashable, Codable {
    /// The App Store itself.
    case production
    /// The App Store's sandbox, for development and TestFlight builds.
    case sandbox
    /// Xcode's local StoreKit testing, from a `.storekit` configuration.
    case xcode

    /// Only production answers can quarantine: sandbox and Xcode's local store are noisy by design.
    public var canQuarantine: Bool { self == .production }

    static let expectedList = "production, sandbox or xcode"
}

/// A product Play Billing could not fetch (Billing Library 8's `UnfetchedProduct`), by its Play id.
public struct UnfetchedProduct: Sendable, Hashable {
    /// Why Play did not fetch it: what each status means for a verdict (docs/reports.md).
    public enum Status: Sendable, Hashable {
        /// `0 UNKNOWN`: Play could not say; nothing against the product.
        case unknown
        /// `2 INVALID_PRODUCT_ID_FORMAT`: Play refuses the id itself: invalid.
        case invalidProductIdFormat
        /// `3 PRODUCT_NOT_FOUND`: no such product in Play Console, or not active: invalid.
        case productNotFound
        /// `4 NO_ELIGIBLE_OFFER`: the product exists, and this customer may buy none of its offers
        /// now (an introductory offer already used, say): nothing against the product.
        case noEligibleOffer
        /// A code this version does not know: nothing against the product.
        case other(Int)

        /// The status of Play's `statusCode`.
        public init(code: Int) {
            switch code {
            case 0: self = .unknown
            case 2: self = .invalidProductIdFormat
            case 3: self = .productNotFound
            case 4: self = .noEligibleOffer
            default: self = .other(code)
            }
        }

        /// Play's name, for `/metrics`.
        public var name: String {
            switch self {
            case .unknown: "UNKNOWN"
            case .invalidProductIdFormat: "INVALID_PRODUCT_ID_FORMAT"
            case .productNotFound: "PRODUCT_NOT_FOUND"
            case .noEligibleOffer: "NO_ELIGIBLE_OFFER"
            case .other: "OTHER"
            }
        }

        /// Whether it says the identifier is invalid, as the App Store's invalid identifiers do.
        public var countsAsInvalid: Bool { self == .invalidProductIdFormat || self == .productNotFound }
    }

    /// The Play product id.
    public var productId: String
    /// Why it was not fetched.
    public var status: Status

    /// A product.
    public init(productId: String, status: Status) {
        self.productId = productId
        self.status = status
    }
}

/// One report of identifiers the App Store answered as invalid, validated and ready to store.
public struct InvalidIdentifierReport: Sendable, Hashable {
    /// The app's bundle identifier, from the request's path.
    public var app: String
    /// The client's `reportId` (a UUID, lower case), or one the server made up: the key that
    /// makes a retried report count once.
    public var reportID: String
    /// When the server received it.
    public var receivedAt: Timestamp
    /// Unique, in the order the client sent them.
    public var invalid: [String]
    /// What the app asked the store for, when it said; the denominator of the invalid rate.
    public var requested: [String]?
    /// The platform the app ran on, when it said.
    public var platform: Platform?
    /// The app's version, when it said.
    public var appVersion: AppVersion?
    /// Where the app was running, when it said.
    public var environment: ReportEnvironment?
    /// The App Store storefront the app was in, such as `USA`, when it said.
    public var storefront: String?
    /// The revision of the feed the app was using, when it said.
    public var feedRevision: Int?
    /// An opaque random id per install, for counting distinct clients; never a person's identity.
    /// Chosen by the client, so worth little on its own: see ``network``.
    public var installID: String?
    /// The keyed hash of the client's network (``NetworkHasher``), set by the server from the
    /// connection, never from the body: what one attacker cannot multiply without more machines.
    public var network: String?
    /// The install key of the app's StoreKit `AppTransaction` when the report carried one that
    /// the server verified: an install the App Store vouches for.
    public var verifiedInstall: String?
    /// The app's StoreKit `AppTransaction` JWS as the client sent it, for the server to verify
    /// into ``verifiedInstall``; never stored.
    public var appTransaction: String?
    /// Whether every identifier the app requested came back invalid, as the client sent its
    /// lists (before the server dropped identifiers the app never published); nil when it did
    /// not say what it requested (or sent an empty list). All of them invalid is the store failing, not the products.
    public var allRequestedInvalid: Bool?
    /// What an Android app said Play Billing could not fetch, every status included; those that
    /// count as invalid are in ``invalid`` too. Never stored: counted in `/metrics`.
    public var unfetched: [UnfetchedProduct] = []

    /// A report as received; ``allRequestedInvalid`` is computed from `invalid` and `requested`.
    public init(
        app: String, reportID: String, receivedAt: Timestamp, invalid: [String], requested: [String]? = nil,
        platform: Platform? = nil, appVersion: AppVersion? = nil, environment: ReportEnvironment? = nil,
        storefront: String? = nil, feedRevision: Int? = nil, installID: String? = nil, network: String? = nil,
        verifiedInstall: String? = nil
    ) {
        self.app = app
        self.reportID = reportID
        self.receivedAt = receivedAt
        self.invalid = invalid
        self.requested = requested
        self.platform = platform
        self.appVersion = appVersion
        self.environment = environment
        self.storefront = storefront
        self.feedRevision = feedRevision
        self.installID = installID
        self.network = network
        self.verifiedInstall = verifiedInstall
        // An empty requested list says nothing about what was asked: like no list at all.
        allRequestedInvalid = requested.flatMap { requested in
            guard !requested.isEmpty else { return nil }
            // Most reports name one or two identifiers: a scan beats building a set per report.
            if invalid.count <= 8 { return requested.allSatisfy(invalid.contains) }
            let named = Set(invalid)
            return requested.allSatisfy(named.contains)
        }
    }

    /// On Android every identifier is a Play product id: each becomes the catalog products it is
    /// sold as (`playProducts`: Play id to catalog ids, from the revision served), so that reports
    /// are counted, judged and quarantined by catalog product like the App Store's. A Play id the
    /// catalog does not name is dropped; returns how many invalid ones were.
    public mutating func resolvePlayProducts(_ playProducts: [String: [String]]) -> Int {
        guard platform == .android else { return 0 }
        func resolved(_ ids: [String]) -> [String] {
            var seen = Set<String>()
            return ids.flatMap { playProducts[$0] ?? [] }.filter { seen.insert($0).inserted }
        }
        let unknown = invalid.filter { playProducts[$0] == nil }.count
        invalid = resolved(invalid)
        requested = requested.map(resolved)
        return unknown
    }

    /// Keeps only identifiers that `isPublished` accepts in both lists, and returns how many
    /// invalid ones it dropped: a report may name anything, but only what the app published is
    /// worth a row of evidence (docs/contract.md section 4, bounded intake). ``allRequestedInvalid``
    /// keeps what the client's whole lists said.
    public mutating func keepPublished(_ isPublished: (String) -> Bool) -> Int {
        let before = invalid.count
        invalid.removeAll { !isPublished($0) }
        requested?.removeAll { !isPublished($0) }
        return before - invalid.count
    }
}

/// What storing a report did.
public enum StoreOutcome: Sendable, Hashable {
    /// Committed durably now.
    case stored
    /// A report with the same app and `reportID` was already stored; nothing was written.
    case duplicate
}

/// Which reports an aggregate covers.
public struct AggregateQuery: Sendable, Hashable {
    /// Only this app's reports; nil for every app.
    public var app: String?
    /// Only this identifier's reports; nil for every identifier.
    public var identifier: String?
    /// Reports received at or after this moment; nil for all that retention kept.
    public var since: Timestamp?
    /// How many installs one network may add to ``NetworkEvidence/networkInstalls``.
    public var installsPerNetwork: Int

    /// A query; by default over every report that retention kept, each network adding one install.
    public init(app: String? = nil, identifier: String? = nil, since: Timestamp? = nil, installsPerNetwork: Int = 1) {
        self.app = app
        self.identifier = identifier
        self.since = since
        self.installsPerNetwork = installsPerNetwork
    }
}

/// Reports of one identifier, per app × identifier × platform × environment.
public struct ReportAggregate: Sendable, Hashable, Codable {
    /// The app's bundle identifier.
    public var app: String
    /// The product identifier the reports named invalid.
    public var identifier: String
    /// nil: the reports did not say.
    public var platform: Platform?
    /// nil: the reports did not say.
    public var environment: ReportEnvironment?
    /// Reports that named the identifier invalid.
    public var reports: Int
    /// Distinct `installId`s among them (reports without one are not counted here).
    public var installs: Int
    /// When the first of these reports was received.
    public var firstSeen: Timestamp
    /// When the last of these reports was received.
    public var lastSeen: Timestamp
    /// Distinct values, sorted.
    public var appVersions: [String]
    /// Distinct storefronts, sorted.
    public var storefronts: [String]
    /// Distinct feed revisions, ascending.
    public var feedRevisions: [Int]
    /// Reports whose requested list included the identifier, and how many of those also named
    /// it invalid: the invalid rate's denominator and numerator.
    public var requestedReports: Int
    /// Of those, the reports that named the identifier invalid: the invalid rate's numerator.
    public var invalidWhenRequested: Int

    /// An aggregate with every field given; the lists and the requested counts are empty or zero unless given.
    public init(
        app: String, identifier: String, platform: Platform?, environment: ReportEnvironment?, reports: Int, installs: Int,
        firstSeen: Timestamp, lastSeen: Timestamp, appVersions: [String] = [], storefronts: [String] = [],
        feedRevisions: [Int] = [], requestedReports: Int = 0, invalidWhenRequested: Int = 0
    ) {
        self.app = app
        self.identifier = identifier
        self.platform = platform
        self.environment = environment
        self.reports = reports
        self.installs = installs
        self.firstSeen = firstSeen
        self.lastSeen = lastSeen
        self.appVersions = appVersions
        self.storefronts = storefronts
        self.feedRevisions = feedRevisions
        self.requestedReports = requestedReports
        self.invalidWhenRequested = invalidWhenRequested
    }

    /// The share of requests for the identifier that the store answered invalid, when clients
    /// sent what they requested, counted by report: what `catalog reports` shows. The policy
    /// counts by network instead (``NetworkEvidence/invalidRate``), since one network can send
    /// any number of reports.
    public var invalidRate: Double? {
        requestedReports > 0 ? Double(invalidWhenRequested) / Double(requestedReports) : nil
    }
}

/// How many reports named one identifier invalid on one UTC day: a point of the dashboard's chart.
public struct DailyReportCount: Sendable, Hashable {
    /// Days since 1970-01-01, UTC.
    public var day: Int64
    /// Reports received that day that named the identifier invalid.
    public var reports: Int

    /// The count of one day.
    public init(day: Int64, reports: Int) {
        self.day = day
        self.reports = reports
    }

    /// Seconds in a UTC day: a day's number times this is its first second since 1970.
    public static let secondsPerDay: Int64 = 86_400
}

/// The evidence that can quarantine, counted so that one machine cannot multiply it: production
/// reports only, across platforms, by the networks they came from.
///
/// For an identifier, only *product* reports count: those that said what they requested and had
/// some of it answered valid. For a store-wide failure (``identifier`` nil), only the reports in
/// which every requested identifier came back invalid.
///
/// An identifier's evidence also carries its invalid rate, counted the same way: each network
/// one voice, weighed as its installs are (docs/feedback.md, "The policy"), so that no number of
/// reports from one network outweighs other networks.
public struct NetworkEvidence: Sendable, Hashable, Codable {
    /// The app's bundle identifier.
    public var app: String
    /// nil: the app's store-wide reports.
    public var identifier: String?
    /// Production reports counted: product reports naming the identifier invalid, or the app's store-wide reports.
    public var reports: Int
    /// Distinct networks among the reports.
    public var networks: Int
    /// Unverified installs, at most ``AggregateQuery/installsPerNetwork`` from each network; a
    /// network whose reports name no install counts as one.
    public var networkInstalls: Int
    /// Distinct verified installs: the App Store vouches for each, so no network cap applies.
    public var verifiedInstalls: Int
    /// The invalid rate's denominator: the voices among the production reports that asked for
    /// the identifier (any report with it in its requested list, store-wide ones included). A
    /// network's voice weighs its distinct installs among those reports, at most
    /// ``AggregateQuery/installsPerNetwork`` (one when they name none); a verified install's
    /// voice weighs one; reports stored without a network are one network together. Zero for
    /// store-wide evidence.
    public var requestWeight: Double
    /// The invalid rate's numerator: each voice's weight times the share of its own requests for
    /// the identifier that came back invalid, so that a voice adds at most its weight.
    public var invalidWeight: Double

    /// Evidence with every count given; verified installs and the rate's weights are zero unless given.
    public init(
        app: String, identifier: String?, reports: Int, networks: Int, networkInstalls: Int, verifiedInstalls: Int = 0,
        requestWeight: Double = 0, invalidWeight: Double = 0
    ) {
        self.app = app
        self.identifier = identifier
        self.reports = reports
        self.networks = networks
        self.networkInstalls = networkInstalls
        self.verifiedInstalls = verifiedInstalls
        self.requestWeight = requestWeight
        self.invalidWeight = invalidWeight
    }

    /// What the quarantine threshold is compared with.
    public var countedInstalls: Int { networkInstalls + verifiedInstalls }

    /// The share of production requests for the identifier that came back invalid, each network
    /// (or verified install) one voice: what the policy's `minimumInvalidRate` is compared with.
    /// nil when no production report said it asked for the identifier.
    public var invalidRate: Double? { requestWeight > 0 ? invalidWeight / requestWeight : nil }
}

/// Durable storage of reports: SQLite by default, PostgreSQL to share one store between replicas.
///
/// Implementations apply their migrations when opened, commit a call's reports in one
/// transaction (callers batch concurrent requests: group commit), and return only once the
/// transaction is durable.
public protocol ReportStore: Sendable {
    /// Stores each report unless one with the same app and `reportID` is already stored, in one
    /// durable transaction; outcomes are in the order of `reports`.
    func store(_ reports: [InvalidIdentifierReport]) async throws -> [StoreOutcome]
    /// `store` for a caller that does not wait: `completion` gets what it returns. A store that
    /// commits on a thread of its own calls back from there, so that its caller can go on to the
    /// next batch without a hop; the default runs `store` in a task.
    func store(
        _ reports: [InvalidIdentifierReport], completion: @escaping @Sendable (Result<[StoreOutcome], any Error>) -> Void)
    /// Aggregates per app × identifier × platform × environment, most distinct installs first.
    func aggregate(_ query: AggregateQuery) async throws -> [ReportAggregate]
    /// Reports of `app` that named `identifier` invalid, received at or after `since`, per UTC
    /// day; only days with reports, oldest first.
    func dailyCounts(app: String, identifier: String, since: Timestamp) async throws -> [DailyReportCount]
    /// The quarantine evidence of each identifier the query covers (``NetworkEvidence``), with its
    /// invalid rate, most counted installs first; identifiers with no evidence are left out,
    /// whatever their rate.
    func networkEvidence(_ query: AggregateQuery) async throws -> [NetworkEvidence]
    /// The store-wide failure evidence of `query.app` (``NetworkEvidence`` with no identifier);
    /// nil when there is none.
    func storeWideEvidence(_ query: AggregateQuery) async throws -> NetworkEvidence?
    /// Deletes raw reports received before `moment`; returns how many.
    func prune(receivedBefore moment: Timestamp) async throws -> Int
    /// Deletes each app's raw reports past its `quota`, the heaviest network's first: a report's
    /// depth is its place among its network's reports, newest first, and the deepest go first
    /// (the oldest among equals), so that one network's flood cannot push out the others'
    /// evidence. Returns how many, by app (apps with none pruned are left out).
    func prune(keepingPerApp quota: Int) async throws -> [String: Int]
    /// Whether the store answers: a trivial query.
    func ping() async throws
    /// Releases connections; the store is unusable afterwards.
    func close() async throws
}

extension ReportStore {
    /// Runs ``store(_:)`` in a high-priority task and calls `completion` with what it returns or throws.
    public func store(
        _ reports: [InvalidIdentifierReport], completion: @escaping @Sendable (Result<[StoreOutcome], any Error>) -> Void
    ) {
        // High priority: the group committer's next batch waits for this; behind the request
        // handlers its completions just woke, every waiting report would wait longer.
        Task(priority: .high) {
            do {
                completion(.success(try await store(reports)))
            } catch {
                completion(.failure(error))
            }
        }
    }
}
