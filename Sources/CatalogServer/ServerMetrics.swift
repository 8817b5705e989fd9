import CatalogKit
import CoreMetrics
import Prometheus
import Synchronization

/// What the server counts, served at `/metrics` in Prometheus text format.
///
/// Metrics go through the swift-metrics API with a factory over this server's own registry,
/// rather than the process-wide metrics system, so that several servers (tests) keep apart.
public final class ServerMetrics: Sendable {
    public let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    /// Counters by route and status, made once: the registry lookup takes a lock per call.
    private let requestCounters = Mutex<[String: (requests: CoreMetrics.Counter, bytes: CoreMetrics.Counter)]>([:])
    private let reloads: CoreMetrics.Counter

    public init() {
        factory = PrometheusMetricsFactory(registry: registry)
        reloads = CoreMetrics.Counter(label: "catalog_feed_reloads_total", factory: factory)
    }

    /// One answered request; the share of 304s follows from the `status` label.
    func recordRequest(route: String, status: Int, bodyBytes: Int) {
        let key = "\(route) \(status)"
        let counters = requestCounters.withLock { counters in
            if let existing = counters[key] { return existing }
            let made = (
                CoreMetrics.Counter(
                    label: "catalog_http_requests_total", dimensions: [("route", route), ("status", String(status))], factory: factory),
                CoreMetrics.Counter(
                    label: "catalog_http_response_body_bytes_total", dimensions: [("route", route), ("status", String(status))],
                    factory: factory)
            )
            counters[key] = made
            return made
        }
        counters.requests.increment()
        if bodyBytes > 0 { counters.bytes.increment(by: bodyBytes) }
    }

    /// The revision each app serves, after a load or reload.
    func recordFeeds(_ index: FeedIndex, reloaded: Bool) {
        if reloaded { reloads.increment() }
        for (app, published) in index.apps {
            CoreMetrics.Gauge(label: "catalog_feed_revision", dimensions: [("app", app)], factory: factory).record(
                published.manifest.revision)
        }
    }

    /// The exposition text.
    public func render() -> [UInt8] {
        registry.emitToBuffer()
    }
}
