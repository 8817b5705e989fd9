import AppStore
import AppStoreTestSupport
import CatalogServer
import CatalogTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import Ledger
import Logging
import NIOCore
import Prometheus
import Storage
import Synchronization
import Testing

/// A real HTTP server on loopback that records every webhook it gets and answers `status`.
final class WebhookReceiver: Sendable {
    struct Received: Sendable {
        var signature: String?
        var eventId: String?
        var body: [UInt8]
    }

    /// What the receiver answers, and what it got: shared with its route.
    final class State: Sendable {
        let status: Mutex<Int>
        let received = Mutex<[Received]>([])
        init(status: Int) { self.status = Mutex(status) }
    }

    let port: Int
    let state: State
    private let task: Task<Void, any Error>

    var requests: [Received] { state.received.withLock { $0 } }

    private init(port: Int, state: State, task: Task<Void, any Error>) {
        self.port = port
        self.state = state
        self.task = task
    }

    /// A receiver on `port` (0: a free one), answering `status` until told otherwise.
    static func start(port: Int = 0, status: Int = 200) async throws -> WebhookReceiver {
        let state = State(status: status)
        let router = Router()
        router.post("hook") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            let signature = HTTPField.Name("Catalog-Signature").flatMap { request.headers[$0] }
            let eventId = HTTPField.Name("Catalog-Event-Id").flatMap { request.headers[$0] }
            state.received.withLock { $0.append(Received(signature: signature, eventId: eventId, body: Array(buffer: body))) }
            return Response(status: .init(code: state.status.withLock { $0 }))
        }
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router, configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            }, logger: Logger(label: "test.webhook-receiver"))
        let task = Task { try await app.runService(gracefulShutdownSignals: []) }
        var bound = 0
        for await port in ports { bound = port }
        return WebhookReceiver(port: bound, state: state, task: task)
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)/hook") ?? URL(fileURLWithPath: "/") }

    func stop() async {
        task.cancel()
        _ = try? await task.value
    }
}

/// A transport that never answers until cancelled: a delivery in flight when the service stops.
struct HangingTransport: WebhookTransport {
    let started: AsyncStream<Void>.Continuation
    func post(_ url: URL, headers: [(String, String)], body: [UInt8]) async throws -> Int {
        started.yield()
        try await Task.sleep(for: .seconds(3600))
        return 200
    }
}

/// The webhook scenarios, the same on SQLite and PostgreSQL.
enum WebhookScenarios {
    typealias PKI = AppStoreTestSupport.AppStoreTestPKI
    typealias Store = any WebhookOutbox & PurchaseStore
    static let app = "com.example.app"
    static let start = PKI.date(2025, 1, 15)
    static let secret = Array("whsec-test-secret".utf8)
    static let catalog = LedgerCatalog(products: ["com.example.app.pro.monthly": LedgerProduct(entitlements: ["pro"])])
    static let token = "5b4b8a0e-8d6e-4a8d-9b3a-0f0e1d2c3b4a"

    /// A test clock that moves only when told.
    final class Clock: Sendable {
        let now = Mutex(WebhookScenarios.start)
        func advance(_ seconds: TimeInterval) { now.withLock { $0 += seconds } }
        var date: Date { now.withLock { $0 } }
    }

    static func transaction(_ overrides: [String: any Sendable] = [:]) -> JWSTransactionDecodedPayload {
        PKI.decoded(PKI.transaction(["appAccountToken": token].merging(overrides) { $1 }))
    }

    static func notification(uuid: String, type: String, subtype: String? = nil, _ transaction: JWSTransactionDecodedPayload)
        -> PurchaseSubmission
    {
        PurchaseSubmission(
            app: app, receivedAt: start, source: .notification,
            notification: RawNotification(
                app: app, notificationId: uuid, notificationType: type, subtype: subtype, environment: "Production",
                signedDate: transaction.signedDate, receivedAt: start, body: "{\"signedPayload\":\"\(uuid)\"}"),
            storeEvent: .appStore(notification: type, subtype: subtype), transactions: [Kept(transaction)])
    }

    static func service(
        _ store: Store, receiver: URL, clock: Clock, transport: any WebhookTransport = URLSessionWebhookTransport(timeout: 5),
        policy: WebhookRetryPolicy = WebhookRetryPolicy(), metrics: WebhookMetrics? = nil
    ) -> WebhookDeliveryService {
        WebhookDeliveryService(
            store: store, targets: { _ in WebhookTarget(url: receiver, secret: secret, catalog: catalog) }, transport: transport,
            policy: policy, metrics: metrics, now: { clock.date }, sleep: { try await Task.sleep(for: $0) }, jitter: { 0 })
    }

