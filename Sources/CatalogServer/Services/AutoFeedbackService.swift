import CatalogKit
import Logging
import ServiceLifecycle
import Time

/// `catalog serve --auto-feedback INTERVAL`: `catalog feedback` then `catalog build`, at start
/// and then every interval, logging every verdict change and every revision it publishes. The
/// server picks the new revision up by itself (its reload service watches the tree).
public struct AutoFeedbackService: Service {
    let workflow: CatalogWorkflow
    let store: any CatalogStore
    let interval: Duration
    let metrics: ServerMetrics
    let logger: Logger

    /// Runs `workflow`'s feedback loop on `store` at start and then every `interval`.
    public init(workflow: CatalogWorkflow, store: any CatalogStore, interval: Duration, metrics: ServerMetrics, logger: Logger) {
        self.workflow = workflow
        self.store = store
        self.interval = interval
        self.metrics = metrics
        self.logger = logger
    }

    public func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                guard let shared = store.publications else { return try await loop() }
                // Several editor nodes on one PostgreSQL store: one of them at a time runs the
                // loop, and another takes over when its node dies (its session's lock goes with it).
                try await shared.whileHoldingLock("catalog.auto-feedback") { try await loop() }
            }
        } catch is CancellationError {
            // Shutting down: feedback files and revisions are written atomically, so a run cut
            // short leaves the previous ones in place.
        }
    }

    private func loop() async throws {
        while true {
            await runOnce()
            try await Task.sleep(for: interval)
        }
    }

    private func runOnce() async {
        do {
            let now = Timestamp.now
            let feedback = try await workflow.runFeedback(store: store, at: now)
            for entry in AuditEntry.feedback(feedback.changes, actor: "auto-feedback", at: now) { try await store.appendAudit(entry) }
            metrics.recordAlerts(feedback.alerts, apps: feedback.apps)
            for (app, alert) in feedback.alerts.sorted(by: { $0.key < $1.key }) {
                logger.warning(
                    "feedback.alert",
                    metadata: ["feedback.app": "\(app)", "feedback.alert": "\(alert.code.rawValue)", "feedback.reason": "\(alert.message)"])
            }
            for diagnostic in feedback.diagnostics where diagnostic.severity == .error {
                logger.error("feedback.diagnostic", metadata: ["diagnostic": "\(diagnostic)"])
            }
            for change in feedback.changes {
                logger.notice(
                    "feedback.verdict",
                    metadata: [
                        "feedback.app": "\(change.app)", "feedback.identifier": "\(change.identifier)",
                        "feedback.change": "\(change.kind.rawValue)", "feedback.reason": "\(change.reason ?? "-")",
                    ])
            }
            // Also when no verdict changed: an editor may have released an identifier since.
            let tree = PublicTree(root: workflow.publicDirectory)
            let manifestsBefore = Dictionary(uniqueKeysWithValues: tree.publishedApps().map { ($0, tree.currentManifestHash($0)) })
            let build = try workflow.build(at: .now, dryRun: false)
            guard !build.hasErrors else {
                logger.error("feedback.build-failed", metadata: ["errors": "\(build.diagnostics.filter { $0.severity == .error }.count)"])
                return
            }
            for plan in build.plans where !plan.isUnchanged {
                try await store.recordPublication(
                    .publication(plan, actor: "auto-feedback", at: now, manifestBefore: manifestsBefore[plan.app] ?? nil, tree: tree),
                    app: plan.app, tree: tree)
                logger.info(
                    "feedback.published",
                    metadata: [
                        "feed.app": "\(plan.app)", "feed.revision": "\(plan.revision)",
                        "feedback.changes": "\(plan.feedbackChanges.map(\.description).joined(separator: "; "))",
                    ])
            }
        } catch {
            // The next round tries again; serving goes on.
            logger.error("feedback.failed", metadata: ["error": "\(error)"])
        }
    }
}
