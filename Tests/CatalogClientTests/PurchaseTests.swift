import AppStore
import AppStoreTestSupport
import CatalogClient
import CatalogKit
import CatalogServer
import Content
import Foundation
import Hummingbird
import HummingbirdTesting
import Ledger
import Logging
import Storage
import Synchronization
import Testing
import Time

/// Purchases from `CatalogClient` to the real purchase endpoint of `catalog serve`, verified with a
/// PKI the test makes and recorded in a real SQLite file (docs/client.md, docs/purchases.md).
@Suite struct PurchaseTests {
    typealias PKI = AppStoreTestSupport.AppStoreTestPKI
    /// The app PurchasesTestSupport signs for.
    static let app = "com.example.app"
    /// Inside the test transaction's period (2024-12-31 to 2025-01-31): the server's clock.
    static let during = Timestamp(secondsSince1970: 1_736_899_200)  // 2025-01-15
    static let customer = UUID(uuidString: "11111111-1111-4111-8111-111111111111")

    /// A published catalog whose monthly subscription unlocks `pro`, with a client directory beside it.
    struct Fixture {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("client-purchases-\(UUID().uuidString)")
        let pki: PKI
        var clientDirectory: URL { root.appendingPathComponent("client") }

        init() throws {
            pki = try PKI.ecdsa()
            let catalog = root.appendingPathComponent("catalog")
            try FileManager.default.createDirectory(at: catalog, withIntermediateDirectories: true)
            let text = """
                <?xml version="1.0" encoding="UTF-8"?>
                <plist version="1.0"><dict><key>platforms</key><array><string>iOS</string></array>
                <key>appAppleId</key><integer>1234567890</integer>
                <key>products</key><array>
                <dict><key>id</key><string>com.example.app.pro.monthly</string><key>type</key><string>auto-renewable</string>
                <key>subscription</key><dict><key>group</key><string>pro</string><key>period</key><string>P1M</string></dict>
                <key>entitlements</key><array><string>pro</string></array></dict>
                <dict><key>id</key><string>com.example.app.levels</string><key>type</key><string>non-consumable</string>
                <key>entitlements</key><array><string>levels</string></array></dict>
                </array></dict></plist>
                """
            try Data(text.utf8).write(to: catalog.appendingPathComponent("\(PurchaseTests.app).plist"))
            let build = try workflow.build(at: Timestamp(secondsSince1970: Timestamp.now.secondsSince1970 - 10), dryRun: false)
            #expect(!build.hasErrors, "\(build.diagnostics)")
        }

        var workflow: CatalogWorkflow {
            CatalogWorkflow(
                catalogDirectory: root.appendingPathComponent("catalog"), catalogDisplayPath: "catalog",
                publicDirectory: root.appendingPathComponent("public"))
        }

        /// Serves the catalog with a new SQLite store (wrapped by `wrap`) for the duration of `body`,
        /// its clock at `clock` (by default inside the test subscription's period), signing content
        /// URLs with a key of its own.
        func serve(
            wrap: (SQLiteStore) -> any PurchaseStore & WebhookOutbox = { $0 },
            clock: @escaping @Sendable () -> Timestamp = { PurchaseTests.during },
            _ body: @Sendable (_ server: URL, _ store: SQLiteStore) async throws -> Void
        ) async throws {
            let sqlite = try await SQLiteStore.open(path: root.appendingPathComponent("server-\(UUID().uuidString).sqlite").path)
            var configuration = ServeConfiguration()
            configuration.clock = clock
            configuration.content.keyRing = try ContentKeyRing(keys: [ContentSigningKey.generate(id: "k1")], current: "k1")
            var purchases = PurchasesConfiguration()
            purchases.trust = PurchaseTrust(jwsRoots: [pki.root], receiptRoots: [pki.root])
            let application = buildApplication(
                publicDirectory: PublicTree(root: root.appendingPathComponent("public")), port: 0, configuration: configuration,
                reloadInterval: .milliseconds(100), reportStore: sqlite, purchaseStore: wrap(sqlite), workflow: workflow,
                purchasesConfiguration: purchases,
                logger: Logger(label: "test"))
            try await application.test(.live) { client in
                let port = try #require(client.port)
                try await body(try #require(URL(string: "http://127.0.0.1:\(port)")), sqlite)
            }
            try await sqlite.close()
        }

        /// A client on this fixture's directory: a new one on it is the app relaunched. `install`
        /// names another install's directory (another device, or the app deleted and installed again).
        func client(server: URL, automatic: Bool = false, install: String? = nil) -> CatalogClient {
            let directory = install.map { root.appendingPathComponent("install-\($0)") } ?? clientDirectory
            var configuration = CatalogClient.Configuration(
                server: server, app: PurchaseTests.app, fallbackIdentifiers: [], directory: directory)
            configuration.sendsPurchasesAutomatically = automatic
            configuration.sendsReportsAutomatically = false
            configuration.purchaseBackoff = Backoff(initial: 0.01, maximum: 0.05)
            configuration.log = { _ in }
            return CatalogClient(configuration: configuration)
        }

        /// The queued purchase files of the default install, or of `install`.
        func queued(install: String? = nil) -> [String] {
            let base = install.map { root.appendingPathComponent("install-\($0)") } ?? clientDirectory
            let directory = base.appendingPathComponent("data/purchases/queue")
            return ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasSuffix(".json") }
        }