    /// A subscription started by a notification, and the same transaction sent by the app, is one
    /// event, delivered once, signed over its timestamp and body, naming the customer and `pro`.
    static func deliversOnceWithAValidSignature(_ store: Store) async throws {
        let receiver = try await WebhookReceiver.start()
        defer { Task { await receiver.stop() } }
        let clock = Clock()
        let subscribed = notification(uuid: "n-1", type: "SUBSCRIBED", subtype: "INITIAL_BUY", transaction())
        _ = try await store.record([subscribed])
        _ = try await store.record([subscribed])  // Apple's retry: a duplicate, no new event
        _ = try await store.record([
            PurchaseSubmission(
                app: app, receivedAt: start, source: .app, transactions: [Kept(transaction())], appAccount: token)
        ])
        #expect(try await store.pendingWebhookEvents(limit: 10).count == 1)

        let delivery = service(store, receiver: receiver.url, clock: clock)
        #expect(try await delivery.deliverDue() == 1)
        #expect(try await delivery.deliverDue() == 0)
        let requests = receiver.requests
        #expect(requests.count == 1)
        let request = try #require(requests.first)
        let signature = try #require(request.signature)
        try WebhookSignature.verify(header: signature, body: request.body, secret: secret, now: clock.date)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])
        #expect(json["type"] as? String == "started")
        #expect(json["id"] as? String == request.eventId)
        #expect(json["app"] as? String == app)
        #expect(json["transactionId"] as? String == "2000000000000001")
        let customer = try #require(json["customer"] as? [String: Any])
        let keys = (customer["keys"] as? [[String: Any]] ?? []).compactMap { $0["value"] as? String }
        #expect(keys.contains(token))
        let entitlements = (customer["entitlements"] as? [[String: Any]] ?? []).compactMap { $0["entitlement"] as? String }
        #expect(entitlements == ["pro"])
        let state = try await store.webhookState(id: try #require(request.eventId))
        #expect(state?.state == "delivered")
        #expect(state?.attempts == 1)
    }

    /// An app without a webhook has no events: nothing is written to the outbox for the delivery to
    /// read and settle, and a webhook set later gets only what happens after it.
    static func anAppWithoutAWebhookWritesNoEvents(_ store: Store) async throws {
        var silent = notification(uuid: "n-1", type: "SUBSCRIBED", transaction())
        silent.sendsWebhooks = false
        _ = try await store.record([silent])
        #expect(try await store.pendingWebhookEvents(limit: 10).isEmpty)
        let renewal = transaction(["transactionId": "2000000000000003", "signedDate": PKI.milliseconds(PKI.date(2025, 1, 31))])
        _ = try await store.record([notification(uuid: "n-2", type: "DID_RENEW", renewal)])
        #expect(try await store.pendingWebhookEvents(limit: 10).map(\.type) == [.renewed])
    }

    /// A receiver that is down gets the event once it is up again, after the backoff.
    static func deliversAfterTheReceiverComesBack(_ store: Store) async throws {
        let first = try await WebhookReceiver.start()
        let port = first.port
        let url = first.url
        await first.stop()
        let clock = Clock()
        _ = try await store.record([notification(uuid: "n-1", type: "SUBSCRIBED", transaction())])
        let delivery = service(store, receiver: url, clock: clock)
        #expect(try await delivery.deliverDue() == 1)
        let pending = try #require(try await store.pendingWebhookEvents(limit: 10).first)
        #expect(pending.attempts == 1)
        // Jitter 0: half the first delay of 30 s.
        clock.advance(14)
        #expect(try await delivery.deliverDue() == 0, "not before its backoff")
        let receiver = try await WebhookReceiver.start(port: port)
        defer { Task { await receiver.stop() } }
        clock.advance(1)
        #expect(try await delivery.deliverDue() == 1)
        #expect(receiver.requests.count == 1)
        #expect(try await store.webhookState(id: pending.id)?.state == "delivered")
        #expect(try await store.pendingWebhookEvents(limit: 10).isEmpty)
    }

    /// A receiver answering 500 is retried after 15, 30, then 60 s (jitter 0), and after the last
    /// attempt the event is dead; a customer's later event waits behind the failing one.
    static func retriesWithBackoffThenGivesUp(_ store: Store) async throws {
        let receiver = try await WebhookReceiver.start(status: 500)
        defer { Task { await receiver.stop() } }
        let clock = Clock()
        _ = try await store.record([notification(uuid: "n-1", type: "SUBSCRIBED", transaction())])
        let renewal = transaction(["transactionId": "2000000000000003", "signedDate": PKI.milliseconds(PKI.date(2025, 1, 31))])
        _ = try await store.record([notification(uuid: "n-2", type: "DID_RENEW", renewal)])
        #expect(try await store.pendingWebhookEvents(limit: 10).count == 2)
        let registry = PrometheusCollectorRegistry()
        let delivery = service(
            store, receiver: receiver.url, clock: clock, policy: WebhookRetryPolicy(maximumAttempts: 4),
            metrics: WebhookMetrics(registry: registry))
        #expect(try await delivery.deliverDue() == 1, "the renewal waits behind the customer's first event")
        for delay: TimeInterval in [15, 30, 60] {
            clock.advance(delay - 1)
            #expect(try await delivery.deliverDue() == 0, "not before \(delay) s")
            clock.advance(1)
            #expect(try await delivery.deliverDue() == 1, "retried after \(delay) s")
        }
        #expect(receiver.requests.count == 4)
        #expect(Set(receiver.requests.map(\.eventId)).count == 1, "only the first event was tried")
        let dead = try #require(receiver.requests.first?.eventId)
        #expect(try await store.webhookState(id: dead)?.state == "dead")
        #expect(try await store.webhookState(id: dead)?.attempts == 4)
        // The dead event no longer holds the customer's next one back.
        receiver.state.status.withLock { $0 = 200 }
        #expect(try await delivery.deliverDue() == 1)
        let last = try #require(receiver.requests.last)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(last.body)) as? [String: Any])
        #expect(json["type"] as? String == "renewed")
        var exposition: [UInt8] = []
        registry.emit(into: &exposition)
        let text = String(decoding: exposition, as: UTF8.self)
        for line in ["catalog_webhooks_dead_total 1", "catalog_webhooks_retried_total 3", "catalog_webhooks_delivered_total 1"] {
            #expect(text.contains(line), "\(line) in \(text)")
        }
    }

    /// A delivery stopped mid-request settles nothing: the event stays pending, and the next
    /// service sends it.
    static func stoppingTheLoopLosesNothing(_ store: Store) async throws {
        let receiver = try await WebhookReceiver.start()
        defer { Task { await receiver.stop() } }
        let clock = Clock()
        _ = try await store.record([notification(uuid: "n-1", type: "REFUND", transaction(["revocationDate": PKI.milliseconds(start)]))])
        let (started, continuation) = AsyncStream.makeStream(of: Void.self)
        let hanging = service(store, receiver: receiver.url, clock: clock, transport: HangingTransport(started: continuation))
        let loop = Task { try await hanging.run() }
        for await _ in started { break }
        loop.cancel()
        _ = try? await loop.value
        let pending = try await store.pendingWebhookEvents(limit: 10)
        #expect(pending.count == 1)
        #expect(pending.first?.attempts == 0)
        #expect(pending.first?.type == .refundedOrRevoked)
        #expect(try await service(store, receiver: receiver.url, clock: clock).deliverDue() == 1)
        #expect(receiver.requests.count == 1)
        #expect(try await store.pendingWebhookEvents(limit: 10).isEmpty)
    }
}

