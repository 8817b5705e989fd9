import CatalogKit
import CatalogTestSupport
import Foundation
import Testing

/// Google Play in the catalog (docs/catalog-format.md, "Google Play"): a product's `play`
/// counterpart with Play's id rules, the app's Play settings, and Android's own feeds, which name
/// Play product ids. Positions as in the other rule suites.
@Suite struct PlayRulesTests {
    static let app = "com.example.game"

    /// An auto-renewable product sold as Play's `pro` with base plan `monthly`.
    static let proMonthly = """
        <key>id</key>
        <string>com.example.game.pro.monthly</string>
        <key>type</key>
        <string>auto-renewable</string>
        <key>subscription</key>
        <dict>
        \t<key>group</key>
        \t<string>pro</string>
        \t<key>period</key>
        \t<string>P1M</string>
        </dict>
        <key>play</key>
        <dict>
        \t<key>productId</key>
        \t<string>pro</string>
        \t<key>basePlan</key>
        \t<string>monthly</string>
        \t<key>offer</key>
        \t<string>first-week-free</string>
        </dict>
        """

    static func product(_ id: String, type: String, play: String?, platforms: [String]? = nil) -> String {
        var body = "<key>id</key>\n<string>\(id)</string>\n<key>type</key>\n<string>\(type)</string>"
        if type == "auto-renewable" {
            body +=
                "\n<key>subscription</key>\n<dict>\n\t<key>group</key>\n\t<string>pro</string>\n\t<key>period</key>\n\t<string>P1Y</string>\n</dict>"
        }
        if let platforms {
            body +=
                "\n<key>platforms</key>\n<array>\n" + platforms.map { "\t<string>\($0)</string>" }.joined(separator: "\n") + "\n</array>"
        }
        if let play { body += "\n<key>play</key>\n<dict>\n" + indented(play, by: 1) + "\n</dict>" }
        return body
    }

