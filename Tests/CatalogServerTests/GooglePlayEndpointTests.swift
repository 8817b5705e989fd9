import AppStoreTestSupport
import CatalogKit
import CatalogServer
import Content
import Crypto
import FeedSigning
import Foundation
import HTTPTypes
import HummingbirdTesting
import Ledger
import NIOCore
import PlayAPIStandIn
import Storage
import Testing
import _CryptoExtras

/// Google Play on the purchase endpoints (docs/google-play.md, "The endpoints"), through real HTTP
/// into a real SQLite file, with the Play Developer API's stand-in on loopback.
@Suite struct GooglePlayEndpointTests {
    typealias Tests = PurchaseEndpointTests
    static let account = "11111111-1111-4111-8111-111111111111"
    static let audience = "https://catalog.example.com/v1/apps/com.example.app/notifications/google-play"
    static let pushAccount = "play-push@example-project.iam.gserviceaccount.com"
    static let now = Date(timeIntervalSince1970: TimeInterval(Tests.during.secondsSince1970))

    static let products = """
        <dict><key>id</key><string>com.example.app.skin</string><key>type</key><string>non-consumable</string>
        <key>entitlements</key><array><string>skin</string></array>
        <key>play</key><dict><key>productId</key><string>skin</string></dict></dict>
        """

    /// The keys Google holds: the app's licence key, the service account's, and the push tokens'.
    struct Google {
        let licence: _RSA.Signing.PrivateKey
        let serviceAccount: _RSA.Signing.PrivateKey
        let push: _RSA.Signing.PrivateKey
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("play-\(UUID().uuidString)")

        init() throws {
            licence = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            serviceAccount = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            push = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        }

        var keyFile: URL { folder.appendingPathComponent("service-account.json") }
        var pushKeys: URL { folder.appendingPathComponent("google-certs.json") }

        /// The catalog's Play settings.
        var settings: String {
            """
            <key>playPackageName</key><string>com.example.app</string>
            <key>playLicenseKey</key><string>\(licence.publicKey.derRepresentation.base64EncodedString())</string>
            <key>playPushAudience</key><string>\(GooglePlayEndpointTests.audience)</string>
            <key>playPushServiceAccount</key><string>\(GooglePlayEndpointTests.pushAccount)</string>
            <key>playServiceAccountKeyFile</key><string>\(keyFile.path)</string>
            """
        }

        func write(_ standIn: PlayAPIStandIn) throws {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            standIn.accept(kid: "sa-1", key: serviceAccount.publicKey)
            try standIn.keyFile(kid: "sa-1", key: serviceAccount).write(to: keyFile)
            let primitives = try push.publicKey.getKeyPrimitives()
            try Data(
                #"{"keys":[{"kty":"RSA","alg":"RS256","use":"sig","kid":"google-1","n":"\#(Base64URL.encode(primitives.modulus))","e":"\#(Base64URL.encode(primitives.publicExponent))"}]}"#
                    .utf8
            ).write(to: pushKeys)
        }

        /// What Play Billing gives the app for a purchase: the JSON and the licence key's signature.
        func purchase(_ product: String, token: String, state: Int = 0) throws -> [String: String] {
            let json =
                #"{"orderId":"GPA.\#(token)","packageName":"com.example.app","productId":"\#(product)","purchaseTime":\#(Int64(GooglePlayEndpointTests.now.timeIntervalSince1970 * 1000) - 60_000),"purchaseState":\#(state),"purchaseToken":"\#(token)","quantity":1,"acknowledged":false}"#
            let signature = try licence.signature(for: Insecure.SHA1.hash(data: Data(json.utf8)), padding: .insecurePKCS1v1_5)
            return ["originalJson": json, "signature": signature.rawRepresentation.base64EncodedString()]
        }

        /// A push token, signed by `key` (Google's by default) under `kid`, with `claims` changed.
        func pushToken(key: _RSA.Signing.PrivateKey? = nil, kid: String = "google-1", claims: [String: Any] = [:]) throws -> String {
            var body: [String: Any] = [
                "iss": "https://accounts.google.com", "aud": GooglePlayEndpointTests.audience, "email": GooglePlayEndpointTests.pushAccount,
                "email_verified": true, "iat": GooglePlayEndpointTests.now.timeIntervalSince1970 - 10,
                "exp": GooglePlayEndpointTests.now.timeIntervalSince1970 + 3590,
            ]
            for (name, value) in claims { body[name] = value }
            let head = try JSONSerialization.data(withJSONObject: ["alg": "RS256", "kid": kid, "typ": "JWT"])
            let input = Base64URL.encode(head) + "." + Base64URL.encode(try JSONSerialization.data(withJSONObject: body))
            let signature = try (key ?? push).signature(for: SHA256.hash(data: Data(input.utf8)), padding: .insecurePKCS1v1_5)
            return input + "." + Base64URL.encode(signature.rawRepresentation)
        }
    }

