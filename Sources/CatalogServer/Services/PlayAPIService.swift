import Foundation
import GooglePlay
import Ledger
import Logging
import OutboundAPI
import PlayDeveloperAPI
import Prometheus
import ServiceLifecycle
import Synchronization

/// What Google Play's work shows in `/metrics` (docs/google-play.md, "Acknowledgement").
public struct PlayAPIMetrics: Sendable {
    let registry: PrometheusCollectorRegistry

    /// Metrics in `registry`.
    public init(registry: PrometheusCollectorRegistry) { self.registry = registry }

    /// A poll of an app's voided purchases: orders revoked, and voided orders the ledger never saw.
    func record(_ summary: PlayVoidedPoller.Summary, app: String) {
        for (result, count) in [("revoked", summary.revoked), ("unknown", summary.unknown)] where count > 0 {
            registry.makeCounter(name: "catalog_play_voided_purchases_total", labels: [("app", app), ("result", result)])
                .increment(by: Int64(count))
        }
    }

    /// One attempt of one call of the Play Developer API or its token endpoint.
    func record(_ attempt: APICallRecord) {
        registry.makeCounter(
            name: "catalog_play_api_requests_total", labels: [("operation", attempt.operation), ("outcome", attempt.outcome)]
        ).increment()
    }

    /// A pass of the acknowledgement outbox, and what waits in it: pending acknowledgements, those
    /// within a day of Google's deadline (the alert), and the seconds left before the nearest.
    func record(_ summary: PlayAcknowledger.Summary, pending: [StoreAcknowledgement], now: Date) {
        for (result, count) in [
            ("done", summary.done), ("moot", summary.moot), ("failed", summary.failed), ("expired", summary.expired),
            ("deferred", summary.deferred),
        ] where count > 0 {
            registry.makeCounter(name: "catalog_play_acknowledgements_total", labels: [("result", result)]).increment(by: Int64(count))
        }
        let backlog = PlayAcknowledger.backlog(pending, now: now)
        registry.makeGauge(name: "catalog_play_acknowledgements_pending").set(Double(backlog.pending))
        registry.makeGauge(name: "catalog_play_acknowledgements_at_risk").set(Double(backlog.atRisk))
        registry.makeGauge(name: "catalog_play_acknowledgement_deadline_seconds").set(
            backlog.nearestDeadline.map { $0.timeIntervalSince(now) } ?? 0)
    }
}

/// The Play Developer API's clients: one token source per service account key file, one
/// connection pool, every attempt counted.
final class PlayAPIClients: Sendable {
    let caller: APICaller
    /// For a request an app waits on: one retry, ten seconds an attempt; the outbox does the rest.
    let quickCaller: APICaller
    let baseURL: URL?
    private let tokens = Mutex<[String: PlayAccessTokens]>([:])

    init(transport: any APITransport, baseURL: URL?, metrics: PlayAPIMetrics?) {
        caller = APICaller(transport: transport, observe: { metrics?.record($0) })
        quickCaller = APICaller(
            transport: transport, policy: APIRetryPolicy(maximumAttempts: 2, maximumRetryAfter: .seconds(2), attemptTimeout: .seconds(10)),
            observe: { metrics?.record($0) })
        self.baseURL = baseURL
    }

    /// The client of `app`, `quick` for a request an app waits on; nil when its settings name no
    /// service account.
    func client(_ app: PlayApp, quick: Bool = false) -> PlayDeveloperAPIClient? {
        guard let file = app.serviceAccountKeyFile else { return nil }
        let caller = caller
        let source = tokens.withLock { tokens in
            if let source = tokens[file] { return source }
            let source = PlayAccessTokens(keyFile: file, caller: caller)
            tokens[file] = source
            return source
        }
        return PlayDeveloperAPIClient(packageName: app.packageName, baseURL: baseURL, tokens: source, caller: quick ? quickCaller : caller)
    }
}

