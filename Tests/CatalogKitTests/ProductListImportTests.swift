import CatalogKit
import CatalogTestSupport
import Foundation
import Testing

/// `catalog import plist`: the product lists apps already ship, in the shapes found in public
/// apps and SDKs, each imported to the identifiers it lists, with the shape said; and a build of
/// such a file left as a catalog source is an error that points at the import.
@Suite struct ProductListImportTests {
    static let app = "com.example.game"

    struct Shape: CustomTestStringConvertible, Sendable {
        var name: String
        var plist: String
        var ids: [String]
        var shape: String
        var testDescription: String { name }
    }

    static let shapes: [Shape] = [
        Shape(
            name: "Apple's product_ids.plist",
            plist: "<array><string>com.example.game.level1</string><string>com.example.game.level2</string></array>",
            ids: ["com.example.game.level1", "com.example.game.level2"], shape: "an array of product identifiers"),
        Shape(
            name: "Apple's sample, identifier to emoji",
            plist: "<dict><key>consumable.fuel.octane87</key><string>⛽️</string><key>nonconsumable.car</key><string>🚗</string></dict>",
            ids: ["consumable.fuel.octane87", "nonconsumable.car"], shape: "a dictionary of product identifier to display string"),
        Shape(
            name: "Apple's sample, display name to identifier",
            plist:
                "<dict><key>5 boosts</key><string>consumable.boosts.5</string><key>pickuptruck</key><string>nonconsumable.pickuptruck</string></dict>",
            ids: ["consumable.boosts.5", "nonconsumable.pickuptruck"], shape: "a dictionary of display name to product identifier"),
        Shape(
            name: "StoreHelper's Products and Subscriptions",
            plist: """
                <dict><key>Products</key><array><string>com.rarcher.nonconsumable.flowers.large</string></array>
                <key>Subscriptions</key><array><dict><key>Group</key><string>vip</string><key>Products</key>
                <array><string>com.rarcher.subscription.vip.gold</string><string>com.rarcher.subscription.vip.silver</string></array></dict></array></dict>
                """,
            ids: ["com.rarcher.nonconsumable.flowers.large", "com.rarcher.subscription.vip.gold", "com.rarcher.subscription.vip.silver"],
            shape: "'Products' and 'Subscriptions' groups"),
        Shape(
            name: "groups of identifiers",
            plist:
                "<dict><key>PurchaseGroup1</key><array><string>com.item1.year</string><string>com.item1.lifetime</string></array><key>PurchaseGroup2</key><array><string>com.item2.month</string></array></dict>",
            ids: ["com.item1.year", "com.item1.lifetime", "com.item2.month"], shape: "a dictionary of group name to product identifiers"),
        Shape(
            name: "product dictionaries with ProductId and Type",
            plist: """
                <array><dict><key>Name</key><string>MoreCoins</string><key>Title</key><string>More Coins</string><key>ProductId</key><string>com.myapp.MoreCoins</string><key>Type</key><string>Consumable</string></dict>
                <dict><key>Name</key><string>RemoveAds</string><key>ProductId</key><string>com.myapp.RemoveAds</string><key>Type</key><string>Non-Consumable</string></dict></array>
                """,
            ids: ["com.myapp.MoreCoins", "com.myapp.RemoveAds"], shape: "an array of product dictionaries"),
        Shape(
            name: "product dictionaries with productIdentifier and a consumable flag",
            plist:
                "<array><dict><key>productIdentifier</key><string>com.company.coins50</string><key>consumable</key><true/><key>productValue</key><integer>50</integer></dict></array>",
            ids: ["com.company.coins50"], shape: "an array of product dictionaries"),
        Shape(
            name: "identifier to product dictionary",
            plist:
                "<dict><key>com.example.TestItem</key><dict><key>Title</key><string>Test Item</string><key>ProductType</key><integer>1</integer></dict></dict>",
            ids: ["com.example.TestItem"], shape: "a dictionary of product identifier to product dictionary"),
    ]

    static func document(_ body: String) -> String {
        #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n<plist version=\"1.0\">\n\(body)\n</plist>\n"
    }

