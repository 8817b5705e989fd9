import CatalogKit
import CatalogTestSupport
import Foundation
import PropertyList
import Testing

/// `.storekit` import and export through ``CatalogWorkflow``, on real directories.
@Suite struct StoreKitTests {
    static let app = "com.example.game"

    /// Writes `text` next to `catalog/` and imports it.
    private func importFile(
        _ text: String, into catalog: TemporaryCatalog, overwrite: Bool = false
    ) throws -> CatalogWorkflow.ProductImport {
        let url = catalog.root.appendingPathComponent("Products.storekit")
        try Data(text.utf8).write(to: url)
        return try catalog.workflow.importStoreKit(from: url, displayPath: "Products.storekit", app: Self.app, overwrite: overwrite)
    }

    private func source(_ catalog: TemporaryCatalog, _ name: String = "\(app).plist") -> String? {
        FileManager.default.contents(atPath: catalog.catalogDirectory.appendingPathComponent(name).path)
            .map { String(decoding: $0, as: UTF8.self) }
    }

    private func errors(_ diagnostics: [Diagnostic]) -> [String] {
        diagnostics.filter { $0.severity == .error }.map(\.description)
    }

    @Test(arguments: StoreKitFixtures.all)
    func importsEachVersionShape(_ fixture: StoreKitFixtures.Case) throws {
        let catalog = try TemporaryCatalog()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        let result = try importFile(fixture.storekit, into: catalog)
        #expect(errors(result.diagnostics) == [])
        #expect(result.wrote)
        #expect(source(catalog) == fixture.plist)
        #expect(!catalog.workflow.validate().hasErrors)
    }

    @Test func importDropsAccountSettingsAndWarnsAboutWhatItIgnores() throws {
        let catalog = try TemporaryCatalog()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        let result = try importFile(StoreKitFixtures.version4.storekit, into: catalog)
        #expect(
            result.diagnostics.map(\.description) == [
                "Products.storekit:2:19: warning: 'appPolicies' has no place in the catalog and is ignored"
            ])
        let written = try #require(source(catalog))
        for secret in ["6759309295", "XXXXXXXXXX", "B2D7E1A0", "11223344", "_developerTeamID"] { #expect(!written.contains(secret)) }
    }

    // MARK: - Round trip

