import CatalogKit
import CatalogTestSupport
import Foundation
import Testing

/// Product identifiers: present, of the allowed characters and length, unique per app. The rules of docs/contract.md section 1, one test per rule, with the exact lines an editor sees
/// (positions: 1-based line and byte column of the start tag concerned).
@Suite struct IdentifierRulesTests {

    @Test func productWithoutID() throws {
        let lines = try validate(
            products: """
                <key>type</key>
                <string>consumable</string>
                """)
        #expect(lines == ["\(RuleFixtures.game):7:3: error: product has no 'id'"])
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
                "\(RuleFixtures.game):9:4: error: product id '\(id)' contains \(shown); only letters, digits, '.', '_' and '-' are allowed"
            ])
    }

    @Test func emptyIdentifier() throws {
        let lines = try validate(
            products: """
                <key>id</key>
                <string></string>
                """)
        #expect(lines == ["\(RuleFixtures.game):9:4: error: product id is empty"])
    }

    @Test func identifierLength() throws {
        let longest = "com.example." + String(repeating: "x", count: 88)
        #expect(longest.utf8.count == 100)
        #expect(try validate(products: "<key>id</key>\n<string>\(longest)</string>") == [])
        #expect(
            try validate(products: "<key>id</key>\n<string>\(longest)y</string>") == [
                "\(RuleFixtures.game):9:4: error: product id is 101 characters long; the limit is 100"
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
                    "\(RuleFixtures.game):9:4: warning: product id 'com.example.game.Gold-Pack' contains '-'; older App Store rules and other stores reject it",
                    "\(RuleFixtures.game):9:4: warning: product id 'com.example.game.Gold-Pack' contains upper case letters; other stores reject them",
                    "\(RuleFixtures.game):13:4: warning: product id 'com.example.game.silver-pack' contains '-'; older App Store rules and other stores reject it",
                    "\(RuleFixtures.game):17:4: warning: product id 'com.example.game.BronzePack' contains upper case letters; other stores reject them",
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
        #expect(lines == ["\(RuleFixtures.game):17:4: error: duplicate product id 'com.example.game.gold' (first at 9:4)"])
    }

    /// Every later definition points at the first, not at the one just before it, and each is
    /// reported in source order.
    @Test func everyLaterDefinitionPointsAtTheFirst() throws {
        let gold = "<key>id</key>\n<string>com.example.game.gold</string>"
        let lines = try validate(products: gold, gold, "<key>id</key>\n<string>com.example.game.silver</string>", gold)
        #expect(
            lines == [
                "\(RuleFixtures.game):13:4: error: duplicate product id 'com.example.game.gold' (first at 9:4)",
                "\(RuleFixtures.game):21:4: error: duplicate product id 'com.example.game.gold' (first at 9:4)",
            ])
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
                "\(RuleFixtures.game):11:4: error: unknown status 'sold'; expected draft, cleared, removed or retired",
                "\(RuleFixtures.game):15:4: error: duplicate product id 'com.example.game.gold' (first at 9:4)",
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
                "\(RuleFixtures.game):17:4: error: unknown status 'sold'; expected draft, cleared, removed or retired",
                "\(RuleFixtures.game):21:4: error: duplicate product id 'com.example.game.silver' (first at 15:4)",
                "\(RuleFixtures.game):27:4: error: duplicate product id 'com.example.game.gold' (first at 9:4)",
                "\(RuleFixtures.game):29:4: error: unknown status 'sold'; expected draft, cleared, removed or retired",
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
        #expect(lines == ["\(RuleFixtures.game):6:2: error: duplicate product id 'com.example.game.gold' (first at 5:2)"])
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
                "\(RuleFixtures.game):5:13: error: product id 'bad id' contains ' '; only letters, digits, '.', '_' and '-' are allowed"
            ])
    }
}
