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

/// Evidence joins a customer only through what Apple signed in the purchase itself
/// (docs/purchases.md, "Customers and transfers"), through real HTTP on loopback, a real catalog and
/// SQLite store, and evidence signed by a PKI the test makes: the attacks of someone holding another
/// person's AppTransaction, the two arrival orders of Apple's notification and the app's request,
/// and refused claims.
@Suite struct CustomerBindingTests {
    typealias PKI = AppStoreTestSupport.AppStoreTestPKI
    typealias Endpoints = PurchaseEndpointTests
    static let victimAccount = "704289572"
    static let victimToken = "11111111-1111-4111-8111-111111111111"
    static let attackerToken = "22222222-2222-4222-8222-222222222222"

    static func evidence(_ jws: String, appTransaction: String? = nil, token: String? = nil) -> ByteBuffer {
        var object: [String: String] = ["signedTransaction": jws]
        object["signedAppTransaction"] = appTransaction
        object["appAccountToken"] = token
        return ByteBuffer(bytes: (try? JSONSerialization.data(withJSONObject: object)) ?? Data())
    }

    static func post(
        _ client: any TestClientProtocol, _ server: Endpoints.Server, _ path: String, _ body: ByteBuffer
    ) async throws -> TestResponse {
        try await client.execute(uri: path, method: .post, headers: server.headers(), body: body)
    }

    static func customer(_ client: any TestClientProtocol, _ server: Endpoints.Server, _ id: String) async throws -> TestResponse {
        try await client.execute(uri: "/v1/apps/\(Endpoints.app)/customers/\(id)", method: .get, headers: server.headers(server.backend))
    }

    static func credits(_ answer: [String: Any]) -> [String] {
        ((answer["credits"] as? [[String: Any]]) ?? []).compactMap { $0["productId"] as? String }
    }

    /// The victim's subscription, signed on iOS 18.4 or later: it carries their `appTransactionId`.
    static func victimPurchase(_ pki: PKI) throws -> String {
        try pki.jws(payload: PKI.transaction(["appTransactionId": victimAccount]))
    }

    /// The attacker's own cheap purchase (a consumable), signed on an older iOS: no `appTransactionId`.
    static func attackerPurchase(_ pki: PKI) throws -> String {
        try pki.jws(
            payload: PKI.transaction([
                "transactionId": "3000000000000001", "originalTransactionId": "3000000000000001", "productId": "com.example.app.coins",
                "type": "Consumable", "expiresDate": NSNull(), "subscriptionGroupIdentifier": NSNull(),
            ]))
    }

    /// The attack: the victim's AppTransaction (their `appTransactionId`, which any copy of their
    /// app's signed AppTransaction carries) presented beside a cheap purchase of the attacker's own.
    /// Before, the attacker's purchase joined the victim's customer: the answer listed the victim's
    /// `pro`, and the lookup read the victim's history. The AppTransaction is used only when the
    /// transaction signs the same `appTransactionId`; here it binds nothing, and the answer says so.
    @Test func aForeignAppTransactionJoinsNobody() async throws {
        try await Endpoints.withServer { client, server in
            let victimApp = try server.pki.jws(payload: PKI.appTransaction(["appTransactionId": Self.victimAccount]))
            let victim = try await Self.post(
                client, server, Endpoints.purchasesPath, Self.evidence(try Self.victimPurchase(server.pki), appTransaction: victimApp))
            #expect(victim.status == .ok, "\(String(buffer: victim.body))")
            #expect(Endpoints.entitlements(try Endpoints.json(victim)) == ["pro"])
            let victimAnswer = try Endpoints.json(victim)
            #expect((victimAnswer["appTransaction"] as? [String: Any])?["used"] as? Bool == true)

            let attack = try await Self.post(
                client, server, Endpoints.purchasesPath, Self.evidence(try Self.attackerPurchase(server.pki), appTransaction: victimApp))
            #expect(attack.status == .ok, "\(String(buffer: attack.body))")
            let answer = try Endpoints.json(attack)
            #expect(Endpoints.entitlements(answer) == [], "the victim's pro is not the attacker's")
            #expect(Self.credits(answer) == ["com.example.app.coins"])
            #expect(answer["customer"] as? Int != victimAnswer["customer"] as? Int)
            let use = try #require(answer["appTransaction"] as? [String: Any])
            #expect(use["used"] as? Bool == false)
            #expect((use["reason"] as? String)?.contains("appTransactionId") == true)

            let read = try await Self.post(
                client, server, CustomerLookupTests.lookupPath,
                Self.evidence(try Self.attackerPurchase(server.pki), appTransaction: victimApp))
            #expect(read.status == .ok, "the attacker reads their own customer")
            #expect(Endpoints.entitlements(try Endpoints.json(read)) == [])
            #expect(!String(buffer: read.body).contains("2000000000000001"), "nothing of the victim's purchases")

            let victimCustomer = try Endpoints.json(try await Self.customer(client, server, Self.victimAccount))
            #expect(((victimCustomer["purchases"] as? [[String: Any]]) ?? []).count == 1, "the victim's customer holds only theirs")
        }
    }

