import CatalogKit
import PropertyList

/// A ``ReportStore`` in memory, with the aggregation semantics of the real stores, for tests of
/// what is built on the protocol (the feedback loop); it also records the queries it answered.
public actor InMemoryReportStore: ReportStore {
    public private(set) var reports: [InvalidIdentifierReport] = []
    public private(set) var queries: [AggregateQuery] = []

    public init(_ reports: [InvalidIdentifierReport] = []) {
        self.reports = reports
    }

    public func store(_ batch: [InvalidIdentifierReport]) async throws -> [StoreOutcome] {
        batch.map { report in
            if reports.contains(where: { $0.app == report.app && $0.reportID == report.reportID }) { return .duplicate }
            reports.append(report)
            return .stored
        }
    }

    public func aggregate(_ query: AggregateQuery) async throws -> [ReportAggregate] {
        queries.append(query)
        struct Key: Hashable {
            var app: String
            var identifier: String
            var platform: Platform?
            var environment: ReportEnvironment?
        }
        var rows: [Key: ReportAggregate] = [:]
        var installs: [Key: Set<String>] = [:]
        var requested: [Key: (requested: Int, invalid: Int)] = [:]
        for report in reports where query.app.map({ $0 == report.app }) ?? true {
            if let since = query.since, report.receivedAt < since { continue }
            func key(_ identifier: String) -> Key {
                Key(app: report.app, identifier: identifier, platform: report.platform, environment: report.environment)
            }
            for identifier in report.requested ?? [] where query.identifier.map({ $0 == identifier }) ?? true {
                requested[key(identifier), default: (0, 0)].requested += 1
                if report.invalid.contains(identifier) { requested[key(identifier), default: (0, 0)].invalid += 1 }
            }
            for identifier in report.invalid where query.identifier.map({ $0 == identifier }) ?? true {
                let key = key(identifier)
                var row =
                    rows[key]
                    ?? ReportAggregate(
                        app: report.app, identifier: identifier, platform: report.platform, environment: report.environment, reports: 0,
                        installs: 0, firstSeen: report.receivedAt, lastSeen: report.receivedAt)
                row.reports += 1
                row.firstSeen = min(row.firstSeen, report.receivedAt)
                row.lastSeen = max(row.lastSeen, report.receivedAt)
                if let version = report.appVersion?.description, !row.appVersions.contains(version) { row.appVersions.append(version) }
                if let storefront = report.storefront, !row.storefronts.contains(storefront) { row.storefronts.append(storefront) }
                if let revision = report.feedRevision, !row.feedRevisions.contains(revision) { row.feedRevisions.append(revision) }
                if let install = report.installID { installs[key, default: []].insert(install) }
                rows[key] = row
            }
        }
        return rows.map { key, row in
            var row = row
            row.installs = installs[key]?.count ?? 0
            row.appVersions.sort { left, right in
                if let a = AppVersion(left), let b = AppVersion(right) { return a < b }
                return left < right
            }
            row.storefronts.sort()
            row.feedRevisions.sort()
            row.requestedReports = requested[key]?.requested ?? 0
            row.invalidWhenRequested = requested[key]?.invalid ?? 0
            return row
        }
        .sorted {
            ($1.installs, $0.identifier, $0.environment?.rawValue ?? "") < ($0.installs, $1.identifier, $1.environment?.rawValue ?? "")
        }
    }

    public func prune(receivedBefore moment: Timestamp) async throws -> Int {
        let before = reports.count
        reports.removeAll { $0.receivedAt < moment }
        return before - reports.count
    }

    public func ping() async throws {}

    public func close() async throws {}
}

/// Reports of `identifier` invalid from `installs` distinct installs, one report each, as a
/// client of `app` sends them.
public func invalidReports(
    _ identifier: String, installs: Int, app: String = "com.example.app", at moment: Timestamp,
    environment: ReportEnvironment? = .production, platform: Platform? = .iOS, requested: [String]? = nil, installPrefix: String = "install"
) -> [InvalidIdentifierReport] {
    (0..<installs).map { index in
        InvalidIdentifierReport(
            app: app, reportID: "\(installPrefix)-\(identifier)-\(moment.secondsSince1970)-\(index)", receivedAt: moment,
            invalid: [identifier],
            requested: requested, platform: platform, appVersion: AppVersion("2.3"), environment: environment, storefront: "USA",
            feedRevision: 1, installID: "\(installPrefix)-\(index)")
    }
}
