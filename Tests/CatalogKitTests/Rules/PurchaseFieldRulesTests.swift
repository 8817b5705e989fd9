import CatalogKit
import CatalogTestSupport
import Foundation
import Testing

/// The purchase fields (docs/catalog-format.md, "Purchases"): a product's `entitlements` and a
/// non-renewing subscription's `duration`; the app settings `appAppleId`, `environments`,
/// `transferPolicy` and `xcodeCertificate`. Positions as in the other rule suites.
@Suite struct PurchaseFieldRulesTests {

    @Test func entitlementsAndDurationReachTheCatalog() throws {
        try withCatalog { catalog in
            try catalog.write(
                "com.example.game.plist",
                productsPlist(
                    """
                    <key>id</key>
                    <string>com.example.game.pass</string>
                    <key>type</key>
                    <string>non-renewing</string>
                    <key>duration</key>
                    <string>P1M</string>
                    <key>entitlements</key>
                    <array>
                    \t<string>pro</string>
                    \t<string>ads.off</string>
                    </array>
                    """,
                    """
                    <key>id</key>
                    <string>com.example.game.gold</string>
                    <key>type</key>
                    <string>consumable</string>
                    """))
            let validation = catalog.workflow.validate()
            #expect(validation.diagnostics.map(\.description) == [])
            let products = try #require(validation.catalogs.first?.products)
            #expect(products.map(\.unlocks) == [["pro", "ads.off"], ["com.example.game.gold"]])
            #expect(products.map(\.entitlements) == [["pro", "ads.off"], nil])
            #expect(products.map(\.duration) == ["P1M", nil])
        }
    }