    /// The capture: the victim's AppTransaction presented before the victim's first purchase. Before,
    /// its `appTransactionId` became a key of the attacker's customer, and the victim's later
    /// purchase (which signs that id) landed there when Apple's notification arrived. Now the id is no
    /// key of the attacker's, and the victim's purchase makes a customer of its own.
    @Test func aForeignAppTransactionCannotCaptureALaterPurchase() async throws {
        try await Endpoints.withServer { client, server in
            let victimApp = try server.pki.jws(payload: PKI.appTransaction(["appTransactionId": Self.victimAccount]))
            let attack = try await Self.post(
                client, server, Endpoints.purchasesPath,
                Self.evidence(try Self.attackerPurchase(server.pki), appTransaction: victimApp, token: Self.attackerToken))
            #expect(attack.status == .ok, "\(String(buffer: attack.body))")
            let notification = try server.pki.jws(
                payload: PKI.notification(
                    type: "SUBSCRIBED", subtype: "INITIAL_BUY",
                    data: [
                        "signedTransactionInfo": try Self.victimPurchase(server.pki),
                        "signedRenewalInfo": try server.pki.jws(payload: PKI.renewalInfo()),
                    ]))
            let notified = try await Self.post(client, server, Endpoints.notificationsPath, Endpoints.body(notification))
            #expect(notified.status == .ok, "\(String(buffer: notified.body))")
            let attacker = try Endpoints.json(try await Self.customer(client, server, Self.attackerToken))
            #expect(Endpoints.entitlements(attacker) == [], "the victim's subscription did not land at the attacker's")
            #expect(!CustomerLookupTests.keys(attacker).contains(Self.victimAccount))
            let victim = try Endpoints.json(try await Self.customer(client, server, Self.victimAccount))
            #expect(Endpoints.entitlements(victim) == ["pro"])
            #expect(victim["customer"] as? Int != attacker["customer"] as? Int)
        }
    }

    /// Both arrival orders of Apple's notification and the app's request, with the app's token sent
    /// beside the transaction or signed in it, on transactions with and without `appTransactionId`:
    /// 200 every time, and one customer that answers to every key. Before, a notification that came
    /// first bound a transaction carrying `appTransactionId` to a customer named by it, and the app's
    /// request with its token was refused 409, which the client took as final.
    @Test(arguments: [false, true], [false, true])
    func bothArrivalOrdersGiveOneCustomer(signedToken: Bool, withAccount: Bool) async throws {
        for notificationFirst in [true, false] {
            try await Endpoints.withServer { client, server in
                var fields: [String: any Sendable] = [:]
                if withAccount { fields["appTransactionId"] = Self.victimAccount }
                if signedToken { fields["appAccountToken"] = Self.victimToken }
                let transaction = try server.pki.jws(payload: PKI.transaction(fields))
                let notification = try server.pki.jws(
                    payload: PKI.notification(
                        type: "SUBSCRIBED", subtype: "INITIAL_BUY",
                        data: ["signedTransactionInfo": transaction, "signedRenewalInfo": try server.pki.jws(payload: PKI.renewalInfo())]))
                let label = "signed token \(signedToken), appTransactionId \(withAccount), notification first \(notificationFirst)"
                func notify() async throws {
                    let response = try await Self.post(client, server, Endpoints.notificationsPath, Endpoints.body(notification))
                    #expect(response.status == .ok, "\(label): \(String(buffer: response.body))")
                }
                if notificationFirst { try await notify() }
                let presented = try await Self.post(
                    client, server, Endpoints.purchasesPath, Self.evidence(transaction, token: Self.victimToken))
                #expect(presented.status == .ok, "\(label): \(String(buffer: presented.body))")
                #expect(Endpoints.entitlements(try Endpoints.json(presented)) == ["pro"], "\(label)")
                if !notificationFirst { try await notify() }

                var ids = ["2000000000000001", Self.victimToken]
                if withAccount { ids.append(Self.victimAccount) }
                var customers: Set<Int> = []
                for id in ids {
                    let read = try await Self.customer(client, server, id)
                    #expect(read.status == .ok, "\(label): \(id)")
                    let answer = try Endpoints.json(read)
                    customers.insert(answer["customer"] as? Int ?? -1)
                    #expect(Endpoints.entitlements(answer) == ["pro"], "\(label): \(id)")
                }
                #expect(customers.count == 1, "\(label): one customer answers to every key")
                let lookup = try await Self.post(
                    client, server, CustomerLookupTests.lookupPath, Self.evidence(transaction, token: Self.victimToken))
                #expect(lookup.status == .ok, "\(label): \(String(buffer: lookup.body))")
            }
        }
    }