    static func body(_ object: [String: String]) -> ByteBuffer {
        ByteBuffer(bytes: (try? JSONSerialization.data(withJSONObject: object)) ?? Data())
    }

    /// Pub/Sub's push of `notification`.
    static func push(_ notification: String, messageId: String) -> ByteBuffer {
        let data = Data(notification.utf8).base64EncodedString()
        return ByteBuffer(
            string:
                #"{"message":{"data":"\#(data)","messageId":"\#(messageId)","publishTime":"2025-01-15T00:00:00Z"},"subscription":"projects/example-project/subscriptions/play"}"#
        )
    }

    /// Content for each store's purchase: a guide for the App Store subscription, art for the Play skin.
    static func content(_ blobs: BlobStore) throws -> [ContentManifest.Item] {
        func file(_ path: String, _ text: String) throws -> ContentManifest.File {
            let receipt = try blobs.put(Data(text.utf8))
            return ContentManifest.File(path: path, size: receipt.size, sha256: receipt.digest)
        }
        return [
            ContentManifest.Item(id: "pro-guide", product: "com.example.app.pro.monthly", files: [try file("guide.txt", "the pro guide")]),
            ContentManifest.Item(id: "skin-art", product: "com.example.app.skin", files: [try file("skin.png", "the skin's art")]),
        ]
    }

    static func withPlay(
        playInterval: Duration = .seconds(60),
        _ body: @Sendable (any TestClientProtocol, Tests.Server, PlayAPIStandIn, Google) async throws -> Void
    ) async throws {
        let google = try Google()
        let standIn = try await PlayAPIStandIn.start(packageName: "com.example.app")
        defer { try? FileManager.default.removeItem(at: google.folder) }
        try google.write(standIn)
        try await Tests.withServer(
            settings: google.settings, products: Self.products, playAPIURL: standIn.baseURL, googlePushKeys: google.pushKeys.path,
            playInterval: playInterval, content: Self.content
        ) { client, server in
            try await body(client, server, standIn, google)
        }
        await standIn.stop()
    }

    /// Every entry of the acknowledgement outbox, whatever its state: the server's Play service
    /// makes a pass when it starts, which under load may come after a test has queued an entry.
    static func outbox(_ server: Tests.Server) async throws -> [StoreAcknowledgement] {
        var entries: [StoreAcknowledgement] = []
        for state in StoreAcknowledgement.State.allCases {
            entries += try await server.store.acknowledgements(in: state)
        }
        return entries
    }

