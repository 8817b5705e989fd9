import CatalogKit
import CatalogTestSupport
import Content
import Foundation
import Testing

/// Content items in the catalog (docs/catalog-format.md, "Content"): both formats, both layouts,
/// and one test per diagnostic, with the exact line an editor sees.
@Suite struct ContentRulesTests {
    /// A single-file app with a non-consumable, a consumable and a subscription of group
    /// `game.pass`, then `items` as its `content` array. The first item's `<dict>` is at 35:3, its `id` string at 37:4,
    /// and each key after it two lines further.
    static func app(_ items: String...) -> String {
        plist(
            """
            <dict>
            \t<key>products</key>
            \t<array>
            \t\t<dict>
            \t\t\t<key>id</key>
            \t\t\t<string>com.example.game.pack</string>
            \t\t\t<key>type</key>
            \t\t\t<string>non-consumable</string>
            \t\t</dict>
            \t\t<dict>
            \t\t\t<key>id</key>
            \t\t\t<string>com.example.game.gold</string>
            \t\t\t<key>type</key>
            \t\t\t<string>consumable</string>
            \t\t</dict>
            \t\t<dict>
            \t\t\t<key>id</key>
            \t\t\t<string>com.example.game.pass</string>
            \t\t\t<key>type</key>
            \t\t\t<string>auto-renewable</string>
            \t\t\t<key>subscription</key>
            \t\t\t<dict>
            \t\t\t\t<key>group</key>
            \t\t\t\t<string>game.pass</string>
            \t\t\t\t<key>period</key>
            \t\t\t\t<string>P1M</string>
            \t\t\t</dict>
            \t\t</dict>
            \t</array>
            \t<key>content</key>
            \t<array>
            \(items.map { "\t\t<dict>\n" + indented($0, by: 3) + "\n\t\t</dict>" }.joined(separator: "\n"))
            \t</array>
            </dict>
            """)
    }

    /// An item's keys: `id`, then `product` or `group` (+ `published`), then `files`.
    static func item(
        _ id: String, product: String? = nil, group: String? = nil, published: String? = nil, folder: String? = nil, files: [String]
    )
        -> String
    {
        var lines = ["<key>id</key>", "<string>\(id)</string>"]
        if let product { lines += ["<key>product</key>", "<string>\(product)</string>"] }
        if let group { lines += ["<key>group</key>", "<string>\(group)</string>"] }
        if let published { lines += ["<key>published</key>", "<date>\(published)</date>"] }
        if let folder { lines += ["<key>folder</key>", "<string>\(folder)</string>"] }
        lines += ["<key>files</key>", "<array>"] + files.map { "\t<string>\($0)</string>" } + ["</array>"]
        return lines.joined(separator: "\n")
    }

    /// Validates `com.example.game.plist` (``app(_:)``) with `files` in `com.example.game.content/`.
    static func validate(_ source: String, files: [String: String] = ["levels/1.json": "{}", "levels/2.json": "[]"]) throws -> [String] {
        try withCatalog { catalog in
            try catalog.write("com.example.game.plist", source)
            for (path, text) in files { try catalog.write("com.example.game.content/\(path)", text) }
            return catalog.diagnostics()
        }
    }

    static let game = "catalog/com.example.game.plist"

    @Test func itemsOfBothKindsValidate() throws {
        try withCatalog { catalog in
            try catalog.write(
                "com.example.game.plist",
                Self.app(
                    Self.item("levels", product: "com.example.game.pack", folder: "levels", files: ["1.json", "2.json"]),
                    Self.item("issue-1", group: "game.pass", published: "2026-02-01T00:00:00Z", files: ["issue1.txt"])))
            try catalog.write("com.example.game.content/levels/1.json", "{}")
            try catalog.write("com.example.game.content/levels/2.json", "[1]")
            try catalog.write("com.example.game.content/issue1.txt", "hello")
            let validation = catalog.workflow.validate()
            // The content folder beside the file is not an app of its own.
            #expect(validation.diagnostics.map(\.description) == [])
            let items = try #require(validation.catalogs.first).content
            #expect(items.map(\.id) == ["issue-1", "levels"])
            #expect(items[0].availability == .subscriptionGroup("game.pass", published: Date(timeIntervalSince1970: 1_769_904_000)))
            #expect(items[1].availability == .product("com.example.game.pack"))
            #expect(items[1].files.map(\.path) == ["1.json", "2.json"])
            #expect(items[1].files.map(\.size) == [2, 3])
            #expect(items[0].files.map(\.source.lastPathComponent) == ["issue1.txt"])
        }
    }