    @Test func aPlayProductReachesTheCatalogAndAndroidHasFeeds() throws {
        try withCatalog { catalog in
            try catalog.write(
                "com.example.game.plist",
                productsPlist(
                    Self.proMonthly,
                    Self.product("com.example.game.coins", type: "consumable", play: "<key>productId</key>\n<string>coins_100</string>"),
                    Self.product("com.example.game.skin", type: "non-consumable", play: nil)))
            let validation = catalog.workflow.validate()
            #expect(validation.diagnostics.map(\.description) == [])
            let result = try #require(validation.catalogs.first)
            #expect(result.platforms == [.android])
            #expect(
                result.products.map(\.play) == [
                    PlayProduct(productId: "pro", basePlan: "monthly", offer: "first-week-free"), PlayProduct(productId: "coins_100"), nil,
                ])
        }
    }

    @Test func playIdentifiersFollowGooglesRules() throws {
        let lines = try validate(
            products: Self.product(
                "com.example.game.pro", type: "auto-renewable",
                play: "<key>productId</key>\n<string>Pro-Monthly</string>\n<key>basePlan</key>\n<string>monthly_1</string>"),
            Self.product("com.example.game.coins", type: "consumable", play: "<key>productId</key>\n<string>_coins</string>"),
            Self.product(
                "com.example.game.gems", type: "consumable",
                play:
                    "<key>productId</key>\n<string>gems</string>\n<key>purchaseOption</key>\n<string>\(String(repeating: "a", count: 64))</string>"
            ),
            Self.product(
                "com.example.game.long", type: "non-consumable",
                play: "<key>productId</key>\n<string>\(String(repeating: "x", count: 41))</string>"))
        #expect(
            lines == [
                "\(RuleFixtures.game):22:5: error: Play product id 'Pro-Monthly' must start with a lower-case letter or a digit",
                "\(RuleFixtures.game):24:5: error: base plan id 'monthly_1' contains '_'; only lower-case letters, digits and '-' are allowed",
                "\(RuleFixtures.game):35:5: error: Play product id '_coins' must start with a lower-case letter or a digit",
                "\(RuleFixtures.game):48:5: error: purchase option id is 64 characters long; the limit is 63",
                "\(RuleFixtures.game):59:5: warning: Play product id is 41 characters long; Play Console takes 40",
            ])
    }

    @Test func basePlansOffersAndPurchaseOptionsBelongToTheirKinds() throws {
        let lines = try validate(
            products: Self.product("com.example.game.pro", type: "auto-renewable", play: "<key>productId</key>\n<string>pro</string>"),
            Self.product(
                "com.example.game.coins", type: "consumable",
                play: "<key>productId</key>\n<string>coins</string>\n<key>basePlan</key>\n<string>monthly</string>"),
            Self.product(
                "com.example.game.pass", type: "non-renewing",
                play: "<key>productId</key>\n<string>pass</string>\n<key>offer</key>\n<string>intro</string>"),
            Self.product(
                "com.example.game.season", type: "non-renewing",
                play:
                    "<key>productId</key>\n<string>season</string>\n<key>basePlan</key>\n<string>prepaid</string>\n<key>purchaseOption</key>\n<string>buy</string>"
            ),
            Self.product("com.example.game.gems", type: "consumable", play: "<key>basePlan</key>\n<string>monthly</string>"),
            Self.product("com.example.game.skin", type: "non-consumable", play: nil, platforms: ["iOS", "Android"]))
        #expect(
            lines == [
                "\(RuleFixtures.game):20:4: error: an auto-renewable product's play needs a 'basePlan': Google Play sells a subscription by its base plan",
                "\(RuleFixtures.game):35:5: error: only subscriptions have a base plan; this product is consumable",
                "\(RuleFixtures.game):48:5: error: an offer belongs to a base plan; add 'basePlan'",
                "\(RuleFixtures.game):63:5: error: a purchase option belongs to a one-time product, not a base plan",
                "\(RuleFixtures.game):72:4: error: play has no 'productId'",
                "\(RuleFixtures.game):83:4: error: product 'com.example.game.skin' is sold on Android and needs 'play', the product an Android app buys on Google Play",
            ])
    }

    @Test func aPlayPurchaseMustNameOneProduct() throws {
        let lines = try validate(
            products: Self.proMonthly,
            Self.proMonthly.replacingOccurrences(of: "com.example.game.pro.monthly", with: "com.example.game.pro.again"),
            Self.product("com.example.game.pro.coins", type: "consumable", play: "<key>productId</key>\n<string>pro</string>"))
        #expect(
            lines == [
                "\(RuleFixtures.game):31:4: error: Play product 'pro' with base plan 'monthly' is already product 'com.example.game.pro.monthly' (at 9:4); a Play purchase must name one product",
                "\(RuleFixtures.game):53:4: error: Play product 'pro' is a subscription in one product and a one-time product in 'com.example.game.pro.monthly' (at 9:4); Google Play has one kind per id",
            ])
    }

    @Test func playSettings() throws {
        func settings(_ body: String) throws -> [String] {
            try validate([
                "com.example.game.plist": plist(
                    "<dict>\n\(body)\n\t<key>products</key>\n\t<array>\n\t\t<dict>\n\t\t\t<key>id</key>\n\t\t\t<string>com.example.game.coins</string>\n\t\t</dict>\n\t</array>\n</dict>"
                )
            ])
        }
        let key = String(repeating: "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA", count: 8)
        #expect(
            try settings(
                "\t<key>playPackageName</key>\n\t<string>com.example.game</string>\n\t<key>playLicenseKey</key>\n\t<string>\(key)</string>\n\t<key>playPushAudience</key>\n\t<string>https://example.com/play</string>\n\t<key>playPushServiceAccount</key>\n\t<string>push@example.iam.gserviceaccount.com</string>\n\t<key>playServiceAccountKeyFile</key>\n\t<string>/etc/catalog/play.json</string>"
            ) == [])
        let wrong = try settings(
            "\t<key>playPackageName</key>\n\t<string>com.example.1game</string>\n\t<key>playLicenseKey</key>\n\t<string>not a key</string>\n\t<key>playPushAudience</key>\n\t<string>https://example.com/play</string>"
        )
        #expect(
            wrong == [
                "catalog/com.example.game.plist:6:2: error: playPackageName 'com.example.1game' is not an Android package name (two or more dot-separated parts, each a letter then letters, digits or '_')",
                "catalog/com.example.game.plist:8:2: error: playLicenseKey is not a licence key: Play Console shows it as base64 of an RSA public key (MIIBIjAN…)",
                "catalog/com.example.game.plist:10:2: error: playPushAudience needs playPushServiceAccount: a push is accepted from that account only",
            ])
        let alone = try settings("\t<key>playPushServiceAccount</key>\n\t<string>push@example.iam.gserviceaccount.com</string>")
        #expect(
            alone == [
                "catalog/com.example.game.plist:6:2: error: playPushServiceAccount needs playPackageName, the app's package name on Google Play"
            ])
    }

    /// The XML form's `<play>` element decodes to what the property list's dict does.
    @Test func theXMLFormSaysTheSame() throws {
        try withCatalog { catalog in
            try catalog.write(
                "com.example.game.xml",
                catalogXML(
                    app: Self.app,
                    """
                    <product id="com.example.game.pro.monthly" type="auto-renewable">
                      <subscription group="pro" period="P1M"/>
                      <play productId="pro" basePlan="monthly" offer="first-week-free"/>
                    </product>
                    """))
            let validation = catalog.workflow.validate()
            #expect(validation.diagnostics.map(\.description) == [])
            #expect(
                validation.catalogs.first?.products.map(\.play) == [
                    PlayProduct(productId: "pro", basePlan: "monthly", offer: "first-week-free")
                ])
        }
    }

    /// Android's `products.json` names Play product ids, each once; Apple's variants leave out
    /// what is sold on Android only; every rich feed carries each product's `play`.
    @Test func androidFeedsNamePlayProducts() throws {
        try withCatalog { catalog in
            try catalog.write(
                "com.example.game.plist",
                productsPlist(
                    Self.proMonthly,
                    Self.product(
                        "com.example.game.pro.yearly", type: "auto-renewable",
                        play: "<key>productId</key>\n<string>pro</string>\n<key>basePlan</key>\n<string>yearly</string>"),
                    Self.product("com.example.game.skin", type: "non-consumable", play: nil, platforms: ["iOS"]),
                    Self.product(
                        "com.example.game.android.pack", type: "non-consumable", play: "<key>productId</key>\n<string>pack</string>",
                        platforms: ["Android"])))
            try catalog.publish(at: buildMoment)
            let manifest = try #require(try catalog.tree.currentManifest(Self.app))
            #expect(manifest.platforms == [.iOS, .android])
            let android = Variant(platform: .android, band: nil)
            #expect(text(try catalog.feed(Self.app, manifest, android, "products.json")) == #"["pro","pack"]"#)
            #expect(
                text(try catalog.feed(Self.app, manifest, Variant(platform: .iOS, band: nil), "products.json"))
                    == #"["com.example.game.pro.monthly","com.example.game.pro.yearly","com.example.game.skin"]"#)
            let rich = try #require(text(try catalog.feed(Self.app, manifest, android, "catalog.json")))
            #expect(rich.contains(#""id":"com.example.game.pro.monthly","#))
            #expect(rich.contains(#""play":{"productId":"pro","basePlan":"monthly","offer":"first-week-free"}"#))
            #expect(!rich.contains("com.example.game.skin"))
            // The snapshot keeps it, so that history and rollback see a Play change.
            let snapshot = try catalog.tree.productSnapshot(Self.app, revision: 1)
            #expect(String(decoding: snapshot[0].json, as: UTF8.self).contains(#""play":{"productId":"pro""#))
        }
    }
}
