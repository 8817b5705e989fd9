import AppStore
import AppStoreTestSupport
import CatalogKit
import CatalogServer
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ledger
import NIOCore
import Testing

/// Issue 30, item 6: `GET /v1/admin/apps/{app}/customers/{id}/content`, the dashboard's content
/// section, on ``ContentEndpointTests``' app (real HTTP, catalog, SQLite and content store): what a
/// customer may download and why, what not and why not, with an editor's or a viewer's token only.
@Suite struct CustomerContentTests {
    typealias PKI = AppStoreTestSupport.AppStoreTestPKI
    static let base = "/v1/admin/apps/\(ContentEndpointTests.app)/customers/"

    /// A viewer's token on the server's store, for the support person's dashboard.
    static func viewer(_ server: ContentEndpointTests.Server) async throws -> String {
        let secret = TokenSecret.generate()
        try await server.store.createToken(
            EditorToken(name: "support", role: .viewer, secretHash: TokenSecret.hash(secret), createdAt: .now))
        return secret
    }

    static func get(_ client: any TestClientProtocol, _ uri: String, token: String?) async throws -> TestResponse {
        var fields = HTTPFields()
        if let token { fields[.authorization] = "Bearer \(token)" }
        return try await client.execute(uri: uri, method: .get, headers: fields)
    }

