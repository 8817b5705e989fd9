import ArgumentParser
import CatalogKit
import Foundation
import PropertyList

struct BuildCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "build",
        abstract: "Validate, then publish a new revision of each app whose feeds changed.",
        discussion: """
            Nothing is published if any app has errors. Byte-identical output publishes nothing \
            and moves no validator. Exit status: 0 on success, 1 on errors, 64 on misuse.
            """
    )

    @OptionGroup var options: CatalogOptions

    @Flag(help: "Print the product-level changes a build would publish, and write nothing.")
    var dryRun = false

    @Option(help: "Why: recorded with the author in each new revision, shown by 'catalog history'.")
    var message: String?

    func run() throws {
        let build: CatalogWorkflow.Build
        do {
            build = try options.workflow.build(
                at: .now, dryRun: dryRun, note: RevisionNote(author: LocalUser.name, message: message?.isEmpty == false ? message : nil))
        } catch {
            printError("\(error)")
            throw ExitCode(1)
        }
        report(build.diagnostics)
        if build.hasErrors { throw ExitCode(1) }
        for plan in build.plans {
            print(summary(plan, dryRun: dryRun))
            // What the feedback files changed in the published feeds.
            for change in plan.feedbackChanges { print(change) }
            if dryRun && !plan.isUnchanged {
                for line in diffLines(plan.diff, verdicts: false) { print(line) }
            }
        }
    }
}
