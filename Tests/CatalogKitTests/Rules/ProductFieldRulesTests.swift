import CatalogKit
import CatalogTestSupport
import Foundation
import Testing
import Time

/// Product fields: reference names, types, statuses, platforms, versions and dates. The rules of docs/contract.md section 1, one test per rule, with the exact lines an editor sees
/// (positions: 1-based line and byte column of the start tag concerned).
@Suite struct ProductFieldRulesTests {

    @Test func referenceNameLength() throws {
        let longest = String(repeating: "n", count: 64)
        let product = { (name: String) in
            "<key>id</key>\n<string>com.example.game.gold</string>\n<key>referenceName</key>\n<string>\(name)</string>"
        }
        #expect(try validate(products: product(longest)) == [])
        #expect(
            try validate(products: product(longest + "n")) == [
                "\(RuleFixtures.game):11:4: error: reference name is 65 characters long; the limit is 64"
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
        #expect(lines == ["\(RuleFixtures.game):11:4: error: reference name is empty"])
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
                "\(RuleFixtures.game):11:4: error: unknown product type 'subscription'; expected consumable, non-consumable, auto-renewable or non-renewing"
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
        #expect(lines == ["\(RuleFixtures.game):11:4: error: unknown status 'sold'; expected draft, cleared, removed or retired"])
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
                \t<string>FireOS</string>
                </array>
                """)
        #expect(
            lines == [
                "\(RuleFixtures.game):13:5: error: unknown platform 'FireOS'; expected iOS, macOS, tvOS, watchOS, visionOS or Android"
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
                \t\t<string>FireOS</string>
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
                "\(RuleFixtures.game):8:3: error: unknown platform 'FireOS'; expected iOS, macOS, tvOS, watchOS, visionOS or Android",
                "\(RuleFixtures.game):16:4: warning: platform 'macOS' is not one of the app's platforms (iOS); add it there if the app ships on macOS",
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
        #expect(lines == ["\(RuleFixtures.game):13:5: warning: platform 'ios' is listed twice"])
    }

    @Test func emptyProductPlatforms() throws {
        let lines = try validate(
            products: """
                <key>id</key>
                <string>com.example.game.gold</string>
                <key>platforms</key>
                <array/>
                """)
        #expect(lines == ["\(RuleFixtures.game):11:4: error: platforms list is empty; leave it out to sell on every platform of the app"])
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
                "\(RuleFixtures.game):6:2: error: app platforms list is empty; list the platforms the app ships on, or leave the key out"
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
                "\(RuleFixtures.game):11:4: error: '\(version)' is not an app version; expected 1 to 4 numbers separated by dots, such as 2.3.1"
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
                "\(RuleFixtures.game):13:4: error: availableUntil (\(until)) must be later than availableFrom (\(from))"
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
                "\(RuleFixtures.game):11:4: error: 'availableFrom' value 'tomorrow' is not a date; expected YYYY-MM-DDTHH:MM:SSZ",
                "\(RuleFixtures.game):13:4: error: '2026-02-30T00:00:00Z' is not a valid <date>; expected YYYY-MM-DDTHH:MM:SSZ",
            ])
    }
}