    private func importList(_ body: String, into catalog: TemporaryCatalog, overwrite: Bool = false) throws -> CatalogWorkflow.ProductImport
    {
        let url = catalog.root.appendingPathComponent("Products.plist")
        try Data(Self.document(body).utf8).write(to: url)
        return try catalog.workflow.importProductList(from: url, displayPath: "Products.plist", app: Self.app, overwrite: overwrite)
    }

    @Test(arguments: shapes)
    func eachShapeImportsToTheIdentifiersItLists(_ shape: Shape) throws {
        let catalog = try TemporaryCatalog()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        let result = try importList(shape.plist, into: catalog)
        #expect(!result.hasErrors, "\(result.diagnostics)")
        #expect(result.shape?.hasPrefix(shape.shape) == true, "\(String(describing: result.shape))")
        #expect(result.added == shape.ids)
        #expect(result.wrote)
        let validation = catalog.workflow.validate()
        #expect(!validation.hasErrors, "\(validation.diagnostics)")
        #expect(validation.catalogs.first?.products.map(\.id) == shape.ids)
    }

    @Test func typesNamesAndGroupsAreKept() throws {
        let catalog = try TemporaryCatalog()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        _ = try importList(Self.shapes[5].plist, into: catalog)
        let products = try #require(catalog.workflow.validate().catalogs.first).products
        #expect(products.map(\.type) == [.consumable, .nonConsumable])
        #expect(products.map(\.referenceName) == ["MoreCoins", "RemoveAds"])

        let helper = try TemporaryCatalog()
        defer { try? FileManager.default.removeItem(at: helper.root) }
        let result = try importList(Self.shapes[3].plist, into: helper)
        // Subscriptions without a period are kept untyped, with their group, and said so.
        #expect(result.diagnostics.filter { $0.severity == .warning }.count == 2)
        #expect(result.diagnostics.first?.message.contains("gives no period") == true)
        let gold = try #require(helper.workflow.validate().catalogs.first?.products.first { $0.id == "com.rarcher.subscription.vip.gold" })
        #expect(gold.type == nil)
        #expect(gold.metadataJSON.map { String(decoding: $0, as: UTF8.self) } == #"{"subscriptionGroup":"vip"}"#)
    }

    @Test(arguments: [
        ("<dict><key>com.a.x</key><string>com.a.y</string></dict>", "both its keys and its values look like product identifiers"),
        ("<dict><key>hello</key><string>world</string></dict>", "neither its keys nor its values"),
        ("<dict/>", "it is an empty dictionary"),
        ("<string>com.a.x</string>", "its root is <string>"),
    ])
    func anUnrecognisedListSaysWhyAndWritesNothing(body: String, why: String) throws {
        let catalog = try TemporaryCatalog()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        let result = try importList(body, into: catalog)
        #expect(result.hasErrors)
        #expect(
            result.diagnostics.first?.message.contains("not a product list this tool recognises: \(why)") == true, "\(result.diagnostics)")
        #expect(!result.wrote)
        #expect(!FileManager.default.fileExists(atPath: catalog.catalogDirectory.appendingPathComponent("\(Self.app).plist").path))
    }

    /// The mistake this command exists for: a product list of another shape saved as the app's
    /// source. The build used to publish an app with no products and exit 0.
    @Test(arguments: [shapes[1], shapes[3], shapes[5]])
    func aSourceInAnotherShapeIsAnErrorThatNamesTheImport(_ shape: Shape) throws {
        let catalog = try TemporaryCatalog()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        try catalog.write("\(Self.app).plist", Self.document(shape.plist))
        let build = try catalog.workflow.build(at: buildMoment, dryRun: false)
        #expect(build.hasErrors)
        let errors = build.diagnostics.filter { $0.severity == .error }.map(\.message)
        #expect(errors.count == 1, "\(errors)")
        #expect(errors.first?.contains("catalog import plist") == true, "\(errors)")
        #expect(catalog.tree.publishedApps().isEmpty)
    }
}