    /// Every kind of product, the metadata export reads, and what export leaves out.
    static let richCatalog = plist(
        """
        <dict>
        \t<key>products</key>
        \t<array>
        \t\t<dict>
        \t\t\t<key>id</key>
        \t\t\t<string>com.example.game.gold</string>
        \t\t\t<key>type</key>
        \t\t\t<string>consumable</string>
        \t\t\t<key>referenceName</key>
        \t\t\t<string>Gold</string>
        \t\t\t<key>platforms</key>
        \t\t\t<array>
        \t\t\t\t<string>iOS</string>
        \t\t\t</array>
        \t\t\t<key>metadata</key>
        \t\t\t<dict>
        \t\t\t\t<key>displayPrice</key>
        \t\t\t\t<real>0.99</real>
        \t\t\t\t<key>badge</key>
        \t\t\t\t<string>Popular</string>
        \t\t\t\t<key>localizations</key>
        \t\t\t\t<array>
        \t\t\t\t\t<dict>
        \t\t\t\t\t\t<key>locale</key>
        \t\t\t\t\t\t<string>en_US</string>
        \t\t\t\t\t\t<key>displayName</key>
        \t\t\t\t\t\t<string>Gold "100" &amp; more</string>
        \t\t\t\t\t\t<key>description</key>
        \t\t\t\t\t\t<string>Shiny</string>
        \t\t\t\t\t</dict>
        \t\t\t\t</array>
        \t\t\t</dict>
        \t\t</dict>
        \t\t<dict>
        \t\t\t<key>id</key>
        \t\t\t<string>com.example.game.levels</string>
        \t\t\t<key>type</key>
        \t\t\t<string>non-consumable</string>
        \t\t\t<key>status</key>
        \t\t\t<string>draft</string>
        \t\t</dict>
        \t\t<dict>
        \t\t\t<key>id</key>
        \t\t\t<string>com.example.game.season</string>
        \t\t\t<key>type</key>
        \t\t\t<string>non-renewing</string>
        \t\t\t<key>status</key>
        \t\t\t<string>removed</string>
        \t\t</dict>
        \t\t<dict>
        \t\t\t<key>id</key>
        \t\t\t<string>com.example.game.plus.yearly</string>
        \t\t\t<key>type</key>
        \t\t\t<string>auto-renewable</string>
        \t\t\t<key>subscription</key>
        \t\t\t<dict>
        \t\t\t\t<key>group</key>
        \t\t\t\t<string>plus</string>
        \t\t\t\t<key>period</key>
        \t\t\t\t<string>P1Y</string>
        \t\t\t\t<key>rank</key>
        \t\t\t\t<integer>1</integer>
        \t\t\t</dict>
        \t\t\t<key>metadata</key>
        \t\t\t<dict>
        \t\t\t\t<key>familyShareable</key>
        \t\t\t\t<true/>
        \t\t\t\t<key>introductoryOffer</key>
        \t\t\t\t<dict>
        \t\t\t\t\t<key>paymentMode</key>
        \t\t\t\t\t<string>free</string>
        \t\t\t\t\t<key>subscriptionPeriod</key>
        \t\t\t\t\t<string>P1W</string>
        \t\t\t\t</dict>
        \t\t\t\t<key>groupLocalizations</key>
        \t\t\t\t<array>
        \t\t\t\t\t<dict>
        \t\t\t\t\t\t<key>displayName</key>
        \t\t\t\t\t\t<string>Game Plus</string>
        \t\t\t\t\t\t<key>locale</key>
        \t\t\t\t\t\t<string>en_US</string>
        \t\t\t\t\t</dict>
        \t\t\t\t</array>
        \t\t\t</dict>
        \t\t</dict>
        \t\t<dict>
        \t\t\t<key>id</key>
        \t\t\t<string>com.example.game.plus.monthly</string>
        \t\t\t<key>type</key>
        \t\t\t<string>auto-renewable</string>
        \t\t\t<key>subscription</key>
        \t\t\t<dict>
        \t\t\t\t<key>group</key>
        \t\t\t\t<string>plus</string>
        \t\t\t\t<key>period</key>
        \t\t\t\t<string>P1M</string>
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
        \t\t\t<string>com.example.game.untyped</string>
        \t\t</dict>
        \t</array>
        </dict>
        """)

    @Test func exportThenImportIntoAnEmptyCatalogThenExportIsByteIdentical() throws {
        let source = try TemporaryCatalog()
        defer { try? FileManager.default.removeItem(at: source.root) }
        try source.write("\(Self.app).plist", Self.richCatalog)
        let first = source.workflow.exportStoreKit(app: Self.app)
        let bytes = try #require(first.bytes)
        #expect(
            first.diagnostics.map(\.description) == [
                "catalog/com.example.game.plist:112:4: warning: product 'com.example.game.untyped' has no type, which Xcode needs; it is left out of the .storekit file"
            ])
        #expect(first.productCount == 5)