    /// Catalog XML says the same with `<content>` elements; a folder app keeps its files in `content/`.
    @Test func catalogXMLAndFolderApps() throws {
        try withCatalog { catalog in
            try catalog.write(
                "com.example.news.xml",
                catalogXML(
                    app: "com.example.news",
                    """
                    <product id="com.example.news.monthly" type="auto-renewable">
                      <subscription group="news.plus" period="P1M"/>
                    </product>
                    <content id="2026-03" group="news.plus" published="2026-03-01T00:00:00Z" folder="issues/2026-03">
                      <file>issue.txt</file>
                      <file>cover/front.txt</file>
                    </content>
                    """))
            try catalog.write("com.example.news.content/issues/2026-03/issue.txt", "March")
            try catalog.write("com.example.news.content/issues/2026-03/cover/front.txt", "cover")
            try catalog.write(
                "com.example.game/products.plist", productsPlist("<key>id</key>\n<string>com.example.game.pack</string>"))
            try catalog.write(
                "com.example.game/content.plist",
                plist(
                    """
                    <dict>
                    \t<key>content</key>
                    \t<array>
                    \t\t<dict>
                    \(indented(Self.item("pack", product: "com.example.game.pack", files: ["pack.json"]), by: 3))
                    \t\t</dict>
                    \t</array>
                    </dict>
                    """))
            try catalog.write("com.example.game/content/pack.json", "{}")
            let validation = catalog.workflow.validate()
            #expect(validation.diagnostics.map(\.description) == [])
            let news = try #require(validation.catalogs.first { $0.app == "com.example.news" }).content
            #expect(news.map(\.id) == ["2026-03"])
            #expect(news.first?.files.map(\.path) == ["cover/front.txt", "issue.txt"])
            let game = try #require(validation.catalogs.first { $0.app == "com.example.game" }).content
            #expect(game.map(\.id) == ["pack"])
        }
    }