    static func json(_ response: TestResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(String(buffer: response.body).utf8)) as? [String: Any])
    }

    /// The granted items, by id, as "rule transaction".
    static func granted(_ answer: [String: Any]) throws -> [String: String] {
        let items = try #require(answer["items"] as? [[String: Any]])
        return Dictionary(
            uniqueKeysWithValues: items.compactMap { item in
                (item["item"] as? String).map { ($0, "\(item["rule"] as? String ?? "") \(item["transactionId"] as? String ?? "")") }
            })
    }

    /// The refused items, by id, with the reason.
    static func refused(_ answer: [String: Any]) throws -> [String: String] {
        let items = try #require(answer["refused"] as? [[String: Any]])
        return Dictionary(
            uniqueKeysWithValues: items.compactMap { item in (item["item"] as? String).map { ($0, item["reason"] as? String ?? "") } })
    }

    /// The magazine subscriber of docs/content.md's table (February 3 to April 7): the section lists
    /// the table's issues with the rule and the transaction of each, the issues outside it with why,
    /// as the content endpoint decides them; `?at=` moves the instant. Only the dashboard's roles
    /// read it, and its answer is as openapi.yaml documents it.
    @Test func theMagazineSubscribersSection() async throws {
        try await ContentEndpointTests.withServer { client, server in
            for (id, start, end) in [
                ("3000000000000001", PKI.date(2025, 2, 3), PKI.date(2025, 3, 3)),
                ("3000000000000002", PKI.date(2025, 3, 3), PKI.date(2025, 4, 7)),
            ] {
                let jws = try server.pki.jws(payload: ContentEndpointTests.period(id, start, end))
                let told = try await client.execute(
                    uri: ContentEndpointTests.path, method: .post, headers: server.headers(), body: ContentEndpointTests.evidence(jws))
                #expect(told.status == .ok, "\(String(buffer: told.body))")
            }
            let viewer = try await Self.viewer(server)
            let uri = Self.base + "3000000000000001/content"
            let read = try await Self.get(client, uri, token: viewer)
            #expect(read.status == .ok, "\(String(buffer: read.body))")
            let answer = try Self.json(read)
            #expect(answer["offered"] as? Int == 7)
            #expect(
                try Self.granted(answer) == [
                    "issue-2025-02": "current-at-first-period 3000000000000001",
                    "issue-2025-03": "published-during-period 3000000000000001",
                    "issue-2025-04": "published-during-period 3000000000000002",
                ])
            #expect(
                try Self.refused(answer) == [
                    "issue-2025-01":
                        "published on 2025-01-01, before their first period of news.plus began on 2025-02-03, and not the issue current then",
                    "issue-2025-05": "published on 2025-05-01, after their last period of news.plus ended on 2025-04-07",
                    "levels": "they do not hold \(ContentEndpointTests.levels)",
                    "coin-art": "they do not hold \(ContentEndpointTests.coins)",
                ])
            let issue = try #require((answer["items"] as? [[String: Any]])?.first { $0["item"] as? String == "issue-2025-04" })
            #expect(issue["files"] as? Int == 1)
            #expect(issue["bytes"] as? Int == "issue of month 4".utf8.count)
            #expect(issue["url"] == nil)
            let schema = try ServiceJSONTests.schema("/v1/admin/apps/{app}/customers/{id}/content", "get", "200")
            #expect(ServiceJSONTests.problems(try ServiceJSONTests.parse(Array(read.body.readableBytesView)), schema) == [])

            // In the middle of March, April's issue is not out yet.
            let march = try Self.json(try await Self.get(client, uri + "?at=2025-03-15T00:00:00Z", token: viewer))
            #expect(try Self.granted(march).keys.sorted() == ["issue-2025-02", "issue-2025-03"])
            #expect(try Self.refused(march)["issue-2025-04"] == "not published yet: it is dated 2025-04-01")

            // The dashboard's roles only: a backend's token is refused as on the rest of the editor API.
            #expect(try await Self.get(client, uri, token: server.backend).status == .forbidden)
            #expect(try await Self.get(client, uri, token: nil).status == .unauthorized)
            #expect(try await Self.get(client, Self.base + "999/content", token: viewer).status == .notFound)
            #expect(try await Self.get(client, uri + "?at=soon", token: viewer).status == .badRequest)
            #expect(
                try await client.execute(uri: uri, method: .post, headers: [.authorization: "Bearer \(viewer)"]).status == .methodNotAllowed
            )
        }
    }

    /// A level pack held: granted with its product and transaction; after the App Store's refund
    /// it is refused, and the section says when it was refunded.
    @Test func aHeldProductAndItsRefund() async throws {
        try await ContentEndpointTests.withServer { client, server in
            let bought = ContentEndpointTests.levelsPurchase
            let told = try await client.execute(
                uri: ContentEndpointTests.path, method: .post, headers: server.headers(),
                body: ContentEndpointTests.evidence(try server.pki.jws(payload: bought)))
            #expect(told.status == .ok, "\(String(buffer: told.body))")
            let viewer = try await Self.viewer(server)
            let uri = Self.base + "4000000000000001/content"
            let before = try Self.json(try await Self.get(client, uri, token: viewer))
            #expect(try Self.granted(before) == ["levels": "holds-product 4000000000000001"])
            let levels = try #require((before["items"] as? [[String: Any]])?.first)
            #expect(levels["productId"] as? String == ContentEndpointTests.levels)
            #expect(levels["bytes"] as? Int == #"{"level":1}"#.utf8.count)
            #expect(try Self.refused(before)["issue-2025-03"] == "they never subscribed to news.plus")

            try await ContentEndpointTests.refundLevels(client: client, server: server)
            let after = try Self.json(try await Self.get(client, uri, token: viewer))
            #expect(try Self.granted(after) == [:])
            #expect(try Self.refused(after)["levels"] == "\(ContentEndpointTests.levels) was refunded on 2025-02-01")
        }
    }

    /// The one environment rule for content: a sandbox purchase of the level pack grants it, named
    /// `Sandbox`, by default (App Review buys in the sandbox against the production server); with
    /// `sandboxUnlocks` false it grants nothing, and the section says why in those words.
    @Test(arguments: [true, false])
    func aSandboxPurchaseUnlocksContentOnlyWhereTheAppSaysSo(unlocks: Bool) async throws {
        let settings = unlocks ? "" : "<key>sandboxUnlocks</key><false/>"
        try await ContentEndpointTests.withServer(settings: settings) { client, server in
            var bought = ContentEndpointTests.levelsPurchase
            bought["environment"] = "Sandbox"
            let told = try await client.execute(
                uri: ContentEndpointTests.path, method: .post, headers: server.headers(),
                body: ContentEndpointTests.evidence(try server.pki.jws(payload: bought)))
            #expect(told.status == .ok, "\(String(buffer: told.body))")
            let listed = try #require(try Self.json(told)["items"] as? [[String: Any]])
            #expect(listed.compactMap { $0["environment"] as? String } == (unlocks ? ["Sandbox"] : []))
            let section = try Self.json(
                try await Self.get(client, Self.base + "4000000000000001/content", token: try await Self.viewer(server)))
            if unlocks {
                #expect(try Self.granted(section) == ["levels": "holds-product 4000000000000001"])
            } else {
                #expect(try Self.granted(section) == [:])
                #expect(try Self.refused(section)["levels"]?.contains("Sandbox environment") == true)
            }
        }
    }

    /// An app that publishes no content: the section says so (`offered` 0, nothing granted or
    /// refused) rather than "no content for this customer".
    @Test func anAppWithoutContentOffersNothing() async throws {
        try await PurchaseEndpointTests.withServer(policy: "transfer") { client, server in
            let jws = try server.pki.jws(payload: PKI.transaction())
            let told = try await client.execute(
                uri: PurchaseEndpointTests.purchasesPath, method: .post, headers: server.headers(),
                body: PurchaseEndpointTests.purchase(jws, token: CustomerLookupTests.mine))
            #expect(told.status == .ok, "\(String(buffer: told.body))")
            let read = try await client.execute(
                uri: "/v1/admin/apps/\(PurchaseEndpointTests.app)/customers/\(CustomerLookupTests.mine)/content", method: .get,
                headers: server.headers(server.viewer, json: false))
            #expect(read.status == .ok, "\(String(buffer: read.body))")
            let answer = try Self.json(read)
            #expect(answer["offered"] as? Int == 0)
            #expect(try Self.granted(answer) == [:])
            #expect(try Self.refused(answer) == [:])
        }
    }
}
