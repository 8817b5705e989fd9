import ArgumentParser
import CatalogKit
import Foundation
import Logging
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

        @OptionGroup var options: CatalogOptions
        @OptionGroup var storeOptions: StoreOptions

        func run() async throws {
            let now = Timestamp.now
            let run = try await storeOptions.withStore(logger: Logger(label: "catalog.feedback")) { store in
                let run = try await exitOnFailure { try await options.workflow.runFeedback(store: store, at: now) }
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

        @OptionGroup var options: CatalogOptions
        @OptionGroup var storeOptions: StoreOptions

        @Argument(help: "The app's bundle identifier.")
        var app: String

        @Argument(help: "The product identifier to take off sale.")
        var identifier: String

        func run() async throws {
            try await FeedbackCommand.decide(storeOptions) { now in
                try options.workflow.confirmQuarantine(app: app, identifier: identifier, by: LocalUser.name, at: now)
            }
        }
    }

    struct ReleaseCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "release",
            abstract: "Clear an identifier's verdict: reports received until now no longer count.",
            discussion: "Run 'catalog build' afterwards to offer it again. Exit status: 0 released, 1 on errors, 64 on misuse."
        )

        @OptionGroup var options: CatalogOptions
        @OptionGroup var storeOptions: StoreOptions

        @Argument(help: "The app's bundle identifier.")
        var app: String

        @Argument(help: "The product identifier to release.")
        var identifier: String

        func run() async throws {
            try await FeedbackCommand.decide(storeOptions) { now in
                try options.workflow.releaseFeedback(app: app, identifier: identifier, at: now)
            }
        }
    }

    /// An editor's decision on one verdict: made in the feedback file, then recorded in the
    /// audit log (who made it), then printed.
    static func decide(_ storeOptions: StoreOptions, _ decision: (Timestamp) throws -> VerdictChange) async throws {
        let now = Timestamp.now
        let change = try await exitOnFailure { try decision(now) }
        try await storeOptions.withStore(logger: Logger(label: "catalog.feedback")) { store in
            for entry in AuditEntry.feedback([change], actor: LocalUser.name, at: now) { try await store.appendAudit(entry) }
        }
        print(change)
    }
}
