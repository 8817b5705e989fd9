import CatalogKit
import CatalogTestSupport
import Foundation
import PropertyList
import Testing

/// The source rules of docs/contract.md section 1, one test per rule, each with the exact lines an
/// editor sees. Positions are 1-based line and byte column of the start tag concerned.
///
/// `validate(products:)` wraps product bodies in `com.example.game.plist`: the first product's
/// `<dict>` is at 7:3 and its body starts on line 8 at column 4 (see `productsPlist`).
@Suite struct RulesTests {
    static let game = "catalog/com.example.game.plist"

    // MARK: - Shapes

    @Test func minimalArrayFormIsValid() throws {
        try withCatalog { catalog in
            try catalog.write(
                "com.example.game.plist",
                seedCatalog)
            let validation = catalog.workflow.validate()
            #expect(validation.diagnostics.map(\.description) == [])
            #expect(!validation.hasErrors)
            let app = try #require(validation.catalogs.first)
            #expect(validation.catalogs.count == 1)
            #expect(app.app == "com.example.game")
            #expect(app.products.map(\.id) == ["com.example.level1", "com.example.level2", "com.example.rocket_car"])
            #expect(app.products.map(\.status) == [.cleared, .cleared, .cleared])
        }
    }

    @Test func nonStringInArrayForm() throws {
        let lines = try validate([
            "com.example.game.plist": plist(
                """
                <array>
                \t<string>com.example.game.gold</string>
                \t<integer>3</integer>
                \t<dict/>
                </array>
                """)
        ])
        #expect(
            lines == [
                "\(Self.game):6:2: error: expected a product identifier <string>, found <integer>",
                "\(Self.game):7:2: error: expected a product identifier <string>, found <dict>",
            ])
    }

    @Test func rootOfAnotherKind() throws {
        let lines = try validate(["com.example.game.plist": plist("<string>com.example.game.gold</string>")])
        #expect(
            lines == [
                "\(Self.game):4:1: error: the root must be an <array> of product identifiers or a <dict> with app settings and 'products', found <string>"
            ])
    }

    @Test func productsOfAnotherKind() throws {
        let lines = try validate([
            "com.example.game.plist": plist(
                """
                <dict>
                \t<key>products</key>
                \t<dict/>
                </dict>
                """)
        ])
        #expect(lines == ["\(Self.game):6:2: error: 'products' must be an <array> of product dicts, found <dict>"])
    }

    @Test func productThatIsNotADict() throws {
        let lines = try validate([
            "com.example.game.plist": plist(
                """
                <dict>
                \t<key>products</key>
                \t<array>
                \t\t<string>com.example.game.gold</string>
                \t</array>
                </dict>
                """)
        ])
        #expect(lines == ["\(Self.game):7:3: error: a product must be a <dict>, found <string>"])
    }

    // MARK: - Identifiers

    @Test func productWithoutID() throws {
        let lines = try validate(
            products: """
                <key>type</key>
                <string>consumable</string>
                """)
        #expect(lines == ["\(Self.game):7:3: error: product has no 'id'"])
    }

    @Test(arguments: [
        ("bad id", "' '"),
        ("com.example.gold!", "'!'"),
        ("com/example/gold", "'/'"),
        ("com.example.pièce", "'è'"),
    ])
    func identifierCharacters(id: String, shown: String) throws {
        let lines = try validate(
            products: """
                <key>id</key>
                <string>\(id)</string>
                """)
        #expect(
            lines == [
                "\(Self.game):9:4: error: product id '\(id)' contains \(shown); only letters, digits, '.', '_' and '-' are allowed"
            ])
    }

    @Test func emptyIdentifier() throws {
        let lines = try validate(
            products: """
                <key>id</key>
                <string></string>
                """)
        #expect(lines == ["\(Self.game):9:4: error: product id is empty"])
    }

    @Test func identifierLength() throws {
        let longest = "com.example." + String(repeating: "x", count: 88)
        #expect(longest.utf8.count == 100)
        #expect(try validate(products: "<key>id</key>\n<string>\(longest)</string>") == [])
        #expect(
            try validate(products: "<key>id</key>\n<string>\(longest)y</string>") == [
                "\(Self.game):9:4: error: product id is 101 characters long; the limit is 100"
            ])
    }

    @Test func hyphenAndUpperCaseAreWarnings() throws {
        try withCatalog { catalog in
            try catalog.write(
                "com.example.game.plist",
                productsPlist(
                    "<key>id</key>\n<string>com.example.game.Gold-Pack</string>",
                    "<key>id</key>\n<string>com.example.game.silver-pack</string>",
                    "<key>id</key>\n<string>com.example.game.BronzePack</string>"))
            let validation = catalog.workflow.validate()
            #expect(
                validation.diagnostics.map(\.description) == [
                    "\(Self.game):9:4: warning: product id 'com.example.game.Gold-Pack' contains '-'; older App Store rules and other stores reject it",
                    "\(Self.game):9:4: warning: product id 'com.example.game.Gold-Pack' contains upper case letters; other stores reject them",
                    "\(Self.game):13:4: warning: product id 'com.example.game.silver-pack' contains '-'; older App Store rules and other stores reject it",
                    "\(Self.game):17:4: warning: product id 'com.example.game.BronzePack' contains upper case letters; other stores reject them",
                ])
            // Warnings never stop a build.
            #expect(!validation.hasErrors)
            #expect(validation.catalogs.first?.products.count == 3)
        }
    }

    @Test func identifierRulesDirectly() {
        #expect(IdentifierRules.problem("com.example.a_b-c.9") == nil)
        #expect(IdentifierRules.problem("") == "product id is empty")
        #expect(IdentifierRules.warnings("com.example.plain") == [])
        #expect(
            IdentifierRules.warnings("com.example.A-b") == [
                "product id 'com.example.A-b' contains '-'; older App Store rules and other stores reject it",
                "product id 'com.example.A-b' contains upper case letters; other stores reject them",
            ])
    }

    @Test func duplicateIdentifierInOneFile() throws {
        let lines = try validate(
            products:
                "<key>id</key>\n<string>com.example.game.gold</string>",
            "<key>id</key>\n<string>com.example.game.silver</string>",
            "<key>id</key>\n<string>com.example.game.gold</string>")
        #expect(lines == ["\(Self.game):17:4: error: duplicate product id 'com.example.game.gold' (first at 9:4)"])
    }

    /// A duplicate is reported even when the first definition has problems of its own:
    /// all problems in one run, so fixing the status must not reveal a second error.
    @Test func duplicateOfAProductWithOtherErrors() throws {
        let lines = try validate(
            products:
                "<key>id</key>\n<string>com.example.game.gold</string>\n<key>status</key>\n<string>sold</string>",
            "<key>id</key>\n<string>com.example.game.gold</string>")
        #expect(
            lines == [
                "\(Self.game):11:4: error: unknown status 'sold'; expected draft, cleared, removed or retired",
                "\(Self.game):15:4: error: duplicate product id 'com.example.game.gold' (first at 9:4)",
            ])
    }

    /// Products rejected by their own rules and products kept are compared in source order:
    /// the later definition is always the one reported, whichever kind came first.
    @Test func duplicatesAmongRejectedAndKeptProductsFollowSourceOrder() throws {
        func product(_ id: String, status: String) -> String {
            "<key>id</key>\n<string>com.example.game.\(id)</string>\n<key>status</key>\n<string>\(status)</string>"
        }
        let lines = try validate(
            products: product("gold", status: "cleared"), product("silver", status: "sold"), product("silver", status: "cleared"),
            product("gold", status: "sold"))
        #expect(
            lines == [
                "\(Self.game):17:4: error: unknown status 'sold'; expected draft, cleared, removed or retired",
                "\(Self.game):21:4: error: duplicate product id 'com.example.game.silver' (first at 15:4)",
                "\(Self.game):27:4: error: duplicate product id 'com.example.game.gold' (first at 9:4)",
                "\(Self.game):29:4: error: unknown status 'sold'; expected draft, cleared, removed or retired",
            ])
    }

    @Test func duplicateIdentifierAcrossFilesOfAFolder() throws {
        let lines = try validate([
            "com.example.game/a.plist": productsPlist("<key>id</key>\n<string>com.example.game.gold</string>"),
            "com.example.game/b.plist": productsPlist(
                "<key>id</key>\n<string>com.example.game.silver</string>",
                "<key>id</key>\n<string>com.example.game.gold</string>"),
        ])
        #expect(
            lines == [
                "catalog/com.example.game/b.plist:13:4: error: duplicate product id 'com.example.game.gold' (first at catalog/com.example.game/a.plist:9:4)"
            ])
    }

    @Test func duplicateIdentifierInTheArrayForm() throws {
        let lines = try validate([
            "com.example.game.plist": plist(
                """
                <array>
                \t<string>com.example.game.gold</string>
                \t<string>com.example.game.gold</string>
                </array>
                """)
        ])
        #expect(lines == ["\(Self.game):6:2: error: duplicate product id 'com.example.game.gold' (first at 5:2)"])
    }

    /// Columns count bytes, as compilers do: `é` before the tag takes two columns.
    @Test func columnsCountBytes() throws {
        let lines = try validate([
            "com.example.game.plist": plist(
                """
                <array>
                \t<!-- é --><string>bad id</string>
                </array>
                """)
        ])
        #expect(
            lines == [
                "\(Self.game):5:13: error: product id 'bad id' contains ' '; only letters, digits, '.', '_' and '-' are allowed"
            ])
    }

    // MARK: - Product fields

    @Test func referenceNameLength() throws {
        let longest = String(repeating: "n", count: 64)
        let product = { (name: String) in
            "<key>id</key>\n<string>com.example.game.gold</string>\n<key>referenceName</key>\n<string>\(name)</string>"
        }
        #expect(try validate(products: product(longest)) == [])
        #expect(
            try validate(products: product(longest + "n")) == [
                "\(Self.game):11:4: error: reference name is 65 characters long; the limit is 64"
            ])
    }

    @Test func emptyReferenceName() throws {
        let lines = try validate(
            products: """
                <key>id</key>
                <string>com.example.game.gold</string>
                <key>referenceName</key>
                <string> </string>
                """)
        #expect(lines == ["\(Self.game):11:4: error: reference name is empty"])
    }

    @Test func unknownType() throws {
        let lines = try validate(
            products: """
                <key>id</key>
                <string>com.example.game.gold</string>
                <key>type</key>
                <string>subscription</string>
                """)
        #expect(
            lines == [
                "\(Self.game):11:4: error: unknown product type 'subscription'; expected consumable, non-consumable, auto-renewable or non-renewing"
            ])
    }

    @Test(arguments: ["consumable", "non-consumable", "non-renewing"])
    func knownTypes(type: String) throws {
        let lines = try validate(
            products: """
                <key>id</key>
                <string>com.example.game.gold</string>
                <key>type</key>
                <string>\(type)</string>
                """)
        #expect(lines == [])
    }

    @Test func unknownStatus() throws {
        let lines = try validate(
            products: """
                <key>id</key>
                <string>com.example.game.gold</string>
                <key>status</key>
                <string>sold</string>
                """)
        #expect(lines == ["\(Self.game):11:4: error: unknown status 'sold'; expected draft, cleared, removed or retired"])
    }

    @Test(arguments: [ProductStatus.draft, .cleared, .removed, .retired])
    func knownStatuses(status: ProductStatus) throws {
        try withCatalog { catalog in
            try catalog.write(
                "com.example.game.plist",
                productsPlist(
                    """
                    <key>id</key>
                    <string>com.example.game.gold</string>
                    <key>status</key>
                    <string>\(status.rawValue)</string>
                    """))
            let validation = catalog.workflow.validate()
            #expect(validation.diagnostics.map(\.description) == [])
            #expect(validation.catalogs.first?.products.first?.status == status)
        }
    }

    @Test func statusDefaultsToCleared() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.game.plist", productsPlist("<key>id</key>\n<string>com.example.game.gold</string>"))
            #expect(catalog.workflow.validate().catalogs.first?.products.first?.status == .cleared)
        }
    }

    @Test func unknownProductPlatform() throws {
        let lines = try validate(
            products: """
                <key>id</key>
                <string>com.example.game.gold</string>
                <key>platforms</key>
                <array>
                \t<string>iOS</string>
                \t<string>Android</string>
                </array>
                """)
        #expect(
            lines == [
                "\(Self.game):13:5: error: unknown platform 'Android'; expected iOS, macOS, tvOS, watchOS or visionOS"
            ])
    }

    @Test func unknownAppPlatformAndProductPlatformOutsideTheApp() throws {
        let lines = try validate([
            "com.example.game.plist": plist(
                """
                <dict>
                \t<key>platforms</key>
                \t<array>
                \t\t<string>ios</string>
                \t\t<string>Android</string>
                \t</array>
                \t<key>products</key>
                \t<array>
                \t\t<dict>
                \t\t\t<key>id</key>
                \t\t\t<string>com.example.game.gold</string>
                \t\t\t<key>platforms</key>
                \t\t\t<array>
                \t\t\t\t<string>MACOS</string>
                \t\t\t</array>
                \t\t</dict>
                \t</array>
                </dict>
                """)
        ])
        #expect(
            lines == [
                "\(Self.game):8:3: error: unknown platform 'Android'; expected iOS, macOS, tvOS, watchOS or visionOS",
                "\(Self.game):16:4: warning: platform 'macOS' is not one of the app's platforms (iOS); add it there if the app ships on macOS",
            ])
    }

    @Test func platformsMatchCaseInsensitively() throws {
        try withCatalog { catalog in
            try catalog.write(
                "com.example.game.plist",
                productsPlist(
                    """
                    <key>id</key>
                    <string>com.example.game.gold</string>
                    <key>platforms</key>
                    <array>
                    \t<string>IOS</string>
                    \t<string>visionos</string>
                    \t<string>tvOS</string>
                    \t<string>WatchOS</string>
                    \t<string>macos</string>
                    </array>
                    """))
            let validation = catalog.workflow.validate()
            #expect(validation.diagnostics.map(\.description) == [])
            #expect(validation.catalogs.first?.products.first?.platforms == [.iOS, .macOS, .tvOS, .watchOS, .visionOS])
            // Without an app-level list, the platforms the products name are the app's.
            #expect(validation.catalogs.first?.platforms == [.iOS, .macOS, .tvOS, .watchOS, .visionOS])
        }
    }

    @Test func platformListedTwice() throws {
        let lines = try validate(
            products: """
                <key>id</key>
                <string>com.example.game.gold</string>
                <key>platforms</key>
                <array>
                \t<string>iOS</string>
                \t<string>ios</string>
                </array>
                """)
        #expect(lines == ["\(Self.game):13:5: warning: platform 'ios' is listed twice"])
    }

    @Test func emptyProductPlatforms() throws {
        let lines = try validate(
            products: """
                <key>id</key>
                <string>com.example.game.gold</string>
                <key>platforms</key>
                <array/>
                """)
        #expect(lines == ["\(Self.game):11:4: error: platforms list is empty; leave it out to sell on every platform of the app"])
    }

    @Test func emptyAppPlatforms() throws {
        let lines = try validate([
            "com.example.game.plist": plist(
                """
                <dict>
                \t<key>platforms</key>
                \t<array/>
                </dict>
                """)
        ])
        #expect(
            lines == [
                "\(Self.game):6:2: error: app platforms list is empty; list the platforms the app ships on, or leave the key out"
            ])
    }

    @Test(arguments: ["2.x", "", "1..2", "1.2.3.4.5", "-1", "v2", "2.", "1234567890"])
    func invalidMinimumAppVersion(version: String) throws {
        let lines = try validate(
            products: """
                <key>id</key>
                <string>com.example.game.gold</string>
                <key>minimumAppVersion</key>
                <string>\(version)</string>
                """)
        #expect(
            lines == [
                "\(Self.game):11:4: error: '\(version)' is not an app version; expected 1 to 4 numbers separated by dots, such as 2.3.1"
            ])
    }

    @Test(arguments: ["2", "2.3.1", "1.0.0.1", "0.9"])
    func validMinimumAppVersion(version: String) throws {
        try withCatalog { catalog in
            try catalog.write(
                "com.example.game.plist",
                productsPlist(
                    """
                    <key>id</key>
                    <string>com.example.game.gold</string>
                    <key>minimumAppVersion</key>
                    <string>\(version)</string>
                    """))
            let validation = catalog.workflow.validate()
            #expect(validation.diagnostics.map(\.description) == [])
            #expect(validation.catalogs.first?.products.first?.minimumAppVersion == AppVersion(version))
        }
    }

    @Test(arguments: [
        ("2026-05-01T00:00:00Z", "2026-05-01T00:00:00Z"),
        ("2026-05-01T00:00:01Z", "2026-05-01T00:00:00Z"),
    ])
    func availableUntilMustFollowAvailableFrom(from: String, until: String) throws {
        let lines = try validate(
            products: """
                <key>id</key>
                <string>com.example.game.gold</string>
                <key>availableFrom</key>
                <date>\(from)</date>
                <key>availableUntil</key>
                <date>\(until)</date>
                """)
        #expect(
            lines == [
                "\(Self.game):13:4: error: availableUntil (\(until)) must be later than availableFrom (\(from))"
            ])
    }

    @Test func availabilityWindowOfOneSecondAndDatesAsStrings() throws {
        try withCatalog { catalog in
            try catalog.write(
                "com.example.game.plist",
                productsPlist(
                    """
                    <key>id</key>
                    <string>com.example.game.gold</string>
                    <key>availableFrom</key>
                    <string>2026-05-01T00:00:00Z</string>
                    <key>availableUntil</key>
                    <date>2026-05-01T00:00:01Z</date>
                    """))
            let validation = catalog.workflow.validate()
            #expect(validation.diagnostics.map(\.description) == [])
            let product = try #require(validation.catalogs.first?.products.first)
            #expect(product.availableFrom == Timestamp(iso8601: "2026-05-01T00:00:00Z"))
            #expect(product.availableUntil == Timestamp(iso8601: "2026-05-01T00:00:01Z"))
        }
    }

    @Test func invalidDates() throws {
        let lines = try validate(
            products: """
                <key>id</key>
                <string>com.example.game.gold</string>
                <key>availableFrom</key>
                <string>tomorrow</string>
                <key>availableUntil</key>
                <date>2026-02-30T00:00:00Z</date>
                """)
        #expect(
            lines == [
                "\(Self.game):11:4: error: 'availableFrom' value 'tomorrow' is not a date; expected YYYY-MM-DDTHH:MM:SSZ",
                "\(Self.game):13:4: error: '2026-02-30T00:00:00Z' is not a valid <date>; expected YYYY-MM-DDTHH:MM:SSZ",
            ])
    }

    // MARK: - Subscriptions

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
                "\(Self.game):7:3: error: auto-renewable product 'com.example.game.pro' needs a subscription with a group and a period"
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
                "\(Self.game):13:4: error: subscription has no 'group'",
                "\(Self.game):13:4: error: subscription has no 'period'",
                "\(Self.game):24:4: error: subscription has no 'period'",
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
        #expect(lines == ["\(Self.game):15:5: error: subscription group is empty"])
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
                "\(Self.game):17:5: error: '\(period)' is not a subscription period; expected an ISO 8601 duration such as P1W, P1M, P3M, P6M or P1Y"
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
        #expect(lines == ["\(Self.game):11:4: error: a product with a subscription needs type 'auto-renewable'"])
    }

    @Test(arguments: ["0", "-1"])
    func subscriptionRankBelowOne(rank: String) throws {
        let lines = try validate(products: Self.subscriptionProduct(period: "P1M", rank: rank))
        #expect(lines == ["\(Self.game):19:5: error: subscription rank must be 1 or more"])
    }

    @Test(arguments: ["consumable", "non-consumable", "non-renewing"])
    func subscriptionOnAnotherType(type: String) throws {
        let lines = try validate(products: Self.subscriptionProduct(period: "P1M", type: type))
        #expect(
            lines == [
                "\(Self.game):13:4: error: only auto-renewable products have a subscription; this one is \(type)"
            ])
    }

    // MARK: - App settings

    @Test func appMustMatchTheFileName() throws {
        let body = { (app: String) in
            plist(
                """
                <dict>
                \t<key>app</key>
                \t<string>\(app)</string>
                \t<key>products</key>
                \t<array/>
                </dict>
                """)
        }
        #expect(try validate(["com.example.game.plist": body("com.example.game")]) == [])
        #expect(
            try validate(["com.example.game.plist": body("com.example.other")]) == [
                "\(Self.game):6:2: error: app 'com.example.other' does not match the file name; expected 'com.example.game'"
            ])
        #expect(
            try validate(["com.example.game/a.plist": body("com.example.Game")]) == [
                "catalog/com.example.game/a.plist:6:2: error: app 'com.example.Game' does not match the file name; expected 'com.example.game'"
            ])
    }

    static let settingsFile = plist(
        """
        <dict>
        \t<key>platforms</key>
        \t<array>
        \t\t<string>iOS</string>
        \t</array>
        \t<key>feedbackPolicy</key>
        \t<dict/>
        </dict>
        """)

    @Test func settingsInTwoFilesOfAFolder() throws {
        let lines = try validate([
            "com.example.game/a.plist": Self.settingsFile,
            "com.example.game/b.plist": Self.settingsFile,
        ])
        #expect(
            lines == [
                "catalog/com.example.game/b.plist:6:2: error: app platforms are already set at catalog/com.example.game/a.plist:6:2",
                "catalog/com.example.game/b.plist:10:2: error: feedbackPolicy is already set at catalog/com.example.game/a.plist:10:2",
            ])
    }

    @Test func settingsInOneFileOfAFolderApplyToAll() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.game/a.plist", Self.settingsFile)
            try catalog.write("com.example.game/b.plist", productsPlist("<key>id</key>\n<string>com.example.game.gold</string>"))
            let validation = catalog.workflow.validate()
            #expect(validation.diagnostics.map(\.description) == [])
            let app = try #require(validation.catalogs.first)
            #expect(app.platforms == [.iOS])
            #expect(app.products.map(\.id) == ["com.example.game.gold"])
            #expect(app.files == ["catalog/com.example.game/a.plist", "catalog/com.example.game/b.plist"])
        }
    }

    @Test func feedbackPolicyBounds() throws {
        let policy = { (entries: String) in
            plist("<dict>\n\t<key>feedbackPolicy</key>\n\t<dict>\n" + indented(entries, by: 2) + "\n\t</dict>\n</dict>")
        }
        // Lines: 6 the policy's <dict>, 7 and 8 its first key and value, and so on.
        #expect(
            try validate([
                "com.example.game.plist": policy(
                    """
                    <key>suspectAfterInstalls</key>
                    <integer>0</integer>
                    <key>quarantineAfterInstalls</key>
                    <integer>0</integer>
                    <key>windowHours</key>
                    <integer>-1</integer>
                    <key>graceHours</key>
                    <integer>-1</integer>
                    <key>minimumInvalidRate</key>
                    <real>1.5</real>
                    """)
            ]) == [
                "\(Self.game):8:3: error: suspectAfterInstalls must be 1 or more",
                "\(Self.game):10:3: error: quarantineAfterInstalls must be 1 or more",
                "\(Self.game):12:3: error: windowHours must be 0 or more",
                "\(Self.game):14:3: error: graceHours must be 0 or more",
                "\(Self.game):16:3: error: minimumInvalidRate must be between 0 and 1",
            ])
        #expect(
            try validate([
                "com.example.game.plist": policy(
                    """
                    <key>minimumInvalidRate</key>
                    <real>-0.1</real>
                    """)
            ]) == ["\(Self.game):8:3: error: minimumInvalidRate must be between 0 and 1"])
        #expect(
            try validate([
                "com.example.game.plist": policy(
                    """
                    <key>suspectAfterInstalls</key>
                    <integer>5</integer>
                    <key>quarantineAfterInstalls</key>
                    <integer>4</integer>
                    """)
            ]) == ["\(Self.game):6:2: error: quarantineAfterInstalls (4) must not be below suspectAfterInstalls (5)"])
        // The smallest accepted values.
        #expect(
            try validate([
                "com.example.game.plist": policy(
                    """
                    <key>suspectAfterInstalls</key>
                    <integer>1</integer>
                    <key>quarantineAfterInstalls</key>
                    <integer>1</integer>
                    <key>windowHours</key>
                    <integer>0</integer>
                    <key>graceHours</key>
                    <integer>0</integer>
                    <key>minimumInvalidRate</key>
                    <integer>0</integer>
                    """)
            ]) == [])
        #expect(
            try validate([
                "com.example.game.plist": policy(
                    """
                    <key>minimumInvalidRate</key>
                    <real>1</real>
                    """)
            ]) == [])
    }

    @Test func feedbackPolicyValuesReachTheCatalog() throws {
        try withCatalog { catalog in
            try catalog.write(
                "com.example.game.plist",
                plist(
                    """
                    <dict>
                    \t<key>feedbackPolicy</key>
                    \t<dict>
                    \t\t<key>suspectAfterInstalls</key>
                    \t\t<integer>2</integer>
                    \t\t<key>graceHours</key>
                    \t\t<integer>12</integer>
                    \t\t<key>minimumInvalidRate</key>
                    \t\t<real>0.25</real>
                    \t</dict>
                    </dict>
                    """))
            let policy = try #require(catalog.workflow.validate().catalogs.first?.feedbackPolicy)
            var expected = FeedbackPolicy()
            expected.suspectAfterInstalls = 2
            expected.graceHours = 12
            expected.minimumInvalidRate = 0.25
            #expect(policy == expected)
        }
    }

    // MARK: - Value kinds and unknown keys

    @Test(arguments: [
        ("type", "<integer>1</integer>", "'type' must be a <string>, found <integer>"),
        ("status", "<true/>", "'status' must be a <string>, found <true/> or <false/>"),
        ("referenceName", "<integer>7</integer>", "'referenceName' must be a <string>, found <integer>"),
        ("minimumAppVersion", "<real>2.0</real>", "'minimumAppVersion' must be a <string>, found <real>"),
        ("availableFrom", "<integer>0</integer>", "'availableFrom' must be a <date>, found <integer>"),
        ("availableUntil", "<data>AA==</data>", "'availableUntil' must be a <date>, found <data>"),
        ("displayOrder", "<string>1</string>", "'displayOrder' must be an <integer>, found <string>"),
        ("platforms", "<string>iOS</string>", "'platforms' must be an <array> of strings, found <string>"),
        ("subscription", "<string>P1M</string>", "'subscription' must be a <dict>, found <string>"),
        ("metadata", "<array/>", "'metadata' must be a <dict>, found <array>"),
    ])
    func wrongValueKind(key: String, value: String, message: String) throws {
        let lines = try validate(
            products: """
                <key>id</key>
                <string>com.example.game.gold</string>
                <key>\(key)</key>
                \(value)
                """)
        #expect(lines == ["\(Self.game):11:4: error: \(message)"])
    }

    /// An id of the wrong kind is one problem: the product does have an id, so saying it
    /// has none as well would send the editor looking for a missing key.
    @Test func identifierOfTheWrongKindIsReportedOnce() throws {
        let lines = try validate(
            products: """
                <key>id</key>
                <integer>5</integer>
                """)
        #expect(lines == ["\(Self.game):9:4: error: 'id' must be a <string>, found <integer>"])
    }

    /// A platforms list whose only entry has the wrong kind is not empty: one problem, one line.
    @Test func platformsOfTheWrongKindAreReportedOnce() throws {
        let lines = try validate(
            products: """
                <key>id</key>
                <string>com.example.game.gold</string>
                <key>platforms</key>
                <array>
                \t<integer>1</integer>
                </array>
                """)
        #expect(lines == ["\(Self.game):12:5: error: each entry of 'platforms' must be a <string>, found <integer>"])
    }

    @Test func wrongValueKindsInsideListsAndSettings() throws {
        let lines = try validate([
            "com.example.game.plist": plist(
                """
                <dict>
                \t<key>app</key>
                \t<integer>1</integer>
                \t<key>feedbackPolicy</key>
                \t<dict>
                \t\t<key>windowHours</key>
                \t\t<string>24</string>
                \t\t<key>minimumInvalidRate</key>
                \t\t<string>half</string>
                \t</dict>
                \t<key>products</key>
                \t<array>
                \t\t<dict>
                \t\t\t<key>id</key>
                \t\t\t<string>com.example.game.gold</string>
                \t\t\t<key>platforms</key>
                \t\t\t<array>
                \t\t\t\t<integer>1</integer>
                \t\t\t\t<string>iOS</string>
                \t\t\t</array>
                \t\t\t<key>subscription</key>
                \t\t\t<dict>
                \t\t\t\t<key>rank</key>
                \t\t\t\t<string>1</string>
                \t\t\t</dict>
                \t\t</dict>
                \t</array>
                </dict>
                """)
        ])
        #expect(
            lines == [
                "\(Self.game):6:2: error: 'app' must be a <string>, found <integer>",
                "\(Self.game):10:3: error: 'windowHours' must be an <integer>, found <string>",
                "\(Self.game):12:3: error: 'minimumInvalidRate' must be a <real>, found <string>",
                "\(Self.game):21:5: error: each entry of 'platforms' must be a <string>, found <integer>",
                "\(Self.game):25:4: error: a product with a subscription needs type 'auto-renewable'",
                "\(Self.game):25:4: error: subscription has no 'group'",
                "\(Self.game):25:4: error: subscription has no 'period'",
                "\(Self.game):27:5: error: 'rank' must be an <integer>, found <string>",
            ])
    }

    @Test func unknownKeysAreWarnings() throws {
        try withCatalog { catalog in
            try catalog.write(
                "com.example.game.plist",
                plist(
                    """
                    <dict>
                    \t<key>colour</key>
                    \t<string>red</string>
                    \t<key>feedbackPolicy</key>
                    \t<dict>
                    \t\t<key>quarantineAfter</key>
                    \t\t<integer>2</integer>
                    \t</dict>
                    \t<key>products</key>
                    \t<array>
                    \t\t<dict>
                    \t\t\t<key>id</key>
                    \t\t\t<string>com.example.game.pro</string>
                    \t\t\t<key>type</key>
                    \t\t\t<string>auto-renewable</string>
                    \t\t\t<key>price</key>
                    \t\t\t<real>0.99</real>
                    \t\t\t<key>subscription</key>
                    \t\t\t<dict>
                    \t\t\t\t<key>group</key>
                    \t\t\t\t<string>premium</string>
                    \t\t\t\t<key>period</key>
                    \t\t\t\t<string>P1M</string>
                    \t\t\t\t<key>trial</key>
                    \t\t\t\t<string>P1W</string>
                    \t\t\t</dict>
                    \t\t</dict>
                    \t</array>
                    </dict>
                    """))
            let validation = catalog.workflow.validate()
            #expect(
                validation.diagnostics.map(\.description) == [
                    "\(Self.game):5:2: warning: unknown app setting 'colour' is ignored",
                    "\(Self.game):9:3: warning: unknown feedbackPolicy key 'quarantineAfter' is ignored",
                    "\(Self.game):19:4: warning: unknown product key 'price' is ignored",
                    "\(Self.game):27:5: warning: unknown subscription key 'trial' is ignored",
                ])
            #expect(!validation.hasErrors)
            #expect(validation.catalogs.first?.products.map(\.id) == ["com.example.game.pro"])
        }
    }

    // MARK: - A whole run

    /// Every problem of every app in one run, sorted by file, then line and column, whatever
    /// order the files were written and the rules found them in.
    @Test func allProblemsOfARunSortedByFileThenLine() throws {
        try withCatalog { catalog in
            try catalog.write(
                "com.example.b.plist",
                productsPlist(
                    """
                    <key>status</key>
                    <string>sold</string>
                    <key>id</key>
                    <string>com.example.b.silver</string>
                    """,
                    "<key>id</key>\n<string>com.example.b.Gold</string>",
                    "<key>id</key>\n<string>com.example.b.Gold</string>",
                    "<key>type</key>\n<string>consumable</string>"))
            try catalog.write("com.example.c/z.plist", productsPlist("<key>id</key>\n<string>com.example.c.one</string>"))
            try catalog.write("com.example.c/a.plist", productsPlist("<key>id</key>\n<string>com.example.c.one</string>"))
            try catalog.write("com.example.a.plist", plist("<array>\n\t<integer>1</integer>\n\t<string>bad id</string>\n</array>"))
            let validation = catalog.workflow.validate()
            #expect(
                validation.diagnostics.map(\.description) == [
                    "catalog/com.example.a.plist:5:2: error: expected a product identifier <string>, found <integer>",
                    "catalog/com.example.a.plist:6:2: error: product id 'bad id' contains ' '; only letters, digits, '.', '_' and '-' are allowed",
                    "catalog/com.example.b.plist:9:4: error: unknown status 'sold'; expected draft, cleared, removed or retired",
                    "catalog/com.example.b.plist:15:4: warning: product id 'com.example.b.Gold' contains upper case letters; other stores reject them",
                    "catalog/com.example.b.plist:19:4: error: duplicate product id 'com.example.b.Gold' (first at 15:4)",
                    "catalog/com.example.b.plist:19:4: warning: product id 'com.example.b.Gold' contains upper case letters; other stores reject them",
                    "catalog/com.example.b.plist:21:3: error: product has no 'id'",
                    "catalog/com.example.c/z.plist:9:4: error: duplicate product id 'com.example.c.one' (first at catalog/com.example.c/a.plist:9:4)",
                ])
            #expect(validation.hasErrors)
            #expect(validation.catalogs.isEmpty)
        }
    }

    /// A run with errors publishes nothing, not even the apps without errors.
    @Test func buildWithErrorsPublishesNothing() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.a.plist", plist("<array>\n\t<string>com.example.a.gold</string>\n</array>"))
            try catalog.write("com.example.b.plist", plist("<array>\n\t<string>bad id</string>\n</array>"))
            let build = try catalog.build(at: buildMoment)
            #expect(build.hasErrors)
            #expect(build.plans.isEmpty)
            #expect(
                build.diagnostics.map(\.description) == [
                    "catalog/com.example.b.plist:5:2: error: product id 'bad id' contains ' '; only letters, digits, '.', '_' and '-' are allowed"
                ])
            #expect(!FileManager.default.fileExists(atPath: catalog.publicDirectory.path))
        }
    }

    // MARK: - Files and folders

    @Test(arguments: ["bad name.plist", "com_example.plist", "-com.example.plist", "com..example.plist", "com.exämple.xml"])
    func fileNameThatIsNotABundleIdentifier(name: String) throws {
        let app = (name as NSString).deletingPathExtension
        let lines = try validate([name: plist("<array/>")])
        #expect(
            lines == [
                "catalog/\(name):1:1: error: '\(app)' is not a bundle identifier; use letters, digits, '.' and '-', such as com.example.game"
            ])
    }

    @Test func feedbackFilesAreNotSources() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.game.plist", plist("<array>\n\t<string>com.example.game.gold</string>\n</array>"))
            // Read as the app's feedback (see FeedbackFileTests), never as a source.
            try catalog.write("com.example.game.feedback.plist", bytes: FeedbackFile().encoded)
            try catalog.write("com.example.tools/a.plist", plist("<array>\n\t<string>com.example.tools.gold</string>\n</array>"))
            try catalog.write("com.example.tools/verdicts.feedback.plist", "not a plist at all")
            let validation = catalog.workflow.validate()
            #expect(validation.diagnostics.map(\.description) == [])
            #expect(validation.catalogs.map(\.app) == ["com.example.game", "com.example.tools"])
            #expect(
                validation.catalogs.map(\.files) == [
                    ["catalog/com.example.game.plist"], ["catalog/com.example.tools/a.plist"],
                ])
        }
    }

    @Test func otherFilesAndHiddenFilesAreIgnored() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.game.plist", plist("<array>\n\t<string>com.example.game.gold</string>\n</array>"))
            try catalog.write("README.md", "# Catalog\n")
            try catalog.write(".com.example.hidden.plist", "garbage")
            try catalog.write("com.example.game.plist~", "garbage")
            #expect(catalog.diagnostics() == [])
        }
    }

    @Test func appDefinedByAFileAndAFolder() throws {
        let lines = try validate([
            "com.example.game.plist": plist("<array/>"),
            "com.example.game/a.plist": plist("<array/>"),
        ])
        #expect(
            lines == [
                "catalog/com.example.game.plist:1:1: error: app 'com.example.game' is already defined by catalog/com.example.game; use one file or one folder per app"
            ])
    }

    @Test func folderWithoutSources() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.game/notes.txt", "nothing here")
            #expect(
                catalog.diagnostics() == [
                    "catalog:1:1: warning: no apps found; add <bundle-id>.plist, <bundle-id>.xml or a <bundle-id>/ folder",
                    "catalog/com.example.game:1:1: warning: folder has no .plist or .xml sources",
                ])
        }
    }

    @Test func emptyCatalogDirectory() throws {
        try withCatalog { catalog in
            #expect(
                catalog.diagnostics() == [
                    "catalog:1:1: warning: no apps found; add <bundle-id>.plist, <bundle-id>.xml or a <bundle-id>/ folder"
                ])
        }
    }

    @Test func missingCatalogDirectory() throws {
        try withCatalog { catalog in
            try FileManager.default.removeItem(at: catalog.catalogDirectory)
            #expect(catalog.diagnostics() == ["catalog:1:1: error: cannot read the catalog directory"])
        }
    }

    @Test(
        arguments: [
            ([0x1F, 0x8B, 0x08, 0x00, 0x00], "file is gzip-compressed; decompress it (gunzip) and keep the plain XML in the catalog"),
            (
                Array("bplist00".utf8) + [0xD1, 0x01, 0x02],
                "binary property list is not supported; convert it to XML with 'plutil -convert xml1 catalog/com.example.game.plist' (macOS) or 'plistutil -i IN -o OUT -f xml' (libplist-utils)"
            ),
            ([], "file is empty"),
            ([0xFF, 0xFE, 0x3C, 0x00, 0x3F, 0x00], "file is UTF-16; save it as UTF-8"),
            (
                Array("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<plist/>".utf8),
                "encoding 'ISO-8859-1' is not supported; save the file as UTF-8"
            ),
        ] as [([UInt8], String)])
    func filesThatAreNotXMLText(bytes: [UInt8], message: String) throws {
        try withCatalog { catalog in
            try catalog.write("com.example.game.plist", bytes: bytes)
            #expect(catalog.diagnostics() == ["\(Self.game):1:1: error: \(message)"])
        }
    }

    // MARK: - Catalog XML

    /// The same catalog as a plist and as catalog XML publishes the same bytes, every file.
    @Test func catalogXMLDecodesLikeTheEquivalentPlist() throws {
        let plistSource = plist(
            """
            <dict>
            \t<key>app</key>
            \t<string>com.example.game</string>
            \t<key>platforms</key>
            \t<array>
            \t\t<string>iOS</string>
            \t\t<string>macOS</string>
            \t</array>
            \t<key>feedbackPolicy</key>
            \t<dict>
            \t\t<key>suspectAfterInstalls</key>
            \t\t<integer>2</integer>
            \t\t<key>minimumInvalidRate</key>
            \t\t<real>0.25</real>
            \t</dict>
            \t<key>products</key>
            \t<array>
            \t\t<dict>
            \t\t\t<key>id</key>
            \t\t\t<string>com.example.game.gold</string>
            \t\t\t<key>type</key>
            \t\t\t<string>consumable</string>
            \t\t\t<key>referenceName</key>
            \t\t\t<string>100 "Gold" Pièces</string>
            \t\t\t<key>displayOrder</key>
            \t\t\t<integer>2</integer>
            \t\t\t<key>metadata</key>
            \t\t\t<dict>
            \t\t\t\t<key>title</key>
            \t\t\t\t<string>Gold &amp; &lt;Silver&gt;</string>
            \t\t\t\t<key>amount</key>
            \t\t\t\t<integer>100</integer>
            \t\t\t\t<key>price</key>
            \t\t\t\t<real>0.99</real>
            \t\t\t\t<key>featured</key>
            \t\t\t\t<true/>
            \t\t\t\t<key>hidden</key>
            \t\t\t\t<false/>
            \t\t\t</dict>
            \t\t</dict>
            \t\t<dict>
            \t\t\t<key>id</key>
            \t\t\t<string>com.example.game.pro</string>
            \t\t\t<key>type</key>
            \t\t\t<string>auto-renewable</string>
            \t\t\t<key>platforms</key>
            \t\t\t<array>
            \t\t\t\t<string>ios</string>
            \t\t\t</array>
            \t\t\t<key>minimumAppVersion</key>
            \t\t\t<string>2.0</string>
            \t\t\t<key>availableFrom</key>
            \t\t\t<date>2026-01-01T00:00:00Z</date>
            \t\t\t<key>availableUntil</key>
            \t\t\t<date>2027-01-01T00:00:00Z</date>
            \t\t\t<key>subscription</key>
            \t\t\t<dict>
            \t\t\t\t<key>group</key>
            \t\t\t\t<string>premium</string>
            \t\t\t\t<key>period</key>
            \t\t\t\t<string>P1M</string>
            \t\t\t\t<key>rank</key>
            \t\t\t\t<integer>1</integer>
            \t\t\t</dict>
            \t\t</dict>
            \t\t<dict>
            \t\t\t<key>id</key>
            \t\t\t<string>com.example.game.old</string>
            \t\t\t<key>type</key>
            \t\t\t<string>non-consumable</string>
            \t\t\t<key>status</key>
            \t\t\t<string>retired</string>
            \t\t</dict>
            \t\t<dict>
            \t\t\t<key>id</key>
            \t\t\t<string>com.example.game.next</string>
            \t\t\t<key>status</key>
            \t\t\t<string>draft</string>
            \t\t</dict>
            \t</array>
            </dict>
            """)
        let xmlSource = catalogXML(
            app: "com.example.game",
            """
            \t<platforms>
            \t\t<platform>iOS</platform>
            \t\t<platform>macOS</platform>
            \t</platforms>
            \t<feedbackPolicy suspectAfterInstalls="2" minimumInvalidRate="0.25"/>
            \t<product id="com.example.game.gold" type="consumable" referenceName="100 &quot;Gold&quot; Pièces" displayOrder="2">
            \t\t<metadata>
            \t\t\t<entry key="title">Gold &amp; &lt;Silver&gt;</entry>
            \t\t\t<entry key="amount" type="integer">100</entry>
            \t\t\t<entry key="price" type="real">0.99</entry>
            \t\t\t<entry key="featured" type="boolean">true</entry>
            \t\t\t<entry key="hidden" type="boolean">false</entry>
            \t\t</metadata>
            \t</product>
            \t<product id="com.example.game.pro" type="auto-renewable" minimumAppVersion="2.0"
            \t\t\tavailableFrom="2026-01-01T00:00:00Z" availableUntil="2027-01-01T00:00:00Z">
            \t\t<platforms>
            \t\t\t<platform>ios</platform>
            \t\t</platforms>
            \t\t<subscription group="premium" period="P1M" rank="1"/>
            \t</product>
            \t<product id="com.example.game.old" type="non-consumable" status="retired"/>
            \t<product id="com.example.game.next" status="draft"/>
            """)
        let fromPlist = try withCatalog { catalog in
            try catalog.write("com.example.game.plist", plistSource)
            let validation = catalog.workflow.validate()
            #expect(validation.diagnostics.map(\.description) == [])
            #expect(validation.catalogs.first?.feedbackPolicy.suspectAfterInstalls == 2)
            #expect(validation.catalogs.first?.feedbackPolicy.minimumInvalidRate == 0.25)
            try catalog.publish(at: buildMoment)
            return catalog.publicSnapshot()
        }
        let fromXML = try withCatalog { catalog in
            try catalog.write("com.example.game.xml", xmlSource)
            let validation = catalog.workflow.validate()
            #expect(validation.diagnostics.map(\.description) == [])
            #expect(validation.catalogs.first?.feedbackPolicy.suspectAfterInstalls == 2)
            #expect(validation.catalogs.first?.feedbackPolicy.minimumInvalidRate == 0.25)
            try catalog.publish(at: buildMoment)
            return catalog.publicSnapshot()
        }
        let products = "v1/apps/com.example.game/products.json"
        #expect(text(fromXML[products]) == #"["com.example.game.gold","com.example.game.pro"]"#)
        #expect(text(fromXML[products]) == text(fromPlist[products]))
        #expect(text(fromXML["v1/apps/com.example.game/catalog.json"]) == text(fromPlist["v1/apps/com.example.game/catalog.json"]))
        #expect(fromXML.keys.sorted() == fromPlist.keys.sorted())
        let differing = fromPlist.keys.filter { fromXML[$0] != fromPlist[$0] }.sorted()
        #expect(differing == [], "these files differ between the plist and the catalog XML")
    }

    /// Attribute values are text: every predefined entity and character reference reads as
    /// the character it stands for.
    @Test func catalogXMLAttributeEntities() throws {
        try withCatalog { catalog in
            try catalog.write(
                "com.example.game.xml",
                catalogXML(
                    app: "com.example.game",
                    """
                    \t<product id="com.example.game.gold" referenceName="&quot;Gold&quot; &amp; &lt;Silver&gt; &apos;n&apos; caf&#233;"/>
                    """))
            let validation = catalog.workflow.validate()
            #expect(validation.diagnostics.map(\.description) == [])
            let product = try #require(validation.catalogs.first?.products.first)
            #expect(product.referenceName == "\"Gold\" & <Silver> 'n' café")
        }
    }

    @Test func catalogXMLSchemaViolations() throws {
        let lines = try validate([
            "com.example.game.xml": catalogXML(
                app: "com.example.game",
                """
                \t<product id="com.example.game.gold" colour="red"/>
                \t<product type="consumable"/>
                \t<gift id="com.example.game.gift"/>
                """)
        ])
        #expect(
            lines == [
                "catalog/com.example.game.xml:3:2: error: Element 'product', attribute 'colour': The attribute 'colour' is not allowed.",
                "catalog/com.example.game.xml:4:2: error: Element 'product': The attribute 'id' is required but missing.",
                "catalog/com.example.game.xml:5:2: error: Element 'gift': This element is not expected. Expected is ( product ).",
            ])
    }

    @Test func catalogXMLWithoutApp() throws {
        let lines = try validate([
            "com.example.game.xml": """
            <?xml version="1.0" encoding="UTF-8"?>
            <catalog xmlns="urn:iap-catalog:1">
            </catalog>
            """
        ])
        #expect(lines == ["catalog/com.example.game.xml:2:1: error: Element 'catalog': The attribute 'app' is required but missing."])
    }

    @Test func catalogXMLWithoutNamespace() throws {
        let lines = try validate([
            "com.example.game.xml": """
            <?xml version="1.0" encoding="UTF-8"?>
            <catalog app="com.example.game">
            </catalog>
            """
        ])
        #expect(
            lines == [
                "catalog/com.example.game.xml:2:1: error: root element must be <catalog xmlns=\"urn:iap-catalog:1\"> or <plist>"
            ])
    }

    /// The rules are the same for both formats; in catalog XML they point at the element,
    /// since libxml2 gives no attribute positions.
    @Test func catalogXMLRuleViolations() throws {
        let lines = try validate([
            "com.example.game.xml": catalogXML(
                app: "com.example.other",
                """
                \t<product id="com.example.game.gold" availableFrom="tomorrow" type="consumable">
                \t\t<metadata>
                \t\t\t<entry key="amount" type="integer">many</entry>
                \t\t\t<entry key="price" type="real">inf</entry>
                \t\t\t<entry key="featured" type="boolean">yes</entry>
                \t\t</metadata>
                \t</product>
                \t<product id="bad id" status="gone" minimumAppVersion="x"/>
                \t<product id="com.example.game.gold"/>
                """)
        ])
        #expect(
            lines == [
                "catalog/com.example.game.xml:2:1: error: app 'com.example.other' does not match the file name; expected 'com.example.game'",
                "catalog/com.example.game.xml:3:2: error: 'availableFrom' value 'tomorrow' is not a date; expected YYYY-MM-DDTHH:MM:SSZ",
                "catalog/com.example.game.xml:5:4: error: metadata entry 'amount' is not a 64-bit integer",
                "catalog/com.example.game.xml:6:4: error: metadata entry 'price' is not a finite number",
                "catalog/com.example.game.xml:7:4: error: metadata entry 'featured' must be true or false",
                "catalog/com.example.game.xml:10:2: error: 'x' is not an app version; expected 1 to 4 numbers separated by dots, such as 2.3.1",
                "catalog/com.example.game.xml:10:2: error: product id 'bad id' contains ' '; only letters, digits, '.', '_' and '-' are allowed",
                "catalog/com.example.game.xml:10:2: error: unknown status 'gone'; expected draft, cleared, removed or retired",
                "catalog/com.example.game.xml:11:2: error: duplicate product id 'com.example.game.gold' (first at 3:2)",
            ])
    }

    @Test func catalogXMLDuplicateMetadataKey() throws {
        let lines = try validate([
            "com.example.game.xml": catalogXML(
                app: "com.example.game",
                """
                \t<product id="com.example.game.gold">
                \t\t<metadata>
                \t\t\t<entry key="title">Gold</entry>
                \t\t\t<entry key="title">Silver</entry>
                \t\t</metadata>
                \t</product>
                """)
        ])
        #expect(lines == ["catalog/com.example.game.xml:6:4: error: duplicate metadata key 'title' (first at 5:4)"])
    }

    @Test func xmlFileWithPlistRootIsReadAsPlist() throws {
        try withCatalog { catalog in
            try catalog.write(
                "com.example.game.xml",
                plist(
                    """
                    <array>
                    \t<string>com.example.game.gold</string>
                    \t<integer>1</integer>
                    </array>
                    """))
            let validation = catalog.workflow.validate()
            #expect(
                validation.diagnostics.map(\.description) == [
                    "catalog/com.example.game.xml:6:2: error: expected a product identifier <string>, found <integer>"
                ])
            try catalog.write("com.example.game.xml", plist("<array>\n\t<string>com.example.game.gold</string>\n</array>"))
            #expect(catalog.workflow.validate().catalogs.first?.products.map(\.id) == ["com.example.game.gold"])
        }
    }

    @Test func folderMixingPlistAndCatalogXML() throws {
        try withCatalog { catalog in
            try catalog.write(
                "com.example.game/a.xml",
                catalogXML(
                    app: "com.example.game",
                    """
                    \t<platforms>
                    \t\t<platform>iOS</platform>
                    \t</platforms>
                    \t<product id="com.example.game.gold"/>
                    """))
            try catalog.write("com.example.game/b.plist", productsPlist("<key>id</key>\n<string>com.example.game.silver</string>"))
            try catalog.write("com.example.game/c.plist", productsPlist("<key>id</key>\n<string>com.example.game.gold</string>"))
            let validation = catalog.workflow.validate()
            #expect(
                validation.diagnostics.map(\.description) == [
                    "catalog/com.example.game/c.plist:9:4: error: duplicate product id 'com.example.game.gold' (first at catalog/com.example.game/a.xml:6:2)"
                ])
            try catalog.remove("com.example.game/c.plist")
            let app = try #require(catalog.workflow.validate().catalogs.first)
            #expect(app.platforms == [.iOS])
            #expect(app.products.map(\.id) == ["com.example.game.gold", "com.example.game.silver"])
        }
    }
}
