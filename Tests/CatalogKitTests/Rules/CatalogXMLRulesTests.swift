import CatalogKit
import CatalogTestSupport
import Foundation
import Testing

/// Catalog XML: the same model as the plists, checked against its schema. The rules of docs/contract.md section 1, one test per rule, with the exact lines an editor sees
/// (positions: 1-based line and byte column of the start tag concerned).
@Suite struct CatalogXMLRulesTests {

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
                // A product or, since content items, a content element may follow the products.
                "catalog/com.example.game.xml:5:2: error: Element 'gift': This element is not expected. Expected is one of ( product, content ).",
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
