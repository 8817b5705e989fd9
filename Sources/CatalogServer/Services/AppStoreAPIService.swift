import AppStore
import AppStoreServerAPI
import CoreMetrics
import Foundation
import Ledger
import Logging
import OutboundAPI
import Prometheus
import ServiceLifecycle
import Synchronization

/// What the App Store Server API's work shows in `/metrics` (docs/app-store-api.md,
/// "Observing it"): every attempt by operation and outcome, how far each app's reconciliation is
/// behind Apple's history, and what it recorded.
public struct AppStoreAPIMetrics: Sendable {
    let registry: PrometheusCollectorRegistry

    /// Metrics in `registry`.
    public init(registry: PrometheusCollectorRegistry) { self.registry = registry }

    /// One attempt of one call.
    func record(_ attempt: APICallRecord) {
        registry.makeCounter(
            name: "catalog_appstore_api_requests_total", labels: [("operation", attempt.operation), ("outcome", attempt.outcome)]
        ).increment()
        registry.makeValueHistogram(
            name: "catalog_appstore_api_request_duration_seconds", labels: [("operation", attempt.operation)],
            buckets: [0.05, 0.2, 1, 5, 30]
        ).record(attempt.seconds)
    }

    /// A reconciliation run's outcome.
    func record(_ summary: NotificationReconciler.Summary, app: String, environment: String) {
        let labels = [("app", app), ("environment", environment)]
        registry.makeGauge(name: "catalog_appstore_reconcile_behind_seconds", labels: labels).set(summary.behind)
        for (result, count) in [("stored", summary.stored), ("duplicate", summary.duplicates), ("refused", summary.refused)] where count > 0
        {
            registry.makeCounter(name: "catalog_appstore_reconciled_notifications_total", labels: labels + [("result", result)])
                .increment(by: Int64(count))
        }
    }

    /// A pass of consumption answers.
    func record(_ summary: ConsumptionResponder.Summary) {
        for (result, count) in [
            ("sent", summary.sent), ("skipped", summary.skipped), ("failed", summary.failed), ("expired", summary.expired),
            ("deferred", summary.deferred),
        ] where count > 0 {
            registry.makeCounter(name: "catalog_appstore_consumption_answers_total", labels: [("result", result)]).increment(
                by: Int64(count))
        }
    }

    /// A run that failed (the API, or the store).
    func recordFailure(app: String, environment: String) {
        registry.makeCounter(name: "catalog_appstore_reconcile_failures_total", labels: [("app", app), ("environment", environment)])
            .increment()
    }
}

/// A client of the App Store Server API for each app and environment, from the app's published
/// settings: one token source per app, given the new credentials when a revision changes them,
/// and one connection pool for all.
final class AppStoreAPIClients: Sendable {
    let transport: any APITransport
    let baseURL: URL?
    let metrics: AppStoreAPIMetrics?
    private let tokens = Mutex<[String: APITokenSource]>([:])

    init(transport: any APITransport, baseURL: URL?, metrics: AppStoreAPIMetrics?) {
        self.transport = transport
        self.baseURL = baseURL
        self.metrics = metrics
    }

    /// Clients of `app` in each environment it accepts, production first; none when its settings
    /// name no API key.
    func clients(_ app: AppPurchases) async -> [AppStoreServerAPIClient] {
        guard let credentials = AppStoreAPICredentials(app) else { return [] }
        let (source, isNew) = tokens.withLock { tokens -> (APITokenSource, Bool) in
            if let source = tokens[app.bundleId] { return (source, false) }
            let source = APITokenSource(credentials)
            tokens[app.bundleId] = source
            return (source, true)
        }
        if !isNew { await source.update(credentials) }
        let metrics = metrics
        return AppStoreAPIEnvironment.accepted(by: app).map {
            AppStoreServerAPIClient(
                environment: $0, baseURL: baseURL, tokens: source, transport: transport, observe: { metrics?.record($0) })
        }
    }
}

