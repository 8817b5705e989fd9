import AppStore
import CatalogKit
import CoreMetrics
import Foundation
import Ledger
import Logging
import Prometheus
import ServiceLifecycle
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Where one app's webhooks go (its `webhookURL` and `webhookSecretFile` settings), and what its
/// products unlock, for the entitlements the body carries.
public struct WebhookTarget: Sendable {
    /// The receiver's URL.
    public var url: URL
    /// The HMAC key: the bytes of the secret file, surrounding whitespace trimmed.
    public var secret: [UInt8]
    /// What each product unlocks.
    public var catalog: LedgerCatalog

    /// A target.
    public init(url: URL, secret: [UInt8], catalog: LedgerCatalog) {
        self.url = url
        self.secret = secret
        self.catalog = catalog
    }
}

/// Sends one request; answers the HTTP status, or throws when no answer came.
public protocol WebhookTransport: Sendable {
    /// POSTs `body` with `headers` to `url`.
    func post(_ url: URL, headers: [(String, String)], body: [UInt8]) async throws -> Int
}

/// ``WebhookTransport`` by `URLSession`, with a timeout, and no redirects followed by choice of
/// the receiver (a redirect is an answer that is not 2xx, so a failure).
public struct URLSessionWebhookTransport: WebhookTransport {
    /// How long one attempt may take.
    public var timeout: TimeInterval

    /// A transport whose attempts give up after `timeout`.
    public init(timeout: TimeInterval = 10) { self.timeout = timeout }

    public func post(_ url: URL, headers: [(String, String)], body: [UInt8]) async throws -> Int {
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout)
        request.httpMethod = "POST"
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = Data(body)
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }
}

/// When to try a failed event again, and when to give up (docs/purchases.md, "Webhooks"):
/// exponential backoff from `firstDelay`, doubled per attempt up to `maximumDelay`, each delay
/// scaled by a random factor in [0.5, 1) so that receivers coming back are not hit all at once;
/// dead after `maximumAttempts` attempts or once the event is older than `maximumAge`.
public struct WebhookRetryPolicy: Sendable, Hashable {
    /// The delay after the first failure.
    public var firstDelay: TimeInterval
    /// The longest delay.
    public var maximumDelay: TimeInterval
    /// Attempts before the event is dead.
    public var maximumAttempts: Int
    /// Age (since the event was written) after which a failure makes it dead.
    public var maximumAge: TimeInterval

    /// The defaults: 30 s doubling to 6 h, 15 attempts, 3 days (about 2.5 days of retries at most).
    public init(
        firstDelay: TimeInterval = 30, maximumDelay: TimeInterval = 6 * 3600, maximumAttempts: Int = 15,
        maximumAge: TimeInterval = 3 * 86400
    ) {
        self.firstDelay = firstDelay
        self.maximumDelay = maximumDelay
        self.maximumAttempts = maximumAttempts
        self.maximumAge = maximumAge
    }

    /// The delay after `attempts` failed attempts (1 or more), for a `jitter` in [0, 1).
    public func delay(afterAttempts attempts: Int, jitter: Double) -> TimeInterval {
        let exponent = Double(min(max(attempts - 1, 0), 40))
        let full = min(firstDelay * pow(2, exponent), maximumDelay)
        return full * (0.5 + 0.5 * min(max(jitter, 0), 1))
    }

    /// Whether a failure after `attempts` attempts of an event written at `createdAt` ends it.
    public func givesUp(afterAttempts attempts: Int, createdAt: Date, now: Date) -> Bool {
        attempts >= maximumAttempts || now.timeIntervalSince(createdAt) >= maximumAge
    }
}

/// The webhook counters (docs/operations.md, "Monitoring"), in the server's registry.
public struct WebhookMetrics: Sendable {
    private let delivered: CoreMetrics.Counter
    private let retried: CoreMetrics.Counter
    private let dead: CoreMetrics.Counter

    /// Counters in `registry`.
    public init(registry: PrometheusCollectorRegistry) {
        let factory = PrometheusMetricsFactory(registry: registry)
        delivered = CoreMetrics.Counter(label: "catalog_webhooks_delivered_total", factory: factory)
        retried = CoreMetrics.Counter(label: "catalog_webhooks_retried_total", factory: factory)
        dead = CoreMetrics.Counter(label: "catalog_webhooks_dead_total", factory: factory)
    }

    func recordDelivered() { delivered.increment() }
    func recordRetried() { retried.increment() }
    func recordDead() { dead.increment() }
}

