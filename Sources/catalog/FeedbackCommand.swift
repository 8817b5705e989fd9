import ArgumentParser
import CatalogKit
import Foundation
import Logging

struct FeedbackCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "feedback",
        abstract: "Judge the invalid-identifier reports by each app's policy and write the verdicts into the catalog.",
        discussion: """
            Writes catalog/<app>.feedback.plist for each app whose verdicts changed, and prints \
            every verdict change. Run 'catalog build' afterwards to publish quarantines. Exit \
            status: 0 on success, 1 on errors, 64 on misuse.
            """,
        subcommands: [ReleaseCommand.self]
    )

    @OptionGroup var options: CatalogOptions
    @OptionGroup var storeOptions: StoreOptions

    func run() async throws {
        let run = try await storeOptions.withStore(logger: Logger(label: "catalog.feedback")) { store in
            do {
                return try await options.workflow.runFeedback(store: store, at: .now)
            } catch {
                printError("\(error)")
                throw ExitCode(1)
            }
        }
        report(run.diagnostics)
        for change in run.changes { print(change) }
        if run.hasErrors { throw ExitCode(1) }
    }

    struct ReleaseCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "release",
            abstract: "Clear an identifier's verdict: reports received until now no longer count.",
            discussion: "Run 'catalog build' afterwards to offer it again. Exit status: 0 released, 1 on errors, 64 on misuse."
        )

        @OptionGroup var options: CatalogOptions

        @Argument(help: "The app's bundle identifier.")
        var app: String

        @Argument(help: "The product identifier to release.")
        var identifier: String

        func run() throws {
            do {
                print(try options.workflow.releaseFeedback(app: app, identifier: identifier, at: .now))
            } catch let error as CatalogWorkflow.ReleaseError {
                report(error.diagnostics)
                printError("\(error)")
                throw ExitCode(1)
            } catch {
                printError("\(error)")
                throw ExitCode(1)
            }
        }
    }
}