@Suite
struct WebhookDeliveryTests {
    private func withStore(_ body: (any WebhookOutbox & PurchaseStore) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("webhooks-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let store = try await SQLiteStore.open(path: folder.appendingPathComponent("catalog.sqlite").path)
        try await body(store)
    }

    @Test func deliversOnceWithAValidSignature() async throws { try await withStore(WebhookScenarios.deliversOnceWithAValidSignature) }
    @Test func deliversAfterTheReceiverComesBack() async throws { try await withStore(WebhookScenarios.deliversAfterTheReceiverComesBack) }
    @Test func retriesWithBackoffThenGivesUp() async throws { try await withStore(WebhookScenarios.retriesWithBackoffThenGivesUp) }
    @Test func stoppingTheLoopLosesNothing() async throws { try await withStore(WebhookScenarios.stoppingTheLoopLosesNothing) }
    @Test func anAppWithoutAWebhookWritesNoEvents() async throws {
        try await withStore(WebhookScenarios.anAppWithoutAWebhookWritesNoEvents)
    }

    /// The receiver's check: a replay outside the tolerance, an altered body, another secret and a
    /// malformed header are each refused.
    @Test func verificationRefusesReplaysAndAlterations() throws {
        let body = Array("{\"id\":\"e\"}".utf8)
        let secret = Array("s3cret".utf8)
        let now = Date(timeIntervalSince1970: 1_750_000_000)
        let header = WebhookSignature.sign(body: body, secret: secret, timestamp: 1_750_000_000)
        try WebhookSignature.verify(header: header, body: body, secret: secret, now: now)
        #expect(throws: WebhookSignature.Failure.outsideTolerance) {
            try WebhookSignature.verify(header: header, body: body, secret: secret, now: now.addingTimeInterval(301))
        }
        #expect(throws: WebhookSignature.Failure.mismatch) {
            try WebhookSignature.verify(header: header, body: Array("{\"id\":\"f\"}".utf8), secret: secret, now: now)
        }
        #expect(throws: WebhookSignature.Failure.mismatch) {
            try WebhookSignature.verify(header: header, body: body, secret: Array("other".utf8), now: now)
        }
        // A replayer who rewrites the timestamp breaks the signature, which covers it.
        let moved = header.replacingOccurrences(of: "t=1750000000", with: "t=1750000301")
        #expect(throws: WebhookSignature.Failure.mismatch) {
            try WebhookSignature.verify(header: moved, body: body, secret: secret, now: now.addingTimeInterval(301))
        }
        #expect(throws: WebhookSignature.Failure.malformed) {
            try WebhookSignature.verify(header: "v1=zz", body: body, secret: secret, now: now)
        }
    }

    /// Each notification type maps to the event the docs' table names.
    @Test func notificationTypesMapToEvents() {
        #expect(WebhookEventType.appStore(notification: "SUBSCRIBED", subtype: "RESUBSCRIBE") == .started)
        #expect(WebhookEventType.appStore(notification: "DID_RENEW", subtype: "BILLING_RECOVERY") == .renewed)
        #expect(WebhookEventType.appStore(notification: "EXPIRED", subtype: "VOLUNTARY") == .expired)
        #expect(WebhookEventType.appStore(notification: "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD") == .inGracePeriod)
        #expect(WebhookEventType.appStore(notification: "DID_FAIL_TO_RENEW", subtype: nil) == .billingRetry)
        #expect(WebhookEventType.appStore(notification: "GRACE_PERIOD_EXPIRED", subtype: nil) == .billingRetry)
        #expect(WebhookEventType.appStore(notification: "REFUND", subtype: nil) == .refundedOrRevoked)
        #expect(WebhookEventType.appStore(notification: "REVOKE", subtype: nil) == .refundedOrRevoked)
        #expect(WebhookEventType.appStore(notification: "DID_CHANGE_RENEWAL_PREF", subtype: "UPGRADE") == .started)
        #expect(WebhookEventType.appStore(notification: "DID_CHANGE_RENEWAL_PREF", subtype: "DOWNGRADE") == nil)
        #expect(WebhookEventType.appStore(notification: "TEST", subtype: nil) == nil)
    }
}