/// Sends the outbox's pending events to each app's webhook (docs/purchases.md, "Webhooks"): signed
/// (``WebhookSignature``), at least once, a customer's events in order, failures retried by
/// ``WebhookRetryPolicy``. Stopping it mid-way loses nothing: an event is settled only after its
/// answer, so one in flight stays pending and is sent again.
public struct WebhookDeliveryService: Service {
    let outbox: any WebhookOutbox
    let purchases: any PurchaseStore
    let targets: @Sendable (String) async -> WebhookTarget?
    let transport: any WebhookTransport
    let policy: WebhookRetryPolicy
    let metrics: WebhookMetrics?
    let now: @Sendable () -> Date
    let sleep: @Sendable (Duration) async throws -> Void
    let jitter: @Sendable () -> Double
    let interval: Duration
    let logger: Logger

    /// A service over `store`'s outbox; `targets` names each app's webhook (nil: none, and the app's
    /// events are settled dead, unsent). The clock, sleep and jitter are injected so tests are exact.
    public init(
        store: any WebhookOutbox & PurchaseStore, targets: @escaping @Sendable (String) async -> WebhookTarget?,
        transport: any WebhookTransport = URLSessionWebhookTransport(), policy: WebhookRetryPolicy = WebhookRetryPolicy(),
        metrics: WebhookMetrics? = nil, now: @escaping @Sendable () -> Date = { Date() },
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        jitter: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }, interval: Duration = .seconds(1),
        logger: Logger = Logger(label: "catalog.webhooks")
    ) {
        outbox = store
        purchases = store
        self.targets = targets
        self.transport = transport
        self.policy = policy
        self.metrics = metrics
        self.now = now
        self.sleep = sleep
        self.jitter = jitter
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                while true {
                    // A full batch means more are due: go on without waiting.
                    if try await deliverDue() < Self.batch { try await sleep(interval) }
                }
            }
        } catch is CancellationError {
            // Shutting down: an event in flight was not settled, so it stays pending.
        }
    }

    static let batch = 50

    /// One pass: sends every event due now (at most a batch), settles each by its answer, and
    /// returns how many were attempted. A store failure ends the pass; the next one tries again.
    @discardableResult
    public func deliverDue() async throws -> Int {
        let events: [WebhookEvent]
        do {
            events = try await outbox.dueWebhookEvents(at: now(), limit: Self.batch)
        } catch {
            logger.error("webhooks.read-failed", metadata: ["error": "\(error)"])
            return 0
        }
        for event in events {
            try Task.checkCancellation()
            await deliver(event)
        }
        return events.count
    }

    private func deliver(_ event: WebhookEvent) async {
        let attempts = event.attempts + 1
        guard let target = await targets(event.app) else {
            await settle {
                try await outbox.markWebhookFailed(
                    event.sequence, attempts: event.attempts, retryAt: nil, error: "the app has no webhookURL", at: now())
            }
            return
        }
        let failure: String
        do {
            let body = try await body(of: event, catalog: target.catalog)
            let timestamp = Int64(now().timeIntervalSince1970)
            let headers = [
                ("Content-Type", "application/json"),
                (WebhookSignature.header, WebhookSignature.sign(body: body, secret: target.secret, timestamp: timestamp)),
                ("Catalog-Event-Id", event.id),
            ]
            let status = try await transport.post(target.url, headers: headers, body: body)
            if (200..<300).contains(status) {
                metrics?.recordDelivered()
                await settle { try await outbox.markWebhookDelivered(event.sequence, attempts: attempts, at: now()) }
                return
            }
            failure = "the receiver answered \(status)"
        } catch {
            // Stopped mid-request: not the receiver's failure. The event stays as it was, pending
            // and due, and the next run sends it again.
            if Task.isCancelled || error is CancellationError { return }
            failure = "\(error)"
        }
        let at = now()
        if policy.givesUp(afterAttempts: attempts, createdAt: event.createdAt, now: at) {
            metrics?.recordDead()
            logger.error(
                "webhooks.dead",
                metadata: ["event": "\(event.id)", "feed.app": "\(event.app)", "attempts": "\(attempts)", "error": "\(failure)"])
            await settle { try await outbox.markWebhookFailed(event.sequence, attempts: attempts, retryAt: nil, error: failure, at: at) }
        } else {
            metrics?.recordRetried()
            let retry = at.addingTimeInterval(policy.delay(afterAttempts: attempts, jitter: jitter()))
            logger.warning("webhooks.retry", metadata: ["event": "\(event.id)", "attempts": "\(attempts)", "error": "\(failure)"])
            await settle { try await outbox.markWebhookFailed(event.sequence, attempts: attempts, retryAt: retry, error: failure, at: at) }
        }
    }

    /// A settlement that fails leaves the event pending: it is sent again, which at least once allows.
    private func settle(_ body: () async throws -> Void) async {
        do { try await body() } catch { logger.error("webhooks.settle-failed", metadata: ["error": "\(error)"]) }
    }

    /// The event's JSON (docs/purchases.md, "Webhooks"): what changed, and the customer as
    /// `GET /v1/apps/{app}/customers/{id}` answers it now (keys and entitlements).
    func body(of event: WebhookEvent, catalog: LedgerCatalog) async throws -> [UInt8] {
        let record = try await purchases.customer(app: event.app, id: event.purchaseKey)
        let body = WebhookBody(
            id: event.id, type: event.type.rawValue, app: event.app, environment: event.environment,
            originalTransactionId: event.purchaseKey, transactionId: event.transactionId, productId: event.productId,
            occurredAt: event.occurredAt.map(CustomerAnswer.rfc3339), createdAt: CustomerAnswer.rfc3339(event.createdAt),
            customer: record.map { CustomerAnswer($0, at: now(), catalog: catalog, full: false).body })
        // These bytes, encoded once, are both what is signed and what is sent.
        return ServiceJSON.encode(body)
    }
}