    /// One customer holds an App Store subscription and a Play one-time product: one backend read
    /// answers both, each purchase with its store.
    @Test func oneCustomerAcrossBothStores() async throws {
        try await Self.withPlay { client, server, standIn, google in
            let appleEvidence = [
                "signedTransaction": try server.pki.jws(payload: Tests.PKI.transaction()), "appAccountToken": Self.account,
            ]
            let apple = try await client.execute(
                uri: Tests.purchasesPath, method: .post, headers: server.headers(), body: Self.body(appleEvidence))
            #expect(apple.status == .ok, "\(String(buffer: apple.body))")
            standIn.setProduct(
                "play-token-1",
                [
                    "kind": "androidpublisher#productPurchaseV2", "orderId": "GPA.play-token-1",
                    "purchaseStateContext": ["purchaseState": "PURCHASED"] as [String: any Sendable],
                    "acknowledgementState": "ACKNOWLEDGEMENT_STATE_PENDING", "purchaseCompletionTime": "2025-01-14T23:59:00Z",
                    "productLineItem": [
                        ["productId": "skin", "productOfferDetails": ["quantity": 1] as [String: any Sendable]] as [String: any Sendable]
                    ],
                ])
            var presented = try google.purchase("skin", token: "play-token-1")
            presented["appAccountToken"] = Self.account
            // Presented on the same endpoint as the App Store's evidence.
            let play = try await client.execute(
                uri: Tests.purchasesPath, method: .post, headers: server.headers(), body: Self.body(presented))
            #expect(play.status == .ok, "\(String(buffer: play.body))")
            #expect(Tests.entitlements(try Tests.json(play)) == ["pro", "skin"])
            // The backend's read: both purchases, each saying its store.
            let read = try await client.execute(
                uri: "/v1/apps/com.example.app/customers/\(Self.account)", method: .get,
                headers: server.headers(server.backend, json: false))
            #expect(read.status == .ok)
            let customer = try Tests.json(read)
            let purchases = try #require(customer["purchases"] as? [[String: Any]])
            #expect(
                Set(purchases.compactMap { "\($0["store"] ?? "") \($0["productId"] ?? "")" }) == [
                    "appStore com.example.app.pro.monthly", "googlePlay com.example.app.skin",
                ])
            // The Android app reads the same customer by its Play evidence.
            let lookup = try await client.execute(
                uri: "/v1/apps/com.example.app/customers/lookup", method: .post, headers: server.headers(), body: Self.body(presented))
            #expect(lookup.status == .ok, "\(String(buffer: lookup.body))")
            #expect(try Tests.json(lookup)["customer"] as? Int == customer["customer"] as? Int)
            // Content granted from either store's purchase, asked with either store's evidence, and downloaded.
            for (store, evidence) in [("Google Play", Self.body(presented)), ("App Store", Self.body(appleEvidence))] {
                let content = try await client.execute(
                    uri: "/v1/apps/com.example.app/content", method: .post, headers: server.headers(), body: evidence)
                #expect(content.status == .ok, "\(store): \(String(buffer: content.body))")
                let items = try #require(try Tests.json(content)["items"] as? [[String: Any]])
                #expect(Set(items.compactMap { $0["item"] as? String }) == ["pro-guide", "skin-art"], "\(store)")
                let art = try #require(items.first { $0["item"] as? String == "skin-art" })
                let url = try #require((art["files"] as? [[String: Any]])?.first?["url"] as? String)
                let download = try await client.execute(uri: url, method: .get, headers: [:])
                #expect(download.status == .ok)
                #expect(String(buffer: download.body) == "the skin's art")
            }
            // The same Play purchase presented with another account reads no one and gets nothing.
            presented["appAccountToken"] = "22222222-2222-4222-8222-222222222222"
            for path in ["customers/lookup", "content"] {
                let stolen = try await client.execute(
                    uri: "/v1/apps/com.example.app/\(path)", method: .post, headers: server.headers(), body: Self.body(presented))
                #expect(stolen.status == .conflict, "\(path): \(String(buffer: stolen.body))")
                #expect(!String(buffer: stolen.body).contains("skin-art"))
            }
            // A Play product the catalog does not sell: refused, as an unknown App Store product is.
            let unknown = try await client.execute(
                uri: Tests.purchasesPath, method: .post, headers: server.headers(),
                body: Self.body(try google.purchase("not.sold", token: "play-token-9")))
            #expect(unknown.status == .unprocessableContent)
            // Its acknowledgement is in the outbox, for the editor node's service (whose pass at
            // start may already have done it); the product not sold queued none.
            #expect(try await Self.outbox(server).map(\.purchaseKey) == ["play-token-1"])
        }
    }

    /// A forged or misdirected push is refused, 401, and nothing is stored; Google's is stored once.
    @Test func aForgedPushIsRefusedWithNothingStored() async throws {
        try await Self.withPlay { client, server, _, google in
            let path = "/v1/apps/com.example.app/notifications/google-play"
            let notification =
                #"{"version":"1.0","packageName":"com.example.app","eventTimeMillis":"1736899100000","subscriptionNotification":{"version":"1.0","notificationType":2,"purchaseToken":"sub-token"}}"#
            let stranger = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            let forged: [(String, String?)] = [
                ("no token", nil),
                ("another key under Google's kid", try google.pushToken(key: stranger)),
                ("an unknown kid", try google.pushToken(key: stranger, kid: "stranger")),
                ("another audience", try google.pushToken(claims: ["aud": "https://attacker.example.com/push"])),
                ("another service account", try google.pushToken(claims: ["email": "someone@example.com"])),
                ("expired", try google.pushToken(claims: ["exp": Self.now.timeIntervalSince1970 - 3600])),
            ]
            for (what, token) in forged {
                var headers: HTTPFields = [.contentType: "application/json"]
                if let token { headers[.authorization] = "Bearer \(token)" }
                let response = try await client.execute(
                    uri: path, method: .post, headers: headers, body: Self.push(notification, messageId: "m-1"))
                #expect(response.status == .unauthorized, "\(what): \(String(buffer: response.body))")
            }
            #expect(try await Self.outbox(server).isEmpty)
            #expect(try await server.store.notifications(app: "com.example.app", after: 0, limit: 10).isEmpty)
            // Google's own: stored once, by its messageId; what changed waits to be asked of Google.
            let headers: HTTPFields = [.contentType: "application/json", .authorization: "Bearer \(try google.pushToken())"]
            let first = try await client.execute(
                uri: path, method: .post, headers: headers, body: Self.push(notification, messageId: "m-1"))
            #expect(first.status == .ok)
            #expect(String(buffer: first.body) == #"{"messageId":"m-1","stored":true}"#)
            let again = try await client.execute(
                uri: path, method: .post, headers: headers, body: Self.push(notification, messageId: "m-1"))
            #expect(String(buffer: again.body) == #"{"messageId":"m-1","duplicate":true}"#)
            #expect(try await server.store.notifications(app: "com.example.app", after: 0, limit: 10).map(\.notificationId) == ["m-1"])
            #expect(try await Self.outbox(server).map(\.action) == [.refreshSubscription])
            // Another package's notification, with a good token: refused.
            let other = notification.replacingOccurrences(of: "com.example.app", with: "com.example.other")
            let wrong = try await client.execute(uri: path, method: .post, headers: headers, body: Self.push(other, messageId: "m-2"))
            #expect(wrong.status == .forbidden)
        }
    }

    /// Google unreachable when the app presents a purchase: 202, the acknowledgement queued; once
    /// Google answers, the editor node's outbox service acknowledges it and records its state. (A
    /// live test, bounded: the outbox runs every 200 ms here.)
    @Test func aPurchasePresentedWhileGoogleIsDownIsAcknowledgedOnceItIsBack() async throws {
        try await Self.withPlay(playInterval: .milliseconds(200)) { client, server, standIn, google in
            standIn.setDown(true)
            standIn.setProduct(
                "play-token-2",
                [
                    "purchaseStateContext": ["purchaseState": "PURCHASED"] as [String: any Sendable], "orderId": "GPA.play-token-2",
                    "acknowledgementState": "ACKNOWLEDGEMENT_STATE_PENDING", "purchaseCompletionTime": "2025-01-14T23:59:00Z",
                    "productLineItem": [["productId": "skin"] as [String: any Sendable]],
                ])
            let response = try await client.execute(
                uri: Tests.purchasesPath, method: .post, headers: server.headers(),
                body: Self.body(try google.purchase("skin", token: "play-token-2")))
            #expect(response.status == .accepted, "\(String(buffer: response.body))")
            #expect(try await server.store.acknowledgements(in: .pending).map(\.purchaseKey) == ["play-token-2"])
            // Google is back.
            standIn.setDown(false)
            var done: [StoreAcknowledgement] = []
            for _ in 0..<150 where done.isEmpty {
                try await Task.sleep(for: .milliseconds(100))
                done = try await server.store.acknowledgements(in: .done)
            }
            #expect(done.map(\.purchaseKey) == ["play-token-2"])
            #expect(standIn.acknowledgementState("play-token-2") == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED")
            #expect(standIn.calls.filter { $0.operation == "acknowledgeProduct" }.count == 1)
            // What Google said is in the ledger, under the purchase until an app account claims it.
            let held = try await server.store.customer(app: "com.example.app", id: "play-token-2")
            #expect(held?.purchases.contains(PurchaseReference(.googlePlay, "play-token-2")) == true)
            // A purchase whose signature is not the licence key's: refused, nothing queued.
            var forged = try google.purchase("skin", token: "play-token-3")
            forged["originalJson"] = forged["originalJson"]!.replacingOccurrences(of: "skin", with: "skin ")
            let refused = try await client.execute(
                uri: Tests.purchasesPath, method: .post, headers: server.headers(), body: Self.body(forged))
            #expect(refused.status == .forbidden)
            #expect(try await server.store.acknowledgements(in: .pending).isEmpty)
        }
    }
}
