import AppStore
import AppStoreTestSupport
import CatalogKit
import CatalogServer
import Content
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ledger
import Logging
import NIOCore
import PropertyList
import Storage
import Synchronization
import Testing
import Time

/// The purchase endpoints through real HTTP on loopback, on a real catalog and SQLite store, with
/// evidence signed by a PKI the test makes (docs/purchases.md).
@Suite struct PurchaseEndpointTests {
    typealias PKI = AppStoreTestSupport.AppStoreTestPKI
    static let app = "com.example.app"
    static let notificationsPath = "/v1/apps/\(app)/notifications/app-store"
    static let purchasesPath = "/v1/apps/\(app)/purchases"
    /// Inside the test transaction's period (2024-12-31 to 2025-01-31).
    static let during = Timestamp(secondsSince1970: 1_736_899_200)  // 2025-01-15

    struct Server {
        let root: URL
        let store: SQLiteStore
        let pki: PKI
        let backend: String
        let viewer: String
        let metrics: ServerMetrics

        func headers(_ token: String? = nil, json: Bool = true) -> HTTPFields {
            var fields = HTTPFields()
            if let token { fields[.authorization] = "Bearer \(token)" }
            if json { fields[.contentType] = "application/json" }
            return fields
        }
    }

    /// The app's catalog: a monthly subscription unlocking `pro` and a consumable, the test's Apple id.
    static func catalog(policy: String, settings: String = "", products: String = "") -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <plist version="1.0"><dict><key>platforms</key><array><string>iOS</string></array>
        <key>appAppleId</key><integer>1234567890</integer>
        <key>transferPolicy</key><string>\(policy)</string>\(settings)
        <key>products</key><array>
        <dict><key>id</key><string>com.example.app.pro.monthly</string><key>type</key><string>auto-renewable</string>
        <key>subscription</key><dict><key>group</key><string>pro</string><key>period</key><string>P1M</string></dict>
        <key>entitlements</key><array><string>pro</string></array></dict>
        <dict><key>id</key><string>com.example.app.coins</string><key>type</key><string>consumable</string></dict>
        <dict><key>id</key><string>com.example.app.pro.quarterly</string><key>type</key><string>auto-renewable</string>
        <key>subscription</key><dict><key>group</key><string>pro</string><key>period</key><string>P3M</string></dict>
        <key>entitlements</key><array><string>pro</string></array></dict>\(products)
        </array></dict></plist>
        """
    }

    static func withServer(
        policy: String = "keep", settings: String = "", products: String = "", receipts: PKI? = nil,
        limit: RateLimit? = RateLimit(perMinute: 600, burst: 120),
        store makeStore: ((SQLiteStore) -> any PurchaseStore & WebhookOutbox)? = nil,
        reports: ReportsConfiguration = ReportsConfiguration(), appStoreAPIURL: URL? = nil, playAPIURL: URL? = nil,
        googlePushKeys: String? = nil, playInterval: Duration = .seconds(60),
        content: ((BlobStore) throws -> [ContentManifest.Item])? = nil, readDeadline: TimeAmount? = nil,
        _ body: @Sendable (any TestClientProtocol, Server) async throws -> Void
    ) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("purchases-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let catalog = root.appendingPathComponent("catalog")
        try FileManager.default.createDirectory(at: catalog, withIntermediateDirectories: true)
        try Data(Self.catalog(policy: policy, settings: settings, products: products).utf8).write(
            to: catalog.appendingPathComponent("\(app).plist"))
        let tree = PublicTree(root: root.appendingPathComponent("public"))
        let workflow = CatalogWorkflow(catalogDirectory: catalog, catalogDisplayPath: "catalog", publicDirectory: tree.root)
        let build = try workflow.build(at: Timestamp(secondsSince1970: Timestamp.now.secondsSince1970 - 10), dryRun: false)
        #expect(!build.hasErrors, "\(build.diagnostics)")
        var configuration = ServeConfiguration()
        configuration.clock = { during }
        if let readDeadline { configuration.readDeadline = readDeadline }
        // Content to deliver: its manifest beside the revision built, and a key to sign its URLs.
        if let content {
            let revision = try #require(try tree.currentManifest(app)?.revision)
            let manifestURL = tree.contentManifestURL(app, revision)
            try FileManager.default.createDirectory(at: manifestURL.deletingLastPathComponent(), withIntermediateDirectories: true)
            try ContentManifest(items: try content(BlobStore(root: tree.content))).encoded().write(to: manifestURL)
            configuration.content.keyRing = try ContentKeyRing(keys: [ContentSigningKey.generate(id: "k1")], current: "k1")
        }
        let sqlite = try await SQLiteStore.open(path: root.appendingPathComponent("var/catalog.sqlite").path)
        var secrets: [String] = []
        for (name, role) in [("shop", EditorRole.backend), ("vic", .viewer)] {
            let secret = TokenSecret.generate()
            try await sqlite.createToken(EditorToken(name: name, role: role, secretHash: TokenSecret.hash(secret), createdAt: .now))
            secrets.append(secret)
        }
        let pki = try PKI.ecdsa()
        let metrics = ServerMetrics()
        let purchaseStore = makeStore?(sqlite) ?? sqlite
        var purchases = PurchasesConfiguration()
        purchases.trust = PurchaseTrust(jwsRoots: [pki.root], receiptRoots: [receipts?.root ?? pki.root])
        purchases.perAddress = limit
        purchases.appStoreAPIURL = appStoreAPIURL
        purchases.playAPIURL = playAPIURL
        purchases.googlePushKeys = googlePushKeys
        purchases.playInterval = playInterval
        let server = Server(root: root, store: sqlite, pki: pki, backend: secrets[0], viewer: secrets[1], metrics: metrics)
        let application = buildApplication(
            publicDirectory: tree, port: 0, configuration: configuration, reloadInterval: .milliseconds(50), reportStore: sqlite,
            purchaseStore: purchaseStore, appStoreAPIStore: sqlite, playStore: sqlite, reportsConfiguration: reports, workflow: workflow,
            purchasesConfiguration: purchases,
            metrics: metrics,
            logger: Logger(label: "test"))
        try await application.test(.live) { client in try await body(client, server) }
    }

    static func body(_ jws: String) -> ByteBuffer { ByteBuffer(string: "{\"signedPayload\":\"\(jws)\"}") }

    static func json(_ response: TestResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(String(buffer: response.body).utf8)) as? [String: Any])
    }

    static func entitlements(_ answer: [String: Any]) -> [String] {
        ((answer["entitlements"] as? [[String: Any]]) ?? []).compactMap { $0["entitlement"] as? String }
    }

    /// A DID_RENEW notification with its transaction and renewal info, signed by `pki`.
    static func renewal(_ pki: PKI, uuid: String = UUID().uuidString.lowercased(), bundle: String = app) throws -> String {
        try pki.jws(
            payload: PKI.notification(
                type: "DID_RENEW",
                data: [
                    "bundleId": bundle,
                    "signedTransactionInfo": try pki.jws(payload: PKI.transaction(["bundleId": bundle])),
                    "signedRenewalInfo": try pki.jws(payload: PKI.renewalInfo()),
                ], ["notificationUUID": uuid]))
    }

    /// Issue 27, row 7: a report's AppTransaction is bound to the app's purchase settings. The app names
    /// Apple id 1234567890, so a genuine production AppTransaction of the same bundle naming another Apple
    /// id counts as unverified (bound to the bundle alone, it verified).
    @Test func reportsAppTransactionsAreBoundToThePurchaseSettingsAppleId() async throws {
        let pki = try PKI.ecdsa()
        var reports = ReportsConfiguration()
        reports.appTransactions = try ReportAppTransactions(roots: [pki.root])
        let genuine = try pki.jws(payload: PKI.appTransaction(["appTransactionId": "install-1"]))
        let otherApp = try pki.jws(payload: PKI.appTransaction(["appTransactionId": "install-2", "appAppleId": 999]))
        try await Self.withServer(reports: reports) { client, server in
            for (index, jws) in [genuine, otherApp].enumerated() {
                let body =
                    #"{"invalidProductIdentifiers":["com.example.app.coins"],"environment":"production","installId":"i\#(index)","appTransaction":"\#(jws)"}"#
                let answer = try await client.execute(
                    uri: "/v1/apps/\(Self.app)/invalid-identifiers", method: .post, headers: server.headers(),
                    body: ByteBuffer(string: body))
                #expect(answer.status == .accepted, "\(String(buffer: answer.body))")
            }
            let metrics = String(decoding: server.metrics.render(), as: UTF8.self)
            #expect(metrics.contains(#"catalog_reports_app_transactions_total{result="verified"} 1"#), "\(metrics)")
            #expect(metrics.contains(#"catalog_reports_app_transactions_total{result="unverified"} 1"#), "\(metrics)")
        }
    }

    @Test func aNotificationIsStoredOnceAndItsCustomerRead() async throws {
        try await Self.withServer { client, server in
            let notification = try Self.renewal(server.pki, uuid: "a0b1c2d3-0000-4000-8000-000000000001")
            let first = try await client.execute(
                uri: Self.notificationsPath, method: .post, headers: server.headers(), body: Self.body(notification))
            #expect(first.status == .ok, "\(String(buffer: first.body))")
            #expect(try Self.json(first)["stored"] as? Bool == true)
            let again = try await client.execute(
                uri: Self.notificationsPath, method: .post, headers: server.headers(), body: Self.body(notification))
            #expect(again.status == .ok)
            #expect(try Self.json(again)["duplicate"] as? Bool == true)
            let stored = try await server.store.notifications(app: Self.app, after: 0, limit: 10)
            #expect(stored.count == 1)

            let customer = "/v1/apps/\(Self.app)/customers/2000000000000001"
            let during = try await client.execute(
                uri: customer + "?at=2025-01-15T00:00:00Z", method: .get, headers: server.headers(server.backend))
            #expect(during.status == .ok, "\(String(buffer: during.body))")
            let answer = try Self.json(during)
            #expect(Self.entitlements(answer) == ["pro"])
            let periods = try #require(answer["periods"] as? [[String: Any]])
            #expect(periods.first?["start"] as? String == "2024-12-31T00:00:00.000Z")
            #expect(periods.first?["end"] as? String == "2025-01-31T00:00:00.000Z")
            #expect(periods.first?["productId"] as? String == "com.example.app.pro.monthly")
            let after = try await client.execute(
                uri: customer + "?at=2025-03-01T00:00:00Z", method: .get, headers: server.headers(server.viewer))
            #expect(Self.entitlements(try Self.json(after)) == [])
            let badInstant = try await client.execute(
                uri: customer + "?at=yesterday", method: .get, headers: server.headers(server.backend))
            #expect(badInstant.status == .badRequest)
            let unknown = try await client.execute(
                uri: "/v1/apps/\(Self.app)/customers/999", method: .get, headers: server.headers(server.backend))
            #expect(unknown.status == .notFound)
            let anonymous = try await client.execute(uri: customer, method: .get, headers: server.headers())
            #expect(anonymous.status == .unauthorized)
        }
    }

    /// A notification of an app without a webhook writes no event for the delivery to read and
    /// settle; one of an app with a webhook writes its event in the same transaction.
    @Test(arguments: [false, true])
    func aNotificationWritesAWebhookEventOnlyForAnAppWithAWebhook(webhook: Bool) async throws {
        let secret = FileManager.default.temporaryDirectory.appendingPathComponent("webhook-secret-\(UUID().uuidString)")
        try Data("whsec-test".utf8).write(to: secret)
        defer { try? FileManager.default.removeItem(at: secret) }
        // A receiver nobody listens on: the event stays pending, to be tried again later.
        let settings =
            webhook
            ? "<key>webhookURL</key><string>http://127.0.0.1:9/hooks</string><key>webhookSecretFile</key><string>\(secret.path)</string>"
            : ""
        try await Self.withServer(settings: settings) { client, server in
            let answer = try await client.execute(
                uri: Self.notificationsPath, method: .post, headers: server.headers(), body: Self.body(try Self.renewal(server.pki)))
            #expect(answer.status == .ok, "\(String(buffer: answer.body))")
            #expect(try await server.store.pendingWebhookEvents(limit: 10).count == (webhook ? 1 : 0))
        }
    }

    /// The attacks on the endpoint: a notification signed by a PKI that is not Apple's, one of
    /// another app carried to this one, a body that is not a notification. Each is 4xx, changes
    /// nothing and is counted.
    @Test func forgedAndMisboundNotificationsAreRefusedAndCounted() async throws {
        try await Self.withServer { client, server in
            let forger = try PKI.ecdsa()
            let forged = try await client.execute(
                uri: Self.notificationsPath, method: .post, headers: server.headers(), body: Self.body(try Self.renewal(forger)))
            #expect(forged.status == .forbidden)
            #expect(try Self.json(forged)["error"].flatMap { ($0 as? [String: Any])?["code"] as? String } == "not-authenticated")
            let otherApp = try await client.execute(
                uri: Self.notificationsPath, method: .post, headers: server.headers(),
                body: Self.body(try Self.renewal(server.pki, bundle: "com.example.other")))
            #expect(otherApp.status == .forbidden)
            let garbage = try await client.execute(
                uri: Self.notificationsPath, method: .post, headers: server.headers(),
                body: ByteBuffer(string: "{\"signedPayload\":\"x.y.z\"}"))
            #expect(garbage.status == .badRequest)
            let huge = try await client.execute(
                uri: Self.notificationsPath, method: .post, headers: server.headers(),
                body: ByteBuffer(string: "{\"signedPayload\":\"" + String(repeating: "a", count: 70_000) + "\"}"))
            #expect(huge.status == .contentTooLarge)
            let stored = try await server.store.notifications(app: Self.app, after: 0, limit: 10)
            #expect(stored.isEmpty)
            let metrics = String(decoding: server.metrics.render(), as: UTF8.self)
            #expect(
                metrics.contains("catalog_purchases_refused_total{endpoint=\"notifications\",code=\"not-authenticated\"} 1"), "\(metrics)")
            #expect(metrics.contains("catalog_purchases_refused_total{endpoint=\"notifications\",code=\"wrong-app\"} 1"))
        }
    }

    @Test func testAndUnknownTypesAreStoredAndAnswered() async throws {
        try await Self.withServer { client, server in
            for type in ["TEST", "SOMETHING_APPLE_ADDS"] {
                let jws = try server.pki.jws(payload: PKI.notification(type: type))
                let response = try await client.execute(
                    uri: Self.notificationsPath, method: .post, headers: server.headers(), body: Self.body(jws))
                #expect(response.status == .ok, "\(type): \(String(buffer: response.body))")
            }
            let stored = try await server.store.notifications(app: Self.app, after: 0, limit: 10)
            #expect(stored.compactMap(\.notificationType) == ["TEST", "SOMETHING_APPLE_ADDS"])
        }
    }

    /// A store that cannot commit: the answer is 5xx, so that Apple sends the notification again.
    @Test func aStoreFailureIs503() async throws {
        try await Self.withServer(store: { FailingPurchaseStore($0) }) { client, server in
            let response = try await client.execute(
                uri: Self.notificationsPath, method: .post, headers: server.headers(), body: Self.body(try Self.renewal(server.pki)))
            #expect(response.status == .serviceUnavailable)
            #expect(response.headers[.retryAfter] != nil)
        }
    }

    static func purchase(_ jws: String, token: String?) -> ByteBuffer {
        var object: [String: String] = ["signedTransaction": jws]
        object["appAccountToken"] = token
        return ByteBuffer(bytes: (try? JSONSerialization.data(withJSONObject: object)) ?? Data())
    }

    /// `keep`: the purchase's first customer holds it; a second customer presenting the same
    /// transaction is refused, and the refusal is counted. One leaked transaction, one account.
    @Test func aPurchaseAnswersItsEntitlementsAndKeepsItsFirstCustomer() async throws {
        try await Self.withServer { client, server in
            let jws = try server.pki.jws(payload: PKI.transaction())
            let first = try await client.execute(
                uri: Self.purchasesPath, method: .post, headers: server.headers(),
                body: Self.purchase(jws, token: "11111111-1111-4111-8111-111111111111"))
            #expect(first.status == .ok, "\(String(buffer: first.body))")
            #expect(Self.entitlements(try Self.json(first)) == ["pro"])
            let second = try await client.execute(
                uri: Self.purchasesPath, method: .post, headers: server.headers(),
                body: Self.purchase(jws, token: "22222222-2222-4222-8222-222222222222"))
            #expect(second.status == .conflict)
            #expect(try Self.json(second)["error"].flatMap { ($0 as? [String: Any])?["code"] as? String } == "bound-to-another-customer")
            let thief = try await client.execute(
                uri: "/v1/apps/\(Self.app)/customers/22222222-2222-4222-8222-222222222222", method: .get,
                headers: server.headers(server.backend))
            #expect(Self.entitlements(try Self.json(thief)) == [])
            let metrics = String(decoding: server.metrics.render(), as: UTF8.self)
            #expect(metrics.contains("catalog_purchase_transfers_total{outcome=\"refused\"} 1"), "\(metrics)")

            let unknown = try await client.execute(
                uri: Self.purchasesPath, method: .post, headers: server.headers(),
                body: Self.purchase(try server.pki.jws(payload: PKI.transaction(["productId": "com.example.app.nothing"])), token: nil))
            #expect(unknown.status == .unprocessableContent)
            let forged = try await client.execute(
                uri: Self.purchasesPath, method: .post, headers: server.headers(),
                body: Self.purchase(try PKI.ecdsa().jws(payload: PKI.transaction()), token: nil))
            #expect(forged.status == .forbidden)
        }
    }

    /// A legacy receipt with the device's identifier: its entries of catalog products are recorded
    /// (typed from the catalog), and a receipt hashed for another device is refused.
    @Test func aReceiptWithItsDeviceIdentifierIsRecorded() async throws {
        let receipts = try await PKI.rsa()
        let receipt = Data(try await TestReceipts.signed(TestReceipts.payload(), by: receipts)).base64EncodedString()
        try await Self.withServer(receipts: receipts) { client, server in
            func post(_ device: String) async throws -> TestResponse {
                let body = try JSONSerialization.data(withJSONObject: ["receipt": receipt, "deviceId": device])
                return try await client.execute(
                    uri: Self.purchasesPath, method: .post, headers: server.headers(), body: ByteBuffer(bytes: body))
            }
            let otherDevice = try await post(String(repeating: "08", count: 16))
            #expect(otherDevice.status == .forbidden)
            let recorded = try await post(String(repeating: "07", count: 16))
            #expect(recorded.status == .ok, "\(String(buffer: recorded.body))")
            #expect(Self.entitlements(try Self.json(recorded)) == ["pro"])
            let customer = try await client.execute(
                uri: "/v1/apps/\(Self.app)/customers/1000000002", method: .get, headers: server.headers(server.backend))
            let periods = try #require(try Self.json(customer)["periods"] as? [[String: Any]])
            #expect(periods.map { $0["end"] as? String } == ["2025-01-15T10:00:00.000Z"])
            #expect(
                try await client.execute(
                    uri: "/v1/apps/\(Self.app)/customers/1000000001", method: .get, headers: server.headers(server.backend)
                ).status == .notFound,
                "the product the catalog does not know is left out")
        }
    }

    /// A purchase made in the second the server's clock is in (it counts whole seconds), or a little
    /// ahead of it by Apple's clock, is held in the answer to the app that presents it: answered at
    /// the server's second, it was not held yet, and the app locked what was just bought.
    @Test func aPurchaseOfThisVerySecondIsHeldInItsAnswer() async throws {
        try await Self.withServer { client, server in
            let now = Date(timeIntervalSince1970: TimeInterval(Self.during.secondsSince1970))
            let jws = try server.pki.jws(
                payload: PKI.transaction([
                    "purchaseDate": PKI.milliseconds(now.addingTimeInterval(0.4)),
                    "signedDate": PKI.milliseconds(now.addingTimeInterval(0.4)),
                ]))
            let answer = try await client.execute(
                uri: Self.purchasesPath, method: .post, headers: server.headers(), body: Self.purchase(jws, token: nil))
            #expect(answer.status == .ok, "\(String(buffer: answer.body))")
            #expect(Self.entitlements(try Self.json(answer)) == ["pro"])
        }
    }

    /// A copied receipt (receipts are no secret: support tickets, logs, backups) sent without the
    /// device it was issued to. With `requireDeviceId` false it proves the purchases of whoever it
    /// was copied from, first presenter binding them (the attack, as before the setting); with the
    /// default, it is refused 403 until its device's identifier comes with it, and a wrong one is refused too.
    @Test(arguments: [false, true])
    func aCopiedReceiptNeedsItsDevice(required: Bool) async throws {
        let receipts = try await PKI.rsa()
        let receipt = Data(try await TestReceipts.signed(TestReceipts.payload(), by: receipts)).base64EncodedString()
        let settings = required ? "" : "<key>requireDeviceId</key><false/>"
        try await Self.withServer(settings: settings, receipts: receipts) { client, server in
            func post(_ fields: [String: String]) async throws -> TestResponse {
                let body = try JSONSerialization.data(withJSONObject: fields.merging(["receipt": receipt]) { $1 })
                return try await client.execute(
                    uri: Self.purchasesPath, method: .post, headers: server.headers(), body: ByteBuffer(bytes: body))
            }
            let copied = try await post(["appAccountToken": "33333333-3333-4333-8333-333333333333"])
            if required {
                #expect(copied.status == .forbidden, "\(String(buffer: copied.body))")
                #expect(String(buffer: copied.body).contains("device identifier"))
                #expect(try await post(["deviceId": String(repeating: "08", count: 16)]).status == .forbidden)
                let genuine = try await post(["deviceId": String(repeating: "07", count: 16)])
                #expect(genuine.status == .ok, "\(String(buffer: genuine.body))")
            } else {
                #expect(copied.status == .ok, "the attack, with the setting off")
                #expect(Self.entitlements(try Self.json(copied)) == ["pro"])
            }
        }
    }

    /// `sandboxUnlocks` false (a TestFlight build with a public link): sandbox evidence is accepted
    /// into the ledger, shown with its environment, and unlocks nothing; production evidence
    /// unlocks as always. The default lets the sandbox unlock, so that App Review can use what it buys.
    @Test(arguments: [true, false])
    func sandboxEvidenceUnlocksOnlyWhereTheAppSaysSo(unlocks: Bool) async throws {
        let settings = unlocks ? "" : "<key>sandboxUnlocks</key><false/>"
        try await Self.withServer(settings: settings) { client, server in
            let sandbox = try server.pki.jws(payload: PKI.transaction(["environment": "Sandbox"]))
            let token = "44444444-4444-4444-8444-444444444444"
            let recorded = try await client.execute(
                uri: Self.purchasesPath, method: .post, headers: server.headers(), body: Self.purchase(sandbox, token: token))
            #expect(recorded.status == .ok, "\(String(buffer: recorded.body))")
            #expect(Self.entitlements(try Self.json(recorded)) == (unlocks ? ["pro"] : []))
            let read = try Self.json(
                try await client.execute(
                    uri: "/v1/apps/\(Self.app)/customers/\(token)", method: .get, headers: server.headers(server.backend)))
            let purchases = try #require(read["purchases"] as? [[String: Any]])
            #expect(purchases.map { $0["environment"] as? String } == ["Sandbox"], "recorded either way")
            let grants = (read["entitlements"] as? [[String: Any]]) ?? []
            #expect(grants.map { $0["environment"] as? String } == (unlocks ? ["Sandbox"] : []))
        }
    }

    /// The flood: past the network's rate a request is 429 with `Retry-After` before anything is
    /// read or verified, and a body past the bound is 413 unread.
    @Test func purchasesAreRateLimitedAndSizeBounded() async throws {
        try await Self.withServer(limit: RateLimit(perMinute: 1, burst: 2)) { client, server in
            let jws = try server.pki.jws(payload: PKI.transaction())
            let huge = ByteBuffer(string: "{\"receipt\":\"" + String(repeating: "A", count: 600 * 1024) + "\"}")
            let tooLarge = try await client.execute(uri: Self.purchasesPath, method: .post, headers: server.headers(), body: huge)
            #expect(tooLarge.status == .contentTooLarge)
            let allowed = try await client.execute(
                uri: Self.purchasesPath, method: .post, headers: server.headers(), body: Self.purchase(jws, token: nil))
            #expect(allowed.status == .ok)
            let limited = try await client.execute(
                uri: Self.purchasesPath, method: .post, headers: server.headers(), body: Self.purchase(jws, token: nil))
            #expect(limited.status == .tooManyRequests)
            #expect(limited.headers[.retryAfter] != nil)
        }
    }

    /// `transfer`: the purchase follows the customer who presents it last, and the move is counted.
    @Test func aTransferPolicyMovesThePurchase() async throws {
        try await Self.withServer(policy: "transfer") { client, server in
            let jws = try server.pki.jws(payload: PKI.transaction())
            for token in ["11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"] {
                let response = try await client.execute(
                    uri: Self.purchasesPath, method: .post, headers: server.headers(), body: Self.purchase(jws, token: token))
                #expect(response.status == .ok)
                #expect(Self.entitlements(try Self.json(response)) == ["pro"])
            }
            let previous = try await client.execute(
                uri: "/v1/apps/\(Self.app)/customers/11111111-1111-4111-8111-111111111111", method: .get,
                headers: server.headers(server.backend))
            let answer = try Self.json(previous)
            #expect(Self.entitlements(answer) == [])
            #expect((answer["transfers"] as? [[String: Any]])?.first?["outcome"] as? String == "transferred")
        }
    }

    /// A backend's token reads customers and nothing of the editor API (it is a server's secret,
    /// not an editor's). The attack: the token used on the editor API.
    @Test func aBackendTokenCannotUseTheEditorAPI() async throws {
        try await Self.withServer { client, server in
            let admin = try await client.execute(uri: "/v1/admin/apps", method: .get, headers: server.headers(server.backend, json: false))
            #expect(admin.status == .forbidden)
            let viewer = try await client.execute(uri: "/v1/admin/apps", method: .get, headers: server.headers(server.viewer, json: false))
            #expect(viewer.status == .ok)
        }
    }
}

/// A store whose purchase commits fail (the disk is full, the server is gone).
final class FailingPurchaseStore: PurchaseStore, WebhookOutbox {
    let base: SQLiteStore

    init(_ base: SQLiteStore) { self.base = base }

    struct Down: Error {}

    func record(_ submissions: [PurchaseSubmission]) async throws -> [PurchaseOutcome] { throw Down() }
    func customer(app: String, id: String) async throws -> CustomerRecord? { try await base.customer(app: app, id: id) }
    func notifications(app: String?, after sequence: Int64, limit: Int) async throws -> [RawNotification] {
        try await base.notifications(app: app, after: sequence, limit: limit)
    }
    func clearNotificationEvidence(app: String?) async throws -> Int { throw Down() }

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
