import CatalogKit
import CoreMetrics
import Prometheus
import Synchronization

/// The route a request is counted under (`catalog_http_requests_total{route=…}`): a few fixed
/// values, never an app or a revision. Each route names its own in its feature's table
/// (``RouteSpec``), as a literal; dashboards depend on the values.
struct MetricsRoute: Hashable, Sendable, ExpressibleByStringLiteral {
    let rawValue: String

    init(stringLiteral value: StaticString) {
        rawValue = value.description
    }

    /// A path no route of the listener answers.
    static let unknown: MetricsRoute = "unknown"
}

/// What the server counts, served at `/metrics` in Prometheus text format.
///
/// Metrics go through the swift-metrics API with a factory over this server's own registry,
/// rather than the process-wide metrics system, so that several servers (tests) keep apart.
public final class ServerMetrics: Sendable {
    public let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    private let reloads: CoreMetrics.Counter
    private let openConnections: CoreMetrics.Gauge
    private let connectionsRefused: CoreMetrics.Counter
    private let commitQueueFull: CoreMetrics.Counter
    private let commitBatchSize: CoreMetrics.Recorder
    private let commitDuration: CoreMetrics.Timer
    private let reportLatency: CoreMetrics.Timer
    private let feedAnswer: CoreMetrics.Timer
    private let storeListening: CoreMetrics.Gauge
    private let storeChange: CoreMetrics.Gauge
    private let storeCatchUpFailures: CoreMetrics.Counter
    private let storeFilesRefused: CoreMetrics.Counter

    private struct RequestKey: Hashable {
        var route: MetricsRoute
        var status: Int
    }

    /// Counters by route and status, each made once: the registry takes a lock and builds
    /// labels per lookup, and the lean path counts nearly every request.
    private let requestCounters = Mutex<[RequestKey: RequestCounters]>([:])

    public init() {
        factory = PrometheusMetricsFactory(registry: registry)
        reloads = CoreMetrics.Counter(label: "catalog_feed_reloads_total", factory: factory)
        openConnections = CoreMetrics.Gauge(label: "catalog_connections_open", factory: factory)
        connectionsRefused = CoreMetrics.Counter(label: "catalog_connections_refused_total", factory: factory)
        commitQueueFull = CoreMetrics.Counter(label: "catalog_reports_commit_queue_full_total", factory: factory)
        commitBatchSize = CoreMetrics.Recorder(label: "catalog_reports_commit_batch_size", aggregate: true, factory: factory)
        commitDuration = CoreMetrics.Timer(label: "catalog_reports_commit_seconds", factory: factory)
        reportLatency = CoreMetrics.Timer(label: "catalog_reports_latency_seconds", factory: factory)
        feedAnswer = CoreMetrics.Timer(label: "catalog_feed_answer_seconds", factory: factory)
        storeListening = CoreMetrics.Gauge(label: "catalog_feeds_store_listening", factory: factory)
        storeChange = CoreMetrics.Gauge(label: "catalog_feeds_store_change", factory: factory)
        storeCatchUpFailures = CoreMetrics.Counter(label: "catalog_feeds_store_catch_up_failures_total", factory: factory)
        storeFilesRefused = CoreMetrics.Counter(label: "catalog_feeds_store_files_refused_total", factory: factory)
    }

    /// One answered request; the share of 304s follows from the `status` label.
    func recordRequest(_ route: MetricsRoute, status: Int, bodyBytes: Int) {
        counters(route, status: status).record(bodyBytes: bodyBytes)
    }

    /// The counters of one route and status, for a caller that counts many requests alike and
    /// keeps them, so as not to look them up (under a lock, by a hashed key) for each.
    func counters(_ route: MetricsRoute, status: Int) -> RequestCounters {
        let key = RequestKey(route: route, status: status)
        return requestCounters.withLock { counters in
            if let existing = counters[key] { return existing }
            let dimensions = [("route", route.rawValue), ("status", String(status))]
            let made = RequestCounters(
                route: route, status: status,
                requests: CoreMetrics.Counter(label: "catalog_http_requests_total", dimensions: dimensions, factory: factory),
                bytes: CoreMetrics.Counter(label: "catalog_http_response_body_bytes_total", dimensions: dimensions, factory: factory))
            counters[key] = made
            return made
        }
    }

    /// The revision each app serves, after a load or reload.
    func recordFeeds(_ index: FeedIndex, reloaded: Bool) {
        if reloaded { reloads.increment() }
        for (app, published) in index.apps {
            CoreMetrics.Gauge(label: "catalog_feed_revision", dimensions: [("app", app)], factory: factory).record(
                published.manifest.revision)
        }
    }

