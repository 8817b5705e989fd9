import ArgumentParser
import CatalogKit
import Foundation
import Logging
import PropertyList

struct ReportsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reports",
        abstract: "Show invalid-identifier reports, aggregated per app, identifier, platform and environment.",
        discussion: "Most affected first: distinct installs, then reports."
    )

    @OptionGroup var storeOptions: StoreOptions

    @Option(help: "Only this app (bundle identifier).")
    var app: String?

    @Option(help: ArgumentHelp("Only reports received within this time: 90s, 30m, 24h, 7d, 2w.", valueName: "duration"))
    var since: Interval?

    @Flag(help: "Print JSON instead of a table.")
    var json = false

    func validate() throws {
        if let app, let problem = AppName.problem(app) { throw ValidationError(problem) }
    }

    func run() async throws {
        let now = Timestamp.now
        let from = since.map { Timestamp(secondsSince1970: now.secondsSince1970 - $0.seconds) }
        let aggregates = try await storeOptions.withStore(logger: Logger(label: "catalog.reports")) { store in
            try await store.aggregate(AggregateQuery(app: app, since: from))
        }
        if json {
            print(String(decoding: try ReportsJSON(since: from, aggregates: aggregates).encoded(), as: UTF8.self))
        } else if aggregates.isEmpty {
            print("No reports\(since.map { " in the last \($0)" } ?? "")\(app.map { " for \($0)" } ?? "").")
        } else {
            print(table(aggregates))
        }
    }

    private func table(_ aggregates: [ReportAggregate]) -> String {
        var rows = [["APP", "IDENTIFIER", "PLATFORM", "ENVIRONMENT", "INSTALLS", "REPORTS", "INVALID RATE", "FIRST SEEN", "LAST SEEN", "VERSIONS"]]
        for aggregate in aggregates {
            rows.append([
                aggregate.app, aggregate.identifier, aggregate.platform?.name ?? "-", aggregate.environment?.rawValue ?? "-",
                String(aggregate.installs), String(aggregate.reports),
                aggregate.invalidRate.map { String(format: "%.2f", $0) } ?? "-",
                aggregate.firstSeen.iso8601, aggregate.lastSeen.iso8601, aggregate.appVersions.joined(separator: " "),
            ])
        }
        // One app asked for: its name on every row says nothing.
        if app != nil { rows = rows.map { Array($0.dropFirst()) } }
        let widths = rows[0].indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            zip(row, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  ")
                .trimmingCharacters(in: .whitespaces)
        }.joined(separator: "\n")
    }
}

/// `catalog reports --json`: the aggregates with their invalid rate spelled out.
private struct ReportsJSON: Encodable {
    var since: Timestamp?
    var aggregates: [Row]

    init(since: Timestamp?, aggregates: [ReportAggregate]) {
        self.since = since
        self.aggregates = aggregates.map(Row.init)
    }

    /// An aggregate's members plus its invalid rate, which is computed rather than stored.
    struct Row: Encodable {
        let aggregate: ReportAggregate
        private enum Key: String, CodingKey { case invalidRate }

        func encode(to encoder: any Encoder) throws {
            try aggregate.encode(to: encoder)
            var container = encoder.container(keyedBy: Key.self)
            try container.encodeIfPresent(aggregate.invalidRate, forKey: .invalidRate)
        }
    }

    func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }
}
