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
import Storage
import Testing
import Time

/// Issue 30, item 3: `POST /v1/apps/{app}/content` through real HTTP on loopback, on a real catalog,
/// SQLite store and content store, with evidence signed by a PKI the test makes: the magazine of
/// docs/content.md end to end, a refund that takes a level pack away, a consumable that gives nothing.
@Suite struct ContentEndpointTests {
    typealias PKI = AppStoreTestSupport.AppStoreTestPKI
    static let app = "com.example.app"
    static let path = "/v1/apps/\(app)/content"
    static let magazine = "com.example.app.news.monthly"
    static let levels = "com.example.app.levels"
    static let coins = "com.example.app.coins"
    /// The server's clock: after every issue of the table and the end of the subscription.
    static let now = Timestamp(secondsSince1970: Int64(PKI.date(2025, 5, 15).timeIntervalSince1970))

    static func catalog(settings: String = "") -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <plist version="1.0"><dict><key>platforms</key><array><string>iOS</string></array>
        <key>appAppleId</key><integer>1234567890</integer>\(settings)
        <key>products</key><array>
        <dict><key>id</key><string>\(magazine)</string><key>type</key><string>auto-renewable</string>
        <key>subscription</key><dict><key>group</key><string>news.plus</string><key>period</key><string>P1M</string></dict>
        <key>entitlements</key><array><string>news</string></array></dict>
        <dict><key>id</key><string>\(levels)</string><key>type</key><string>non-consumable</string></dict>
        <dict><key>id</key><string>\(coins)</string><key>type</key><string>consumable</string></dict>
        </array></dict></plist>
        """
    }

    struct Server {
        let store: any CatalogStore
        let pki: PKI
        let backend: String

        func headers(_ token: String? = nil) -> HTTPFields {
            var fields = HTTPFields()
            if let token { fields[.authorization] = "Bearer \(token)" }
            fields[.contentType] = "application/json"
            return fields
        }
    }

    /// The app published with content: the magazine's issues on the first of January to May 2025,
    /// the level pack's file, and an item that names the consumable.
    static func withServer(
        settings: String = "", limit: RateLimit? = RateLimit(perMinute: 600, burst: 120),
        _ body: @Sendable (any TestClientProtocol, Server) async throws -> Void
    ) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("content-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let sources = root.appendingPathComponent("catalog")
        try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
        try Data(catalog(settings: settings).utf8).write(to: sources.appendingPathComponent("\(app).plist"))
        let tree = PublicTree(root: root.appendingPathComponent("public"))
        let workflow = CatalogWorkflow(catalogDirectory: sources, catalogDisplayPath: "catalog", publicDirectory: tree.root)
        let build = try workflow.build(at: Timestamp(secondsSince1970: now.secondsSince1970 - 10), dryRun: false)
        #expect(!build.hasErrors, "\(build.diagnostics)")
        let revision = try #require(try tree.currentManifest(app)?.revision)

        let blobs = BlobStore(root: tree.content)
        func file(_ path: String, _ text: String) throws -> ContentManifest.File {
            let receipt = try blobs.put(Data(text.utf8))
            return ContentManifest.File(path: path, size: receipt.size, sha256: receipt.digest)
        }
        var items: [ContentManifest.Item] = []
        for month in 1...5 {
            items.append(
                ContentManifest.Item(
                    id: "issue-2025-0\(month)", subscriptionGroup: "news.plus", published: PKI.date(2025, month, 1),
                    files: [try file("issue.pdf", "issue of month \(month)")]))
        }
        items.append(ContentManifest.Item(id: "levels", product: levels, files: [try file("levels/1.json", "{\"level\":1}")]))
        items.append(ContentManifest.Item(id: "coin-art", product: coins, files: [try file("coin.png", "coin")]))
        let manifest = try ContentManifest(items: items)
        let manifestURL = tree.contentManifestURL(app, revision)
        try FileManager.default.createDirectory(at: manifestURL.deletingLastPathComponent(), withIntermediateDirectories: true)
        try manifest.encoded().write(to: manifestURL)

        let store = try await SQLiteStore.open(path: root.appendingPathComponent("var/catalog.sqlite").path)
        let secret = TokenSecret.generate()
        try await store.createToken(EditorToken(name: "shop", role: .backend, secretHash: TokenSecret.hash(secret), createdAt: .now))
        let pki = try PKI.ecdsa()
        var configuration = ServeConfiguration()
        configuration.clock = { now }
        configuration.content.keyRing = try ContentKeyRing(keys: [ContentSigningKey.generate(id: "k1")], current: "k1")
        var purchases = PurchasesConfiguration()
        purchases.trust = PurchaseTrust(jwsRoots: [pki.root], receiptRoots: [pki.root])
        purchases.perAddress = limit
        let application = buildApplication(
            publicDirectory: tree, port: 0, configuration: configuration, reloadInterval: .milliseconds(50), reportStore: store,
            purchaseStore: store, workflow: workflow, purchasesConfiguration: purchases, logger: Logger(label: "test"))
        try await application.test(.live) { client in try await body(client, Server(store: store, pki: pki, backend: secret)) }
    }

    /// The level pack, bought on January 10, 2025, as the App Store signs it.
    static var levelsPurchase: [String: any Sendable] {
        PKI.transaction([
            "transactionId": "4000000000000001", "originalTransactionId": "4000000000000001", "productId": levels,
            "type": "Non-Consumable", "purchaseDate": PKI.milliseconds(PKI.date(2025, 1, 10)), "expiresDate": NSNull(),
            "subscriptionGroupIdentifier": NSNull(), "webOrderLineItemId": NSNull(),
        ])
    }

    /// The App Store's REFUND notification of ``levelsPurchase`` on February 1, 2025, posted to the
    /// server; the test fails unless it is answered 200.
    static func refundLevels(client: any TestClientProtocol, server: Server) async throws {
        var refunded = levelsPurchase
        refunded["revocationDate"] = PKI.milliseconds(PKI.date(2025, 2, 1))
        refunded["revocationReason"] = 0
        refunded["signedDate"] = PKI.milliseconds(PKI.date(2025, 2, 1))
        let notification = try server.pki.jws(
            payload: PKI.notification(
                type: "REFUND", data: ["signedTransactionInfo": try server.pki.jws(payload: refunded)],
                ["signedDate": PKI.milliseconds(PKI.date(2025, 2, 1))]))
        let told = try await client.execute(
            uri: "/v1/apps/\(app)/notifications/app-store", method: .post, headers: server.headers(),
            body: ByteBuffer(string: #"{"signedPayload":"\#(notification)"}"#))
        #expect(told.status == .ok, "\(String(buffer: told.body))")
    }

    static func evidence(_ jws: String) -> ByteBuffer { ByteBuffer(string: #"{"signedTransaction":"\#(jws)"}"#) }

    /// The answer's items, by id, with their rule.
    static func items(_ response: TestResponse) throws -> [String: String] {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(String(buffer: response.body).utf8)) as? [String: Any])
        let items = try #require(object["items"] as? [[String: Any]])
        return Dictionary(
            uniqueKeysWithValues: items.compactMap { item in (item["item"] as? String).map { ($0, item["rule"] as? String ?? "") } })
    }

    /// A subscription transaction of the magazine, from `start` to `end`.
    static func period(_ id: String, _ start: Date, _ end: Date) -> [String: any Sendable] {
        PKI.transaction([
            "transactionId": id, "originalTransactionId": "3000000000000001", "webOrderLineItemId": id + "9", "productId": magazine,
            "purchaseDate": PKI.milliseconds(start), "originalPurchaseDate": PKI.milliseconds(PKI.date(2025, 2, 3)),
            "expiresDate": PKI.milliseconds(end),
        ])
    }

    /// docs/content.md's magazine table, end to end: a subscription bought on February 3 and renewed
    /// until it expired on April 7. The app sends its first transaction, then its renewal; the
    /// answer grows from the issues of the first period to the table's, and the URL it signs
    /// downloads the issue. A support person's backend asks by the customer's key and a token.
    @Test func theMagazineTableEndToEnd() async throws {
        try await Self.withServer { client, server in
            let first = try server.pki.jws(payload: Self.period("3000000000000001", PKI.date(2025, 2, 3), PKI.date(2025, 3, 3)))
            let one = try await client.execute(uri: Self.path, method: .post, headers: server.headers(), body: Self.evidence(first))
            #expect(one.status == .ok, "\(String(buffer: one.body))")
            #expect(
                try Self.items(one) == ["issue-2025-02": "current-at-first-period", "issue-2025-03": "published-during-period"])
            let renewal = try server.pki.jws(payload: Self.period("3000000000000002", PKI.date(2025, 3, 3), PKI.date(2025, 4, 7)))
            let two = try await client.execute(uri: Self.path, method: .post, headers: server.headers(), body: Self.evidence(renewal))
            #expect(
                try Self.items(two) == [
                    "issue-2025-02": "current-at-first-period", "issue-2025-03": "published-during-period",
                    "issue-2025-04": "published-during-period",
                ])

            // The answer is as openapi.yaml documents it.
            let schema = try ServiceJSONTests.schema("/v1/apps/{app}/content", "post", "200")
            #expect(ServiceJSONTests.problems(try ServiceJSONTests.parse(Array(two.body.readableBytesView)), schema) == [])

            // The signed URL of April's issue downloads it.
            let object = try #require(try JSONSerialization.jsonObject(with: Data(String(buffer: two.body).utf8)) as? [String: Any])
            let april = try #require((object["items"] as? [[String: Any]])?.first { $0["item"] as? String == "issue-2025-04" })
            let file = try #require((april["files"] as? [[String: Any]])?.first)
            let url = try #require(file["url"] as? String)
            let download = try await client.execute(uri: url, method: .get)
            #expect(download.status == .ok)
            #expect(String(buffer: download.body) == "issue of month 4")
            #expect(file["sha256"] as? String == ContentDigest.of(Data("issue of month 4".utf8)).hex)

            let byKey = ByteBuffer(string: #"{"customer":"3000000000000001"}"#)
            let backend = try await client.execute(uri: Self.path, method: .post, headers: server.headers(server.backend), body: byKey)
            #expect(backend.status == .ok, "\(String(buffer: backend.body))")
            #expect(try Self.items(backend).keys.sorted() == ["issue-2025-02", "issue-2025-03", "issue-2025-04"])
            let anonymous = try await client.execute(uri: Self.path, method: .post, headers: server.headers(), body: byKey)
            #expect(anonymous.status == .unauthorized)
        }
    }

    /// Attack: keep a purchase's content after its refund. The level pack is granted while held;
    /// after the App Store's REFUND notification the same request answers nothing for it.
    @Test func aRefundRemovesAccess() async throws {
        try await Self.withServer { client, server in
            let bought = Self.levelsPurchase
            let jws = try server.pki.jws(payload: bought)
            let before = try await client.execute(uri: Self.path, method: .post, headers: server.headers(), body: Self.evidence(jws))
            #expect(before.status == .ok, "\(String(buffer: before.body))")
            #expect(try Self.items(before) == ["levels": "holds-product"])

            try await Self.refundLevels(client: client, server: server)
            let after = try await client.execute(uri: Self.path, method: .post, headers: server.headers(), body: Self.evidence(jws))
            #expect(after.status == .ok, "\(String(buffer: after.body))")
            #expect(try Self.items(after) == [:])
        }
    }

    /// A consumable has no lasting content, even when an item names it; and the endpoint refuses
    /// what the purchases endpoint refuses (a forged transaction).
    @Test func aConsumableGrantsNothing() async throws {
        try await Self.withServer { client, server in
            let coins = PKI.transaction([
                "transactionId": "5000000000000001", "originalTransactionId": "5000000000000001", "productId": Self.coins,
                "type": "Consumable", "purchaseDate": PKI.milliseconds(PKI.date(2025, 5, 1)), "expiresDate": NSNull(),
                "subscriptionGroupIdentifier": NSNull(), "webOrderLineItemId": NSNull(),
            ])
            let answer = try await client.execute(
                uri: Self.path, method: .post, headers: server.headers(), body: Self.evidence(try server.pki.jws(payload: coins)))
            #expect(answer.status == .ok, "\(String(buffer: answer.body))")
            #expect(try Self.items(answer) == [:])
            let forged = try await client.execute(
                uri: Self.path, method: .post, headers: server.headers(), body: Self.evidence(try PKI.ecdsa().jws(payload: coins)))
            #expect(forged.status == .forbidden)
            let get = try await client.execute(uri: Self.path, method: .get)
            #expect(get.status == .methodNotAllowed)
        }
    }

    /// Attack: flood the endpoint, or send it a huge body. It shares the purchases' limit per
    /// client network (429 with Retry-After past it) and their size bound (413).
    @Test func requestsAreRateLimitedAndSizeBounded() async throws {
        // One a minute after a burst of two: no token comes back during the test, however slow the machine.
        try await Self.withServer(limit: RateLimit(perMinute: 1, burst: 2)) { client, server in
            let huge = ByteBuffer(string: #"{"receipt":""# + String(repeating: "A", count: 600 * 1024) + #""}"#)
            let tooLarge = try await client.execute(uri: Self.path, method: .post, headers: server.headers(), body: huge)
            #expect(tooLarge.status == .contentTooLarge)
            let empty = ByteBuffer(string: "{}")
            var statuses: [HTTPResponse.Status] = []
            for _ in 0..<3 {
                statuses.append(try await client.execute(uri: Self.path, method: .post, headers: server.headers(), body: empty).status)
            }
            #expect(statuses == [.badRequest, .tooManyRequests, .tooManyRequests], "\(statuses)")
        }
    }
}
