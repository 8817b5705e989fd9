import CatalogKit
import CatalogTestSupport
import Foundation
import Testing

/// Values of the wrong kind, reported once where they are, and unknown keys as warnings. The rules of docs/contract.md section 1, one test per rule, with the exact lines an editor sees
/// (positions: 1-based line and byte column of the start tag concerned).
@Suite struct ValueKindRulesTests {

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
        #expect(lines == ["\(RuleFixtures.game):11:4: error: \(message)"])
    }

    /// An id of the wrong kind is one problem: the product does have an id, so saying it
    /// has none as well would send the editor looking for a missing key.
    @Test func identifierOfTheWrongKindIsReportedOnce() throws {
        let lines = try validate(
            products: """
                <key>id</key>
                <integer>5</integer>
                """)
        #expect(lines == ["\(RuleFixtures.game):9:4: error: 'id' must be a <string>, found <integer>"])
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
        #expect(lines == ["\(RuleFixtures.game):12:5: error: each entry of 'platforms' must be a <string>, found <integer>"])
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
                "\(RuleFixtures.game):6:2: error: 'app' must be a <string>, found <integer>",
                "\(RuleFixtures.game):10:3: error: 'windowHours' must be an <integer>, found <string>",
                "\(RuleFixtures.game):12:3: error: 'minimumInvalidRate' must be a <real>, found <string>",
                "\(RuleFixtures.game):21:5: error: each entry of 'platforms' must be a <string>, found <integer>",
                "\(RuleFixtures.game):25:4: error: a product with a subscription needs type 'auto-renewable'",
                "\(RuleFixtures.game):25:4: error: subscription has no 'group'",
                "\(RuleFixtures.game):25:4: error: subscription has no 'period'",
                "\(RuleFixtures.game):27:5: error: 'rank' must be an <integer>, found <string>",
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
                    "\(RuleFixtures.game):5:2: warning: unknown app setting 'colour' is ignored",
                    "\(RuleFixtures.game):9:3: warning: unknown feedbackPolicy key 'quarantineAfter' is ignored",
                    "\(RuleFixtures.game):19:4: warning: unknown product key 'price' is ignored",
                    "\(RuleFixtures.game):27:5: warning: unknown subscription key 'trial' is ignored",
                ])
            #expect(!validation.hasErrors)
            #expect(validation.catalogs.first?.products.map(\.id) == ["com.example.game.pro"])
        }
    }
}
