import ArgumentParser
import CatalogKit
import Foundation
import Logging
import Time

struct ReportsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reports",
        abstract: "Show invalid-identifier reports, aggregated per app, identifier, platform and environment.",
        discussion: """
            Most affected first: distinct installs, then reports. The verdict column is what \
            'catalog feedback' would decide now under each app's policy in the catalog sources; \
            a quarantine not yet in force says what is still to run: 'quarantined (next feedback \
            run)' before 'catalog feedback' has recorded it, 'quarantined (next build)' before \
            'catalog build' has taken it off sale.
            """
    )

    @OptionGroup var config: ConfigOptions
    @OptionGroup var options: CatalogOptions
    @OptionGroup var storeOptions: StoreOptions

    @Option(help: "Only this app (bundle identifier). Default: every app.")
    var app: String?

    @Option(help: ArgumentHelp("Only reports received within this time: 90s, 30m, 24h, 7d, 2w. Default: all.", valueName: "duration"))
    var since: Interval?

    @Flag(help: "Print JSON instead of a table.")
    var json = false

    func validate() throws {
        if let app, let problem = AppName.problem(app) { throw ValidationError(problem) }
    }

    func run() async throws {
        let now = Timestamp.now
        let from = since?.before(now)
        let settings = try config.settings()
        // The reports are the store's: without sources here, they are shown without verdicts.
        let paths = try options.paths(settings, sourcesRequired: false)
        if !paths.hasSources {
            FileHandle.standardError.write(Array("no catalog sources at '\(paths.catalog)': verdicts are not shown\n".utf8))
        }
        let workflow = paths.workflow
        let document = try await storeOptions.withStore(settings, logger: Logger(label: "catalog.reports")) { store in
            try await workflow.reports(store: store, app: app, since: from, at: now)
        }
        let aggregates = document.aggregates
        if json {
            print(String(decoding: try prettyJSON(document), as: UTF8.self))
            return
        }
        for (app, alert) in document.alerts.sorted(by: { $0.key < $1.key }) {
            print("\(app): alert since \(alert.since.iso8601): \(alert.message)")
        }
        if aggregates.isEmpty {
            print("No reports\(since.map { " in the last \($0)" } ?? "")\(app.map { " for \($0)" } ?? "").")
        } else {
            print(table(aggregates, workflow))
        }
    }

    private func table(_ found: [ReportsDocument.Row], _ workflow: CatalogWorkflow) -> String {
        var rows = [
            [
                "APP", "IDENTIFIER", "VERDICT", "PLATFORM", "ENVIRONMENT", "INSTALLS", "REPORTS", "INVALID RATE", "FIRST SEEN", "LAST SEEN",
                "VERSIONS", "PROBABLE CAUSE",
            ]
        ]
        let states = Dictionary(
            uniqueKeysWithValues: Set(found.map(\.aggregate.app)).map { ($0, QuarantineState(app: $0, workflow)) })
        for (aggregate, verdict) in found.map({ ($0.aggregate, $0.verdict) }) {
            rows.append([
                aggregate.app, aggregate.identifier,
                verdict.map { verdictCell($0, identifier: aggregate.identifier, in: states[aggregate.app]) } ?? "-",
                aggregate.platform?.name ?? "-", aggregate.environment?.rawValue ?? "-",
                String(aggregate.installs), String(aggregate.reports),
                aggregate.invalidRate.map { String(format: "%.2f", $0) } ?? "-",
                aggregate.firstSeen.iso8601, aggregate.lastSeen.iso8601, aggregate.appVersions.joined(separator: " "),
                verdict?.cause?.code.rawValue ?? "-",
            ])
        }
        // One app asked for: its name on every row says nothing.
        if app != nil { rows = rows.map { Array($0.dropFirst()) } }
        return formatTable(rows)
    }

    /// The verdict as it stands: a quarantine is only in force once a feedback run has written
    /// it and a build has published it, so the cell says which of the two is still to run.
    private func verdictCell(_ verdict: Verdict, identifier: String, in state: QuarantineState?) -> String {
        guard verdict.status == .quarantined, let state else { return verdict.status.rawValue }
        if state.published.contains(identifier) { return "quarantined" }
        return state.recorded.contains(identifier) ? "quarantined (next build)" : "quarantined (next feedback run)"
    }

    /// An app's quarantines where they are in force: the published revision, and the feedback file.
    private struct QuarantineState {
        var published: Set<String>
        var recorded: Set<String>

        init(app: String, _ workflow: CatalogWorkflow) {
            published = Set((try? PublicTree(root: workflow.publicDirectory).currentManifest(app))??.quarantined ?? [])
            let file = FeedbackFile.read(workflow.feedbackURL(app), displayPath: FeedbackFile.name(for: app)).file
            recorded = Set(file?.quarantined.keys.map { $0 } ?? [])
        }
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