    /// Refused claims under `keep`: each names a customer the store never had. Before, every refusal
    /// made a customer row (20 refusals, 20 customers). Now none is made; each is counted, and the
    /// purchase's customer shows the refused claims, bounded.
    @Test func refusedClaimsMakeNoCustomer() async throws {
        try await Endpoints.withServer { client, server in
            let jws = try server.pki.jws(payload: PKI.transaction())
            let first = try await Self.post(client, server, Endpoints.purchasesPath, Self.evidence(jws, token: Self.victimToken))
            #expect(first.status == .ok)
            var tokens: [String] = []
            for index in 0..<20 {
                let token = String(format: "33333333-3333-4333-8333-%012d", index)
                tokens.append(token)
                let refused = try await Self.post(client, server, Endpoints.purchasesPath, Self.evidence(jws, token: token))
                #expect(refused.status == .conflict)
            }
            for token in tokens {
                #expect(try await Self.customer(client, server, token).status == .notFound, "\(token) made no customer")
            }
            let metrics = String(decoding: server.metrics.render(), as: UTF8.self)
            #expect(metrics.contains("catalog_purchase_transfers_total{outcome=\"refused\"} 20"), "\(metrics)")
            let holder = try Endpoints.json(try await Self.customer(client, server, Self.victimToken))
            let refusals = try #require(holder["refusedClaims"] as? [[String: Any]])
            #expect(refusals.reduce(0) { $0 + ($1["count"] as? Int ?? 0) } == 20, "every refusal is kept")
            #expect(refusals.count <= 16, "and the rows they take are bounded")
        }
    }

    /// The same attack on `POST …/content`: the victim's level pack, bought on iOS 18.4 (its
    /// transaction signs their `appTransactionId`), and the attacker's own coins presented with the
    /// victim's AppTransaction. Before, the coins joined the victim's customer and the answer signed
    /// URLs of the level pack; now the attacker is granted nothing.
    @Test func aForeignAppTransactionGetsNoContent() async throws {
        try await ContentEndpointTests.withServer { client, server in
            var levels = ContentEndpointTests.levelsPurchase
            levels["appTransactionId"] = Self.victimAccount
            let victimApp = try server.pki.jws(payload: PKI.appTransaction(["appTransactionId": Self.victimAccount]))
            let bought = try await client.execute(
                uri: ContentEndpointTests.path, method: .post, headers: server.headers(),
                body: Self.evidence(try server.pki.jws(payload: levels), appTransaction: victimApp))
            #expect(try ContentEndpointTests.items(bought).keys.sorted() == ["levels"], "\(String(buffer: bought.body))")
            let coins = try server.pki.jws(
                payload: PKI.transaction([
                    "transactionId": "3000000000000001", "originalTransactionId": "3000000000000001",
                    "productId": ContentEndpointTests.coins, "type": "Consumable", "purchaseDate": PKI.milliseconds(PKI.date(2025, 3, 1)),
                    "expiresDate": NSNull(), "subscriptionGroupIdentifier": NSNull(),
                ]))
            let attack = try await client.execute(
                uri: ContentEndpointTests.path, method: .post, headers: server.headers(),
                body: Self.evidence(coins, appTransaction: victimApp))
            #expect(attack.status == .ok, "\(String(buffer: attack.body))")
            #expect(try ContentEndpointTests.items(attack) == [:], "\(String(buffer: attack.body))")
        }
    }
}
