import CatalogKit
import Time

/// The two halves of an aggregate as both engines' queries return them, and their assembly
/// into `ReportAggregate`s: one place for what the columns mean and how results are ordered.
struct InvalidRow {
    var app: String
    var identifier: String
    var platform: String?
    var environment: String?
    var reports: Int
    var installs: Int
    var firstSeen: Int64
    var lastSeen: Int64
    /// `group_concat`/`string_agg` of distinct values, comma-separated (values never contain commas).
    var appVersions: String?
    var storefronts: String?
    var feedRevisions: String?
}

/// How often an identifier was requested, and of those how often named invalid.
struct RequestedRow {
    var app: String
    var identifier: String
    var platform: String?
    var environment: String?
    var requested: Int
    var invalidWhenRequested: Int
}

enum AggregateAssembly {
    /// Joins the rows on app × identifier × platform × environment, most distinct installs first,
    /// then most reports, then by name so that the order is stable.
    static func assemble(_ invalid: [InvalidRow], requested: [RequestedRow]) -> [ReportAggregate] {
        struct Key: Hashable {
            var app, identifier: String
            var platform, environment: String?
        }
        var requestedByKey: [Key: RequestedRow] = [:]
        for row in requested {
            requestedByKey[Key(app: row.app, identifier: row.identifier, platform: row.platform, environment: row.environment)] = row
        }
        let aggregates = invalid.map { row in
            let asked = requestedByKey[Key(app: row.app, identifier: row.identifier, platform: row.platform, environment: row.environment)]
            return ReportAggregate(
                app: row.app, identifier: row.identifier, platform: row.platform.flatMap(Platform.init(rawValue:)),
                environment: row.environment.flatMap(ReportEnvironment.init(rawValue:)), reports: row.reports, installs: row.installs,
                firstSeen: Timestamp(secondsSince1970: row.firstSeen), lastSeen: Timestamp(secondsSince1970: row.lastSeen),
                appVersions: distinct(row.appVersions).sorted { (AppVersion($0) ?? .zero) < (AppVersion($1) ?? .zero) },
                storefronts: distinct(row.storefronts).sorted(),
                feedRevisions: distinct(row.feedRevisions).compactMap { Int($0) }.sorted(),
                requestedReports: asked?.requested ?? 0, invalidWhenRequested: asked?.invalidWhenRequested ?? 0)
        }
        return aggregates.sorted { a, b in
            if a.installs != b.installs { return a.installs > b.installs }
            if a.reports != b.reports { return a.reports > b.reports }
            return (a.app, a.identifier, a.platform?.rawValue ?? "", a.environment?.rawValue ?? "")
                < (b.app, b.identifier, b.platform?.rawValue ?? "", b.environment?.rawValue ?? "")
        }
    }

    private static func distinct(_ list: String?) -> [String] {
        guard let list, !list.isEmpty else { return [] }
        return Array(Set(list.split(separator: ",").map(String.init)))
    }
}
