import CatalogTestSupport
import Foundation
import Testing

/// `catalog import storekit` and `catalog export storekit` as an editor runs them.
@Suite struct StoreKitCommandTests {
    typealias Workspace = CommandTests.Workspace

    static let storekit = """
        {
          "identifier" : "8B5B3C6B",
          "products" : [
            {
              "displayPrice" : "0.99",
              "familyShareable" : false,
              "internalID" : "6F1B2A10",
              "localizations" : [ { "description" : "A pile of gold", "displayName" : "Gold", "locale" : "en_US" } ],
              "productID" : "com.example.app.gold",
              "referenceName" : "Gold",
              "type" : "Consumable"
            }
          ],
          "settings" : { "_developerTeamID" : "ABCDE12345" },
          "subscriptionGroups" : [
            {
              "id" : "21482000",
              "name" : "premium",
              "subscriptions" : [
                {
                  "displayPrice" : "4.99",
                  "groupNumber" : 1,
                  "productID" : "com.example.app.premium",
                  "recurringSubscriptionPeriod" : "P1M",
                  "referenceName" : "Premium",
                  "subscriptionGroupID" : "21482000",
                  "type" : "RecurringSubscription"
                }
              ]
            }
          ],
          "version" : { "major" : 3, "minor" : 0 }
        }
        """

    @Test func importThenExportRoundTrips() async throws {
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("Products.storekit", Self.storekit)
            let imported = try await workspace.run("import", "storekit", "Products.storekit", "--app", "com.example.app")
            #expect(imported.stderr == "")
            #expect(imported.stdout == "com.example.app: wrote catalog/com.example.app.plist: 2 added, 0 replaced\n")
            #expect(imported.status == 0)
            #expect(try await workspace.run("validate").status == 0)

            let exported = try await workspace.run("export", "storekit", "com.example.app")
            #expect(exported.status == 0)
            #expect(
                exported.stdout
                    == "com.example.app: wrote com.example.app.storekit: 2 products, .storekit format 4 (which current Xcode versions open)\n"
            )
            let file = try #require(workspace.read("com.example.app.storekit"))
            #expect(file.contains(#""productID" : "com.example.app.premium""#))
            #expect(!file.contains("ABCDE12345") && !file.contains("_developerTeamID") && !file.contains("21482000"))

            // Into an empty catalog and out again: the same bytes.
            try FileManager.default.removeItem(at: workspace.root.appendingPathComponent("catalog/com.example.app.plist"))
            #expect(try await workspace.run("import", "storekit", "com.example.app.storekit", "--app", "com.example.app").status == 0)
            let again = try await workspace.run("export", "storekit", "com.example.app", "-o", "-")
            #expect(again.status == 0)
            #expect(again.stdout == file)
        }
    }

    @Test func conflictsAreReportedOnePerLineAndSkippedUnlessOverwritten() async throws {
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("Products.storekit", Self.storekit)
            try workspace.write(
                "catalog/com.example.app.plist",
                plist("<array>\n\t<string>com.example.app.gold</string>\n\t<string>com.example.app.premium</string>\n</array>"))
            let skipped = try await workspace.run("import", "storekit", "Products.storekit", "--app", "com.example.app")
            #expect(skipped.status == 0)
            #expect(
                skipped.stderr == """
                    Products.storekit:4:5: warning: product 'com.example.app.gold' is already defined at catalog/com.example.app.plist:5:2; skipped (pass --overwrite to replace it)
                    Products.storekit:20:9: warning: product 'com.example.app.premium' is already defined at catalog/com.example.app.plist:6:2; skipped (pass --overwrite to replace it)
                    0 errors, 2 warnings

                    """)
            #expect(skipped.stdout == "com.example.app: wrote catalog/com.example.app.plist: 0 added, 0 replaced, 2 skipped\n")

            let overwritten = try await workspace.run("import", "storekit", "Products.storekit", "--app", "com.example.app", "--overwrite")
            #expect(overwritten.status == 0)
            #expect(overwritten.stdout == "com.example.app: wrote catalog/com.example.app.plist: 0 added, 2 replaced\n")
            #expect(workspace.read("catalog/com.example.app.plist")?.contains("<string>P1M</string>") == true)
        }
    }

    @Test func malformedInputWritesNothingAndExitsWith1() async throws {
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("Products.storekit", #"{"version": {"major": 9}}"#)
            let before = workspace.files()
            let run = try await workspace.run("import", "storekit", "Products.storekit", "--app", "com.example.app")
            #expect(run.status == 1)
            #expect(
                run.stderr == """
                    Products.storekit:1:13: error: unsupported .storekit version 9.0; this tool reads versions 1 to 5
                    1 error, 0 warnings
                    error: nothing was written

                    """)
            #expect(workspace.files() == before)
        }
    }

    @Test(arguments: [["import"], ["export"], ["import", "storekit", "x.storekit"], ["export", "storekit", "bad/app"]])
    func misuseExitsWith64(_ arguments: [String]) async throws {
        try await CommandTests.withWorkspace { workspace in
            let run = try await CommandTests.run(arguments, in: workspace.root)
            #expect(run.status == 64)
        }
    }

    @Test func exportOfAnUnknownAppFails() async throws {
        try await CommandTests.withWorkspace { workspace in
            let run = try await workspace.run("export", "storekit", "com.example.none")
            #expect(run.status == 1)
            #expect(run.stderr.hasPrefix("catalog/com.example.none.plist:1:1: error: no sources for app 'com.example.none' in catalog\n"))
            #expect(!workspace.exists("com.example.none.storekit"))
        }
    }

    /// `catalog import plist` says which shape it read, writes the app's source, and the build that
    /// refused the file as a source publishes it afterwards.
    @Test func importPlistSaysWhichShapeItReadAndTheAppBuilds() async throws {
        try await CommandTests.withWorkspace { workspace in
            try workspace.write(
                "catalog/com.example.app.plist",
                plist("<dict><key>Products</key><array><string>com.example.app.coins</string></array></dict>"))
            let refused = try await workspace.run("build", "--store", "sqlite:var/c.sqlite")
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("catalog import plist FILE --app com.example.app"), "\(refused.stderr)")
            try FileManager.default.moveItem(
                at: workspace.root.appendingPathComponent("catalog/com.example.app.plist"),
                to: workspace.root.appendingPathComponent("Products.plist"))
            let imported = try await workspace.run("import", "plist", "Products.plist", "--app", "com.example.app")
            #expect(imported.status == 0, "\(imported.stderr)")
            #expect(
                imported.stdout == """
                    Products.plist: read 'Products' and 'Subscriptions' groups (StoreHelper)
                    com.example.app: wrote catalog/com.example.app.plist: 1 added, 0 replaced

                    """)
            let built = try await workspace.run("build", "--store", "sqlite:var/c.sqlite")
            #expect(built.status == 0, "\(built.stderr)")
            #expect(workspace.read("public/v1/apps/com.example.app/products.json") == #"["com.example.app.coins"]"#)
        }
    }
}
