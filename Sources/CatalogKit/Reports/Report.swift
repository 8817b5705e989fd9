import PropertyList

/// Where a report's app was running when the store answered (PRODUCT.md section 4).
public enum ReportEnvironment: String, CaseIterable, Sendable, Hashable, Codable {
    case production
    case sandbox
    case xcode

    /// Only production answers can quarantine: sandbox and Xcode's local store are noisy by design.
    public var canQuarantine: Bool { self == .production }

    static let expectedList = "production, sandbox or xcode"
}

/// One report of identifiers the App Store answered as invalid, validated and ready to store.
public struct InvalidIdentifierReport: Sendable, Hashable {
    public var app: String
    /// The client's `reportId` (a UUID, lower case), or one the server made up: the key that
    /// makes a retried report count once.
    public var reportID: String
    public var receivedAt: Timestamp
    /// Unique, in the order the client sent them.
    public var invalid: [String]
    /// What the app asked the store for, when it said; the denominator of the invalid rate.
    public var requested: [String]?
    public var platform: Platform?
    public var appVersion: AppVersion?
    public var environment: ReportEnvironment?
    public var storefront: String?
    public var feedRevision: Int?
    /// An opaque random id per install, for counting distinct clients; never a person's identity.
    public var installID: String?

    public init(
        app: String, reportID: String, receivedAt: Timestamp, invalid: [String], requested: [String]? = nil,
        platform: Platform? = nil, appVersion: AppVersion? = nil, environment: ReportEnvironment? = nil,
        storefront: String? = nil, feedRevision: Int? = nil, installID: String? = nil
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
    public var app: String?
    public var identifier: String?
    /// Reports received at or after this moment; nil for all that retention kept.
    public var since: Timestamp?

    public init(app: String? = nil, identifier: String? = nil, since: Timestamp? = nil) {
        self.app = app
        self.identifier = identifier
        self.since = since
    }
}

/// Reports of one identifier, per app × identifier × platform × environment.
public struct ReportAggregate: Sendable, Hashable, Codable {
    public var app: String
    public var identifier: String
    /// nil: the reports did not say.
    public var platform: Platform?
    public var environment: ReportEnvironment?
    /// Reports that named the identifier invalid.
    public var reports: Int
    /// Distinct `installId`s among them (reports without one are not counted here).
    public var installs: Int
    public var firstSeen: Timestamp
    public var lastSeen: Timestamp
    /// Distinct values, sorted.
    public var appVersions: [String]
    public var storefronts: [String]
    public var feedRevisions: [Int]
    /// Reports whose requested list included the identifier, and how many of those also named
    /// it invalid: the invalid rate's denominator and numerator.
    public var requestedReports: Int
    public var invalidWhenRequested: Int

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
    /// sent what they requested.
    public var invalidRate: Double? {
        requestedReports > 0 ? Double(invalidWhenRequested) / Double(requestedReports) : nil
    }
}

/// How many reports named one identifier invalid on one UTC day: a point of the dashboard's chart.
public struct DailyReportCount: Sendable, Hashable {
    /// Days since 1970-01-01, UTC.
    public var day: Int64
    public var reports: Int

    public init(day: Int64, reports: Int) {
        self.day = day
        self.reports = reports
    }

    public static let secondsPerDay: Int64 = 86_400
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
    /// Deletes raw reports received before `moment`; returns how many.
    func prune(receivedBefore moment: Timestamp) async throws -> Int
    /// Whether the store answers: a trivial query.
    func ping() async throws
    /// Releases connections; the store is unusable afterwards.
    func close() async throws
}

extension ReportStore {
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