/// The App Store Server API's periodic work, on the editor node only (once per cluster): every
/// `interval`, each app whose settings name an API key is reconciled in each environment it
/// accepts (``NotificationReconciler``); every `consumptionInterval`, the consumption requests due
/// are answered (``ConsumptionResponder``). A failure is logged and counted, the position kept at
/// the last page recorded (a request stays pending), and the next run resumes there.
public struct AppStoreAPIService: Service {
    /// Where reconciliation keeps its positions and consumption its answers.
    public typealias Store = PollPositionStore & ConsumptionAnswerStore

    let apps: @Sendable () -> [String]
    let settings: @Sendable (String) async -> AppPurchases?
    let store: any PurchaseStore
    let apiStore: any Store
    let clients: AppStoreAPIClients
    let metrics: AppStoreAPIMetrics?
    let interval: Duration
    let consumptionInterval: Duration
    let logger: Logger

    init(
        apps: @escaping @Sendable () -> [String], settings: @escaping @Sendable (String) async -> AppPurchases?, store: any PurchaseStore,
        apiStore: any Store, clients: AppStoreAPIClients, metrics: AppStoreAPIMetrics?, interval: Duration,
        consumptionInterval: Duration = .seconds(60), logger: Logger
    ) {
        self.apps = apps
        self.settings = settings
        self.store = store
        self.apiStore = apiStore
        self.clients = clients
        self.metrics = metrics
        self.interval = interval
        self.consumptionInterval = consumptionInterval
        self.logger = logger
    }

    public func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                var nextReconciliation = ContinuousClock.now
                while true {
                    if ContinuousClock.now >= nextReconciliation {
                        await reconcileAll()
                        nextReconciliation = ContinuousClock.now + interval
                    }
                    await answerConsumptionRequests()
                    try await Task.sleep(for: consumptionInterval)
                }
            }
        } catch is CancellationError {
            // Shutting down: the position of the last page recorded is kept, and a request not
            // answered stays pending.
        }
        try? await clients.transport.shutdown()
    }

    /// One pass of the consumption requests due.
    func answerConsumptionRequests() async {
        let clients = clients
        let responder = ConsumptionResponder(
            store: store, answers: apiStore, settings: settings, clients: { await clients.clients($0) })
        do {
            let summary = try await responder.answerDue()
            metrics?.record(summary)
        } catch is CancellationError {
            return
        } catch {
            logger.error("appstore.consumption.failed", metadata: ["error": "\(error)"])
        }
    }

    /// One pass over every app.
    func reconcileAll() async {
        for app in apps().sorted() {
            guard !Task.isCancelled, let purchases = await settings(app) else { continue }
            for client in await clients.clients(purchases) {
                await reconcile(purchases, client: client)
            }
        }
    }

    private func reconcile(_ purchases: AppPurchases, client: AppStoreServerAPIClient) async {
        let environment = client.environment.rawValue
        let reconciler = NotificationReconciler(app: purchases, client: client, store: store, positions: apiStore)
        do {
            let summary = try await reconciler.run()
            metrics?.record(summary, app: purchases.bundleId, environment: environment)
            for refusal in summary.refusals.prefix(20) {
                logger.warning("appstore.reconcile.refused", metadata: ["feed.app": "\(purchases.bundleId)", "error": "\(refusal)"])
            }
            if summary.stored > 0 {
                logger.info(
                    "appstore.reconcile",
                    metadata: [
                        "feed.app": "\(purchases.bundleId)", "environment": "\(environment)", "stored": "\(summary.stored)",
                        "duplicates": "\(summary.duplicates)",
                    ])
            }
        } catch is CancellationError {
            return
        } catch {
            metrics?.recordFailure(app: purchases.bundleId, environment: environment)
            logger.error(
                "appstore.reconcile.failed",
                metadata: ["feed.app": "\(purchases.bundleId)", "environment": "\(environment)", "error": "\(error)"])
        }
    }
}
