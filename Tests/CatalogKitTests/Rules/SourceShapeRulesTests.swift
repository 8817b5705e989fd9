import CatalogKit
import CatalogTestSupport
import Foundation
import Testing

/// The shapes a source may have: Apple's array of identifiers, or a dict of settings and `products`. The rules of docs/contract.md section 1, one test per rule, with the exact lines an editor sees
/// (positions: 1-based line and byte column of the start tag concerned).
@Suite struct SourceShapeRulesTests {

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
                "\(RuleFixtures.game):6:2: error: expected a product identifier <string>, found <integer>",
                "\(RuleFixtures.game):7:2: error: expected a product identifier <string>, found <dict>",
            ])
    }

    @Test func rootOfAnotherKind() throws {
        let lines = try validate(["com.example.game.plist": plist("<string>com.example.game.gold</string>")])
        #expect(
            lines == [
                "\(RuleFixtures.game):4:1: error: the root must be an <array> of product identifiers or a <dict> with app settings and 'products', found <string>"
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
        #expect(lines == ["\(RuleFixtures.game):6:2: error: 'products' must be an <array> of product dicts, found <dict>"])
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
        #expect(lines == ["\(RuleFixtures.game):7:3: error: a product must be a <dict>, found <string>"])
    }
}