    /// Identifiers a report named that the app never published: tallied, not stored.
    func recordUnpublishedIdentifiers(app: String, count: Int) {
        CoreMetrics.Counter(label: "catalog_reports_unpublished_identifiers_total", dimensions: [("app", app)], factory: factory)
            .increment(by: count)
    }

    /// A product an Android app said Play Billing could not fetch, by Play's status.
    func recordUnfetchedProduct(app: String, status: String) {
        CoreMetrics.Counter(
            label: "catalog_reports_unfetched_products_total", dimensions: [("app", app), ("status", status)], factory: factory
        ).increment()
    }

    /// A report that carried an AppTransaction, and whether it verified.
    func recordAppTransaction(verified: Bool) {
        CoreMetrics.Counter(
            label: "catalog_reports_app_transactions_total", dimensions: [("result", verified ? "verified" : "unverified")],
            factory: factory
        ).increment()
    }

    /// Evidence a purchase endpoint refused, by endpoint and refusal code: forged and mis-bound
    /// notifications show here (`catalog_purchases_refused_total{endpoint="notifications"}`).
    func recordPurchaseRefusal(endpoint: String, code: String) {
        CoreMetrics.Counter(
            label: "catalog_purchases_refused_total", dimensions: [("endpoint", endpoint), ("code", code)], factory: factory
        ).increment()
    }

    /// A notification committed, or found already stored.
    func recordNotification(duplicate: Bool) {
        CoreMetrics.Counter(
            label: "catalog_notifications_total", dimensions: [("result", duplicate ? "duplicate" : "stored")], factory: factory
        ).increment()
    }

    /// A purchase presented by a customer other than its own: `transferred` or `refused`.
    func recordTransfer(_ outcome: String) {
        CoreMetrics.Counter(label: "catalog_purchase_transfers_total", dimensions: [("outcome", outcome)], factory: factory).increment()
    }

    /// Raw reports pruned because their app passed its quota.
    func recordQuotaPruned(app: String, count: Int) {
        CoreMetrics.Counter(label: "catalog_reports_quota_pruned_total", dimensions: [("app", app)], factory: factory)
            .increment(by: count)
    }

    /// Each app's alerts after a feedback run: 1 while raised, 0 once cleared.
    public func recordAlerts(_ alerts: [String: AppAlert], apps: [String]) {
        for app in apps {
            for code in AppAlert.Code.allCases {
                CoreMetrics.Gauge(label: "catalog_feedback_alert", dimensions: [("app", app), ("code", code.rawValue)], factory: factory)
                    .record(alerts[app]?.code == code ? 1 : 0)
            }
        }
    }

    /// Connections open now, after one opened or closed.
    /// A replica's link to the store: 1 while its announcements connection is up, else 0.
    public func recordStoreListening(_ listening: Bool) {
        storeListening.record(listening ? 1 : 0)
    }

    /// A replica's catch-up with the store: the last change its tree holds, or a failure.
    public func recordStoreCatchUp(change: Int64?) {
        if let change { storeChange.record(change) } else { storeCatchUpFailures.increment() }
    }

    /// A file the store holds that a replica refused to write: its bytes are not those its
    /// recorded SHA-256 names, or its path lies outside the tree.
    public func recordStoreFileRefused() {
        storeFilesRefused.increment()
    }

    func recordOpenConnections(_ count: Int) {
        openConnections.record(count)
    }

    /// A connection past `--max-connections`, closed as soon as it was accepted.
    func recordConnectionRefused() {
        connectionsRefused.increment()
    }

    /// A report refused with 503 because the store's commit queue was full.
    func recordCommitQueueFull() {
        commitQueueFull.increment()
    }

    /// One group commit: how many reports it held and how long it took.
    @Sendable func recordCommit(batch: Int, duration: Duration) {
        commitBatchSize.record(batch)
        commitDuration.recordNanoseconds(duration.nanoseconds)
    }

    /// A read batch of feed requests answered on the lean path, from its bytes to its answers.
    func recordFeedAnswer(nanoseconds: Int64) {
        feedAnswer.recordNanoseconds(nanoseconds)
    }

    /// One report answered on the lean path, from its head to its answer (the commit included).
    func recordReportLatency(_ duration: Duration) {
        reportLatency.recordNanoseconds(duration.nanoseconds)
    }

    /// The exposition text.
    public func render() -> [UInt8] {
        registry.emitToBuffer()
    }
}

/// The request counters of one route and status.
struct RequestCounters: Sendable {
    let route: MetricsRoute
    let status: Int
    fileprivate let requests: CoreMetrics.Counter
    fileprivate let bytes: CoreMetrics.Counter

    /// One answered request.
    func record(bodyBytes: Int) {
        requests.increment()
        if bodyBytes > 0 { bytes.increment(by: bodyBytes) }
    }
}

extension Duration {
    /// Whole nanoseconds, for a metrics timer.
    var nanoseconds: Int64 {
        components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000
    }
}
