import CatalogKit
import Foundation
import Ledger
import Testing

@testable import GooglePlay

/// Play's states in the ledger (docs/google-play.md, "Play's states in the ledger"): the answers
/// the Play Developer API gives over a subscription's life and a one-time product's, mapped, and
/// the ledger read at each instant from every answer given by then, as the server keeps them.
@Suite struct PlayLedgerTests {
    static func date(_ text: String) -> Date { RFC3339.parse(text)! }

    static let catalog: PlayCatalog = {
        var catalog = PlayCatalog()
        catalog.add(
            .init(id: "com.example.game.pro.monthly", type: .autoRenewable, group: "pro", period: ISO8601Period("P1M")),
            productId: "pro", plan: "monthly")
        catalog.add(
            .init(id: "com.example.game.pro.yearly", type: .autoRenewable, group: "pro", period: ISO8601Period("P1Y")),
            productId: "pro", plan: "yearly")
        catalog.add(.init(id: "com.example.game.gems", type: .consumable), productId: "gems", plan: nil)
        catalog.add(.init(id: "com.example.game.skin", type: .nonConsumable), productId: "skin", plan: nil)
        return catalog
    }()

    static let ledgerCatalog = LedgerCatalog(products: [
        "com.example.game.pro.monthly": LedgerProduct(entitlements: ["pro"]),
        "com.example.game.pro.yearly": LedgerProduct(entitlements: ["pro"]),
        "com.example.game.skin": LedgerProduct(entitlements: ["skin"]),
    ])

    static func subscription(
        _ state: String, order: String?, expiry: String, plan: String = "monthly", start: String = "2026-01-01T10:00:00Z",
        linked: String? = nil, replaced: Bool = false, userCancelled: Bool = false
    ) throws -> PlaySubscriptionPurchase {
        var json: [String: Any] = [
            "kind": "androidpublisher#subscriptionPurchaseV2", "subscriptionState": state, "startTime": start,
            "acknowledgementState": "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED",
            "externalAccountIdentifiers": ["obfuscatedExternalAccountId": "account-7"],
            "lineItems": [
                [
                    "productId": "pro", "expiryTime": expiry, "latestSuccessfulOrderId": order as Any,
                    "autoRenewingPlan": ["autoRenewEnabled": state == PlaySubscriptionPurchase.State.active],
                    "offerDetails": ["basePlanId": plan],
                ].compactMapValues { $0 is NSNull ? nil : $0 }
            ],
        ]
        if let linked { json["linkedPurchaseToken"] = linked }
        if replaced { json["canceledStateContext"] = ["replacementCancellation": [String: Any]()] }
        if userCancelled { json["canceledStateContext"] = ["userInitiatedCancellation": ["cancelTime": "2026-06-01T00:00:00Z"]] }
        return try JSONDecoder().decode(PlaySubscriptionPurchase.self, from: JSONSerialization.data(withJSONObject: json))
    }

    /// What the server holds: every answer mapped, the ledger derived from all of them.
    struct Kept {
        var transactions: [LedgerTransaction] = []
        var states: [SubscriptionState] = []
        /// The webhook's events, each once by its id as the outbox keeps them: `type order`.
        var events: [String] = []
        var eventIds: Set<String> = []

        mutating func add(_ values: PlayLedgerValues) {
            transactions += values.transactions.map(\.value)
            states += values.states.map(\.value)
            let submission = values.submission(app: "com.example.game", receivedAt: .now, source: .storeAPI)
            for event in WebhookEvent.derive(from: submission, outcome: PurchaseOutcome()) where eventIds.insert(event.id).inserted {
                events.append("\(event.type.rawValue) \(event.transactionId ?? "")")
            }
        }

        func ledger() -> Ledger {
            Ledger(transactions: transactions, states: states, environment: .production, catalog: PlayLedgerTests.ledgerCatalog)
        }

        func grants(at text: String) -> [String] {
            ledger().entitlements(at: PlayLedgerTests.date(text)).map { "\($0.entitlement) \($0.productId) \($0.transactionId)" }
        }
    }