/// Google's keys for Pub/Sub's push tokens, from the file the operator fetches from
/// `https://www.googleapis.com/oauth2/v3/certs` and refreshes (`--google-push-keys`): read again
/// whenever the file changes, so that a refresh needs no restart.
final class GooglePushKeys: Sendable {
    let path: String
    private let loaded = Mutex<(file: FileIdentity, keys: GoogleKeySet)?>(nil)

    init(path: String) { self.path = path }

    /// The key set as the file holds it now, or why it cannot be used.
    func keys() -> Result<GoogleKeySet, PlayConfigurationError> {
        guard let identity = FileIdentity(path) else {
            return .failure(PlayConfigurationError("cannot read Google's key set \(path)"))
        }
        if let current = loaded.withLock({ $0 }), current.file == identity { return .success(current.keys) }
        guard let data = FileManager.default.contents(atPath: path) else {
            return .failure(PlayConfigurationError("cannot read Google's key set \(path)"))
        }
        do {
            let keys = try GoogleKeySet(json: data)
            loaded.withLock { $0 = (identity, keys) }
            return .success(keys)
        } catch {
            return .failure(error)
        }
    }
}

/// Google Play's periodic work, on the editor node only: every `interval`, the acknowledgement
/// outbox's due entries are sent (``PlayAcknowledger``), and `/metrics` says what waits; every
/// `voidedInterval`, each app's voided purchases are read and revoked (``PlayVoidedPoller``).
public struct PlayAPIService: Service {
    let acknowledger: PlayAcknowledger
    let voided: PlayVoidedPoller
    /// The apps whose settings name a service account, with their clients.
    let clients: @Sendable () async -> [(app: String, client: PlayDeveloperAPIClient)]
    let voidedInterval: Duration
    /// The clients' connection pool, shut down when the service stops.
    let transport: any APITransport
    let interval: Duration
    let metrics: PlayAPIMetrics
    let logger: Logger

    init(
        acknowledger: PlayAcknowledger, voided: PlayVoidedPoller,
        clients: @escaping @Sendable () async -> [(app: String, client: PlayDeveloperAPIClient)],
        voidedInterval: Duration = .seconds(3_600), transport: any APITransport, interval: Duration, metrics: PlayAPIMetrics, logger: Logger
    ) {
        self.acknowledger = acknowledger
        self.voided = voided
        self.clients = clients
        self.voidedInterval = voidedInterval
        self.transport = transport
        self.interval = interval
        self.metrics = metrics
        self.logger = logger
    }

    public func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                var nextVoided = ContinuousClock.now
                while true {
                    if ContinuousClock.now >= nextVoided {
                        await pollVoided()
                        nextVoided = ContinuousClock.now + voidedInterval
                    }
                    await pass()
                    try await Task.sleep(for: interval)
                }
            }
        } catch is CancellationError {
            // Shutting down: what was not sent stays pending in the outbox.
        }
        try? await transport.shutdown()
    }

    /// Each app's voided purchases since the last poll, revoked; a failure keeps the position at the
    /// last page read, and the next poll resumes there.
    func pollVoided() async {
        for (app, client) in await clients() {
            do {
                let summary = try await voided.poll(app: app, client: client)
                metrics.record(summary, app: app)
            } catch {
                logger.error("play.voided.failed", metadata: ["feed.app": "\(app)", "error": "\(error)"])
            }
        }
    }

    /// One pass: what is due sent, the backlog measured.
    func pass() async {
        do {
            let summary = try await acknowledger.runDue()
            let pending = try await acknowledger.store.acknowledgements(in: .pending)
            metrics.record(summary, pending: pending, now: Date())
            if summary.expired > 0 || summary.failed > 0 {
                logger.error("play.acknowledgements", metadata: ["expired": "\(summary.expired)", "failed": "\(summary.failed)"])
            }
        } catch {
            logger.error("play.acknowledgements.failed", metadata: ["error": "\(error)"])
        }
    }
}