    @Test func entitlementNames() throws {
        let lines = try validate(
            products: """
                <key>id</key>
                <string>com.example.game.gold</string>
                <key>entitlements</key>
                <array>
                \t<string>pro</string>
                \t<string>bad name</string>
                \t<string></string>
                \t<string>pro</string>
                </array>
                """,
            """
            <key>id</key>
            <string>com.example.game.gems</string>
            <key>entitlements</key>
            <array/>
            """)
        #expect(
            lines == [
                "\(RuleFixtures.game):13:5: error: entitlement 'bad name' contains ' '; only letters, digits, '.', '_' and '-' are allowed",
                "\(RuleFixtures.game):14:5: error: entitlement name is empty",
                "\(RuleFixtures.game):15:5: warning: entitlement 'pro' is listed twice",
                "\(RuleFixtures.game):22:4: error: entitlements list is empty; leave it out to unlock the product's own id",
            ])
    }

    @Test func durationOnlyForNonRenewing() throws {
        let lines = try validate(
            products: """
                <key>id</key>
                <string>com.example.game.pass</string>
                <key>type</key>
                <string>non-renewing</string>
                """,
            """
            <key>id</key>
            <string>com.example.game.gold</string>
            <key>type</key>
            <string>consumable</string>
            <key>duration</key>
            <string>P1M</string>
            """,
            """
            <key>id</key>
            <string>com.example.game.pass2</string>
            <key>type</key>
            <string>non-renewing</string>
            <key>duration</key>
            <string>monthly</string>
            """)
        #expect(
            lines == [
                "\(RuleFixtures.game):19:4: error: only non-renewing subscriptions have a duration; this one is consumable",
                "\(RuleFixtures.game):27:4: error: 'monthly' is not a duration; expected an ISO 8601 duration such as P1W, P1M, P3M, P6M or P1Y",
            ])
    }

    @Test func durationRequiredOnceTheAppTakesPurchases() throws {
        // Without purchase settings, a non-renewing product needs no duration (above, and StoreKit
        // files have none); with any of them, it does. Lines: the <dict> is 4, the product's id 10:4.
        let file = { (setting: String) in
            plist(
                """
                <dict>
                \t\(setting)
                \t<key>products</key>
                \t<array>
                \t\t<dict>
                \t\t\t<key>id</key>
                \t\t\t<string>com.example.game.pass</string>
                \t\t\t<key>type</key>
                \t\t\t<string>non-renewing</string>
                \t\t</dict>
                \t</array>
                </dict>
                """)
        }
        for setting in [
            "<key>appAppleId</key><integer>7</integer>", "<key>transferPolicy</key><string>keep</string>",
            "<key>environments</key><array><string>sandbox</string></array>",
        ] {
            #expect(
                try validate(["com.example.game.plist": file(setting)]) == [
                    "\(RuleFixtures.game):10:4: error: non-renewing product 'com.example.game.pass' needs a duration, such as P1M: the app has purchase settings, and the App Store keeps no period for this type"
                ])
        }
    }

    @Test func purchaseSettingsDefaults() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.game.plist", productsPlist([]))
            let app = try #require(catalog.workflow.validate().catalogs.first)
            #expect(app.purchaseSettings == PurchaseSettings())
            #expect(app.purchaseSettings.environments == [.production, .sandbox])
            #expect(app.purchaseSettings.transferPolicy == .keep)
        }
    }

    @Test func purchaseSettingsReachTheCatalog() throws {
        try withCatalog { catalog in
            try catalog.write(
                "com.example.game.plist",
                plist(
                    """
                    <dict>
                    \t<key>appAppleId</key>
                    \t<integer>1234567890</integer>
                    \t<key>environments</key>
                    \t<array>
                    \t\t<string>sandbox</string>
                    \t\t<string>xcode</string>
                    \t</array>
                    \t<key>transferPolicy</key>
                    \t<string>transfer</string>
                    \t<key>xcodeCertificate</key>
                    \t<string>certificates/StoreKitTestCertificate.cer</string>
                    \t<key>products</key>
                    \t<array/>
                    </dict>
                    """))
            let validation = catalog.workflow.validate()
            #expect(validation.diagnostics.map(\.description) == [])
            let app = try #require(validation.catalogs.first)
            #expect(
                app.purchaseSettings
                    == PurchaseSettings(
                        appAppleId: 1_234_567_890, environments: [.sandbox, .xcode], transferPolicy: .transfer,
                        xcodeCertificate: "certificates/StoreKitTestCertificate.cer"))
        }
    }

    @Test func purchaseSettingsRules() throws {
        // Lines: the plist's <dict> is line 4, so each key is on 5, 7, … and its value below it.
        let lines = try validate([
            "com.example.game.plist": plist(
                """
                <dict>
                \t<key>appAppleId</key>
                \t<integer>0</integer>
                \t<key>environments</key>
                \t<array>
                \t\t<string>production</string>
                \t\t<string>testflight</string>
                \t\t<string>xcode</string>
                \t\t<string>production</string>
                \t</array>
                \t<key>transferPolicy</key>
                \t<string>share</string>
                </dict>
                """)
        ])
        #expect(
            lines.sorted()
                == [
                    "\(RuleFixtures.game):6:2: error: appAppleId must be 1 or more (the app's Apple id in App Store Connect)",
                    "\(RuleFixtures.game):10:3: error: unknown environment 'testflight'; expected production, sandbox or xcode",
                    "\(RuleFixtures.game):12:3: warning: environment 'production' is listed twice",
                    "\(RuleFixtures.game):8:2: error: environment 'xcode' needs xcodeCertificate, the certificate exported from Xcode that signs its evidence",
                    "\(RuleFixtures.game):15:2: error: unknown transferPolicy 'share'; expected transfer or keep",
                ].sorted())
        #expect(
            try validate([
                "com.example.game.plist": plist(
                    """
                    <dict>
                    \t<key>environments</key>
                    \t<array/>
                    \t<key>xcodeCertificate</key>
                    \t<string>StoreKitTestCertificate.cer</string>
                    </dict>
                    """)
            ]) == [
                "\(RuleFixtures.game):6:2: error: environments list is empty; leave it out to accept production and sandbox",
                "\(RuleFixtures.game):8:2: warning: xcodeCertificate is set but environments does not list 'xcode'; it is not used",
            ])
    }

    /// `webhookURL` and `webhookSecretFile` (docs/purchases.md, "Webhooks"): the URL reaches the
    /// catalog only when it is https (or http to loopback) and has a secret file beside it; a
    /// plain-http URL elsewhere would send what customers own, and a signature anyone could check
    /// against a sniffed body, in the clear.
    @Test func webhookSettings() throws {
        try withCatalog { catalog in
            try catalog.write(
                "com.example.game.plist",
                plist(
                    """
                    <dict>
                    \t<key>webhookURL</key>
                    \t<string>https://backend.example.com/hooks/app-store</string>
                    \t<key>webhookSecretFile</key>
                    \t<string>secrets/webhook</string>
                    \t<key>products</key>
                    \t<array/>
                    </dict>
                    """))
            let validation = catalog.workflow.validate()
            #expect(validation.diagnostics.map(\.description) == [])
            let settings = try #require(validation.catalogs.first?.purchaseSettings)
            #expect(settings.webhookURL == URL(string: "https://backend.example.com/hooks/app-store"))
            #expect(settings.webhookSecretFile == "secrets/webhook")
        }
        func lines(_ url: String, secret: String?) throws -> [String] {
            let secretLines = secret.map { "\t<key>webhookSecretFile</key>\n\t<string>\($0)</string>\n" } ?? ""
            return try validate([
                "com.example.game.plist": plist("<dict>\n\t<key>webhookURL</key>\n\t<string>\(url)</string>\n\(secretLines)</dict>")
            ])
        }
        #expect(
            try lines("http://backend.example.com/hook", secret: "s") == [
                "\(RuleFixtures.game):6:2: error: webhookURL must use https (http only to a loopback host): webhooks carry what customers own"
            ])
        #expect(try lines("http://127.0.0.1:9000/hook", secret: "s") == [])
        #expect(
            try lines("backend.example.com/hook", secret: "s") == [
                "\(RuleFixtures.game):6:2: error: webhookURL 'backend.example.com/hook' is not an absolute http or https URL"
            ])
        #expect(
            try lines("https://backend.example.com/hook", secret: nil) == [
                "\(RuleFixtures.game):6:2: error: webhookURL needs webhookSecretFile, the file that holds the secret that signs each webhook"
            ])
        #expect(
            try lines("https://backend.example.com/hook", secret: " ") == [
                "\(RuleFixtures.game):8:2: error: webhookSecretFile is empty; give the path of the file that holds the webhook's secret"
            ])
    }

    /// The App Store Server API's credentials (docs/app-store-api.md): all three or none, each as
    /// App Store Connect shows it; the key stays in its file.
    @Test func serverAPISettings() throws {
        func settings(_ pairs: [(String, String)]) -> String {
            plist("<dict>\n" + pairs.map { "\t<key>\($0.0)</key>\n\t<string>\($0.1)</string>\n" }.joined() + "</dict>")
        }
        let key = ("serverAPIKeyId", "2X9R4HXF34")
        let issuer = ("serverAPIIssuerId", "57246542-96fe-1a63-e053-0824d011072a")
        let file = ("serverAPIKeyFile", "/etc/catalog/AuthKey_2X9R4HXF34.p8")
        try withCatalog { catalog in
            try catalog.write("com.example.game.plist", settings([key, issuer, file]))
            let validation = catalog.workflow.validate()
            #expect(validation.diagnostics.map(\.description) == [])
            let settings = try #require(validation.catalogs.first?.purchaseSettings)
            #expect(
                settings.serverAPI
                    == ServerAPISettings(keyId: key.1, issuerId: issuer.1, keyFile: "/etc/catalog/AuthKey_2X9R4HXF34.p8"))
        }
        #expect(
            try validate(["com.example.game.plist": settings([key, file])]) == [
                "\(RuleFixtures.game):6:2: error: serverAPIKeyId and serverAPIKeyFile needs serverAPIIssuerId: the App Store Server API takes all three"
            ])
        #expect(
            try validate(["com.example.game.plist": settings([("serverAPIKeyId", "2x9r4hxf3"), issuer, file])]) == [
                "\(RuleFixtures.game):6:2: error: serverAPIKeyId '2x9r4hxf3' is not a key id as App Store Connect shows it (ten upper-case letters and digits)"
            ])
        #expect(
            try validate(["com.example.game.plist": settings([key, ("serverAPIIssuerId", "team"), ("serverAPIKeyFile", " ")])]) == [
                "\(RuleFixtures.game):8:2: error: serverAPIIssuerId 'team' is not an issuer id (a UUID, from the keys page of App Store Connect)",
                "\(RuleFixtures.game):10:2: error: serverAPIKeyFile is empty",
            ])
    }

    /// Consumption answers: on only with the API's key, their two details warned about when off.
    @Test func consumptionSettings() throws {
        let api =
            "\t<key>serverAPIKeyId</key>\n\t<string>2X9R4HXF34</string>\n\t<key>serverAPIIssuerId</key>\n\t<string>57246542-96fe-1a63-e053-0824d011072a</string>\n\t<key>serverAPIKeyFile</key>\n\t<string>k.p8</string>\n"
        let on = "\t<key>answerConsumptionRequests</key>\n\t<true/>\n"
        let details =
            "\t<key>sampleContentProvided</key>\n\t<true/>\n\t<key>refundPreference</key>\n\t<string>grantFull</string>\n"
        try withCatalog { catalog in
            try catalog.write("com.example.game.plist", plist("<dict>\n" + api + on + details + "</dict>"))
            let validation = catalog.workflow.validate()
            #expect(validation.diagnostics.map(\.description) == [])
            let settings = try #require(validation.catalogs.first?.purchaseSettings)
            #expect(settings.consumption == ConsumptionSettings(sampleContentProvided: true, refundPreference: .grantFull))
        }
        #expect(
            try validate(["com.example.game.plist": plist("<dict>\n" + on + "</dict>")]) == [
                "\(RuleFixtures.game):6:2: error: answerConsumptionRequests needs serverAPIKeyId, serverAPIIssuerId and serverAPIKeyFile: answers go through the App Store Server API"
            ])
        #expect(
            try validate(["com.example.game.plist": plist("<dict>\n" + api + details + "</dict>")]) == [
                "\(RuleFixtures.game):12:2: warning: sampleContentProvided is set but answerConsumptionRequests is not true; it is not used",
                "\(RuleFixtures.game):14:2: warning: refundPreference is set but answerConsumptionRequests is not true; it is not used",
            ])
        #expect(
            try validate([
                "com.example.game.plist": plist("<dict>\n" + api + on + "\t<key>refundPreference</key>\n\t<string>maybe</string>\n</dict>")
            ]) == [
                "\(RuleFixtures.game):14:2: error: unknown refundPreference 'maybe'; expected decline, grantFull or grantProrated"
            ])
    }

    @Test func purchaseSettingsInTwoFilesOfAFolder() throws {
        let file = plist(
            "<dict>\n\t<key>transferPolicy</key>\n\t<string>keep</string>\n\t<key>appAppleId</key>\n\t<integer>7</integer>\n</dict>")
        #expect(
            try validate(["com.example.game/a.plist": file, "com.example.game/b.plist": file]).sorted() == [
                "catalog/com.example.game/b.plist:6:2: error: transferPolicy is already set at catalog/com.example.game/a.plist:6:2",
                "catalog/com.example.game/b.plist:8:2: error: appAppleId is already set at catalog/com.example.game/a.plist:8:2",
            ])
    }

    @Test func catalogXMLPurchaseFields() throws {
        try withCatalog { catalog in
            try catalog.write(
                "com.example.game.xml",
                """
                <?xml version="1.0" encoding="UTF-8"?>
                <catalog xmlns="urn:iap-catalog:1" app="com.example.game" appAppleId="42" transferPolicy="transfer" xcodeCertificate="x.cer">
                \t<environments>
                \t\t<environment>sandbox</environment>
                \t\t<environment>xcode</environment>
                \t</environments>
                \t<product id="com.example.game.pass" type="non-renewing" duration="P1Y">
                \t\t<entitlements>
                \t\t\t<entitlement>pro</entitlement>
                \t\t</entitlements>
                \t</product>
                \t<product id="com.example.game.gold" type="consumable" duration="P1M"/>
                </catalog>

                """)
            #expect(
                catalog.diagnostics() == [
                    "catalog/com.example.game.xml:12:2: error: only non-renewing subscriptions have a duration; this one is consumable"
                ])
            try catalog.remove("com.example.game.xml")
            try catalog.write(
                "com.example.game.xml",
                """
                <?xml version="1.0" encoding="UTF-8"?>
                <catalog xmlns="urn:iap-catalog:1" app="com.example.game" appAppleId="42" transferPolicy="transfer" xcodeCertificate="x.cer">
                \t<environments>
                \t\t<environment>sandbox</environment>
                \t\t<environment>xcode</environment>
                \t</environments>
                \t<product id="com.example.game.pass" type="non-renewing" duration="P1Y">
                \t\t<entitlements>
                \t\t\t<entitlement>pro</entitlement>
                \t\t</entitlements>
                \t</product>
                </catalog>

                """)
            let validation = catalog.workflow.validate()
            #expect(validation.diagnostics.map(\.description) == [])
            let app = try #require(validation.catalogs.first)
            #expect(
                app.purchaseSettings
                    == PurchaseSettings(
                        appAppleId: 42, environments: [.sandbox, .xcode], transferPolicy: .transfer, xcodeCertificate: "x.cer"))
            #expect(app.products.map(\.unlocks) == [["pro"]])
            #expect(app.products.map(\.duration) == ["P1Y"])
        }
    }

    /// `sandboxUnlocks` and `requireDeviceId`: booleans in a plist, `true`/`false` in catalog XML; a
    /// record leaves them out while they are the defaults, so that publishing an app that does not
    /// set them gives the bytes it gave before they existed (a changed record is a new revision).
    @Test func sandboxUnlocksAndRequireDeviceId() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.game.plist", productsPlist([]))
            let plain = try #require(catalog.workflow.validate().catalogs.first)
            #expect(plain.purchaseSettings.sandboxUnlocks && plain.purchaseSettings.requireDeviceId)
            let record = String(decoding: PurchaseRecord(plain).encoded, as: UTF8.self)
            #expect(!record.contains("sandboxUnlocks") && !record.contains("requireDeviceId"), "\(record)")
            try catalog.remove("com.example.game.plist")
            try catalog.write(
                "com.example.game.plist",
                plist(
                    """
                    <dict>
                    \t<key>sandboxUnlocks</key>
                    \t<false/>
                    \t<key>requireDeviceId</key>
                    \t<false/>
                    \t<key>products</key>
                    \t<array/>
                    </dict>
                    """))
            let set = try #require(catalog.workflow.validate().catalogs.first)
            #expect(!set.purchaseSettings.sandboxUnlocks && !set.purchaseSettings.requireDeviceId)
            let written = try #require(PurchaseRecord.decode(PurchaseRecord(set).encoded))
            #expect(written.sandboxUnlocks == false && written.requireDeviceId == false)
            try catalog.remove("com.example.game.plist")
            try catalog.write(
                "com.example.game.xml",
                """
                <?xml version="1.0" encoding="UTF-8"?>
                <catalog xmlns="urn:iap-catalog:1" app="com.example.game" sandboxUnlocks="false" requireDeviceId="true">
                \t<product id="com.example.game.gold" type="consumable"/>
                </catalog>

                """)
            let xml = try #require(catalog.workflow.validate().catalogs.first)
            #expect(!xml.purchaseSettings.sandboxUnlocks && xml.purchaseSettings.requireDeviceId)
        }
        #expect(
            try validate([
                "com.example.game.plist": plist(
                    """
                    <dict>
                    \t<key>sandboxUnlocks</key>
                    \t<string>no</string>
                    </dict>
                    """)
            ]) == ["\(RuleFixtures.game):6:2: error: 'sandboxUnlocks' must be <true/> or <false/>, found <string>"])
    }
}
