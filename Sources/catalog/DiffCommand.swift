import ArgumentParser
import CatalogKit
import Foundation

struct DiffCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "Show the products added, changed (field by field), removed, quarantined and released.",
        discussion: """
            With two revisions, from FROM to TO; with one, from it to the current revision; with \
            none, from the current revision to what the next 'catalog build' would publish. Exit \
            status: 0 on success, 1 for an unknown app or revision or sources with errors, 64 on misuse.
            """
    )

    @OptionGroup var config: ConfigOptions
    @OptionGroup var options: CatalogOptions

    @Argument(help: "The app's bundle identifier.")
    var app: String

    @Argument(help: "The revision to compare from (default: the current one, against the sources).")
    var from: Int?

    @Argument(help: "The revision to compare to (default: the current one).")
    var to: Int?

    func validate() throws {
        if let problem = AppName.problem(app) { throw ValidationError(problem) }
        for revision in [from, to].compactMap({ $0 }) where revision < 1 {
            throw ValidationError("revisions count from 1; '\(revision)' is not one")
        }
    }

    func run() async throws {
        let workflow = try options.workflow(config.settings())
        let result = try await exitOnFailure { try workflow.diff(app: app, from: from, to: to, at: .now) }
        let changes = result.diff.outline
        print("\(result.app): \(result.from?.description ?? "nothing published") → \(result.to): \(changes)")
        for line in diffLines(result.diff) { print(line) }
    }
}
