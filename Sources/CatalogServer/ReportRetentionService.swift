import CatalogKit
import Logging
import PropertyList
import ServiceLifecycle

/// Deletes raw reports older than the retention, at start and then every `interval`.
struct ReportRetentionService: Service {
    let store: any ReportStore
    let retention: Duration
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
        } catch {
            // The next round tries again; serving goes on.
            logger.error("reports.prune-failed", metadata: ["error": "\(error)"])
        }
    }
}
