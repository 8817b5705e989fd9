import CatalogKit
import Foundation

/// One line per app for what a build (or a rollback) published or would publish.
func summary(_ plan: PublicationPlan, dryRun: Bool = false) -> String {
    if plan.isUnchanged {
        return "\(plan.app): unchanged at revision \(plan.revision)"
    }
    let verb = dryRun ? "would publish" : "published"
    var summary = "\(plan.app): \(verb) revision \(plan.revision): \(plan.sellableCount) on sale, \(plan.knownCount) known"
    if !plan.diff.isEmpty { summary += "; products \(plan.diff.summary)" }
    summary += "; \(plan.changedFeedCount) of \(plan.totalFeedCount) feeds changed"
    if let content = plan.contentChange {
        summary += "; content \(content.items) item\(content.items == 1 ? "" : "s")"
        var parts: [String] = []
        if !content.changed.isEmpty { parts.append("\(content.changed.count) new or changed") }
        if !content.removed.isEmpty { parts.append("\(content.removed.count) removed") }
        if !parts.isEmpty { summary += ": " + parts.joined(separator: ", ") }
    }
    if !plan.scheduledChanges.isEmpty {
        let count = plan.scheduledChanges.count
        summary += "; \(count) scheduled change\(count == 1 ? "" : "s") until \(plan.scheduledChanges[count - 1])"
    }
    if let later = plan.scheduleEndsBefore { summary += "; build again before \(later) for later changes" }
    return summary
}

/// A diff's lines, indented under the line that names what was compared: `+` added, `~` changed
/// (field by field), `-` removed, `!` a verdict of the feedback loop (left out for a build,
/// which prints its verdict changes anyway).
func diffLines(_ diff: ProductDiff, verdicts: Bool = true) -> [String] {
    var lines = diff.added.map { "  + \($0)" }
    lines += diff.changed.map { "  ~ \($0.id): \($0.details.joined(separator: ", "))" }
    lines += diff.removed.map { "  - \($0)" }
    guard verdicts else { return lines }
    return lines + diff.quarantined.map { "  ! \($0.id): quarantined: \($0.reason)" } + diff.released.map { "  ! \($0): released" }
}
