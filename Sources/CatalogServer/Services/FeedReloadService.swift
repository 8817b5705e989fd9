import Logging
import ServiceLifecycle

/// Watches `public/` and loads each new publication within a fraction of a second, no restart.
public struct FeedReloadService: Service {
    let store: FeedStore
    let interval: Duration
    let metrics: ServerMetrics
    let logger: Logger

    public init(store: FeedStore, interval: Duration = .milliseconds(250), metrics: ServerMetrics, logger: Logger) {
        self.store = store
        self.interval = interval
        self.metrics = metrics
        self.logger = logger
    }

    public func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                while true {
                    try await Task.sleep(for: interval)
                    if store.reloadIfChanged(logger: logger) { metrics.recordFeeds(store.index, reloaded: true) }
                }
            }
        } catch is CancellationError {
            // Shutting down: nothing is in flight here.
        }
    }
}
