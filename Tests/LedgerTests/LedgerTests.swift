import Foundation
import Ledger
import Testing

/// The ledger rules (docs/purchases.md, "The ledger"): periods and entitlements from the signed
/// dates alone. The payloads are built as the App Store signs them (JSON with Apple's field names,
/// dates in milliseconds); verifying them is the verifier's job, tested beside.
@Suite struct LedgerTests {
    static let t0 = Date(timeIntervalSince1970: 1_735_689_600)  // 2025-01-01T00:00:00Z
    static func day(_ n: Double) -> Date { t0.addingTimeInterval(n * 86_400) }

    static let catalog = LedgerCatalog(products: [
        "basic.monthly": LedgerProduct(entitlements: ["basic"]),
        "premium.monthly": LedgerProduct(entitlements: ["basic", "premium"]),
        "season.pass": LedgerProduct(entitlements: ["season"], duration: ISO8601Period("P1M")),
        "levels": LedgerProduct(entitlements: ["levels"]),
    ])

    /// A transaction as the App Store signs it; `fields` adds or overrides any of Apple's fields.
    static func transaction(
        _ id: String, original: String? = nil, product: String, type: String = "Auto-Renewable Subscription", purchased: Date,
        expires: Date? = nil, signed: Date? = nil, environment: String = "Production", _ fields: [String: Any] = [:]
    ) -> LedgerTransaction {
        var json: [String: Any] = [
            "transactionId": id, "originalTransactionId": original ?? id, "productId": product, "type": type,
            "purchaseDate": millis(purchased), "signedDate": millis(signed ?? purchased), "environment": environment,
            "inAppOwnershipType": "PURCHASED", "quantity": 1, "bundleId": "com.example.app",
        ]
        if type == "Auto-Renewable Subscription" { json["subscriptionGroupIdentifier"] = "group" }
        if let expires { json["expiresDate"] = millis(expires) }
        json.merge(fields) { $1 }
        return decode(json)
    }

    static func renewalInfo(original: String, signed: Date, _ fields: [String: Any]) -> SubscriptionState {
        var json: [String: Any] = ["originalTransactionId": original, "signedDate": millis(signed), "environment": "Production"]
        json.merge(fields) { $1 }
        return decode(json)
    }

    static func millis(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }

