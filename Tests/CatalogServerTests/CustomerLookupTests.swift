import AppStore
import AppStoreTestSupport
import CatalogServer
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ledger
import NIOCore
import Testing

/// `POST /v1/apps/{app}/customers/lookup`: the app reads its own customer by presenting evidence of
/// them (docs/purchases.md, "The app reads its own customer"), through real HTTP on loopback, a real
/// catalog and SQLite store, and evidence signed by a PKI the test makes.
@Suite struct CustomerLookupTests {
    typealias PKI = AppStoreTestSupport.AppStoreTestPKI
    typealias Endpoints = PurchaseEndpointTests
    static let lookupPath = "/v1/apps/\(Endpoints.app)/customers/lookup"
    static let mine = "11111111-1111-4111-8111-111111111111"
    static let theirs = "22222222-2222-4222-8222-222222222222"

    static func evidence(_ jws: String, token: String?) -> ByteBuffer { Endpoints.purchase(jws, token: token) }

    static func code(_ response: TestResponse) throws -> String? {
        try Endpoints.json(response)["error"].flatMap { ($0 as? [String: Any])?["code"] as? String }
    }

    static func keys(_ answer: [String: Any]) -> [String] {
        ((answer["keys"] as? [[String: Any]]) ?? []).compactMap { $0["value"] as? String }
    }

    /// Two customers, each with a purchase of their own: mine (transaction …001, token `mine`) and
    /// theirs (transaction …009, token `theirs`).
    static func twoCustomers(_ client: any TestClientProtocol, _ server: Endpoints.Server) async throws -> (mine: String, theirs: String) {
        let mine = try server.pki.jws(payload: PKI.transaction())
        let theirs = try server.pki.jws(
            payload: PKI.transaction(["transactionId": "2000000000000009", "originalTransactionId": "2000000000000009"]))
        for (jws, token) in [(mine, Self.mine), (theirs, Self.theirs)] {
            let recorded = try await client.execute(
                uri: Endpoints.purchasesPath, method: .post, headers: server.headers(), body: Self.evidence(jws, token: token))
            #expect(recorded.status == .ok, "\(String(buffer: recorded.body))")
        }
        return (mine, theirs)
    }

    /// The app's own evidence reads its whole customer, as a backend would, at any instant; nothing
    /// is recorded by reading.
    @Test func theAppReadsItsOwnCustomerByItsEvidence() async throws {
        try await Endpoints.withServer { client, server in
            let (mine, _) = try await Self.twoCustomers(client, server)
            let read = try await client.execute(
                uri: Self.lookupPath + "?at=2025-01-15T00:00:00Z", method: .post, headers: server.headers(),
                body: Self.evidence(mine, token: Self.mine))
            #expect(read.status == .ok, "\(String(buffer: read.body))")
            let answer = try Endpoints.json(read)
            #expect(Self.keys(answer) == [Self.mine])
            #expect(Endpoints.entitlements(answer) == ["pro"])
            let periods = try #require(answer["periods"] as? [[String: Any]])
            #expect(periods.map { $0["transactionId"] as? String } == ["2000000000000001"])
            #expect((answer["purchases"] as? [[String: Any]])?.count == 1)
            let later = try await client.execute(
                uri: Self.lookupPath + "?at=2025-03-01T00:00:00Z", method: .post, headers: server.headers(),
                body: Self.evidence(mine, token: Self.mine))
            #expect(Endpoints.entitlements(try Endpoints.json(later)) == [])
            let badInstant = try await client.execute(
                uri: Self.lookupPath + "?at=yesterday", method: .post, headers: server.headers(),
                body: Self.evidence(mine, token: Self.mine))
            #expect(badInstant.status == .badRequest)
            let get = try await client.execute(uri: Self.lookupPath, method: .get, headers: server.headers())
            #expect(get.status == .methodNotAllowed)
            #expect(get.headers[.allow] == "POST")
        }
    }

