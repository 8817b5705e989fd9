import CatalogKit
import CatalogTestSupport
import Foundation
import Testing

/// App settings beside `products`: the app's name, and settings spread over a folder's files. The rules of docs/contract.md section 1, one test per rule, with the exact lines an editor sees
/// (positions: 1-based line and byte column of the start tag concerned).
@Suite struct AppSettingsRulesTests {

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
                "\(RuleFixtures.game):6:2: error: app 'com.example.other' does not match the file name; expected 'com.example.game'"
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
                "\(RuleFixtures.game):8:3: error: suspectAfterInstalls must be 1 or more",
                "\(RuleFixtures.game):10:3: error: quarantineAfterInstalls must be 1 or more",
                "\(RuleFixtures.game):12:3: error: windowHours must be 0 or more",
                "\(RuleFixtures.game):14:3: error: graceHours must be 0 or more",
                "\(RuleFixtures.game):16:3: error: minimumInvalidRate must be between 0 and 1",
            ])
        #expect(
            try validate([
                "com.example.game.plist": policy(
                    """
                    <key>minimumInvalidRate</key>
                    <real>-0.1</real>
                    """)
            ]) == ["\(RuleFixtures.game):8:3: error: minimumInvalidRate must be between 0 and 1"])
        #expect(
            try validate([
                "com.example.game.plist": policy(
                    """
                    <key>suspectAfterInstalls</key>
                    <integer>5</integer>
                    <key>quarantineAfterInstalls</key>
                    <integer>4</integer>
                    """)
            ]) == ["\(RuleFixtures.game):6:2: error: quarantineAfterInstalls (4) must not be below suspectAfterInstalls (5)"])
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
}
