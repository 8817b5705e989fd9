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
    /// The lean path's counters, made up front: it answers most requests and must not allocate.
    private let feedCounters: [FeedKind: (ok: (CoreMetrics.Counter, CoreMetrics.Counter), notModified: CoreMetrics.Counter)]

    public init() {
        let factory = PrometheusMetricsFactory(registry: registry)
        self.factory = factory
        reloads = CoreMetrics.Counter(label: "catalog_feed_reloads_total", factory: factory)
        func counter(_ name: String, _ route: String, _ status: Int) -> CoreMetrics.Counter {
            CoreMetrics.Counter(label: name, dimensions: [("route", route), ("status", String(status))], factory: factory)
        }
        var counters: [FeedKind: (ok: (CoreMetrics.Counter, CoreMetrics.Counter), notModified: CoreMetrics.Counter)] = [:]
        for kind in FeedKind.allCases {
            let route = kind.routeLabel
            counters[kind] = (
                (counter("catalog_http_requests_total", route, 200), counter("catalog_http_response_body_bytes_total", route, 200)),
                counter("catalog_http_requests_total", route, 304)
            )
        }
        feedCounters = counters
    }

    /// A feed request answered by the lean path.
    func recordFeed(_ kind: FeedKind, notModified: Bool, bodyBytes: Int) {
        guard let counters = feedCounters[kind] else { return }
        if notModified {
            counters.notModified.increment()
        } else {
            counters.ok.0.increment()
            if bodyBytes > 0 { counters.ok.1.increment(by: bodyBytes) }
        }
    }

    /// One answered request; the share of 304s follows from the `status` label.
    func recordRequest(route: String, status: Int, bodyBytes: Int) {
        let key = "\(route) \(status)"
        let counters = requestCounters.withLock { counters in
            if let existing = counters[key] { return existing }
            let made: (requests: CoreMetrics.Counter, bytes: CoreMetrics.Counter) = (
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

extension FeedKind {
    /// The route label of a feed in metrics.
    var routeLabel: String { self == .products ? "products" : "catalog" }
}
