import ArgumentParser
import CatalogKit
import Foundation

struct HistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "List an app's revisions, newest first: when, who, why, and what changed.",
        discussion: """
            Each revision's product changes are counted against the revision before it. Exit \
            status: 0 on success, 1 for an unknown app or unreadable history, 64 on misuse.
            """
    )

    @OptionGroup var config: ConfigOptions
    @OptionGroup var options: CatalogOptions

    @Argument(help: "The app's bundle identifier.")
    var app: String

    @Option(help: "Show at most this many revisions. Default: all.")
    var limit: Int?

    @Flag(help: "Print a JSON array instead of text.")
    var json = false

    func validate() throws {
        if let problem = AppName.problem(app) { throw ValidationError(problem) }
        if let limit, limit < 1 { throw ValidationError("--limit must be 1 or more") }
    }

    func run() async throws {
        let workflow = try options.workflow(config.settings())
        let revisions = try await exitOnFailure { try workflow.history(app: app, limit: limit) }
        if json {
            print(String(decoding: try prettyJSON(revisions), as: UTF8.self))
            return
        }
        print(revisions.map(Self.text).joined(separator: "\n"), terminator: "")
    }

    /// A revision as a short block: a heading line, the message, the changes.
    static func text(_ revision: RevisionSummary) -> String {
        var lines = ["revision \(revision.revision)  \(revision.publishedAt)  \(revision.author ?? "(author unknown)")"]
        if let message = revision.message { lines.append("  \(message)") }
        let counts = [
            (revision.added, "added"), (revision.changed, "changed"), (revision.removed, "removed"),
            (revision.quarantined, "quarantined"), (revision.released, "released"),
        ].filter { $0.0 > 0 }
        lines.append("  " + (counts.isEmpty ? "no product changes" : counts.map { "\($0.0) \($0.1)" }.joined(separator: ", ")))
        return lines.joined(separator: "\n") + "\n"
    }
}