    /// The attack: my genuine evidence with someone else's customer id (their `appAccountToken`), or
    /// with none at all, to read their customer. The purchase is mine, so neither names its customer:
    /// 409, and nothing of the other customer is in the answer.
    @Test func myEvidenceDoesNotReadSomeoneElsesCustomer() async throws {
        try await Endpoints.withServer { client, server in
            let (mine, theirs) = try await Self.twoCustomers(client, server)
            for token in [Self.theirs, nil] {
                let read = try await client.execute(
                    uri: Self.lookupPath, method: .post, headers: server.headers(), body: Self.evidence(mine, token: token))
                #expect(read.status == .conflict, "\(token ?? "no token"): \(String(buffer: read.body))")
                #expect(try Self.code(read) == "bound-to-another-customer")
                let body = String(buffer: read.body)
                #expect(!body.contains(Self.theirs) && !body.contains(Self.mine) && !body.contains("2000000000000009"))
            }
            // Their evidence with my token reads nothing of mine either.
            let reverse = try await client.execute(
                uri: Self.lookupPath, method: .post, headers: server.headers(), body: Self.evidence(theirs, token: Self.mine))
            #expect(reverse.status == .conflict)
            let metrics = String(decoding: server.metrics.render(), as: UTF8.self)
            #expect(
                metrics.contains(#"catalog_purchases_refused_total{endpoint="lookup",code="bound-to-another-customer"} 3"#), "\(metrics)")
        }
    }

    /// Forged evidence (another PKI), evidence of another app, a product the catalog does not know and a
    /// body that is no evidence: refused as a purchase would be, and counted.
    @Test func forgedAndOtherAppsEvidenceIsRefused() async throws {
        try await Endpoints.withServer { client, server in
            _ = try await Self.twoCustomers(client, server)
            let forged = try await client.execute(
                uri: Self.lookupPath, method: .post, headers: server.headers(),
                body: Self.evidence(try PKI.ecdsa().jws(payload: PKI.transaction()), token: Self.mine))
            #expect(forged.status == .forbidden)
            #expect(try Self.code(forged) == "not-authenticated")
            let otherApp = try await client.execute(
                uri: Self.lookupPath, method: .post, headers: server.headers(),
                body: Self.evidence(try server.pki.jws(payload: PKI.transaction(["bundleId": "com.example.other"])), token: Self.mine))
            #expect(otherApp.status == .forbidden)
            #expect(try Self.code(otherApp) == "wrong-app")
            let unknownProduct = try await client.execute(
                uri: Self.lookupPath, method: .post, headers: server.headers(),
                body: Self.evidence(try server.pki.jws(payload: PKI.transaction(["productId": "com.example.app.nothing"])), token: nil))
            #expect(unknownProduct.status == .unprocessableContent)
            let garbage = try await client.execute(
                uri: Self.lookupPath, method: .post, headers: server.headers(), body: ByteBuffer(string: #"{"signedTransaction":"x.y.z"}"#))
            #expect(garbage.status == .badRequest)
            let notEvidence = try await client.execute(
                uri: Self.lookupPath, method: .post, headers: server.headers(),
                body: ByteBuffer(string: #"{"appAccountToken":"\#(Self.mine)"}"#))
            #expect(notEvidence.status == .badRequest)
            let metrics = String(decoding: server.metrics.render(), as: UTF8.self)
            #expect(metrics.contains(#"catalog_purchases_refused_total{endpoint="lookup",code="not-authenticated"} 1"#), "\(metrics)")
            #expect(metrics.contains(#"catalog_purchases_refused_total{endpoint="lookup",code="wrong-app"} 1"#), "\(metrics)")
        }
    }

    /// Genuine evidence nobody has claimed (only a notification bound it, or nothing has): 404, and
    /// reading claims nothing: the app's first purchase request still binds it.
    @Test func unclaimedEvidenceReadsNothingAndClaimsNothing() async throws {
        try await Endpoints.withServer { client, server in
            let jws = try server.pki.jws(payload: PKI.transaction())
            let unknown = try await client.execute(
                uri: Self.lookupPath, method: .post, headers: server.headers(), body: Self.evidence(jws, token: Self.mine))
            #expect(unknown.status == .notFound)
            let notified = try await client.execute(
                uri: Endpoints.notificationsPath, method: .post, headers: server.headers(),
                body: Endpoints.body(try Endpoints.renewal(server.pki)))
            #expect(notified.status == .ok)
            let placeholder = try await client.execute(
                uri: Self.lookupPath, method: .post, headers: server.headers(), body: Self.evidence(jws, token: Self.theirs))
            #expect(placeholder.status == .notFound, "\(String(buffer: placeholder.body))")
            let claimed = try await client.execute(
                uri: Endpoints.purchasesPath, method: .post, headers: server.headers(), body: Self.evidence(jws, token: Self.mine))
            #expect(claimed.status == .ok, "\(String(buffer: claimed.body))")
            let read = try await client.execute(
                uri: Self.lookupPath, method: .post, headers: server.headers(), body: Self.evidence(jws, token: Self.mine))
            #expect(read.status == .ok)
            #expect(Self.keys(try Endpoints.json(read)) == [Self.mine])
        }
    }

    /// A purchase presented by a second customer. `transfer`: it moved, so the first customer's
    /// evidence no longer reads the customer who now holds it, and the second's does. `keep`: it
    /// stayed, so the second customer's evidence reads nobody.
    @Test(arguments: ["transfer", "keep"])
    func aTransferredOrKeptPurchaseReadsOnlyItsHolder(policy: String) async throws {
        try await Endpoints.withServer(policy: policy) { client, server in
            let jws = try server.pki.jws(payload: PKI.transaction())
            for token in [Self.mine, Self.theirs] {
                _ = try await client.execute(
                    uri: Endpoints.purchasesPath, method: .post, headers: server.headers(), body: Self.evidence(jws, token: token))
            }
            let holder = policy == "transfer" ? Self.theirs : Self.mine
            let other = policy == "transfer" ? Self.mine : Self.theirs
            let byHolder = try await client.execute(
                uri: Self.lookupPath, method: .post, headers: server.headers(), body: Self.evidence(jws, token: holder))
            #expect(byHolder.status == .ok, "\(String(buffer: byHolder.body))")
            #expect(Self.keys(try Endpoints.json(byHolder)) == [holder])
            #expect(Endpoints.entitlements(try Endpoints.json(byHolder)) == ["pro"])
            let byOther = try await client.execute(
                uri: Self.lookupPath, method: .post, headers: server.headers(), body: Self.evidence(jws, token: other))
            #expect(byOther.status == .conflict, "\(String(buffer: byOther.body))")
            #expect(!String(buffer: byOther.body).contains(holder))
        }
    }

    /// Bounded like purchases: past the network's rate 429 with `Retry-After` before anything is read,
    /// past 512 KiB 413, another content type 415.
    @Test func lookupsAreRateLimitedAndSizeBounded() async throws {
        try await Endpoints.withServer(limit: RateLimit(perMinute: 1, burst: 3)) { client, server in
            let jws = try server.pki.jws(payload: PKI.transaction())
            let recorded = try await client.execute(
                uri: Endpoints.purchasesPath, method: .post, headers: server.headers(), body: Self.evidence(jws, token: Self.mine))
            #expect(recorded.status == .ok, "the purchases' budget is their own")
            let huge = ByteBuffer(string: "{\"receipt\":\"" + String(repeating: "A", count: 600 * 1024) + "\"}")
            let tooLarge = try await client.execute(uri: Self.lookupPath, method: .post, headers: server.headers(), body: huge)
            #expect(tooLarge.status == .contentTooLarge)
            let notJSON = try await client.execute(
                uri: Self.lookupPath, method: .post, headers: server.headers(json: false), body: Self.evidence(jws, token: Self.mine))
            #expect(notJSON.status == .unsupportedMediaType)
            let allowed = try await client.execute(
                uri: Self.lookupPath, method: .post, headers: server.headers(), body: Self.evidence(jws, token: Self.mine))
            #expect(allowed.status == .ok)
            let limited = try await client.execute(
                uri: Self.lookupPath, method: .post, headers: server.headers(), body: Self.evidence(jws, token: Self.mine))
            #expect(limited.status == .tooManyRequests)
            #expect(limited.headers[.retryAfter] != nil)
        }
    }
    /// The dashboard's customer page reads through the editor API: a viewer's (or an editor's) token
    /// reads a customer by any key, in full; a backend's token is refused there as on the rest of
    /// the editor API, and no token is 401.
    @Test func theDashboardReadsACustomerByAnyKeyWithAnEditorsRole() async throws {
        try await Endpoints.withServer(policy: "transfer") { client, server in
            let jws = try server.pki.jws(payload: PKI.transaction())
            for token in [Self.mine, Self.theirs] {
                _ = try await client.execute(
                    uri: Endpoints.purchasesPath, method: .post, headers: server.headers(), body: Self.evidence(jws, token: token))
            }
            let base = "/v1/admin/apps/\(Endpoints.app)/customers/"
            for key in [Self.theirs, "2000000000000001"] {
                let read = try await client.execute(
                    uri: base + key + "?at=2025-01-15T00:00:00Z", method: .get, headers: server.headers(server.viewer, json: false))
                #expect(read.status == .ok, "\(key): \(String(buffer: read.body))")
                let answer = try Endpoints.json(read)
                #expect(Self.keys(answer) == [Self.theirs])
                #expect(Endpoints.entitlements(answer) == ["pro"])
                #expect((answer["periods"] as? [[String: Any]])?.count == 1)
                #expect((answer["transfers"] as? [[String: Any]])?.first?["outcome"] as? String == "transferred")
            }
            let backend = try await client.execute(
                uri: base + Self.theirs, method: .get, headers: server.headers(server.backend, json: false))
            #expect(backend.status == .forbidden)
            let anonymous = try await client.execute(uri: base + Self.theirs, method: .get, headers: server.headers(json: false))
            #expect(anonymous.status == .unauthorized)
            let unknown = try await client.execute(uri: base + "999", method: .get, headers: server.headers(server.viewer, json: false))
            #expect(unknown.status == .notFound)
            let badInstant = try await client.execute(
                uri: base + Self.theirs + "?at=soon", method: .get, headers: server.headers(server.viewer, json: false))
            #expect(badInstant.status == .badRequest)
            let post = try await client.execute(uri: base + Self.theirs, method: .post, headers: server.headers(server.viewer))
            #expect(post.status == .methodNotAllowed)
        }
    }
}