@Suite(.postgres)
struct PostgresWebhookDeliveryTests {
    private func withStore(_ body: (any WebhookOutbox & PurchaseStore) async throws -> Void) async throws {
        let url = try await TestPostgres.current.createDatabase()
        guard case .postgres(let address) = try StoreURL(parsing: url) else { throw NotPostgres() }
        let store = try await PostgresStore.open(address, logger: Logger(label: "catalog.tests.webhooks"))
        do {
            try await body(store)
        } catch {
            try? await store.close()
            throw error
        }
        try await store.close()
    }

    @Test func deliversOnceWithAValidSignature() async throws { try await withStore(WebhookScenarios.deliversOnceWithAValidSignature) }
    @Test func deliversAfterTheReceiverComesBack() async throws { try await withStore(WebhookScenarios.deliversAfterTheReceiverComesBack) }
    @Test func retriesWithBackoffThenGivesUp() async throws { try await withStore(WebhookScenarios.retriesWithBackoffThenGivesUp) }
    @Test func stoppingTheLoopLosesNothing() async throws { try await withStore(WebhookScenarios.stoppingTheLoopLosesNothing) }
    @Test func anAppWithoutAWebhookWritesNoEvents() async throws {
        try await withStore(WebhookScenarios.anAppWithoutAWebhookWritesNoEvents)
    }
}

private struct NotPostgres: Error {}