/// Each app's ``WebhookTarget``: its URL and catalog from the app's purchase settings at its
/// published revision (``PurchaseSettingsCache``, read once per revision, as the endpoints read
/// them), and its secret file read again at most every `refresh`, so that a rotated secret takes
/// effect without a restart.
final class WebhookTargets: Sendable {
    private let settings: @Sendable (String) async -> AppPurchases?
    private let refresh: TimeInterval
    private let logger: Logger
    private let secrets = Mutex<[String: (read: Date, secret: [UInt8]?)]>([:])

    init(settings: @escaping @Sendable (String) async -> AppPurchases?, refresh: TimeInterval = 30, logger: Logger) {
        self.settings = settings
        self.refresh = refresh
        self.logger = logger
    }

    /// `app`'s target; nil when it sets no `webhookURL`, or its secret file cannot be read (logged).
    func target(_ app: String) async -> WebhookTarget? {
        guard let purchases = await settings(app), let url = purchases.webhookURL, let path = purchases.webhookSecretFile,
            let secret = secret(at: path)
        else { return nil }
        return WebhookTarget(url: url, secret: secret, catalog: purchases.catalog)
    }

    /// The secret in `path`, surrounding whitespace trimmed; nil when it cannot be read (logged).
    private func secret(at path: String) -> [UInt8]? {
        let now = Date()
        if let entry = secrets.withLock({ $0[path] }), now.timeIntervalSince(entry.read) < refresh { return entry.secret }
        var secret: [UInt8]?
        do {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            let trimmed = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard !trimmed.isEmpty else { throw PurchaseConfigurationError("\(path) is empty") }
            secret = Array(trimmed.utf8)
        } catch {
            logger.error("webhooks.secret", metadata: ["file": "\(path)", "error": "\(error)"])
        }
        secrets.withLock { $0[path] = (now, secret) }
        return secret
    }
}

/// A webhook's body (docs/purchases.md, "Webhooks"): what changed, and the customer as
/// `GET /v1/apps/{app}/customers/{id}` answers it (keys and entitlements), or null when none is bound.
struct WebhookBody: Codable, Sendable, Equatable {
    var id: String
    var type: String
    var app: String
    var environment: String?
    var originalTransactionId: String
    var transactionId: String?
    var productId: String?
    var occurredAt: String?
    var createdAt: String
    var customer: CustomerAnswer.Body?

    private enum CodingKeys: String, CodingKey {
        case id, type, app, environment, originalTransactionId, transactionId, productId, occurredAt, createdAt, customer
    }

    /// As synthesized, except that `customer` is written as null when there is none: the receiver
    /// always finds the member.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(type, forKey: .type)
        try container.encode(app, forKey: .app)
        try container.encodeIfPresent(environment, forKey: .environment)
        try container.encode(originalTransactionId, forKey: .originalTransactionId)
        try container.encodeIfPresent(transactionId, forKey: .transactionId)
        try container.encodeIfPresent(productId, forKey: .productId)
        try container.encodeIfPresent(occurredAt, forKey: .occurredAt)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(customer, forKey: .customer)
    }
}