    @Test func theProductMustExistAndNotBeAConsumable() throws {
        #expect(
            try Self.validate(Self.app(Self.item("a", product: "com.example.game.nothing", files: ["levels/1.json"])))
                == ["\(Self.game):39:4: error: content 'a' names product 'com.example.game.nothing', which is not in the catalog"])
        #expect(
            try Self.validate(Self.app(Self.item("a", product: "com.example.game.gold", files: ["levels/1.json"]))) == [
                "\(Self.game):39:4: error: product 'com.example.game.gold' is a consumable; consumables have no lasting content, so sell the content with a non-consumable or a subscription"
            ])
    }

    /// Products are found by id in the file that defines them, whichever of a folder app's files
    /// that is, and the first definition counts: a product sold twice is the duplicate rule's.
    @Test func theProductNamedIsFoundInAnyFileOfTheApp() throws {
        try withCatalog { catalog in
            let types = ["a": ["pack": "non-consumable"], "b": ["gold": "consumable", "map": "non-consumable"]]
            for (file, products) in types {
                try catalog.write(
                    "com.example.game/\(file).plist",
                    productsPlist(
                        products.keys.sorted().map {
                            "<key>id</key>\n<string>com.example.game.\($0)</string>\n<key>type</key>\n<string>\(products[$0]!)</string>"
                        }))
            }
            let items = [("pack", "pack"), ("map", "map"), ("gold", "gold"), ("none", "nothing")].map { id, product in
                "\t\t<dict>\n" + indented(Self.item(id, product: "com.example.game.\(product)", files: ["levels.json"]), by: 3)
                    + "\n\t\t</dict>"
            }
            try catalog.write(
                "com.example.game/content.plist",
                plist("<dict>\n\t<key>content</key>\n\t<array>\n" + items.joined(separator: "\n") + "\n\t</array>\n</dict>"))
            try catalog.write("com.example.game/content/levels.json", "{}")
            #expect(
                catalog.diagnostics() == [
                    "catalog/com.example.game/content.plist:31:4: error: product 'com.example.game.gold' is a consumable; consumables have no lasting content, so sell the content with a non-consumable or a subscription",
                    "catalog/com.example.game/content.plist:41:4: error: content 'none' names product 'com.example.game.nothing', which is not in the catalog",
                ])
        }
    }

    @Test func theGroupMustExistAndItsItemsBeDated() throws {
        #expect(
            try Self.validate(Self.app(Self.item("a", group: "game.other", published: "2026-01-01T00:00:00Z", files: ["levels/1.json"])))
                == [
                    "\(Self.game):39:4: error: content 'a' names subscription group 'game.other', which no product has; the groups are 'game.pass'"
                ])
        #expect(
            try Self.validate(Self.app(Self.item("a", group: "game.pass", files: ["levels/1.json"]))) == [
                "\(Self.game):35:3: error: content 'a' is a dated item of group 'game.pass'; give it a 'published' date such as 2026-03-01T00:00:00Z"
            ])
        #expect(
            try Self.validate(
                Self.app(Self.item("a", product: "com.example.game.pack", published: "2026-01-01T00:00:00Z", files: ["levels/1.json"])))
                == [
                    "\(Self.game):41:4: error: 'published' dates a subscription group's item; content 'a' is sold with product 'com.example.game.pack', so leave it out"
                ])
        // A date that is not one is reported once, where it is written.
        let malformed = Self.app(
            Self.item("a", group: "game.pass", files: ["levels/1.json"]) + "\n<key>published</key>\n<string>March 1</string>")
        #expect(try Self.validate(malformed).count == 1)
        #expect(try Self.validate(malformed).first?.hasPrefix("\(Self.game):45:4: error: ") == true)
    }

    @Test func anItemIsSoldOneWay() throws {
        #expect(
            try Self.validate(
                Self.app(
                    Self.item(
                        "a", product: "com.example.game.pack", group: "game.pass", published: "2026-01-01T00:00:00Z",
                        files: ["levels/1.json"]))
            ) == [
                "\(Self.game):41:4: error: content 'a' names both product 'com.example.game.pack' and group 'game.pass'; an item is sold one way"
            ])
        #expect(
            try Self.validate(Self.app(Self.item("a", files: ["levels/1.json"]))) == [
                "\(Self.game):35:3: error: content 'a' names no 'product' or 'group'; say how it is sold"
            ])
    }

    @Test func idsAreNamesAndUniqueAcrossTheApp() throws {
        #expect(
            try Self.validate(
                Self.app(
                    Self.item("levels", product: "com.example.game.pack", files: ["levels/1.json"]),
                    Self.item("levels", product: "com.example.game.pack", files: ["levels/2.json"]))) == [
                    "\(Self.game):47:4: error: duplicate content id 'levels' (first at 37:4)"
                ])
        #expect(
            try Self.validate(Self.app(Self.item("a/b", product: "com.example.game.pack", files: ["levels/1.json"]))) == [
                "\(Self.game):37:4: error: content id 'a/b' may only have letters, digits, '.', '_' and '-'"
            ])
        #expect(
            try Self.validate(Self.app("<key>product</key>\n<string>com.example.game.pack</string>\n<key>files</key>\n<array/>")) == [
                "\(Self.game):35:3: error: content item has no 'id'"
            ])
    }

    @Test func pathsAreRelativeAndInsideTheContentFolder() throws {
        for path in ["../secret.txt", "/etc/passwd", "levels/./1.json", "levels//1.json", "levels\\1.json", ""] {
            #expect(
                try Self.validate(Self.app(Self.item("a", product: "com.example.game.pack", files: [path]))) == [
                    "\(Self.game):42:5: error: content file '\(path)' must be a relative path: '/'-separated, with no empty, '.' or '..' part, no backslash and no control character"
                ], "\(path)")
        }
        #expect(
            try Self.validate(Self.app(Self.item("a", product: "com.example.game.pack", folder: "../levels", files: ["1.json"]))) == [
                "\(Self.game):41:4: error: content folder '../levels' must be a relative path inside catalog/com.example.game.content: '/'-separated, with no empty, '.' or '..' part"
            ])
        #expect(
            try Self.validate(Self.app(Self.item("a", product: "com.example.game.pack", files: ["levels/1.json", "levels/1.json"]))) == [
                "\(Self.game):43:5: error: content file 'levels/1.json' is listed twice in 'a' (first at 42:5)"
            ])
    }

    @Test func filesMustExistAndBeRegularFiles() throws {
        #expect(
            try Self.validate(Self.app(Self.item("a", product: "com.example.game.pack", files: ["levels/3.json"]))) == [
                "\(Self.game):42:5: error: content file catalog/com.example.game.content/levels/3.json does not exist"
            ])
        #expect(
            try Self.validate(Self.app(Self.item("a", product: "com.example.game.pack", files: ["levels"]))) == [
                "\(Self.game):42:5: error: content file catalog/com.example.game.content/levels is not a regular file"
            ])
        // Directly in the folder, as in a subfolder: missing, and a link that leads nowhere.
        #expect(
            try Self.validate(Self.app(Self.item("a", product: "com.example.game.pack", files: ["3.json"]))) == [
                "\(Self.game):42:5: error: content file catalog/com.example.game.content/3.json does not exist"
            ])
        try withCatalog { catalog in
            try catalog.write("com.example.game.plist", Self.app(Self.item("a", product: "com.example.game.pack", files: ["gone.json"])))
            try catalog.write("com.example.game.content/levels/1.json", "{}")
            try FileManager.default.createSymbolicLink(
                atPath: catalog.catalogDirectory.appendingPathComponent("com.example.game.content/gone.json").path,
                withDestinationPath: "levels/gone.json")
            #expect(
                catalog.diagnostics() == [
                    "\(Self.game):42:5: error: content file catalog/com.example.game.content/gone.json does not exist"
                ])
        }
        #expect(
            try Self.validate(Self.app(Self.item("a", product: "com.example.game.pack", files: ["levels/1.json"])), files: [:]) == [
                "\(Self.game):41:4: error: content 'a' has files, but its content folder catalog/com.example.game.content does not exist"
            ])
        #expect(
            try Self.validate(Self.app(Self.item("a", product: "com.example.game.pack", files: []))) == [
                "\(Self.game):41:4: error: content 'a' lists no files"
            ])
    }

    /// The attack: a symbolic link inside the content folder that points at a file outside it
    /// (the server's key, say) would publish that file to every buyer.
    @Test func aSymbolicLinkMayNotLeadOutOfTheContentFolder() throws {
        try withCatalog { catalog in
            try catalog.write(
                "com.example.game.plist", Self.app(Self.item("a", product: "com.example.game.pack", files: ["key.pem", "inner.json"])))
            let secret = catalog.root.appendingPathComponent("secret/key.pem")
            try FileManager.default.createDirectory(at: secret.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data("PRIVATE".utf8).write(to: secret)
            try catalog.write("com.example.game.content/levels/1.json", "{}")
            let content = catalog.catalogDirectory.appendingPathComponent("com.example.game.content")
            try FileManager.default.createSymbolicLink(
                atPath: content.appendingPathComponent("key.pem").path, withDestinationPath: "../../secret/key.pem")
            // A link that stays inside is followed.
            try FileManager.default.createSymbolicLink(
                atPath: content.appendingPathComponent("inner.json").path, withDestinationPath: "levels/1.json")
            #expect(
                catalog.diagnostics() == [
                    "\(Self.game):42:5: error: content file catalog/com.example.game.content/key.pem leads outside catalog/com.example.game.content through a symbolic link; keep content files inside it"
                ])
            try FileManager.default.removeItem(at: content.appendingPathComponent("key.pem"))
            try catalog.write("com.example.game.content/key.pem", "public")
            #expect(catalog.diagnostics() == [])
        }
    }

    @Test func filesAreAtMostEightGiB() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.game.plist", Self.app(Self.item("a", product: "com.example.game.pack", files: ["huge.bin"])))
            try catalog.write("com.example.game.content/huge.bin", "")
            // Sparse: no disk is used for the bytes.
            let handle = try FileHandle(forWritingTo: catalog.catalogDirectory.appendingPathComponent("com.example.game.content/huge.bin"))
            try handle.truncate(atOffset: UInt64(ContentRules.maximumFileSize) + 1)
            try handle.close()
            #expect(
                catalog.diagnostics() == [
                    "\(Self.game):42:5: error: content file catalog/com.example.game.content/huge.bin is 8589934593 bytes; the largest content file is 8589934592 bytes (8 GiB): split it into several files"
                ])
        }
    }

    /// A file no item lists is not published: a typo in a path would otherwise go unnoticed.
    /// Names are read where `readdir` leaves them: a big folder fills its buffer to the end, and
    /// the longest names (255 bytes) come back whole. A copy of each entry's whole name field read
    /// past the end of that buffer, and a build crashed on it once; that overread fails this test
    /// reliably only under AddressSanitizer, since without it only a buffer ending at a page faults.
    @Test func aBigFolderOfLongNamesIsReadWhole() throws {
        let longest = String(repeating: "n", count: 250) + ".json"
        var files = [longest: "{}"]
        for number in 0..<600 { files["f\(number)" + String(repeating: "x", count: number % 240)] = "" }
        let found = try Self.validate(Self.app(Self.item("a", product: "com.example.game.pack", files: [longest])), files: files)
        // Twenty files named, then how many more.
        #expect(found.count == 21)
        #expect(found.allSatisfy { !$0.contains(longest) })
        #expect(found.contains("catalog/com.example.game.content:1:1: warning: 580 more files that no content item lists"))
    }

    @Test func filesNoItemListsAreWarnings() throws {
        #expect(
            try Self.validate(
                Self.app(Self.item("a", product: "com.example.game.pack", files: ["levels/1.json"])),
                files: ["levels/1.json": "{}", "levels/2.json": "[]", ".DS_Store": "", "levels/.hidden/x": ""]) == [
                    "catalog/com.example.game.content/levels/2.json:1:1: warning: no content item lists this file, so it is not published"
                ])
        // With no item at all, every file is reported.
        #expect(
            try Self.validate(Self.app(), files: ["levels/1.json": "{}"]) == [
                "catalog/com.example.game.content/levels/1.json:1:1: warning: no content item lists this file, so it is not published"
            ])
        // Folders at any depth are searched; a link is looked at, never followed: a link to a
        // folder is not a file, and what the folder holds is reported under its own path once.
        try withCatalog { catalog in
            try catalog.write(
                "com.example.game.plist", Self.app(Self.item("a", product: "com.example.game.pack", files: ["levels/1.json"])))
            for path in ["levels/1.json", "deep/er/still/2.json", ".hidden/3.json"] {
                try catalog.write("com.example.game.content/\(path)", "{}")
            }
            let content = catalog.catalogDirectory.appendingPathComponent("com.example.game.content")
            try FileManager.default.createSymbolicLink(atPath: content.appendingPathComponent("shortcut").path, withDestinationPath: "deep")
            try FileManager.default.createSymbolicLink(
                atPath: content.appendingPathComponent("alias.json").path, withDestinationPath: "deep/er/still/2.json")
            #expect(
                catalog.diagnostics() == [
                    "catalog/com.example.game.content/alias.json:1:1: warning: no content item lists this file, so it is not published",
                    "catalog/com.example.game.content/deep/er/still/2.json:1:1: warning: no content item lists this file, so it is not published",
                ])
        }
    }
}