    static func decode<T: Decodable>(_ json: [String: Any]) -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        // The fixtures are the test's own: a failure here is a broken test, not a refusal to test.
        do {
            return try decoder.decode(T.self, from: JSONSerialization.data(withJSONObject: json))
        } catch {
            preconditionFailure("a fixture does not decode: \(error)")
        }
    }

    static func ledger(_ transactions: [LedgerTransaction], _ infos: [SubscriptionState] = []) -> Ledger {
        Ledger(transactions: transactions, states: infos, environment: .production, catalog: catalog)
    }

    @Test func upgradeEndsThePeriodItLeavesAtItsStart() {
        let ledger = Self.ledger([
            Self.transaction(
                "1", product: "basic.monthly", purchased: Self.day(0), expires: Self.day(30), signed: Self.day(10), ["isUpgraded": true]),
            Self.transaction("2", original: "1", product: "premium.monthly", purchased: Self.day(10), expires: Self.day(40)),
        ])
        #expect(ledger.periods.map(\.transactionId) == ["1", "2"])
        #expect(ledger.periods.map(\.end) == [Self.day(10), Self.day(40)])
        #expect(ledger.periods[0].isUpgraded)
        #expect(ledger.activeEntitlements(at: Self.day(5)) == ["basic"])
        #expect(ledger.activeEntitlements(at: Self.day(15)) == ["basic", "premium"])
        #expect(ledger.entitlements(at: Self.day(15)).map(\.transactionId) == ["2", "2"])
        #expect(ledger.activeEntitlements(at: Self.day(41)) == [])
    }

    /// The shape of a real sandbox history: a 3-month tier bought at 05:16:18 (expiring 05:25:18),
    /// upgraded at 05:16:30 to the monthly tier of the same group (expiring 05:19:30). The upgrade's
    /// notification carries only the new transaction; the old one's `isUpgraded` version never
    /// arrives. The new period starts inside the old one, so it ends the old one at its start.
    @Test func anUpgradeEndsThePeriodItLeavesWithoutTheUpgradedVersion() {
        let minute = 60.0 / 86_400
        let ledger = Self.ledger([
            Self.transaction("1", product: "basic.monthly", purchased: Self.day(0), expires: Self.day(9 * minute)),
            Self.transaction(
                "2", original: "1", product: "premium.monthly", purchased: Self.day(0.2 * minute), expires: Self.day(3.2 * minute),
                ["transactionReason": "PURCHASE"]),
        ])
        #expect(ledger.periods.map(\.end) == [Self.day(0.2 * minute), Self.day(3.2 * minute)])
        #expect(ledger.periods.map(\.isUpgraded) == [false, false], "what Apple signed is shown as signed")
        // After the upgraded tier expired, nothing of the old tier grants.
        #expect(ledger.activeEntitlements(at: Self.day(5 * minute)) == [])
        #expect(ledger.activeEntitlements(at: Self.day(2 * minute)) == ["basic", "premium"])
        #expect(ledger.entitlements(at: Self.day(2 * minute)).map(\.transactionId) == ["2", "2"])
    }

    /// One subscription, one period at a time, but only within one subscription: another
    /// subscription of the same group (bought by another Apple account of the same customer, say)
    /// and a subscription of another group keep their own periods.
    @Test func onlyTheSameSubscriptionEndsAPeriodEarly() {
        let ledger = Self.ledger([
            Self.transaction("1", product: "premium.monthly", purchased: Self.day(0), expires: Self.day(30)),
            Self.transaction("2", product: "basic.monthly", purchased: Self.day(10), expires: Self.day(40)),
            Self.transaction(
                "3", product: "levels.monthly", purchased: Self.day(12), expires: Self.day(42), ["subscriptionGroupIdentifier": "other"]),
        ])
        #expect(ledger.periods.map(\.end) == [Self.day(30), Self.day(40), Self.day(42)])
        #expect(ledger.activeEntitlements(at: Self.day(20)) == ["basic", "levels.monthly", "premium"])
    }

    /// A renewal that Apple dates at the very end of the period before it starts nothing inside it.
    @Test func aRenewalAtTheExpiryEndsNothingEarly() {
        let ledger = Self.ledger([
            Self.transaction("1", product: "basic.monthly", purchased: Self.day(0), expires: Self.day(30)),
            Self.transaction("2", original: "1", product: "basic.monthly", purchased: Self.day(30), expires: Self.day(60)),
        ])
        #expect(ledger.periods.map(\.end) == [Self.day(30), Self.day(60)])
    }

    @Test func downgradeTakesEffectAtTheRenewal() {
        let ledger = Self.ledger([
            Self.transaction("1", product: "premium.monthly", purchased: Self.day(0), expires: Self.day(30)),
            Self.transaction(
                "2", original: "1", product: "basic.monthly", purchased: Self.day(30), expires: Self.day(60),
                ["transactionReason": "RENEWAL"]),
        ])
        #expect(ledger.periods.map(\.end) == [Self.day(30), Self.day(60)])
        #expect(ledger.activeEntitlements(at: Self.day(29)) == ["basic", "premium"])
        #expect(ledger.activeEntitlements(at: Self.day(31)) == ["basic"])
    }

    @Test func gracePeriodKeepsAccessUntilItEnds() {
        let ledger = Self.ledger(
            [Self.transaction("1", product: "basic.monthly", purchased: Self.day(0), expires: Self.day(30))],
            [
                Self.renewalInfo(
                    original: "1", signed: Self.day(30.5),
                    ["gracePeriodExpiresDate": Self.millis(Self.day(36)), "isInBillingRetryPeriod": true, "autoRenewStatus": 1])
            ])
        let period = ledger.periods[0]
        #expect(period.end == Self.day(30))
        #expect(period.gracePeriodExpiresDate == Self.day(36))
        #expect(period.isInBillingRetryPeriod)
        let grants = ledger.entitlements(at: Self.day(33))
        #expect(grants.map(\.entitlement) == ["basic"])
        #expect(grants.map(\.inGracePeriod) == [true])
        #expect(grants.map(\.expiresDate) == [Self.day(36)])
        #expect(ledger.activeEntitlements(at: Self.day(37)) == [])
    }

    @Test func billingRetryThenRecoveryKeepsEachPeriodsState() {
        let ledger = Self.ledger(
            [
                Self.transaction("1", product: "basic.monthly", purchased: Self.day(0), expires: Self.day(30)),
                Self.transaction("2", original: "1", product: "basic.monthly", purchased: Self.day(35), expires: Self.day(65)),
            ],
            [
                Self.renewalInfo(original: "1", signed: Self.day(32), ["isInBillingRetryPeriod": true]),
                Self.renewalInfo(original: "1", signed: Self.day(35), ["isInBillingRetryPeriod": false]),
            ])
        #expect(ledger.periods.map(\.isInBillingRetryPeriod) == [true, false])
        // In billing retry without a grace period, the customer has no access.
        #expect(ledger.activeEntitlements(at: Self.day(33)) == [])
        #expect(ledger.activeEntitlements(at: Self.day(36)) == ["basic"])
    }

    @Test func refundRevokesFromTheRevocationDate() {
        let bought = Self.transaction("9", product: "levels", type: "Non-Consumable", purchased: Self.day(0))
        let refunded = Self.transaction(
            "9", product: "levels", type: "Non-Consumable", purchased: Self.day(0), signed: Self.day(10),
            ["revocationDate": Self.millis(Self.day(9)), "revocationReason": 1])
        for order in [[bought, refunded], [refunded, bought], [refunded, bought, refunded]] {
            let ledger = Self.ledger(order)
            #expect(ledger.purchases.count == 1)
            #expect(ledger.purchases[0].revocationDate == Self.day(9))
            #expect(ledger.purchases[0].revocationReason == .appIssue)
            #expect(ledger.activeEntitlements(at: Self.day(5)) == ["levels"])
            #expect(ledger.activeEntitlements(at: Self.day(9.5)) == [])
        }
    }

    @Test func refundReversedRestoresTheLaterSignedVersion() {
        let refunded = Self.transaction(
            "9", product: "levels", type: "Non-Consumable", purchased: Self.day(0), signed: Self.day(10),
            ["revocationDate": Self.millis(Self.day(9)), "revocationReason": 0])
        let reversed = Self.transaction("9", product: "levels", type: "Non-Consumable", purchased: Self.day(0), signed: Self.day(20))
        #expect(Self.ledger([reversed, refunded]).activeEntitlements(at: Self.day(25)) == ["levels"])
        #expect(Self.ledger([refunded, reversed]) == Self.ledger([reversed, refunded]))
    }

    /// A client that re-sends its original transaction after a refund must not undo the refund, even
    /// if both versions carry the same `signedDate` (Apple dates a refund later, but a tie must not
    /// be decided by whatever sorts first): of two versions signed at the same instant, the one that
    /// revokes wins, in every order of arrival.
    @Test(arguments: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    func aRefundSignedAtTheSameInstantIsNeverUndone(product: Int) {
        // Ten product ids, so the canonical JSON of the two versions sorts both ways among them.
        let id = "levels"
        let fields: [String: Any] = ["appAccountToken": "00000000-0000-4000-8000-00000000000\(product)"]
        let bought = Self.transaction("9", product: id, type: "Non-Consumable", purchased: Self.day(0), signed: Self.day(10), fields)
        let refunded = Self.transaction(
            "9", product: id, type: "Non-Consumable", purchased: Self.day(0), signed: Self.day(10),
            fields.merging(["revocationDate": Self.millis(Self.day(9)), "revocationReason": 0]) { $1 })
        for order in [[bought, refunded], [refunded, bought]] {
            #expect(Self.ledger(order).activeEntitlements(at: Self.day(9.5)) == [], "the refund stands")
        }
    }

    @Test func familySharingRevokedEndsThePeriod() {
        let shared = Self.transaction(
            "5", product: "basic.monthly", purchased: Self.day(0), expires: Self.day(30), ["inAppOwnershipType": "FAMILY_SHARED"])
        let revoked = Self.transaction(
            "5", product: "basic.monthly", purchased: Self.day(0), expires: Self.day(30), signed: Self.day(12),
            ["inAppOwnershipType": "FAMILY_SHARED", "revocationDate": Self.millis(Self.day(12)), "revocationReason": 0])
        let ledger = Self.ledger([revoked, shared])
        #expect(ledger.periods.map(\.ownership) == [.familyShared])
        #expect(ledger.periods.map(\.end) == [Self.day(12)])
        #expect(ledger.activeEntitlements(at: Self.day(11)) == ["basic"])
        #expect(ledger.activeEntitlements(at: Self.day(13)) == [])
    }

    @Test func consumablesAreCreditedOncePerTransaction() {
        let two = Self.transaction("c1", product: "gems", type: "Consumable", purchased: Self.day(1), ["quantity": 2])
        let one = Self.transaction("c2", product: "gems", type: "Consumable", purchased: Self.day(2))
        let ledger = Self.ledger([two, one, two, two])
        #expect(ledger.credits(at: Self.day(3)) == ["gems": 3])
        #expect(ledger.credits(at: Self.day(1.5)) == ["gems": 2])
        #expect(ledger.activeEntitlements(at: Self.day(3)) == [])
    }

    @Test func nonRenewingTakesItsPeriodFromTheCatalog() {
        let january31 = Date(timeIntervalSince1970: 1_738_281_600)  // 2025-01-31T00:00:00Z
        let ledger = Self.ledger([
            Self.transaction("n1", product: "season.pass", type: "Non-Renewing Subscription", purchased: january31),
            // Not in the catalog: no duration, so no end, and it unlocks nothing.
            Self.transaction("n2", product: "unknown.pass", type: "Non-Renewing Subscription", purchased: january31),
        ])
        let february28 = Date(timeIntervalSince1970: 1_740_700_800)
        #expect(ledger.periods.map(\.end) == [february28, nil])
        #expect(ledger.activeEntitlements(at: february28.addingTimeInterval(-1)) == ["season"])
        #expect(ledger.activeEntitlements(at: february28) == [])
    }

    @Test func theEnvironmentsAreKeptApart() {
        let sandbox = Self.transaction("s1", product: "levels", type: "Non-Consumable", purchased: Self.day(0), environment: "Sandbox")
        #expect(Self.ledger([sandbox]).purchases.isEmpty)
        let inSandbox = Ledger(transactions: [sandbox], environment: .sandbox, catalog: Self.catalog)
        #expect(inSandbox.activeEntitlements(at: Self.day(1)) == ["levels"])
    }

    // Shuffled and duplicated evidence: every order of the same set gives one ledger.

    static let evidence: [LedgerTransaction] = [
        transaction("1", product: "basic.monthly", purchased: day(0), expires: day(30), signed: day(0)),
        transaction("1", product: "basic.monthly", purchased: day(0), expires: day(30), signed: day(10), ["isUpgraded": true]),
        transaction("2", original: "1", product: "premium.monthly", purchased: day(10), expires: day(40)),
        transaction("2", original: "1", product: "premium.monthly", purchased: day(10), expires: day(40)),
        transaction(
            "3", original: "1", product: "premium.monthly", purchased: day(40), expires: day(70), signed: day(50),
            ["revocationDate": millis(day(50)), "revocationReason": 1]),
    ]
    static let infos: [SubscriptionState] = [
        renewalInfo(original: "1", signed: day(41), ["isInBillingRetryPeriod": false]),
        renewalInfo(original: "1", signed: day(39), ["isInBillingRetryPeriod": true, "gracePeriodExpiresDate": millis(day(45))]),
    ]

    static func permutations(_ items: [Int]) -> [[Int]] {
        guard items.count > 1 else { return [items] }
        return items.indices.flatMap { index in
            var rest = items
            let first = rest.remove(at: index)
            return permutations(rest).map { [first] + $0 }
        }
    }

    @Test(arguments: permutations(Array(0..<5)))
    func everyOrderGivesOneLedger(order: [Int]) {
        let reference = Self.ledger(Self.evidence, Self.infos)
        let shuffled = Self.ledger(
            order.map { Self.evidence[$0] }, order.first.map { $0 % 2 == 0 } == true ? Self.infos : Self.infos.reversed())
        #expect(shuffled == reference)
        // Twice over is the same as once.
        #expect(Self.ledger(Self.evidence + order.map { Self.evidence[$0] }, Self.infos + Self.infos) == reference)
        #expect(reference.periods.map(\.end) == [Self.day(10), Self.day(40), Self.day(50)])
        #expect(reference.periods.map(\.gracePeriodExpiresDate) == [nil, Self.day(45), nil])
        #expect(reference.periods.map(\.isInBillingRetryPeriod) == [false, true, false])
    }

    @Test func customerKeys() {
        let plain = Self.transaction("1", product: "levels", type: "Non-Consumable", purchased: Self.day(0))
        #expect(CustomerKey.of(plain) == CustomerKey(kind: .purchase, value: "1", marketplace: .appStore))
        #expect(CustomerKey.of(plain, appAccount: "AB-CD") == .appAccount("ab-cd"))
        let account = Self.transaction("1", product: "levels", type: "Non-Consumable", purchased: Self.day(0), ["appTransactionId": "704"])
        #expect(CustomerKey.of(account) == CustomerKey(kind: .storeAccount, value: "704", marketplace: .appStore))
        let token = Self.transaction(
            "1", product: "levels", type: "Non-Consumable", purchased: Self.day(0),
            ["appTransactionId": "704", "appAccountToken": "7E3FB20B-4CDB-47CC-936D-99D65F608138"])
        // The account the store signed wins over one the app sends beside it.
        #expect(
            CustomerKey.of(token, appAccount: "00000000-0000-0000-0000-000000000000") == .appAccount("7e3fb20b-4cdb-47cc-936d-99d65f608138")
        )
        // Answers name the kinds in the App Store's words; an app account is every store's.
        #expect(CustomerKey.of(account)?.kindName == "appTransactionId")
        #expect(CustomerKey.of(plain)?.kindName == "originalTransactionId")
        #expect(CustomerKey.appAccount("x").kindName == "appAccountToken")
        #expect(CustomerKey(kind: .appAccount, value: "X", marketplace: .googlePlay).marketplace == nil)
    }

    @Test func periods() throws {
        let january31 = Date(timeIntervalSince1970: 1_738_281_600)
        #expect(try #require(ISO8601Period("P1M")).added(to: january31) == Date(timeIntervalSince1970: 1_740_700_800))
        #expect(try #require(ISO8601Period("P1Y2W")).description == "P1Y2W")
        #expect(try #require(ISO8601Period("P1W")).added(to: Self.t0) == Self.day(7))
        for bad in ["", "P", "1M", "PT1H", "P1D1M", "P1M1M", "P12345D", "p1m"] { #expect(ISO8601Period(bad) == nil) }
    }
}
