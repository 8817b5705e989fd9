import CatalogKit
import CatalogTestSupport
import Foundation
import Testing

/// A whole run: every problem, sorted, and nothing published when there is an error. The rules of docs/contract.md section 1, one test per rule, with the exact lines an editor sees
/// (positions: 1-based line and byte column of the start tag concerned).
@Suite struct WholeRunRulesTests {

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
}
