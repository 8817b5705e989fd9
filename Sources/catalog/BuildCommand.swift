import ArgumentParser
import CatalogKit
import Foundation
import Logging
import Storage
import Time

struct BuildCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "build",
        abstract: "Validate, then publish a new revision of each app whose feeds changed.",
        discussion: """
            Nothing is published if any app has errors. Byte-identical output publishes nothing \
            and moves no validator. Exit status: 0 on success, 1 on errors, 64 on misuse.
            """
    )

    @OptionGroup var config: ConfigOptions
    @OptionGroup var options: CatalogOptions
    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var signing: SigningOptions

    @Flag(help: "Print the product-level changes a build would publish, and write nothing.")
    var dryRun = false

    @Option(help: "Why: recorded with the author in each new revision, shown by 'catalog history'. Default: none.")
    var message: String?

    func run() async throws {
        let now = Timestamp.now
        let settings = try config.settings()
        let workflow = try options.workflow(settings, signing: signing)
        // Resolved before anything is published: a store named wrongly is said before, not after.
        let store = try storeOptions.url(settings)
        let tree = PublicTree(root: workflow.publicDirectory)
        let manifestsBefore = Dictionary(uniqueKeysWithValues: tree.publishedApps().map { ($0, tree.currentManifestHash($0)) })
        // The audit log's store opens once the catalog has validated, while it is planned and
        // published: a first build made a fresh SQLite store's schema in its last 10 ms, on one
        // core (docs/benchmarks.md, "The build's start and end"). A new store is made this early
        // only for an app's first revision, which is always published; a build that publishes
        // nothing closes the store it opened unused.
        let logger = Logger(label: "catalog.build")
        var opening: Task<any Store, any Error>?
        let build: CatalogWorkflow.Build
        do {
            build = try await exitOnFailure {
                try workflow.build(
                    at: now, dryRun: dryRun, note: RevisionNote(author: LocalUser.name, message: message?.isEmpty == false ? message : nil),
                    validated: { apps in
                        guard !dryRun else { return }
                        let firstRevision = apps.contains { !manifestsBefore.keys.contains($0) }
                        opening = StoreOptions.startOpening(store, logger: logger, certain: firstRevision)
                    })
            }
        } catch {
            await StoreOptions.discard(opening)
            throw error
        }
        // Never freed: a big catalog's plans are millions of small allocations, and freeing them
        // one by one took about 100 ms of a 100,000-product build on one core, for memory the
        // process is about to give back whole (docs/benchmarks.md, "Where the build's time went").
        _ = Unmanaged.passRetained(KeptUntilExit(build))
        report(build.diagnostics)
        let published = build.plans.filter { !$0.isUnchanged }
        // A dry run opened none.
        if build.hasErrors || published.isEmpty { await StoreOptions.discard(opening) }
        if build.hasErrors { throw ExitCode(1) }
        for plan in build.plans {
            print(summary(plan, dryRun: dryRun))
            // What the feedback files changed in the published feeds.
            for change in plan.feedbackChanges { print(change) }
            if dryRun && !plan.isUnchanged {
                for line in diffLines(plan.diff, verdicts: false) { print(line) }
            }
        }
        guard !dryRun, !published.isEmpty else { return }
        // Published: the audit log says who and what. A store that cannot be written is an error
        // after the fact, but never a silent gap in the log.
        try await StoreOptions.withStore(store, logger: logger, opening: opening) { store in
            for plan in published {
                try await store.recordPublication(
                    .publication(plan, actor: LocalUser.name, at: now, manifestBefore: manifestsBefore[plan.app] ?? nil, tree: tree),
                    app: plan.app, tree: tree)
            }
        }
    }
}

/// A value the command keeps until the process exits (``BuildCommand/run()``).
private final class KeptUntilExit<Value> {
    let value: Value
    init(_ value: Value) { self.value = value }
}
