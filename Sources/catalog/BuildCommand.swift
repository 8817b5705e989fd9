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

    func run() throws {
        let build: CatalogWorkflow.Build
        do {
            build = try options.workflow.build(at: .now, dryRun: dryRun)
        } catch {
            printError("\(error)")
            throw ExitCode(1)
        }
        report(build.diagnostics)
        if build.hasErrors { throw ExitCode(1) }
        for plan in build.plans {
            print(summary(plan))
            // What the feedback files changed in the published feeds.
            for change in plan.feedbackChanges { print(change) }
            if dryRun && !plan.isUnchanged { printDiff(plan.diff) }
        }
    }

    private func summary(_ plan: PublicationPlan) -> String {
        if plan.isUnchanged {
            return "\(plan.app): unchanged at revision \(plan.revision)"
        }
        let verb = dryRun ? "would publish" : "published"
        let diff = plan.diff
        var changes: [String] = []
        if !diff.added.isEmpty { changes.append("\(diff.added.count) added") }
        if !diff.changed.isEmpty { changes.append("\(diff.changed.count) changed") }
        if !diff.removed.isEmpty { changes.append("\(diff.removed.count) removed") }
        var summary = "\(plan.app): \(verb) revision \(plan.revision): \(plan.sellableCount) on sale, \(plan.knownCount) known"
        if !changes.isEmpty { summary += "; products \(changes.joined(separator: ", "))" }
        summary += "; \(plan.changedFeedCount) of \(plan.totalFeedCount) feeds changed"
        if !plan.scheduledChanges.isEmpty {
            let count = plan.scheduledChanges.count
            summary += "; \(count) scheduled change\(count == 1 ? "" : "s") until \(plan.scheduledChanges[count - 1])"
        }
        if let later = plan.scheduleEndsBefore { summary += "; build again before \(later) for later changes" }
        return summary
    }

    private func printDiff(_ diff: ProductDiff) {
        for id in diff.added { print("  + \(id)") }
        for change in diff.changed { print("  ~ \(change.id): \(change.details.joined(separator: ", "))") }
        for id in diff.removed { print("  - \(id)") }
    }
}
