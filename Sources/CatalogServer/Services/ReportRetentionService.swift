import CatalogKit
import Logging
import ServiceLifecycle
import Time

/// Deletes raw reports older than the retention, and each app's past its quota (the heaviest
/// network's first, see ``ReportStore/prune(keepingPerApp:)``), at start and then every
/// `interval`: one app's flood of reports cannot fill the store for the others, and one
/// network's flood cannot push the other networks' evidence out of its app's quota.
struct ReportRetentionService: Service {
    let store: any ReportStore
    let retention: Duration
    let perAppQuota: Int
    let metrics: ServerMetrics
    let interval: Duration
    let clock: @Sendable () -> Timestamp
    let logger: Logger

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                while true {
                    await prune()
                    try await Task.sleep(for: interval)
                }
            }
        } catch is CancellationError {
            // Shutting down: a prune in flight is one transaction, committed or not.
        }
    }

    private func prune() async {
        let cut = Timestamp(secondsSince1970: clock().secondsSince1970 - retention.components.seconds)
        do {
            let pruned = try await store.prune(receivedBefore: cut)
            if pruned > 0 { logger.info("reports.pruned", metadata: ["count": "\(pruned)", "before": "\(cut)"]) }
            for (app, count) in try await store.prune(keepingPerApp: perAppQuota).sorted(by: { $0.key < $1.key }) {
                metrics.recordQuotaPruned(app: app, count: count)
                logger.warning("reports.quota-pruned", metadata: ["feed.app": "\(app)", "report.count": "\(count)"])
            }
        } catch {
            // The next round tries again; serving goes on.
            logger.error("reports.prune-failed", metadata: ["error": "\(error)"])
        }
    }
}
