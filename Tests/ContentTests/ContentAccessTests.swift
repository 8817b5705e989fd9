import Content
import Foundation
import Ledger
import Testing

/// The access rules (docs/content.md, "Access rules"), on ledgers derived by `Purchases` from
/// payloads shaped as the App Store signs them.
@Suite struct ContentAccessTests {
    /// A UTC instant written `2025-02-03` or `2025-02-03T12:00`.
    static func date(_ text: String) -> Date {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        let full = text.count == 10 ? "\(text)T00:00:00Z" : "\(text):00Z"
        guard let date = formatter.date(from: full) else { preconditionFailure("a fixture date does not parse: \(text)") }
        return date
    }

    static let catalog = LedgerCatalog(products: [
        "season.pass": LedgerProduct(entitlements: ["season"], duration: ISO8601Period("P1M"))
    ])

    /// A transaction as the App Store signs it; `fields` adds or overrides any of Apple's fields.
    static func transaction(
        _ id: String, original: String? = nil, product: String, type: String = "Auto-Renewable Subscription",
        group: String = "magazine", purchased: String, expires: String? = nil, signed: String? = nil, _ fields: [String: Any] = [:]
    ) -> LedgerTransaction {
        var json: [String: Any] = [
            "transactionId": id, "originalTransactionId": original ?? id, "productId": product, "type": type,
            "purchaseDate": millis(date(purchased)), "signedDate": millis(date(signed ?? purchased)), "environment": "Production",
            "inAppOwnershipType": "PURCHASED", "quantity": 1, "bundleId": "com.example.news",
        ]
        if type == "Auto-Renewable Subscription" { json["subscriptionGroupIdentifier"] = group }
        if let expires { json["expiresDate"] = millis(date(expires)) }
        json.merge(fields) { $1 }
        return decode(json)
    }

    static func renewalInfo(original: String, signed: String, _ fields: [String: Any]) -> SubscriptionState {
        var json: [String: Any] = ["originalTransactionId": original, "signedDate": millis(date(signed)), "environment": "Production"]
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

    /// The magazine's issues, published on the first of each month of 2025.
    static let issues: [String: ContentAvailability] = Dictionary(
        uniqueKeysWithValues: ["January", "February", "March", "April", "May"].enumerated().map { index, month in
            (month, .subscriptionGroup("magazine", published: date(String(format: "2025-%02d-01", index + 1))))
        })

    /// The table of docs/content.md, as written: a weekly subscription bought on February 3 and
    /// renewed until it expired on April 7 (nine weeks), asked about on June 1.
    static let magazineTable: [(issue: String, answer: String)] = [
        ("January 1", "No: the subscription had not started"),
        ("February 1", "Yes: delivered when the user subscribed (on February 3, say)"),
        ("March 1", "Yes: delivered at the time of its publication"),
        ("April 1", "Yes: delivered at the time of its publication"),
        ("May 1", "No: the subscription expired on April 7"),
    ]

    static var magazineSubscriber: Ledger {
        let start = date("2025-02-03")
        let weeks = (0..<9).map { week in
            let from = start.addingTimeInterval(Double(week) * 7 * 86_400)
            let to = from.addingTimeInterval(7 * 86_400)
            let formatter = ISO8601DateFormatter()
            return transaction(
                "w\(week)", original: "w0", product: "magazine.weekly", purchased: String(formatter.string(from: from).prefix(10)),
                expires: String(formatter.string(from: to).prefix(10)))
        }
        return ledger(weeks)
    }

    @Test func magazineTableAsWritten() {
        let ledger = Self.magazineSubscriber
        #expect(ledger.periods.last?.end == Self.date("2025-04-07"))
        let grants = ContentAccess.grants(ledger: ledger, at: Self.date("2025-06-01"), items: Self.issues)
        let granted = Dictionary(uniqueKeysWithValues: grants.map { ($0.itemId, $0.reason) })
        for row in Self.magazineTable {
            let month = String(row.issue.prefix { $0 != " " })
            let expected = row.answer.hasPrefix("Yes")
            #expect((granted[month] != nil) == expected, "\(row.issue): \(row.answer)")
        }
        // And for the reason the table gives.
        #expect(granted["February"] == .currentAtFirstPeriod(transactionId: "w0"))
        #expect(granted["March"] == .publishedDuringPeriod(transactionId: "w3"))
        #expect(granted["April"] == .publishedDuringPeriod(transactionId: "w8"))
    }

    /// One row of the rules' table: a ledger, an instant, and the items granted then.
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var transactions: [LedgerTransaction]
        var infos: [SubscriptionState] = []
        var instant: String
        var items: [String: ContentAvailability]
        var granted: [String]
        var testDescription: String { name }
    }

