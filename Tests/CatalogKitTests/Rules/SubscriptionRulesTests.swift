import CatalogKit
import CatalogTestSupport
import Foundation
import Testing

/// Subscriptions: a group, an ISO 8601 period and a rank, for auto-renewable products only. The rules of docs/contract.md section 1, one test per rule, with the exact lines an editor sees
/// (positions: 1-based line and byte column of the start tag concerned).
@Suite struct SubscriptionRulesTests {

    @Test func autoRenewableWithoutSubscription() throws {
        let lines = try validate(
            products: """
                <key>id</key>
                <string>com.example.game.pro</string>
                <key>type</key>
                <string>auto-renewable</string>
                """)
        #expect(
            lines == [
                "\(RuleFixtures.game):7:3: error: auto-renewable product 'com.example.game.pro' needs a subscription with a group and a period"
            ])
    }

    @Test func subscriptionWithoutGroupOrPeriod() throws {
        let lines = try validate(
            products: """
                <key>id</key>
                <string>com.example.game.pro</string>
                <key>type</key>
                <string>auto-renewable</string>
                <key>subscription</key>
                <dict>
                \t<key>rank</key>
                \t<integer>1</integer>
                </dict>
                """,
            """
            <key>id</key>
            <string>com.example.game.pro.yearly</string>
            <key>type</key>
            <string>auto-renewable</string>
            <key>subscription</key>
            <dict>
            \t<key>group</key>
            \t<string>premium</string>
            </dict>
            """)
        #expect(
            lines == [
                "\(RuleFixtures.game):13:4: error: subscription has no 'group'",
                "\(RuleFixtures.game):13:4: error: subscription has no 'period'",
                "\(RuleFixtures.game):24:4: error: subscription has no 'period'",
            ])
    }

    @Test func emptySubscriptionGroup() throws {
        let lines = try validate(
            products: """
                <key>id</key>
                <string>com.example.game.pro</string>
                <key>type</key>
                <string>auto-renewable</string>
                <key>subscription</key>
                <dict>
                \t<key>group</key>
                \t<string></string>
                \t<key>period</key>
                \t<string>P1M</string>
                </dict>
                """)
        #expect(lines == ["\(RuleFixtures.game):15:5: error: subscription group is empty"])
    }

    static func subscriptionProduct(period: String, rank: String = "1", type: String = "auto-renewable") -> String {
        """
        <key>id</key>
        <string>com.example.game.pro</string>
        <key>type</key>
        <string>\(type)</string>
        <key>subscription</key>
        <dict>
        \t<key>group</key>
        \t<string>premium</string>
        \t<key>period</key>
        \t<string>\(period)</string>
        \t<key>rank</key>
        \t<integer>\(rank)</integer>
        </dict>
        """
    }

    @Test(arguments: ["1M", "P", "PM", "P1M1Y", "P1H", "p1m", "P1.5M", "P12345M", "P1MT1H", " P1M"])
    func badSubscriptionPeriod(period: String) throws {
        let lines = try validate(products: Self.subscriptionProduct(period: period))
        #expect(
            lines == [
                "\(RuleFixtures.game):17:5: error: '\(period)' is not a subscription period; expected an ISO 8601 duration such as P1W, P1M, P3M, P6M or P1Y"
            ])
    }

    @Test(arguments: ["P1W", "P1M", "P2M", "P3M", "P6M", "P1Y"])
    func appStoreSubscriptionPeriods(period: String) throws {
        try withCatalog { catalog in
            try catalog.write("com.example.game.plist", productsPlist(Self.subscriptionProduct(period: period)))
            let validation = catalog.workflow.validate()
            #expect(validation.diagnostics.map(\.description) == [])
            let product = try #require(validation.catalogs.first?.products.first)
            let subscription = try #require(product.subscription)
            #expect(subscription.group == "premium")
            #expect(subscription.period == period)
            #expect(subscription.rank == 1)
        }
    }

    @Test func subscriptionWithoutType() throws {
        let lines = try validate(
            products: """
                <key>id</key>
                <string>com.example.game.pro</string>
                <key>subscription</key>
                <dict>
                \t<key>group</key>
                \t<string>premium</string>
                \t<key>period</key>
                \t<string>P1M</string>
                </dict>
                """)
        #expect(lines == ["\(RuleFixtures.game):11:4: error: a product with a subscription needs type 'auto-renewable'"])
    }

    @Test(arguments: ["0", "-1"])
    func subscriptionRankBelowOne(rank: String) throws {
        let lines = try validate(products: Self.subscriptionProduct(period: "P1M", rank: rank))
        #expect(lines == ["\(RuleFixtures.game):19:5: error: subscription rank must be 1 or more"])
    }

    @Test(arguments: ["consumable", "non-consumable", "non-renewing"])
    func subscriptionOnAnotherType(type: String) throws {
        let lines = try validate(products: Self.subscriptionProduct(period: "P1M", type: type))
        #expect(
            lines == [
                "\(RuleFixtures.game):13:4: error: only auto-renewable products have a subscription; this one is \(type)"
            ])
    }
}
