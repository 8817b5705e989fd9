import Content
import Foundation
import Testing

/// The content manifest (docs/content.md, "The manifest"): byte-stable JSON, its rules, versions.
@Suite struct ContentManifestTests {
    static let a = ContentDigest.of(Data("a".utf8))
    static let b = ContentDigest.of(Data("b".utf8))
    static let c = ContentDigest.of(Data("c".utf8))
    static let march = Date(timeIntervalSince1970: 1_740_787_200)  // 2025-03-01T00:00:00Z

    static func items(levels: ContentDigest = a) -> [ContentManifest.Item] {
        [
            .init(
                id: "mar-2025", subscriptionGroup: "magazine", published: march,
                files: [.init(path: "issue.pdf", size: 1, sha256: b), .init(path: "cover.jpg", size: 1, sha256: c)]),
            .init(id: "levels", product: "levels.pack", files: [.init(path: "levels/1.json", size: 1, sha256: levels)]),
        ]
    }

    @Test func jsonIsByteStable() throws {
        let manifest = try ContentManifest(items: Self.items())
        let json = String(decoding: manifest.encoded(), as: UTF8.self)
        let expected =
            #"{"format":1,"items":[{"files":[{"path":"levels/1.json","sha256":"\#(Self.a.hex)","size":1}],"id":"levels","product":"levels.pack","version":1},"#
            + #"{"files":[{"path":"cover.jpg","sha256":"\#(Self.c.hex)","size":1},{"path":"issue.pdf","sha256":"\#(Self.b.hex)","size":1}],"#
            + #""id":"mar-2025","published":"2025-03-01T00:00:00Z","subscriptionGroup":"magazine","version":1}]}"#
        #expect(json == expected)
        // Items and files given in another order give the same bytes.
        #expect(try ContentManifest(items: Self.items().reversed()).encoded() == manifest.encoded())
        // And the bytes read back to the same manifest, and the same bytes.
        let decoded = try ContentManifest.decode(manifest.encoded())
        #expect(decoded == manifest)
        #expect(decoded.encoded() == manifest.encoded())
        #expect(decoded.digests == [Self.a, Self.b, Self.c])
        #expect(
            decoded.availabilities == [
                "levels": .product("levels.pack"), "mar-2025": .subscriptionGroup("magazine", published: Self.march),
            ])
    }

    @Test(arguments: [
        (ContentManifest.Item(id: "x", product: "p", files: []), "the item x has no files"),
        (ContentManifest.Item(id: "", product: "p", files: [.init(path: "f", size: 1, sha256: a)]), "an item id is 1 to 200 characters"),
        (
            ContentManifest.Item(id: "x", files: [.init(path: "f", size: 1, sha256: a)]),
            "the item x names a product, or a subscription group"
        ),
        (
            ContentManifest.Item(
                id: "x", product: "p", subscriptionGroup: "g", published: march, files: [.init(path: "f", size: 1, sha256: a)]),
            "the item x names a product, or a subscription group"
        ),
        (
            ContentManifest.Item(id: "x", subscriptionGroup: "g", files: [.init(path: "f", size: 1, sha256: a)]),
            "the item x names a product"
        ),
        (
            ContentManifest.Item(id: "x", product: "p", files: [.init(path: "../../etc/passwd", size: 1, sha256: a)]),
            "the item x has a file path"
        ),
        (
            ContentManifest.Item(id: "x", product: "p", files: [.init(path: "/etc/passwd", size: 1, sha256: a)]),
            "the item x has a file path"
        ),
        (ContentManifest.Item(id: "x", product: "p", files: [.init(path: "a/./b", size: 1, sha256: a)]), "the item x has a file path"),
        (ContentManifest.Item(id: "x", product: "p", files: [.init(path: "a//b", size: 1, sha256: a)]), "the item x has a file path"),
        (ContentManifest.Item(id: "x", product: "p", files: [.init(path: "a\\..\\b", size: 1, sha256: a)]), "the item x has a file path"),
        (ContentManifest.Item(id: "x", product: "p", files: [.init(path: "a\nb", size: 1, sha256: a)]), "the item x has a file path"),
        (
            ContentManifest.Item(
                id: "x", product: "p", files: [.init(path: "f", size: 1, sha256: a), .init(path: "f", size: 1, sha256: b)]),
            "the item x lists f twice"
        ),
        (
            ContentManifest.Item(id: "x", product: "p", files: [.init(path: "f", size: -1, sha256: a)]),
            "the file f of x has a negative size"
        ),
        (
            ContentManifest.Item(id: "x", version: 0, product: "p", files: [.init(path: "f", size: 1, sha256: a)]),
            "the item x has version 0"
        ),
    ])
    func brokenItemsAreRefused(item: ContentManifest.Item, message: String) {
        let error = #expect(throws: ContentManifestError.self) { try ContentManifest(items: [item]) }
        #expect(error?.message.hasPrefix(message) == true, "\(String(describing: error))")
    }

    /// The path rule on its own: printable ASCII is checked byte by byte, anything else scalar by
    /// scalar, so a control character is refused whichever range it is in.
    @Test func pathsAreRelativeNamesWithoutControlCharacters() {
        for path in ["f", "levels/1.json", "café/été.txt", "a b/c-d_e.f", ".hidden/x", "..x/y"] {
            #expect(ContentManifest.isValidPath(path), "\(path)")
        }
        let refused = [
            "", "/f", "f/", "a//b", "./f", "a/../b", "..", "a\\b", "a\u{301}\\b",
            // A backslash that a combining mark joins into one Character: `String.contains("\\")`,
            // which compares Characters, did not see it.
            "a\\\u{301}b", "a\tb", "a\u{0}b", "a\u{1F}", "a\u{7F}", "é\u{85}",
            "é\u{9F}", String(repeating: "a", count: 1025),
        ]
        for path in refused { #expect(!ContentManifest.isValidPath(path), "\(path.debugDescription)") }
    }

    @Test func anItemListedTwiceIsRefused() {
        let item = ContentManifest.Item(id: "x", product: "p", files: [.init(path: "f", size: 1, sha256: Self.a)])
        let error = #expect(throws: ContentManifestError.self) { try ContentManifest(items: [item, item]) }
        #expect(error?.message == "the item x is listed twice")
    }

    @Test(arguments: [
        (#"{"format":2,"items":[]}"#, "content manifest format 2"),
        (
            #"{"format":1,"items":[{"files":[{"path":"f","sha256":"ABC","size":1}],"id":"x","product":"p","version":1}]}"#,
            "not a content manifest"
        ),
        (
            #"{"format":1,"items":[{"files":[{"path":"../f","sha256":"\#(a.hex)","size":1}],"id":"x","product":"p","version":1}]}"#,
            "the item x has a file path"
        ),
        (
            #"{"format":1,"items":[{"files":[{"path":"f","sha256":"\#(a.hex)","size":1}],"id":"y","product":"p","version":1},{"files":[{"path":"f","sha256":"\#(a.hex)","size":1}],"id":"x","product":"p","version":1}]}"#,
            "the items or files of a content manifest are out of order"
        ),
    ])
    func badManifestFilesAreRefused(json: String, message: String) {
        let error = #expect(throws: ContentManifestError.self) { try ContentManifest.decode(Data(json.utf8)) }
        #expect(error?.message.hasPrefix(message) == true, "\(String(describing: error))")
    }

    @Test func versionsFollowThePreviousManifest() throws {
        let first = try ContentManifest(items: Self.items(), following: nil)
        #expect(first.items.map(\.version) == [1, 1])

        // Unchanged: the same versions, the same bytes.
        let same = try ContentManifest(items: Self.items(), following: first)
        #expect(same.encoded() == first.encoded())

        // One file changed: that item's next version; a new item starts at 1.
        var items = Self.items(levels: Self.c)
        items.append(
            .init(
                id: "apr-2025", subscriptionGroup: "magazine", published: Self.march.addingTimeInterval(31 * 86_400),
                files: [
                    .init(path: "issue.pdf", size: 1, sha256: Self.a)
                ]))
        let second = try ContentManifest(items: items, following: same)
        #expect(second.items.map(\.id) == ["apr-2025", "levels", "mar-2025"])
        #expect(second.items.map(\.version) == [1, 2, 1])
        let third = try ContentManifest(items: Self.items(levels: Self.a), following: second)
        #expect(third.items.map(\.version) == [3, 1])
    }
}