    static let levels: [String: ContentAvailability] = ["levels-1": .product("levels"), "credits-art": .product("coins.100")]
    static let monthly: [String: ContentAvailability] = [
        "dec15": .subscriptionGroup("magazine", published: date("2024-12-15")),
        "jan15": .subscriptionGroup("magazine", published: date("2025-01-15")),
        "feb15": .subscriptionGroup("magazine", published: date("2025-02-15")),
        "mar15": .subscriptionGroup("magazine", published: date("2025-03-15")),
        "apr15": .subscriptionGroup("magazine", published: date("2025-04-15")),
        "other-group": .subscriptionGroup("comics", published: date("2025-01-20")),
        "pro-files": .product("magazine.monthly"),
    ]
    static func month(_ id: String, _ from: String, _ to: String, _ fields: [String: Any] = [:]) -> LedgerTransaction {
        transaction(id, original: "m1", product: "magazine.monthly", purchased: from, expires: to, fields)
    }

    static let cases: [Case] = [
        Case(
            name: "a non-consumable's content, once bought",
            transactions: [transaction("1", product: "levels", type: "Non-Consumable", purchased: "2025-01-10")],
            instant: "2025-01-11", items: levels, granted: ["levels-1"]),
        Case(
            name: "nothing before the purchase",
            transactions: [transaction("1", product: "levels", type: "Non-Consumable", purchased: "2025-01-10")],
            instant: "2025-01-09", items: levels, granted: []),
        Case(
            name: "a refund takes a product's content away",
            transactions: [
                transaction(
                    "1", product: "levels", type: "Non-Consumable", purchased: "2025-01-10", signed: "2025-01-20",
                    ["revocationDate": millis(date("2025-01-20")), "revocationReason": 0])
            ],
            instant: "2025-01-21", items: levels, granted: []),
        Case(
            name: "before the refund, the content was theirs",
            transactions: [
                transaction(
                    "1", product: "levels", type: "Non-Consumable", purchased: "2025-01-10", signed: "2025-01-20",
                    ["revocationDate": millis(date("2025-01-20")), "revocationReason": 0])
            ],
            instant: "2025-01-15", items: levels, granted: ["levels-1"]),
        Case(
            name: "family shared counts like bought",
            transactions: [
                transaction(
                    "1", product: "levels", type: "Non-Consumable", purchased: "2025-01-10", ["inAppOwnershipType": "FAMILY_SHARED"])
            ],
            instant: "2025-01-11", items: levels, granted: ["levels-1"]),
        Case(
            name: "family sharing revoked takes it away",
            transactions: [
                transaction(
                    "1", product: "levels", type: "Non-Consumable", purchased: "2025-01-10", signed: "2025-02-01",
                    ["inAppOwnershipType": "FAMILY_SHARED", "revocationDate": millis(date("2025-02-01"))])
            ],
            instant: "2025-02-02", items: levels, granted: []),
        Case(
            name: "consumables have no lasting content",
            transactions: [transaction("1", product: "coins.100", type: "Consumable", purchased: "2025-01-10")],
            instant: "2025-01-10T00:01", items: levels, granted: []),
        Case(
            name: "a subscription product's files while a period is active",
            transactions: [month("a", "2025-01-01", "2025-02-01")],
            instant: "2025-01-20", items: ["pro-files": .product("magazine.monthly")], granted: ["pro-files"]),
        Case(
            name: "a subscription product's files go when it expires",
            transactions: [month("a", "2025-01-01", "2025-02-01")],
            instant: "2025-02-01", items: ["pro-files": .product("magazine.monthly")], granted: []),
        Case(
            name: "a non-renewing subscription's files for its duration",
            transactions: [transaction("1", product: "season.pass", type: "Non-Renewing Subscription", purchased: "2025-01-31")],
            instant: "2025-02-27", items: ["season-files": .product("season.pass")], granted: ["season-files"]),
        Case(
            name: "a non-renewing subscription's files end with its duration",
            transactions: [transaction("1", product: "season.pass", type: "Non-Renewing Subscription", purchased: "2025-01-31")],
            instant: "2025-02-28", items: ["season-files": .product("season.pass")], granted: []),
        Case(
            name: "issues of the months subscribed, the current one at the start, none of another group or yet to come",
            transactions: [month("a", "2025-01-01", "2025-02-01"), month("b", "2025-02-01", "2025-03-01")],
            instant: "2025-04-20", items: monthly, granted: ["dec15", "feb15", "jan15"]),
        Case(
            name: "an issue not yet published is not given",
            transactions: [month("a", "2025-01-01", "2025-02-01")],
            instant: "2025-01-10", items: monthly, granted: ["dec15", "pro-files"]),
        Case(
            name: "refund of one period takes back the issue it gave, the others stay",
            transactions: [
                month("a", "2025-01-01", "2025-02-01"),
                month(
                    "b", "2025-02-01", "2025-03-01",
                    ["revocationDate": millis(date("2025-02-20")), "revocationReason": 1, "signedDate": millis(date("2025-02-20"))]),
                month("c", "2025-03-01", "2025-04-01"),
            ],
            instant: "2025-05-01", items: monthly, granted: ["dec15", "jan15", "mar15"]),
        Case(
            name: "a refunded first period is no first period: the next one is",
            transactions: [
                month(
                    "a", "2025-01-01", "2025-02-01",
                    ["revocationDate": millis(date("2025-01-05")), "signedDate": millis(date("2025-01-05"))]),
                month("b", "2025-02-01", "2025-03-01"),
            ],
            instant: "2025-05-01", items: monthly, granted: ["feb15", "jan15"]),
        Case(
            name: "resubscribing after a gap gives the issues of the new periods only",
            transactions: [month("a", "2025-01-01", "2025-02-01"), month("c", "2025-03-20", "2025-04-20")],
            instant: "2025-05-01", items: monthly, granted: ["apr15", "dec15", "jan15"]),
        Case(
            name: "an upgrade within the group keeps the coverage continuous",
            transactions: [
                transaction(
                    "a", original: "m1", product: "magazine.monthly", purchased: "2025-01-01", expires: "2025-02-01",
                    signed: "2025-01-20", ["isUpgraded": true]),
                transaction("b", original: "m1", product: "magazine.premium", purchased: "2025-01-20", expires: "2025-02-20"),
            ],
            instant: "2025-02-18", items: monthly, granted: ["dec15", "feb15", "jan15"]),
        Case(
            name: "an upgraded period is not a refund, even dated as a revocation",
            transactions: [
                transaction(
                    "a", original: "m1", product: "magazine.monthly", purchased: "2025-01-01", expires: "2025-02-01",
                    signed: "2025-01-20", ["isUpgraded": true, "revocationDate": millis(date("2025-01-20"))]),
                transaction("b", original: "m1", product: "magazine.premium", purchased: "2025-01-20", expires: "2025-02-20"),
            ],
            instant: "2025-02-25", items: monthly, granted: ["dec15", "feb15", "jan15"]),
        Case(
            name: "a billing grace period counts as active",
            transactions: [month("a", "2025-02-01", "2025-03-01")],
            infos: [
                renewalInfo(
                    original: "m1", signed: "2025-03-01T01:00",
                    ["isInBillingRetryPeriod": true, "gracePeriodExpiresDate": millis(date("2025-03-17"))])
            ],
            instant: "2025-03-16", items: monthly, granted: ["feb15", "jan15", "mar15", "pro-files"]),
        Case(
            name: "a billing retry without a grace period does not",
            transactions: [month("a", "2025-02-01", "2025-03-01")],
            infos: [renewalInfo(original: "m1", signed: "2025-03-01T01:00", ["isInBillingRetryPeriod": true])],
            instant: "2025-03-16", items: monthly, granted: ["feb15", "jan15"]),
    ]