    @Test func aSubscriptionsLife() throws {
        typealias State = PlaySubscriptionPurchase.State
        var kept = Kept()
        func answer(_ purchase: PlaySubscriptionPurchase, token: String = "token-a", at text: String) {
            kept.add(purchase.ledgerValues(token: token, answeredAt: Self.date(text), catalog: Self.catalog))
        }

        // Pending: nothing.
        answer(try Self.subscription(State.pending, order: nil, expiry: "2026-01-01T10:00:00Z"), at: "2026-01-01T09:00:00Z")
        #expect(kept.grants(at: "2026-01-01T09:30:00Z") == [])
        // Bought.
        answer(try Self.subscription(State.active, order: "GPA.1111", expiry: "2026-02-01T10:00:00Z"), at: "2026-01-01T10:00:01Z")
        #expect(kept.grants(at: "2026-01-02T00:00:00Z") == ["pro com.example.game.pro.monthly GPA.1111"])
        #expect(kept.grants(at: "2026-01-01T09:59:00Z") == [])
        // Renewed: the new order's period starts where the first ended.
        answer(try Self.subscription(State.active, order: "GPA.1111..0", expiry: "2026-03-01T10:00:00Z"), at: "2026-02-01T10:00:01Z")
        #expect(kept.grants(at: "2026-02-15T00:00:00Z") == ["pro com.example.game.pro.monthly GPA.1111..0"])
        #expect(kept.ledger().periods.map(\.start) == [Self.date("2026-01-01T10:00:00Z"), Self.date("2026-02-01T10:00:00Z")])
        // The next renewal fails: a grace period, access until its end, the state says retrying.
        answer(try Self.subscription(State.inGracePeriod, order: "GPA.1111..0", expiry: "2026-03-08T10:00:00Z"), at: "2026-03-01T10:00:01Z")
        #expect(kept.grants(at: "2026-03-05T00:00:00Z") == ["pro com.example.game.pro.monthly GPA.1111..0"])
        #expect(kept.ledger().periods.last?.isInBillingRetryPeriod == true)
        // On hold: no access.
        answer(try Self.subscription(State.onHold, order: "GPA.1111..0", expiry: "2026-03-08T10:00:00Z"), at: "2026-03-08T10:00:01Z")
        #expect(kept.grants(at: "2026-03-10T00:00:00Z") == [])
        // Recovered: a new order, a period from the recovery; the hold stays a gap.
        answer(try Self.subscription(State.active, order: "GPA.1111..1", expiry: "2026-04-12T10:00:00Z"), at: "2026-03-12T10:00:01Z")
        #expect(kept.grants(at: "2026-03-13T00:00:00Z") == ["pro com.example.game.pro.monthly GPA.1111..1"])
        #expect(kept.grants(at: "2026-03-10T00:00:00Z") == [])
        #expect(kept.ledger().periods.last?.isInBillingRetryPeriod == false)
        // Upgraded to the yearly plan: a new purchase naming the old one; the old one is replaced.
        answer(
            try Self.subscription(
                State.active, order: "GPA.2222", expiry: "2027-04-01T10:00:00Z", plan: "yearly", start: "2026-04-01T10:00:00Z",
                linked: "token-a"), token: "token-b", at: "2026-04-01T10:00:01Z")
        answer(
            try Self.subscription(State.expired, order: "GPA.1111..1", expiry: "2026-04-01T10:00:00Z", replaced: true),
            at: "2026-04-01T10:00:02Z")
        #expect(kept.grants(at: "2026-04-02T00:00:00Z") == ["pro com.example.game.pro.yearly GPA.2222"])
        #expect(kept.grants(at: "2026-03-31T00:00:00Z") == ["pro com.example.game.pro.monthly GPA.1111..1"])
        // Cancelled by the customer: access until the end of the paid year.
        answer(
            try Self.subscription(
                State.canceled, order: "GPA.2222", expiry: "2027-04-01T10:00:00Z", plan: "yearly", start: "2026-04-01T10:00:00Z",
                linked: "token-a", userCancelled: true), token: "token-b", at: "2026-06-01T00:00:01Z")
        #expect(kept.grants(at: "2027-03-31T00:00:00Z") == ["pro com.example.game.pro.yearly GPA.2222"])
        #expect(kept.grants(at: "2027-04-02T00:00:00Z") == [])
        // Refunded and revoked: from then on, nothing; before then, what was.
        let voided = try JSONDecoder().decode(
            PlayVoidedPurchase.self,
            from: Data(
                #"{"purchaseToken":"token-b","orderId":"GPA.2222","voidedTimeMillis":"1782864000000","voidedSource":"0","voidedReason":"3"}"#
                    .utf8))
        kept.add(
            try Self.subscription(
                State.expired, order: "GPA.2222", expiry: "2026-07-01T00:00:00Z", plan: "yearly", start: "2026-04-01T10:00:00Z"
            )
            .ledgerValues(
                token: "token-b", answeredAt: Self.date("2026-07-01T00:00:05Z"), catalog: Self.catalog, voided: ["GPA.2222": voided]))
        #expect(kept.grants(at: "2026-07-02T00:00:00Z") == [])
        #expect(kept.grants(at: "2026-06-15T00:00:00Z") == ["pro com.example.game.pro.yearly GPA.2222"])
        let refunded = try #require(kept.ledger().periods.last)
        #expect(refunded.revocationDate == Self.date("2026-07-01T00:00:00Z"))
        #expect(refunded.revocationReason == .appIssue)
        // The developer's webhook heard each change once, however often Google was asked.
        #expect(
            kept.events == [
                "started GPA.1111", "renewed GPA.1111..0", "inGracePeriod GPA.1111..0", "billingRetry GPA.1111..0",
                "renewed GPA.1111..1", "started GPA.2222", "expired GPA.1111..1", "refundedOrRevoked GPA.2222",
            ])
        // Every answer again, in another order: the same ledger.
        var shuffled = Kept()
        shuffled.transactions = kept.transactions.reversed()
        shuffled.states = kept.states.reversed()
        #expect(shuffled.ledger() == kept.ledger())
    }

    @Test func oneTimeProductsAreCreditedOncePerOrderAndPendingGrantsNothing() throws {
        func purchase(_ state: String, order: String?, product: String = "gems", quantity: Int = 3) throws -> PlayProductPurchase {
            var json: [String: Any] = [
                "kind": "androidpublisher#productPurchaseV2", "purchaseStateContext": ["purchaseState": state],
                "productLineItem": [["productId": product, "productOfferDetails": ["quantity": quantity]]],
                "obfuscatedExternalAccountId": "account-7",
            ]
            if state != PlayProductPurchase.State.pending { json["purchaseCompletionTime"] = "2026-05-01T12:00:00.123456789Z" }
            if let order { json["orderId"] = order }
            return try JSONDecoder().decode(PlayProductPurchase.self, from: JSONSerialization.data(withJSONObject: json))
        }
        var kept = Kept()
        let at = Self.date("2026-05-01T12:00:01Z")
        let pending = try purchase(PlayProductPurchase.State.pending, order: "GPA.3333").ledgerValues(
            token: "t1", answeredAt: at, catalog: Self.catalog)
        #expect(pending.transactions.isEmpty && pending.states.isEmpty)
        let paid = try purchase(PlayProductPurchase.State.purchased, order: "GPA.3333")
        kept.add(paid.ledgerValues(token: "t1", answeredAt: at, catalog: Self.catalog))
        kept.add(paid.ledgerValues(token: "t1", answeredAt: at.addingTimeInterval(60), catalog: Self.catalog))
        #expect(kept.ledger().credits(at: at) == ["com.example.game.gems": 3])
        kept.add(
            try purchase(PlayProductPurchase.State.purchased, order: "GPA.4444").ledgerValues(
                token: "t2", answeredAt: at, catalog: Self.catalog))
        #expect(kept.ledger().credits(at: at) == ["com.example.game.gems": 6])
        // The first refunded: its credit goes, from when Google said so.
        let later = Self.date("2026-05-03T00:00:00Z")
        kept.add(
            try purchase(PlayProductPurchase.State.cancelled, order: "GPA.3333").ledgerValues(
                token: "t1", answeredAt: later, catalog: Self.catalog))
        #expect(kept.ledger().credits(at: later) == ["com.example.game.gems": 3])
        #expect(kept.ledger().credits(at: at) == ["com.example.game.gems": 6])
        // A non-consumable unlocks; one Play does not know to the catalog unlocks its own id.
        kept.add(
            try purchase(PlayProductPurchase.State.purchased, order: "GPA.5555", product: "skin", quantity: 1).ledgerValues(
                token: "t3", answeredAt: at, catalog: Self.catalog))
        kept.add(
            try purchase(PlayProductPurchase.State.purchased, order: "GPA.6666", product: "other", quantity: 1).ledgerValues(
                token: "t4", answeredAt: at, catalog: Self.catalog))
        #expect(kept.ledger().activeEntitlements(at: at) == ["other", "skin"])
    }

    /// The kept JSON reads back as the ledger's value, with Google's answer and the token beside it.
    @Test func keptJSONReadsBackAsTheLedgersValue() throws {
        let answer = try Self.subscription(PlaySubscriptionPurchase.State.active, order: "GPA.1111", expiry: "2026-02-01T10:00:00Z")
        let values = answer.ledgerValues(token: "token-a", answeredAt: Self.date("2026-01-01T10:00:01Z"), catalog: Self.catalog)
        let kept = try #require(values.transactions.first)
        var read = try #require(LedgerJSON.decode(LedgerTransaction.self, kept.json))
        read.marketplace = .googlePlay  // the row's, not the JSON's
        #expect(read == kept.value)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(kept.json.utf8)) as? [String: Any])
        #expect(object["purchaseToken"] as? String == "token-a")
        #expect((object["googlePlay"] as? [String: Any])?["subscriptionState"] as? String == "SUBSCRIPTION_STATE_ACTIVE")
        #expect(kept.value.appAccount == "account-7")
    }

    /// The catalog a revision's purchase record gives: base plans and purchase options to products.
    @Test func thePlayCatalogOfARecord() throws {
        let json = #"""
            {"app":"com.example.game","environments":["production"],"format":1,"transferPolicy":"keep","products":[
             {"id":"com.example.game.pro.monthly","type":"auto-renewable","entitlements":["pro"],"group":"pro","period":"P1M",
              "play":{"productId":"pro","basePlan":"monthly"}},
             {"id":"com.example.game.pass","type":"non-renewing","entitlements":["pro"],"duration":"P1W",
              "play":{"productId":"pass","basePlan":"week"}},
             {"id":"com.example.game.gems","type":"consumable","entitlements":["com.example.game.gems"],"play":{"productId":"gems"}},
             {"id":"com.example.game.coins","type":"consumable","entitlements":["com.example.game.coins"],
              "play":{"productId":"coins","purchaseOption":"bag-of-10"}},
             {"id":"com.example.game.ios.only","type":"consumable","entitlements":["x"]}]}
            """#
        let record = try #require(PurchaseRecord.decode(Array(json.utf8)))
        let catalog = PlayCatalog(record)
        #expect(catalog.item(productId: "pro", plan: "monthly")?.id == "com.example.game.pro.monthly")
        #expect(catalog.item(productId: "pro", plan: "monthly")?.period == ISO8601Period("P1M"))
        #expect(catalog.item(productId: "pass", plan: "week")?.period == ISO8601Period("P1W"))
        #expect(catalog.item(productId: "pro", plan: "yearly") == nil)
        #expect(catalog.item(productId: "gems", plan: "bundle-10")?.id == "com.example.game.gems")
        #expect(catalog.item(productId: "com.example.game.ios.only", plan: nil) == nil)
        #expect(catalog.knows("coins") && catalog.knows("pro") && !catalog.knows("com.example.game.ios.only"))
        // Before Google is asked, a purchase names its product and not its option: a consumable
        // sold only as a purchase option is still consumed, not merely acknowledged.
        #expect(catalog.acknowledgementAction(productId: "coins", isSubscription: false) == .consumeProduct)
        #expect(catalog.acknowledgementAction(productId: "gems", isSubscription: false) == .consumeProduct)
        #expect(catalog.acknowledgementAction(productId: "pro", isSubscription: true) == .acknowledgeSubscription)
    }
}