        func remove() { try? FileManager.default.removeItem(at: root) }
    }

    /// The level pack (a non-consumable unlocking `levels`), bought by `transactionId`.
    static func levels(_ transactionId: String = "2000000000000101") -> [String: any Sendable] {
        PKI.transaction([
            "transactionId": transactionId, "originalTransactionId": transactionId, "productId": "com.example.app.levels",
            "type": "Non-Consumable", "expiresDate": NSNull(), "subscriptionGroupIdentifier": NSNull(), "webOrderLineItemId": NSNull(),
        ])
    }

    /// A purchase goes out, the server records it against the customer, and its answer is what
    /// the app owns; read again from disk, offline, by a relaunched client.
    @Test func aPurchaseIsSentAndItsEntitlementsReadOnlineAndOffline() async throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let jws = try fixture.pki.jws(payload: PKI.transaction())
        try await fixture.serve { server, store in
            let client = fixture.client(server: server)
            #expect(await client.entitlements().source == .unknown)
            let id = try await client.sendPurchase(signedTransaction: jws, appAccountToken: Self.customer)
            #expect(fixture.queued().count == 1, "on disk before it is sent")
            let delivery = await client.sendPendingPurchases()
            #expect(delivery.sent == 1, "\(String(describing: delivery.error))")
            #expect(delivery.refused.isEmpty && delivery.pending == 0)
            #expect(!id.isEmpty)
            let answered = try #require(delivery.entitlements)
            #expect(answered.source == .network)
            #expect(answered.entitlements.map(\.name) == ["pro"])
            #expect(answered.grants("pro", at: Date(timeIntervalSince1970: 1_736_899_200)))
            #expect(!answered.grants("pro", at: Date(timeIntervalSince1970: 1_740_000_000)), "expired by March")
            #expect(answered.keys.contains { $0.kind == "appAccountToken" && $0.value == Self.customer?.uuidString.lowercased() })
            let recorded = try await store.customer(app: Self.app, id: "2000000000000001")
            #expect(recorded != nil, "the server's store holds the purchase")

            let refreshed = await client.refreshEntitlements()
            #expect(refreshed.source == .network)
            #expect(refreshed.entitlements.map(\.name) == ["pro"])
        }
        // The server is gone: a relaunched app still knows what the customer owns, and when it learnt it.
        let offline = fixture.client(server: try await closedServerURL())
        let kept = await offline.entitlements()
        #expect(kept.source == .cache)
        #expect(kept.entitlements.map(\.name) == ["pro"])
        #expect(kept.entitlements.first?.expiresDate == Date(timeIntervalSince1970: 1_738_281_600))
        #expect(kept.readAt != nil && kept.serverTime == Date(timeIntervalSince1970: 1_736_899_200))
        let refreshed = await offline.refreshEntitlements()
        #expect(refreshed.source == .cache)
        #expect(refreshed.error?.code == .transport)
        #expect(refreshed.entitlements.map(\.name) == ["pro"])
    }

    /// A purchase queued while offline is sent by the next launch on its own.
    @Test func theQueueSurvivesARelaunch() async throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let offline = fixture.client(server: try await closedServerURL())
        try await offline.sendPurchase(signedTransaction: try fixture.pki.jws(payload: PKI.transaction()))
        let failed = await offline.sendPendingPurchases()
        #expect(failed.sent == 0 && failed.pending == 1)
        #expect(failed.error?.code == .transport)
        #expect(failed.nextAttempt != nil)
        #expect(fixture.queued().count == 1)

        try await fixture.serve { server, store in
            // No call to send: the relaunched client resumes the queue after the back-off.
            let relaunched = fixture.client(server: server, automatic: true)
            var recorded: CustomerRecord?
            for _ in 0..<200 where recorded == nil {
                try await Task.sleep(nanoseconds: 50_000_000)
                recorded = try await store.customer(app: Self.app, id: "2000000000000001")
            }
            #expect(recorded != nil, "the purchase reached the server's store")
            for _ in 0..<100 where !fixture.queued().isEmpty { try await Task.sleep(nanoseconds: 50_000_000) }
            #expect(fixture.queued().isEmpty, "a delivered purchase leaves the queue")
            #expect(await relaunched.entitlements().entitlements.map(\.name) == ["pro"])
        }
    }

    /// The attack: a transaction signed by a PKI that is not the App Store's. The server refuses
    /// it for good (403 `not-authenticated`), so the client drops it with that code rather than
    /// sending it forever; nothing is granted. A purchase another customer holds is dropped with
    /// `bound-to-another-customer`.
    @Test func aRefusedPurchaseIsDroppedWithItsCode() async throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        try await fixture.serve { server, _ in
            let client = fixture.client(server: server)
            let forged = try await client.sendPurchase(signedTransaction: try PKI.ecdsa().jws(payload: PKI.transaction()))
            let delivery = await client.sendPendingPurchases()
            #expect(delivery.sent == 0 && delivery.pending == 0)
            #expect(delivery.refused.map(\.purchaseId) == [forged])
            #expect(delivery.refused.first?.error.serverCode == "not-authenticated")
            #expect(delivery.refused.first?.error.status == 403)
            #expect(delivery.refused.first?.error.code == .rejected)
            #expect(fixture.queued().isEmpty)
            #expect(await client.entitlements().entitlements.isEmpty)

            let jws = try fixture.pki.jws(payload: PKI.transaction())
            try await client.sendPurchase(signedTransaction: jws, appAccountToken: Self.customer)
            try await client.sendPurchase(signedTransaction: jws, appAccountToken: UUID())
            let second = await client.sendPendingPurchases()
            #expect(second.sent == 1)
            #expect(second.refused.map(\.error.serverCode) == ["bound-to-another-customer"])
            #expect(second.refused.first?.error.status == 409)
        }
        await #expect(throws: CatalogClientError.self) {
            try await fixture.client(server: try await closedServerURL()).sendPurchase(signedTransaction: "not a jws")
        }
    }

    /// The attack of issue 35 item 5: a purchase account A holds (the app's `keep` policy) presented
    /// by account B, who owns the level pack. The server refuses it, 409 `bound-to-another-customer`,
    /// with B's own customer beside: the app must learn both that this purchase belongs to another
    /// account and what B does have, on the install that bought the pack and on B's second device,
    /// where nothing was ever accepted.
    @Test func aPurchaseBoundToAnotherAccountReachesTheAppWithWhatItDoesHave() async throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let (accountA, accountB) = (UUID(), UUID())
        let pro = try fixture.pki.jws(payload: PKI.transaction())
        let levels = try fixture.pki.jws(payload: Self.levels())
        try await fixture.serve { server, _ in
            let a = fixture.client(server: server, install: "a")
            try await a.sendPurchase(signedTransaction: pro, appAccountToken: accountA)
            #expect(await a.sendPendingPurchases().sent == 1)

            let b = fixture.client(server: server, install: "b")
            try await b.sendPurchase(signedTransaction: levels, appAccountToken: accountB)
            #expect(await b.sendPendingPurchases().entitlements?.entitlements.map(\.name) == ["levels"])
            // A's purchase presented by B (a shared Apple ID, a leaked transaction).
            let id = try await b.sendPurchase(signedTransaction: pro, appAccountToken: accountB)
            let refused = await b.sendPendingPurchases()
            #expect(refused.sent == 0 && refused.pending == 0)
            #expect(refused.refused.first?.error.serverCode == "bound-to-another-customer")
            #expect(refused.entitlements?.entitlements.map(\.name) == ["levels"], "the 409's customer reaches the app")
            #expect(refused.entitlements?.source == .network)
            let refusal = try #require(refused.refused.first)
            #expect(refusal.isBoundToAnotherCustomer && refusal.error.code == .boundToAnotherCustomer)
            #expect(refusal.error.status == 409)
            #expect(refusal.purchaseId == id)
            #expect(refusal.productId == "com.example.app.pro.monthly" && refusal.transactionId == "2000000000000001")
            #expect(refusal.entitlements?.entitlements.map(\.name) == ["levels"], "what B does own, beside the refusal")
            #expect(await b.refusedPurchases().map(\.purchaseId) == [id], "kept for the app until it removes it")
            #expect(await b.entitlements().entitlements.map(\.name) == ["levels"])

            // B's second device: nothing accepted there yet, and the 409 still says what B owns.
            let second = fixture.client(server: server, install: "b2")
            try await second.sendPurchase(signedTransaction: pro, appAccountToken: accountB)
            let delivery = await second.sendPendingPurchases()
            #expect(delivery.refused.map(\.error.serverCode) == ["bound-to-another-customer"])
            #expect(delivery.entitlements?.entitlements.map(\.name) == ["levels"])
            let kept = await second.entitlements()
            #expect(kept.entitlements.map(\.name) == ["levels"], "kept for offline use, as an accepted answer is")
            #expect(!kept.grants("pro"))

            // As apps run: sent by the background loop, whose round has no caller. The refusal is
            // neither retried nor lost: the app reads it, after a relaunch too, and removes it.
            let background = fixture.client(server: server, automatic: true, install: "b3")
            let sent = try await background.sendPurchase(signedTransaction: pro, appAccountToken: accountB)
            for _ in 0..<200 where !fixture.queued(install: "b3").isEmpty { try await Task.sleep(nanoseconds: 25_000_000) }
            #expect(fixture.queued(install: "b3").isEmpty, "a refusal is final: not sent again")
            let relaunched = fixture.client(server: server, install: "b3")
            let seen = await relaunched.refusedPurchases()
            #expect(seen.map(\.purchaseId) == [sent])
            #expect(seen.first?.isBoundToAnotherCustomer == true)
            #expect(seen.first?.entitlements?.entitlements.map(\.name) == ["levels"])
            #expect(seen.first?.productId == "com.example.app.pro.monthly")
            #expect(await relaunched.entitlements().entitlements.map(\.name) == ["levels"])
            await relaunched.removeRefusedPurchases([sent])
            #expect(await relaunched.refusedPurchases().isEmpty)
            withExtendedLifetime(background) {}
        }
    }

    /// The store cannot commit: the server answers 503 with `Retry-After`, the purchase stays
    /// queued, and the client sends it again by itself until the server takes it.
    @Test func aServer503IsRetried() async throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let failures = Countdown(1)
        try await fixture.serve(wrap: { FlakyPurchaseStore($0, failures: failures) }) { server, store in
            let manual = fixture.client(server: server)
            try await manual.sendPurchase(signedTransaction: try fixture.pki.jws(payload: PKI.transaction()))
            let first = await manual.sendPendingPurchases()
            #expect(first.sent == 0 && first.pending == 1)
            #expect(first.error?.status == 503)
            #expect(first.error?.code == .server)
            #expect(first.error?.retryAfter != nil)
            #expect(first.nextAttempt != nil)

            let relaunched = fixture.client(server: server, automatic: true)
            var recorded: CustomerRecord?
            for _ in 0..<200 where recorded == nil {
                try await Task.sleep(nanoseconds: 50_000_000)
                recorded = try await store.customer(app: Self.app, id: "2000000000000001")
            }
            #expect(recorded != nil, "the retry reached the store")
            #expect(failures.left.withLock { $0 } == 0, "the first attempt did fail")
            withExtendedLifetime(relaunched) {}
        }
    }
}