    @Test(arguments: cases) func rule(_ row: Case) {
        let grants = ContentAccess.grants(ledger: Self.ledger(row.transactions, row.infos), at: Self.date(row.instant), items: row.items)
        #expect(grants.map(\.itemId) == row.granted.sorted())
    }

    @Test func theReasonNamesTheTransaction() {
        let ledger = Self.ledger([
            Self.transaction("1", product: "levels", type: "Non-Consumable", purchased: "2025-01-10"),
            Self.month("a", "2025-01-01", "2025-02-01"),
        ])
        let grants = ContentAccess.grants(
            ledger: ledger, at: Self.date("2025-01-20"),
            items: ["levels-1": .product("levels"), "dec15": Self.monthly["dec15"]!, "jan15": Self.monthly["jan15"]!])
        #expect(
            grants == [
                ContentGrant(itemId: "dec15", reason: .currentAtFirstPeriod(transactionId: "a"), environment: .production),
                ContentGrant(itemId: "jan15", reason: .publishedDuringPeriod(transactionId: "a"), environment: .production),
                ContentGrant(itemId: "levels-1", reason: .holdsProduct(productId: "levels", transactionId: "1"), environment: .production),
            ])
    }

    @Test func itemsPublishedTheSameDayAreAllCurrent() {
        let ledger = Self.ledger([Self.month("a", "2025-01-01", "2025-02-01")])
        let items: [String: ContentAvailability] = [
            "dec15-main": .subscriptionGroup("magazine", published: Self.date("2024-12-15")),
            "dec15-extra": .subscriptionGroup("magazine", published: Self.date("2024-12-15")),
            "dec01": .subscriptionGroup("magazine", published: Self.date("2024-12-01")),
        ]
        #expect(
            ContentAccess.grants(ledger: ledger, at: Self.date("2025-01-02"), items: items).map(\.itemId) == ["dec15-extra", "dec15-main"])
    }
}