        let empty = try TemporaryCatalog()
        defer { try? FileManager.default.removeItem(at: empty.root) }
        let imported = try importFile(String(decoding: bytes, as: UTF8.self), into: empty)
        #expect(imported.diagnostics.map(\.description) == [])
        #expect(imported.added.count == 5)
        let second = empty.workflow.exportStoreKit(app: Self.app)
        #expect(second.bytes == bytes)
        #expect(second.diagnostics.isEmpty)
    }

    /// What `richCatalog` exports to: no retired or untyped product, defaults where the catalog
    /// says nothing, ids derived from names.
    static let richExport = #"""
        {
          "identifier" : "A8348FD3",
          "nonRenewingSubscriptions" : [
            {
              "displayPrice" : "0.00",
              "familyShareable" : false,
              "internalID" : "EAC794C2",
              "localizations" : [],
              "productID" : "com.example.game.season",
              "referenceName" : "com.example.game.season",
              "type" : "NonRenewingSubscription"
            }
          ],
          "products" : [
            {
              "displayPrice" : "0.99",
              "familyShareable" : false,
              "internalID" : "ACA66A05",
              "localizations" : [
                {
                  "description" : "Shiny",
                  "displayName" : "Gold \"100\" & more",
                  "locale" : "en_US"
                }
              ],
              "productID" : "com.example.game.gold",
              "referenceName" : "Gold",
              "type" : "Consumable"
            },
            {
              "displayPrice" : "0.00",
              "familyShareable" : false,
              "internalID" : "3DF401EC",
              "localizations" : [],
              "productID" : "com.example.game.levels",
              "referenceName" : "com.example.game.levels",
              "type" : "NonConsumable"
            }
          ],
          "settings" : {},
          "subscriptionGroups" : [
            {
              "id" : "FE5AAB10",
              "localizations" : [
                {
                  "displayName" : "Game Plus",
                  "locale" : "en_US"
                }
              ],
              "name" : "plus",
              "subscriptions" : [
                {
                  "adHocOffers" : [],
                  "codeOffers" : [],
                  "displayPrice" : "0.00",
                  "familyShareable" : true,
                  "groupNumber" : 1,
                  "internalID" : "E2D671A1",
                  "introductoryOffer" : {
                    "internalID" : "BC4563F2",
                    "paymentMode" : "free",
                    "subscriptionPeriod" : "P1W"
                  },
                  "localizations" : [],
                  "productID" : "com.example.game.plus.yearly",
                  "recurringSubscriptionPeriod" : "P1Y",
                  "referenceName" : "com.example.game.plus.yearly",
                  "subscriptionGroupID" : "FE5AAB10",
                  "type" : "RecurringSubscription",
                  "winbackOffers" : []
                },
                {
                  "adHocOffers" : [],
                  "codeOffers" : [],
                  "displayPrice" : "0.00",
                  "familyShareable" : false,
                  "groupNumber" : 1,
                  "internalID" : "598CB924",
                  "introductoryOffer" : null,
                  "localizations" : [],
                  "productID" : "com.example.game.plus.monthly",
                  "recurringSubscriptionPeriod" : "P1M",
                  "referenceName" : "com.example.game.plus.monthly",
                  "subscriptionGroupID" : "FE5AAB10",
                  "type" : "RecurringSubscription",
                  "winbackOffers" : []
                }
              ]
            }
          ],
          "version" : {
            "major" : 4,
            "minor" : 0
          }
        }

        """#

    @Test func exportIsTheDocumentedLayout() throws {
        let catalog = try TemporaryCatalog()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        try catalog.write("\(Self.app).plist", Self.richCatalog)
        let text = String(decoding: try #require(catalog.workflow.exportStoreKit(app: Self.app).bytes), as: UTF8.self)
        #expect(text == Self.richExport)
        // Written twice, the same bytes: nothing depends on the clock or on hashing.
        #expect(catalog.workflow.exportStoreKit(app: Self.app).bytes == Array(text.utf8))
    }

    @Test func exportNeedsValidSources() throws {
        let catalog = try TemporaryCatalog()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        #expect(
            catalog.workflow.exportStoreKit(app: Self.app).diagnostics.map(\.description) == [
                "catalog/com.example.game.plist:1:1: error: no sources for app 'com.example.game' in catalog"
            ])
        try catalog.write("\(Self.app).plist", plist("<array>\n\t<string>bad id</string>\n</array>"))
        let export = catalog.workflow.exportStoreKit(app: Self.app)
        #expect(export.bytes == nil)
        #expect(
            errors(export.diagnostics) == [
                "catalog/com.example.game.plist:5:2: error: product id 'bad id' contains ' '; only letters, digits, '.', '_' and '-' are allowed"
            ])
    }

    // MARK: - Conflicts

    static let existing = plist(
        """
        <dict>
        \t<key>app</key>
        \t<string>com.example.game</string>
        \t<key>products</key>
        \t<array>
        \t\t<dict>
        \t\t\t<key>id</key>
        \t\t\t<string>com.example.game.gold</string>
        \t\t\t<key>type</key>
        \t\t\t<string>non-consumable</string>
        \t\t\t<key>referenceName</key>
        \t\t\t<string>Old Gold</string>
        \t\t\t<key>status</key>
        \t\t\t<string>removed</string>
        \t\t\t<key>metadata</key>
        \t\t\t<dict>
        \t\t\t\t<key>badge</key>
        \t\t\t\t<string>Popular</string>
        \t\t\t\t<key>displayPrice</key>
        \t\t\t\t<string>5.00</string>
        \t\t\t</dict>
        \t\t</dict>
        \t</array>
        </dict>
        """)

    @Test func conflictsAreSkippedAndReported() throws {
        let catalog = try TemporaryCatalog()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        try catalog.write("\(Self.app).plist", Self.existing)
        let result = try importFile(StoreKitFixtures.version1.storekit, into: catalog)
        #expect(
            result.diagnostics.map(\.description) == [
                "Products.storekit:7:5: warning: product 'com.example.game.gold' is already defined at catalog/com.example.game.plist:11:4; skipped (pass --overwrite to replace it)"
            ])
        #expect(result.skipped == ["com.example.game.gold"])
        #expect(result.added == ["com.example.game.premium.monthly"])
        let written = try #require(source(catalog))
        #expect(written.contains("<string>Old Gold</string>"))
        #expect(written.contains("<string>com.example.game.premium.monthly</string>"))
    }

    @Test func overwriteReplacesWhatTheFileSaysAndKeepsTheRest() throws {
        let catalog = try TemporaryCatalog()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        try catalog.write("\(Self.app).plist", Self.existing)
        let result = try importFile(StoreKitFixtures.version1.storekit, into: catalog, overwrite: true)
        #expect(result.diagnostics.isEmpty)
        #expect(result.replaced == ["com.example.game.gold"])
        let written = try #require(source(catalog))
        let gold = String(written[written.range(of: "<string>com.example.game.gold</string>")!.lowerBound...].prefix(while: { $0 != "}" }))
        #expect(gold.contains("<string>consumable</string>"))
        #expect(gold.contains("<string>Gold</string>") && !gold.contains("Old Gold"))
        #expect(gold.contains("<string>removed</string>"))
        #expect(gold.contains("<string>Popular</string>"))
        #expect(gold.contains("<string>0.99</string>") && !gold.contains("5.00"))
        // Overwriting again changes nothing.
        let again = try importFile(StoreKitFixtures.version1.storekit, into: catalog, overwrite: true)
        #expect(!again.wrote)
        #expect(source(catalog) == written)
    }

    @Test func minimalFormBecomesTheFullForm() throws {
        let catalog = try TemporaryCatalog()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        try catalog.write("\(Self.app).plist", plist("<array>\n\t<string>com.example.game.coins</string>\n</array>"))
        let result = try importFile(StoreKitFixtures.version4.storekit, into: catalog)
        #expect(errors(result.diagnostics) == [])
        let written = try #require(source(catalog))
        #expect(
            written.hasPrefix(
                plist(
                    "<dict>\n\t<key>app</key>\n\t<string>com.example.game</string>\n\t<key>products</key>\n\t<array>\n\t\t<dict>\n\t\t\t<key>id</key>\n\t\t\t<string>com.example.game.coins</string>\n\t\t</dict>"
                ).dropLast(9)))
    }

    @Test func aFolderAppGetsItsOwnFile() throws {
        let catalog = try TemporaryCatalog()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        try catalog.write("\(Self.app)/a.plist", plist("<array>\n\t<string>com.example.game.gold</string>\n</array>"))
        let result = try importFile(StoreKitFixtures.version1.storekit, into: catalog, overwrite: true)
        #expect(result.target == "catalog/com.example.game/storekit.plist")
        #expect(
            result.diagnostics.map(\.description) == [
                "Products.storekit:7:5: warning: product 'com.example.game.gold' is already defined at catalog/com.example.game/a.plist:5:2; skipped (import only rewrites catalog/com.example.game/storekit.plist; change it where it is defined)"
            ])
        #expect(source(catalog, "\(Self.app)/storekit.plist")?.contains("com.example.game.premium.monthly") == true)
        #expect(!catalog.workflow.validate().hasErrors)
    }

    // MARK: - Format 5 (Xcode 26): billing plans and per-plan introductory offers

    /// A format 5 file as Xcode 26 writes one (the shapes of real files: billing plans up front and
    /// monthly with a 12-month commitment, an introductory offer per plan beside the singular one,
    /// `billingPlanType` and `numberOfPeriods` on every offer, no `introductoryOffer` key when there
    /// is none).
    static let version5 = #"""
        {
          "appPolicies" : {
            "eula" : "",
            "policies" : [
              {
                "locale" : "en_US",
                "policyText" : "",
                "policyURL" : ""
              }
            ]
          },
          "identifier" : "5A0C2E41",
          "nonRenewingSubscriptions" : [

          ],
          "products" : [
            {
              "displayPrice" : "0.99",
              "familyShareable" : false,
              "internalID" : "6759309301",
              "localizations" : [
                {
                  "description" : "A pile of gold",
                  "displayName" : "Gold",
                  "locale" : "en_US"
                }
              ],
              "productID" : "com.example.game.gold",
              "referenceName" : "Gold",
              "type" : "Consumable"
            }
          ],
          "settings" : {
            "_applicationInternalID" : "6759309200",
            "_developerTeamID" : "ABCDE12345",
            "_lastSynchronizedDate" : 804778767.63
          },
          "subscriptionGroups" : [
            {
              "id" : "22255725",
              "localizations" : [

              ],
              "name" : "Premium",
              "subscriptions" : [
                {
                  "adHocOffers" : [
                    {
                      "billingPlanType" : "BILLED_UPFRONT",
                      "displayPrice" : "99",
                      "internalID" : "0E5D3A11",
                      "numberOfPeriods" : 1,
                      "offerID" : "winback-yearly",
                      "paymentMode" : "payUpFront",
                      "referenceName" : "Come back",
                      "subscriptionPeriod" : "P1Y"
                    }
                  ],
                  "billingPlans" : [
                    {
                      "billingPlanType" : "BILLED_UPFRONT",
                      "commitmentDisplayPrice" : "198",
                      "displayPrice" : "198",
                      "internalID" : "8A00F767",
                      "isEnabled" : true
                    },
                    {
                      "billingPlanType" : "MONTHLY",
                      "commitmentDisplayPrice" : "216",
                      "displayPrice" : "18",
                      "internalID" : "C2E09540",
                      "isEnabled" : true
                    }
                  ],
                  "codeOffers" : [

                  ],
                  "displayPrice" : "198",
                  "familyShareable" : true,
                  "groupNumber" : 1,
                  "internalID" : "460D7EFA",
                  "introductoryOffer" : {
                    "billingPlanType" : "BILLED_UPFRONT",
                    "internalID" : "D1989EDF",
                    "numberOfPeriods" : 1,
                    "paymentMode" : "free",
                    "subscriptionPeriod" : "P1W"
                  },
                  "introductoryOffers" : [
                    {
                      "billingPlanType" : "BILLED_UPFRONT",
                      "internalID" : "D1989EDF",
                      "numberOfPeriods" : 1,
                      "paymentMode" : "free",
                      "subscriptionPeriod" : "P1W"
                    },
                    {
                      "billingPlanType" : "MONTHLY",
                      "internalID" : "1CEEA276",
                      "numberOfPeriods" : 1,
                      "paymentMode" : "free",
                      "subscriptionPeriod" : "P2M"
                    }
                  ],
                  "localizations" : [
                    {
                      "description" : "Everything, for a year",
                      "displayName" : "Premium Yearly",
                      "locale" : "en_US"
                    }
                  ],
                  "productID" : "com.example.game.premium.yearly",
                  "recurringSubscriptionPeriod" : "P1Y",
                  "referenceName" : "Premium Yearly",
                  "subscriptionGroupID" : "22255725",
                  "type" : "RecurringSubscription",
                  "winbackOffers" : [

                  ]
                },
                {
                  "adHocOffers" : [

                  ],
                  "billingPlans" : [
                    {
                      "billingPlanType" : "BILLED_UPFRONT",
                      "commitmentDisplayPrice" : "19.99",
                      "displayPrice" : "19.99",
                      "internalID" : "1A8CE555",
                      "isEnabled" : true
                    }
                  ],
                  "codeOffers" : [

                  ],
                  "displayPrice" : "19.99",
                  "familyShareable" : false,
                  "groupNumber" : 2,
                  "internalID" : "6779146686",
                  "introductoryOffers" : [

                  ],
                  "localizations" : [

                  ],
                  "productID" : "com.example.game.premium.monthly",
                  "recurringSubscriptionPeriod" : "P1M",
                  "referenceName" : "Premium Monthly",
                  "subscriptionGroupID" : "22255725",
                  "type" : "RecurringSubscription",
                  "winbackOffers" : [

                  ]
                }
              ]
            }
          ],
          "version" : {
            "major" : 5,
            "minor" : 0
          }
        }
        """#

    @Test func format5ImportsBillingPlansAndEveryIntroductoryOffer() throws {
        let catalog = try TemporaryCatalog()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        let result = try importFile(Self.version5, into: catalog)
        #expect(errors(result.diagnostics) == [])
        #expect(result.added == ["com.example.game.gold", "com.example.game.premium.yearly", "com.example.game.premium.monthly"])
        let products = try #require(catalog.workflow.validate().catalogs.first).products
        let yearly = try #require(products.first { $0.id == "com.example.game.premium.yearly" })
        let metadata = String(decoding: try #require(yearly.metadataJSON), as: UTF8.self)
        #expect(
            metadata.contains(
                #""billingPlans":[{"billingPlanType":"BILLED_UPFRONT","commitmentDisplayPrice":"198","displayPrice":"198","isEnabled":true},{"billingPlanType":"MONTHLY","commitmentDisplayPrice":"216","displayPrice":"18","isEnabled":true}]"#
            ), "\(metadata)")
        #expect(
            metadata.contains(
                #""introductoryOffers":[{"billingPlanType":"BILLED_UPFRONT","numberOfPeriods":1,"paymentMode":"free","subscriptionPeriod":"P1W"},{"billingPlanType":"MONTHLY","numberOfPeriods":1,"paymentMode":"free","subscriptionPeriod":"P2M"}]"#
            ), "\(metadata)")
        #expect(
            metadata.contains(
                #""adHocOffers":[{"billingPlanType":"BILLED_UPFRONT","displayPrice":"99","numberOfPeriods":1,"offerID":"winback-yearly""#),
            "\(metadata)")
        #expect(yearly.subscription?.period == "P1Y")
        // No account data: Xcode's and App Store Connect's ids stay out of the catalog.
        let written = try #require(source(catalog))
        for id in ["8A00F767", "6779146686", "ABCDE12345", "D1989EDF"] { #expect(!written.contains(id), "\(id)") }
    }

    @Test func format5RoundTripsAndExportSaysWhichFormat() throws {
        let catalog = try TemporaryCatalog()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        _ = try importFile(Self.version5, into: catalog)
        let first = catalog.workflow.exportStoreKit(app: Self.app)
        let bytes = try #require(first.bytes)
        #expect(first.format == 5)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains(#""major" : 5"#))
        #expect(text.contains(#""billingPlanType" : "MONTHLY""#))
        // The monthly subscription has no introductory offer: no key, as Xcode 26 writes it.
        let monthly = try #require(text.range(of: #""productID" : "com.example.game.premium.monthly""#))
        let monthlyObject = text[text[..<monthly.lowerBound].range(of: "{", options: .backwards)!.lowerBound..<monthly.lowerBound]
        #expect(!monthlyObject.contains(#""introductoryOffer" :"#))
        #expect(monthlyObject.contains(#""introductoryOffers" : ["#))

        let empty = try TemporaryCatalog()
        defer { try? FileManager.default.removeItem(at: empty.root) }
        let imported = try importFile(text, into: empty)
        #expect(errors(imported.diagnostics) == [])
        #expect(empty.workflow.exportStoreKit(app: Self.app).bytes == bytes)

        // A catalog without billing plans exports format 4, which every current Xcode opens.
        let plain = try TemporaryCatalog()
        defer { try? FileManager.default.removeItem(at: plain.root) }
        try plain.write("\(Self.app).plist", Self.richCatalog)
        #expect(plain.workflow.exportStoreKit(app: Self.app).format == 4)
    }

    // MARK: - Malformed input writes nothing

    static let malformed: [(name: String, text: String, message: String)] = [
        ("not JSON", "<plist/>", "Products.storekit:1:1: error: not a .storekit file: the JSON is malformed: unexpected '<' at byte 0"),
        ("empty", "", "Products.storekit:1:1: error: not a .storekit file: the JSON is malformed: it ends where a value was expected"),
        ("root array", "[]", "Products.storekit:1:1: error: not a .storekit file: the root must be an object, found an array"),
        ("no version", #"{"products": []}"#, "Products.storekit:1:1: error: not a .storekit file: it has no 'version'"),
        (
            "unknown version", #"{"products": [], "version": {"major": 6, "minor": 3}}"#,
            "Products.storekit:1:29: error: unsupported .storekit version 6.3; this tool reads versions 1 to 5"
        ),
        (
            "wrong type", #"{"version": {"major": 4}, "products": [{"productID": 7, "type": "Consumable"}]}"#,
            "Products.storekit:1:54: error: 'productID' must be a string, found a number"
        ),
        (
            "products not an array", #"{"version": {"major": 4}, "products": {}}"#,
            "Products.storekit:1:39: error: 'products' must be an array, found an object"
        ),
        (
            "unknown type", #"{"version": {"major": 4}, "products": [{"productID": "a.b", "type": "Bundle"}]}"#,
            "Products.storekit:1:69: error: unknown product type 'Bundle'; expected Consumable, NonConsumable, NonRenewingSubscription or RecurringSubscription"
        ),
        (
            "duplicate ids",
            #"{"version": {"major": 4}, "products": [{"productID": "a.b", "type": "Consumable"}], "nonRenewingSubscriptions": [{"productID": "a.b", "type": "NonRenewingSubscription"}]}"#,
            "Products.storekit:1:114: error: duplicate product id 'a.b' (first at 1:40)"
        ),
        (
            "duplicate keys", #"{"version": {"major": 4}, "version": {"major": 4}}"#,
            "Products.storekit:1:38: error: not a .storekit file: the JSON is malformed: key 'version' appears twice in one object"
        ),
        (
            "subscription outside a group",
            #"{"version": {"major": 4}, "products": [{"productID": "a.b", "type": "RecurringSubscription"}]}"#,
            "Products.storekit:1:40: error: RecurringSubscription 'a.b' must be in subscriptionGroups[].subscriptions, which gives its group"
        ),
        (
            "breaks a catalog rule",
            #"{"version": {"major": 4}, "products": [{"productID": "a b", "type": "Consumable", "referenceName": "x"}]}"#,
            "Products.storekit:1:40: error: product id 'a b' contains ' '; only letters, digits, '.', '_' and '-' are allowed"
        ),
        (
            "subscription with a bad period",
            #"{"version": {"major": 4}, "subscriptionGroups": [{"name": "g", "subscriptions": [{"productID": "a.b", "type": "RecurringSubscription", "recurringSubscriptionPeriod": "monthly"}]}]}"#,
            "Products.storekit:1:82: error: 'monthly' is not a subscription period; expected an ISO 8601 duration such as P1W, P1M, P3M, P6M or P1Y (product 'a.b')"
        ),
    ]

    @Test(arguments: malformed.indices)
    func malformedInputGivesItsMessageAndWritesNothing(_ index: Int) throws {
        let (_, text, message) = Self.malformed[index]
        let catalog = try TemporaryCatalog()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        try catalog.write("\(Self.app).plist", Self.existing)
        let result = try importFile(text, into: catalog, overwrite: true)
        #expect(errors(result.diagnostics) == [message])
        #expect(!result.wrote)
        #expect(source(catalog) == Self.existing)
    }

    @Test func brokenSourcesAreNotMergedInto() throws {
        let catalog = try TemporaryCatalog()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        let broken = plist("<array>\n\t<string>bad id</string>\n</array>")
        try catalog.write("\(Self.app).plist", broken)
        let result = try importFile(StoreKitFixtures.version1.storekit, into: catalog)
        #expect(
            errors(result.diagnostics) == [
                "catalog/com.example.game.plist:1:1: error: the app's sources have errors; fix them (catalog validate) before importing",
                "catalog/com.example.game.plist:5:2: error: product id 'bad id' contains ' '; only letters, digits, '.', '_' and '-' are allowed",
            ])
        #expect(source(catalog) == broken)
    }

    @Test func catalogXMLIsNotRewritten() throws {
        let catalog = try TemporaryCatalog()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        let xml = #"<catalog xmlns="urn:iap-catalog:1" app="com.example.game"/>"#
        try catalog.write("\(Self.app).xml", xml)
        let result = try importFile(StoreKitFixtures.version1.storekit, into: catalog)
        #expect(result.hasErrors)
        #expect(errors(result.diagnostics).first?.contains("is catalog XML, which import does not rewrite") == true)
        #expect(source(catalog, "\(Self.app).xml") == xml)
        #expect(source(catalog) == nil)
    }
}
