import AppStore
import AppStoreAPIStandIn
import AppStoreServerAPI
import AppStoreTestSupport
import CatalogKit
import Foundation
import Ledger
import Storage
import Synchronization
import Testing

/// Consumption requests answered against the stand-in, on a real SQLite store: once, across a
/// restart; slowed by throttling without losing one; never past Apple's twelve hours; never for an
/// app that does not answer (docs/app-store-api.md, "Consumption requests").
@Suite struct ConsumptionTests {
    typealias PKI = AppStoreTestPKI
    typealias Scenarios = ReconciliationScenarios

    /// A clock the test moves.
    final class Clock: Sendable {
        let now = Mutex(Date())
        func advance(_ seconds: TimeInterval) { now.withLock { $0 += seconds } }
        var date: Date { now.withLock { $0 } }
    }

    /// The app's settings: a year's pass (non-renewing) and a monthly subscription, answering on or off.
    static func purchases(_ pki: PKI, answering: Bool) throws -> AppPurchases {
        let consumption = answering ? #","consumption":{"refundPreference":"grantProrated","sampleContentProvided":true}"# : ""
        let record = try JSONDecoder().decode(
            PurchaseRecord.self,
            from: Data(
                #"""
                {"app":"com.example.app","appAppleId":1234567890,"environments":["production","sandbox"],"format":1,
                 "products":[{"entitlements":["pro"],"group":"pro","id":"com.example.app.pro.monthly","type":"auto-renewable"},
                             {"duration":"P1Y","entitlements":["pass"],"id":"com.example.app.pass","type":"non-renewing"}],
                 "serverAPI":{"issuerId":"57246542-96fe-1a63-e053-0824d011072a","keyFile":"unused","keyId":"ABCDEF1234"},
                 "transferPolicy":"keep"\#(consumption)}
                """#.utf8))
        return try AppPurchases(record, trust: pki.trust)
    }

    /// A `CONSUMPTION_REQUEST` for a purchase of `product` made `age` ago, signed at `signed`.
    static func request(_ pki: PKI, transactionId: String, product: String, bought: Date, signed: Date) throws -> String {
        var transaction: [String: any Sendable] = [
            "transactionId": transactionId, "originalTransactionId": transactionId, "productId": product,
            "purchaseDate": PKI.milliseconds(bought), "signedDate": PKI.milliseconds(signed),
        ]
        if product == "com.example.app.pass" {
            transaction["type"] = "Non-Renewing Subscription"
            transaction["expiresDate"] = NSNull()
            transaction["subscriptionGroupIdentifier"] = NSNull()
        } else {
            transaction["expiresDate"] = PKI.milliseconds(bought.addingTimeInterval(30 * 86_400))
        }
        let payload = PKI.notification(
            type: "CONSUMPTION_REQUEST",
            data: [
                "signedTransactionInfo": try pki.jws(payload: PKI.transaction(transaction)),
                "consumptionRequestReason": "UNINTENDED_PURCHASE",
            ],
            ["signedDate": PKI.milliseconds(signed)])
        return #"{"signedPayload":"\#(try pki.jws(payload: payload))"}"#
    }

    static func responder(
        _ store: any Store, purchases: AppPurchases, client: AppStoreServerAPIClient, clock: Clock
    ) -> ConsumptionResponder {
        ConsumptionResponder(
            store: store, answers: store, settings: { _ in purchases }, clients: { _ in [client] }, now: { clock.date })
    }

    @Test func aRequestIsAnsweredOnceAcrossARestartAndThrottlingOnlyDelaysIt() async throws {
        // A leaf valid now: requests are signed now, as Apple's are.
        let pki = try PKI.ecdsa(leafValidity: PKI.date(2024)...Date().addingTimeInterval(365 * 86_400))
        let purchases = try Self.purchases(pki, answering: true)
        let clock = Clock()
        let now = clock.date
        try await ReconciliationTests.withSQLite { store in
            // A pass bought three months ago, and a subscription: each asked about now.
            for (id, product) in [("3000000000000001", "com.example.app.pass"), ("3000000000000002", "com.example.app.pro.monthly")] {
                let body = try Self.request(
                    pki, transactionId: id, product: product, bought: now.addingTimeInterval(-91.25 * 86_400), signed: now)
                try await Scenarios.receive(
                    SignedNotification(body: body, signedPayload: "", original: id, firstSent: now), app: purchases, into: store)
            }
            try await Scenarios.withAPI { standIn, transport, keyFile in
                let client = try Scenarios.client(standIn, keyFile: keyFile, transport: transport, attempts: 1)
                // Apple is throttling: the first pass sends nothing, keeps both, and stops at the first.
                standIn.inject(.status(429, code: 4_290_000))
                let throttled = try await Self.responder(store, purchases: purchases, client: client, clock: clock).answerDue()
                #expect(throttled.throttled && throttled.deferred == 1 && throttled.sent == 0)
                #expect(standIn.consumption.isEmpty)
                // The next pass: the throttled one is not due yet, the other is sent.
                #expect(try await Self.responder(store, purchases: purchases, client: client, clock: clock).answerDue().sent == 1)
                clock.advance(120)
                let answered = try await Self.responder(store, purchases: purchases, client: client, clock: clock).answerDue()
                #expect(answered.sent == 1)
                let bodies = Dictionary(
                    uniqueKeysWithValues: standIn.consumption.map {
                        ($0.transactionId, try! JSONSerialization.jsonObject(with: Data($0.body)) as! [String: Any])
                    })
                let pass = try #require(bodies["3000000000000001"])
                #expect(pass["customerConsented"] as? Bool == true)
                #expect(pass["deliveryStatus"] as? String == "DELIVERED")
                #expect(pass["sampleContentProvided"] as? Bool == true)
                // A quarter of the year's pass has run: a prorated refund can be asked for.
                let share = try #require(pass["consumptionPercentage"] as? Int)
                #expect((24_900...25_100).contains(share))
                #expect(pass["refundPreference"] as? String == "GRANT_PRORATED")
                // A subscription's share is Apple's to compute: none sent, and so no prorated preference.
                let subscription = try #require(bodies["3000000000000002"])
                #expect(subscription["consumptionPercentage"] == nil && subscription["refundPreference"] == nil)
                // A restart: a new responder on the same store answers nothing again.
                clock.advance(3_600)
                let restarted = try await Self.responder(store, purchases: purchases, client: client, clock: clock).answerDue()
                #expect(restarted == ConsumptionResponder.Summary())
                #expect(standIn.consumption.count == 2)
            }
            let kept = try await store.consumptionAnswers(app: Scenarios.app, transactionIds: ["3000000000000001"])
            #expect(kept.map(\.state) == [.sent])
            #expect(kept.first?.body?.contains(#""deliveryStatus":"DELIVERED""#) == true)
        }
    }

    @Test func noAnswerWithoutConsentOrPastTheWindow() async throws {
        let pki = try PKI.ecdsa(leafValidity: PKI.date(2024)...Date().addingTimeInterval(365 * 86_400))
        let clock = Clock()
        let now = clock.date
        try await ReconciliationTests.withSQLite { store in
            let off = try Self.purchases(pki, answering: false)
            let on = try Self.purchases(pki, answering: true)
            let late = try Self.request(
                pki, transactionId: "3000000000000009", product: "com.example.app.pass", bought: now.addingTimeInterval(-86_400),
                signed: now.addingTimeInterval(-13 * 3_600))
            try await Scenarios.receive(
                SignedNotification(body: late, signedPayload: "", original: "x", firstSent: now), app: on, into: store)
            try await Scenarios.withAPI { standIn, transport, keyFile in
                let client = try Scenarios.client(standIn, keyFile: keyFile, transport: transport)
                let expired = try await Self.responder(store, purchases: on, client: client, clock: clock).answerDue()
                #expect(expired.expired == 1)
                let fresh = try Self.request(
                    pki, transactionId: "3000000000000010", product: "com.example.app.pass", bought: now.addingTimeInterval(-86_400),
                    signed: now)
                try await Scenarios.receive(
                    SignedNotification(body: fresh, signedPayload: "", original: "y", firstSent: now), app: off, into: store)
                let skipped = try await Self.responder(store, purchases: off, client: client, clock: clock).answerDue()
                #expect(skipped.skipped == 1)
                #expect(standIn.consumption.isEmpty)
            }
        }
    }
}
