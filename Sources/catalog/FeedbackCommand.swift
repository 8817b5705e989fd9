import ArgumentParser
import CatalogKit
import Foundation
import Logging
import Storage
import Time

struct FeedbackCommand: AsyncParsableCommand {
    // The judging run is a default subcommand rather than the parent's own run: options on the
    // parent are validated before a subcommand is reached, so outside a catalog folder
    // `catalog feedback release --help` answered with the parent's usage.
    static let configuration = CommandConfiguration(
        commandName: "feedback",
        abstract: "Judge the invalid-identifier reports by each app's policy and write the verdicts into the catalog.",
        discussion: """
            'catalog feedback' alone runs 'catalog feedback run', which takes --catalog, --public \
            and --store (see 'catalog feedback run --help'). Exit status: 0 on success, 1 on \
            errors, 64 on misuse.
            """,
        subcommands: [RunCommand.self, ReleaseCommand.self, QuarantineCommand.self],
        defaultSubcommand: RunCommand.self
    )

    struct RunCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "run",
            abstract: "Judge the reports by each app's policy and write the verdicts into the catalog.",
            discussion: """
                Writes catalog/<app>.feedback.plist for each app whose verdicts changed, and prints \
                every verdict change. Run 'catalog build' afterwards to publish quarantines. Exit \
                status: 0 on success, 1 on errors, 64 on misuse.
                """
        )

        @OptionGroup var config: ConfigOptions
        @OptionGroup var options: CatalogOptions
        @OptionGroup var storeOptions: StoreOptions

        func run() async throws {
            let now = Timestamp.now
            let settings = try config.settings()
            let workflow = try options.workflow(settings)
            let url = try storeOptions.url(settings)
            // Verdicts are only as good as the store they were judged from: say which one.
            FileHandle.standardError.write(Array("judging the reports in \(url)\n".utf8))
            let run = try await StoreOptions.withStore(url, logger: Logger(label: "catalog.feedback")) { store in
                try await FeedbackCommand.refuseJudgingWithoutReports(workflow, store: store, url: url)
                let run = try await exitOnFailure { try await workflow.runFeedback(store: store, at: now) }
                for entry in AuditEntry.feedback(run.changes, actor: LocalUser.name, at: now) { try await store.appendAudit(entry) }
                return run
            }
            report(run.diagnostics)
            for change in run.changes { print(change) }
            for (app, alert) in run.alerts.sorted(by: { $0.key < $1.key }) { print("\(app): alert: \(alert.message)") }
            if run.hasErrors { throw ExitCode(1) }
        }
    }

    struct QuarantineCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "quarantine",
            abstract: "Quarantine an identifier by an editor's decision, past the quarantine budget or a store-wide alert.",
            discussion: "Run 'catalog build' afterwards to take it off sale. Exit status: 0 quarantined, 1 on errors, 64 on misuse."
        )

        @OptionGroup var config: ConfigOptions
        @OptionGroup var options: CatalogOptions
        @OptionGroup var storeOptions: StoreOptions

        @Argument(help: "The app's bundle identifier.")
        var app: String

        @Argument(help: "The product identifier to take off sale.")
        var identifier: String

        func run() async throws {
            let settings = try config.settings()
            let workflow = try options.workflow(settings)
            try await FeedbackCommand.decide(storeOptions.url(settings)) { now in
                try workflow.confirmQuarantine(app: app, identifier: identifier, by: LocalUser.name, at: now)
            }
        }
    }

    struct ReleaseCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "release",
            abstract: "Clear an identifier's verdict: reports received until now no longer count.",
            discussion: "Run 'catalog build' afterwards to offer it again. Exit status: 0 released, 1 on errors, 64 on misuse."
        )

        @OptionGroup var config: ConfigOptions
        @OptionGroup var options: CatalogOptions
        @OptionGroup var storeOptions: StoreOptions

        @Argument(help: "The app's bundle identifier.")
        var app: String

        @Argument(help: "The product identifier to release.")
        var identifier: String

        func run() async throws {
            let settings = try config.settings()
            let workflow = try options.workflow(settings)
            try await FeedbackCommand.decide(storeOptions.url(settings)) { now in
                try workflow.releaseFeedback(app: app, identifier: identifier, at: now)
            }
        }
    }

    /// An editor's decision on one verdict: made in the feedback file, then recorded in the
    /// audit log (who made it), then printed.
    static func decide(_ url: StoreURL, _ decision: (Timestamp) throws -> VerdictChange) async throws {
        let now = Timestamp.now
        let change = try await exitOnFailure { try decision(now) }
        try await StoreOptions.withStore(url, logger: Logger(label: "catalog.feedback")) { store in
            for entry in AuditEntry.feedback([change], actor: LocalUser.name, at: now) { try await store.appendAudit(entry) }
        }
        print(change)
    }

    /// Issue 27: run against the wrong store (an empty one, say, where the server's is
    /// PostgreSQL), the loop found no reports, called every suspect "no longer suspect" and
    /// cleared them all. An app whose verdicts rest on reports is not judged by a store that
    /// holds none of that app's reports: the run stops, naming the app and the store, and
    /// writes nothing.
    static func refuseJudgingWithoutReports(_ workflow: CatalogWorkflow, store: any CatalogStore, url: StoreURL) async throws {
        let suffix = ".feedback.plist"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: workflow.catalogDirectory.path)) ?? []
        var refused: [String] = []
        for name in names.sorted() where name.hasSuffix(suffix) {
            let app = String(name.dropLast(suffix.count))
            guard let file = FeedbackFile.read(workflow.feedbackURL(app), displayPath: name).file,
                file.verdicts.values.contains(where: { $0.evidence != nil })
            else { continue }
            if try await store.aggregate(AggregateQuery(app: app)).isEmpty { refused.append(app) }
        }
        guard !refused.isEmpty else { return }
        for app in refused {
            printError(
                "the verdicts of '\(app)' rest on reports, and the store \(url) holds none of its reports: judged against it, its "
                    + "suspects would be cleared. Is this the server's store? Set --store, CATALOG_STORE or the --config file's \"store\" "
                    + "as catalog serve has it. If its reports were all pruned, clear what is stale with 'catalog feedback release'"
            )
        }
        throw ExitCode(1)
    }
}