/// Failures left to inject.
final class Countdown: Sendable {
    let left: Mutex<Int>
    init(_ count: Int) { left = Mutex(count) }
}

/// A store whose first `failures` purchase commits fail as a full commit queue does (503,
/// `Retry-After: 1`), then pass through.
final class FlakyPurchaseStore: PurchaseStore, WebhookOutbox {
    let base: SQLiteStore
    let failures: Countdown

    init(_ base: SQLiteStore, failures: Countdown) {
        self.base = base
        self.failures = failures
    }

    func record(_ submissions: [PurchaseSubmission]) async throws -> [PurchaseOutcome] {
        let fail = failures.left.withLock { left in
            guard left > 0 else { return false }
            left -= 1
            return true
        }
        if fail { throw CommitQueueFull() }
        return try await base.record(submissions)
    }
    func customer(app: String, id: String) async throws -> CustomerRecord? { try await base.customer(app: app, id: id) }
    func notifications(app: String?, after sequence: Int64, limit: Int) async throws -> [RawNotification] {
        try await base.notifications(app: app, after: sequence, limit: limit)
    }
    func clearNotificationEvidence(app: String?) async throws -> Int { try await base.clearNotificationEvidence(app: app) }

    func dueWebhookEvents(at now: Date, limit: Int) async throws -> [WebhookEvent] {
        try await base.dueWebhookEvents(at: now, limit: limit)
    }
    func pendingWebhookEvents(limit: Int) async throws -> [WebhookEvent] { try await base.pendingWebhookEvents(limit: limit) }
    func markWebhookDelivered(_ sequence: Int64, attempts: Int, at now: Date) async throws {
        try await base.markWebhookDelivered(sequence, attempts: attempts, at: now)
    }
    func markWebhookFailed(_ sequence: Int64, attempts: Int, retryAt: Date?, error: String, at now: Date) async throws {
        try await base.markWebhookFailed(sequence, attempts: attempts, retryAt: retryAt, error: error, at: now)
    }
    func webhookState(id: String) async throws -> (state: String, attempts: Int)? { try await base.webhookState(id: id) }
}
