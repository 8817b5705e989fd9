import ArgumentParser
import CatalogKit
import Foundation
import Logging
import PropertyList

struct ReportsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reports",
        abstract: "Show invalid-identifier reports, aggregated per app, identifier, platform and environment.",
        discussion: """
            Most affected first: distinct installs, then reports. The verdict column is what \
            'catalog feedback' would decide now under each app's policy in the catalog sources.
            """
    )

    @OptionGroup var options: CatalogOptions
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
        let (aggregates, verdicts) = try await storeOptions.withStore(logger: Logger(label: "catalog.reports")) { store in
            let aggregates = try await store.aggregate(AggregateQuery(app: app, since: from))
            // Sources with errors are not judged: their rows show no verdict.
            let judged = try await options.workflow.judgeFeedback(store: store, at: now).apps
            let verdicts = Dictionary(uniqueKeysWithValues: judged.map { ($0.app, $0.verdicts.feedback.verdicts) })
            return (aggregates, verdicts)
        }
        if json {
            print(String(decoding: try prettyJSON(ReportsJSON(since: from, aggregates: aggregates, verdicts: verdicts)), as: UTF8.self))
        } else if aggregates.isEmpty {
            print("No reports\(since.map { " in the last \($0)" } ?? "")\(app.map { " for \($0)" } ?? "").")
        } else {
            print(table(aggregates, verdicts: verdicts))
        }
    }

    private func table(_ aggregates: [ReportAggregate], verdicts: [String: [String: Verdict]]) -> String {
        var rows = [
            [
                "APP", "IDENTIFIER", "VERDICT", "PLATFORM", "ENVIRONMENT", "INSTALLS", "REPORTS", "INVALID RATE", "FIRST SEEN", "LAST SEEN",
                "VERSIONS",
            ]
        ]
        for aggregate in aggregates {
            rows.append([
                aggregate.app, aggregate.identifier, verdicts[aggregate.app]?[aggregate.identifier]?.status.rawValue ?? "-",
                aggregate.platform?.name ?? "-", aggregate.environment?.rawValue ?? "-",
                String(aggregate.installs), String(aggregate.reports),
                aggregate.invalidRate.map { String(format: "%.2f", $0) } ?? "-",
                aggregate.firstSeen.iso8601, aggregate.lastSeen.iso8601, aggregate.appVersions.joined(separator: " "),
            ])
        }
        // One app asked for: its name on every row says nothing.
        if app != nil { rows = rows.map { Array($0.dropFirst()) } }
        return formatTable(rows)
    }
}

/// Rows as columns padded to their widest cell, two spaces apart; the first row is the header.
func formatTable(_ rows: [[String]]) -> String {
    let widths = rows[0].indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
    return rows.map { row in
        zip(row, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  ")
            .trimmingCharacters(in: .whitespaces)
    }.joined(separator: "\n")
}

/// Sorted keys, indented: output people read and tools parse.
func prettyJSON(_ value: some Encodable) throws -> Data {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    return try encoder.encode(value)
}

/// `catalog reports --json`: the aggregates with their invalid rate spelled out.
private struct ReportsJSON: Encodable {
    var since: Timestamp?
    var aggregates: [Row]

    init(since: Timestamp?, aggregates: [ReportAggregate], verdicts: [String: [String: Verdict]]) {
        self.since = since
        self.aggregates = aggregates.map { Row(aggregate: $0, verdict: verdicts[$0.app]?[$0.identifier]) }
    }

    /// An aggregate's members plus its invalid rate, which is computed rather than stored, and
    /// the identifier's verdict.
    struct Row: Encodable {
        let aggregate: ReportAggregate
        let verdict: Verdict?
        private enum Key: String, CodingKey { case invalidRate, verdict, reason }

        func encode(to encoder: any Encoder) throws {
            try aggregate.encode(to: encoder)
            var container = encoder.container(keyedBy: Key.self)
            try container.encodeIfPresent(aggregate.invalidRate, forKey: .invalidRate)
            try container.encodeIfPresent(verdict?.status.rawValue, forKey: .verdict)
            try container.encodeIfPresent(verdict?.reason, forKey: .reason)
        }
    }

}
