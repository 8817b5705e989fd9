import ArgumentParser
import CatalogKit
import Foundation
import Logging
import Time

struct RollbackCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rollback",
        abstract: "Republish an earlier revision's content as a new revision, and write it back into the sources.",
        discussion: """
            History only grows: the new revision's feeds have the old revision's bytes and ETags, \
            with a later Last-Modified. The app's sources are replaced by one canonical \
            catalog/<app>.plist holding that content, so that the next 'catalog build' publishes \
            nothing new; commit it. Identifiers published or retired since stay retired (App Store \
            identifiers can never be reused), and the feedback file's verdicts still apply. Exit \
            status: 0 on success, 1 for an unknown app or revision or on errors, 64 on misuse.
            """
    )

    @OptionGroup var config: ConfigOptions
    @OptionGroup var options: CatalogOptions
    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var signing: SigningOptions

    @Argument(help: "The app's bundle identifier.")
    var app: String

    @Argument(help: "The revision whose content to publish again.")
    var revision: Int

    @Option(help: "Why, recorded in the new revision (default: 'rollback to REVISION').")
    var message: String?

    func validate() throws {
        if let problem = AppName.problem(app) { throw ValidationError(problem) }
        if revision < 1 { throw ValidationError("revisions count from 1; '\(revision)' is not one") }
    }

    func run() async throws {
        let now = Timestamp.now
        let settings = try config.settings()
        let workflow = try options.workflow(settings, signing: signing)
        let store = try storeOptions.url(settings)
        let tree = PublicTree(root: workflow.publicDirectory)
        let manifestBefore = tree.currentManifestHash(app)
        let rollback = try await exitOnFailure {
            try workflow.rollback(
                app: app, to: revision, at: now, author: LocalUser.name, message: message?.isEmpty == false ? message : nil)
        }
        print(summary(rollback.plan))
        let removed = rollback.removed.isEmpty ? "" : " (replacing \(rollback.removed.joined(separator: ", ")))"
        print("  content of revision \(rollback.restored) written to \(rollback.written)\(removed)")
        for id in rollback.keptRetired { print("  \(id): kept retired; App Store identifiers can never be reused") }
        for quarantine in rollback.verdicts.quarantined {
            print("  \(quarantine.id): still quarantined by the feedback file (\(quarantine.reason))")
        }
        for id in rollback.verdicts.released { print("  \(id): released since revision \(rollback.restored), stays on sale") }
        print("Commit the sources: the next 'catalog build' publishes nothing new.")
        try await StoreOptions.withStore(store, logger: Logger(label: "catalog.rollback")) { store in
            try await store.recordPublication(
                .publication(
                    rollback.plan, rolledBackTo: rollback.restored, actor: LocalUser.name, at: now, manifestBefore: manifestBefore,
                    tree: tree), app: rollback.plan.app, tree: tree)
        }
    }
}
