import CatalogKit
import CatalogTestSupport
import Foundation
import Testing
import Time

/// Publishing (docs/contract.md section 2): exact feed bytes, manifests, validators from content,
/// byte stability, history rules, dry runs and atomicity.
@Suite struct PublishingTests {
    // MARK: - The seed example

    static let seed = seedCatalog

    /// Apple's `product_ids.plist` example becomes exactly the JSON array Apple's sample code parses.
    @Test func seedExample() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.app.plist", Self.seed)
            let plans = try catalog.publish(at: buildMoment)
            #expect(plans.map(\.app) == ["com.example.app"])
            #expect(plans.map(\.revision) == [1])
            let expected = seedProductsJSON
            #expect(text(catalog.published("v1/apps/com.example.app/products.json")) == expected)
            #expect(text(catalog.published("v1/apps/com.example.app/revisions/1/products.json")) == expected)
            let gzip = try #require(catalog.published("v1/apps/com.example.app/products.json.gz"))
            #expect(text(Gzip.decompress(gzip)) == expected)
            #expect(catalog.published("v1/apps/com.example.app/revisions/1/products.json.gz") == gzip)
            #expect(
                try JSONSerialization.jsonObject(with: Data(expected.utf8)) as? [String] == [
                    "com.example.level1", "com.example.level2", "com.example.rocket_car",
                ])
            #expect(
                text(catalog.published("v1/apps/com.example.app/catalog.json")) == """
                    {"app":"com.example.app","revision":1,"publishedAt":"2026-03-01T12:00:00Z",\
                    "products":[{"id":"com.example.level1"},{"id":"com.example.level2"},{"id":"com.example.rocket_car"}],"known":[]}
                    """)
        }
    }

    // MARK: - Golden feeds

    static let app = "com.example.game"

    /// Two platforms, a minimum version, a retired, a removed and a draft product, display
    /// orders, nested metadata, and availability windows around `buildMoment` (2026-03-01T12:00:00Z).
    static let goldenSource = golden("com.example.game.plist")

    // The rich feed is lean: what apps need to offer and present a product. Reference name,
    // status, display order and the start of availability are for editors (the snapshot).
    static let goldenDefaultProducts = golden("default/products.json")
    static let goldenIOSBaseProducts = golden("ios-base/products.json")
    static let goldenDefaultCatalog = golden("default/catalog.json")
    static let goldenIOSBaseCatalog = golden("ios-base/catalog.json")

    /// A file of `Fixtures/golden/`, read from beside this file as it is: the exact bytes a feed
    /// must have (no newline at the end), or the source the feeds are built from.
    static func golden(_ name: String) -> String {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/golden/\(name)")
        guard let bytes = FileManager.default.contents(atPath: url.path) else {
            Issue.record("no fixture at \(url.path)")
            return ""
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Sellable means cleared and in its window; feed order is displayOrder, then source order.
    /// Retired and removed products are known; the draft, the future and the past are absent.
    @Test func goldenFeeds() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.game.plist", Self.goldenSource)
            try catalog.publish(at: buildMoment)
            let manifest = try #require(try catalog.tree.currentManifest(Self.app))
            let iosBase = Variant(platform: .iOS, band: .zero)
            #expect(text(try catalog.feed(Self.app, manifest, .all, "products.json")) == Self.goldenDefaultProducts)
            #expect(text(try catalog.feed(Self.app, manifest, .all, "catalog.json")) == Self.goldenDefaultCatalog)
            #expect(text(try catalog.feed(Self.app, manifest, iosBase, "products.json")) == Self.goldenIOSBaseProducts)
            #expect(text(try catalog.feed(Self.app, manifest, iosBase, "catalog.json")) == Self.goldenIOSBaseCatalog)
            // The static tree holds the default variant at the app's URL.
            #expect(text(catalog.published("v1/apps/com.example.game/products.json")) == Self.goldenDefaultProducts)
            #expect(text(catalog.published("v1/apps/com.example.game/catalog.json")) == Self.goldenDefaultCatalog)
            #expect(text(catalog.published("v1/apps/com.example.game/revisions/1/products.json")) == Self.goldenDefaultProducts)
            #expect(text(catalog.published("v1/apps/com.example.game/revisions/1/catalog.json")) == Self.goldenDefaultCatalog)
            // The snapshot keeps every field, escaped as JSON.
            let snapshot = try catalog.tree.productSnapshot(Self.app, revision: 1)
            #expect(
                snapshot.map(\.id) == [
                    "com.example.game.coins", "com.example.game.levels", "com.example.game.pro", "com.example.game.old",
                    "com.example.game.next", "com.example.game.summer", "com.example.game.winter", "com.example.game.spring",
                    "com.example.game.gone",
                ])
            let coins = try #require(snapshot.first.map { try JSONSerialization.jsonObject(with: Data($0.json)) as? [String: Any] } ?? nil)
            #expect(coins["referenceName"] as? String == "100 \"Coins\" – Pièces")
            #expect(coins["status"] as? String == "cleared")
        }
    }

    /// pro needs iOS and 2.0; every other sellable product is offered everywhere.
    @Test(
        arguments: [
            (nil, nil, true), (nil, "0.0", false), (nil, "2.0", true),
            (Platform.iOS, nil, true), (.iOS, "0.0", false), (.iOS, "2.0", true),
            (.macOS, nil, false), (.macOS, "0.0", false), (.macOS, "2.0", false),
        ] as [(Platform?, String?, Bool)])
    func productsOfEveryVariant(platform: Platform?, band: String?, offersPro: Bool) throws {
        try withCatalog { catalog in
            try catalog.write("com.example.game.plist", Self.goldenSource)
            try catalog.publish(at: buildMoment)
            let manifest = try #require(try catalog.tree.currentManifest(Self.app))
            let variant = Variant(platform: platform, band: band.flatMap { AppVersion($0) })
            let products = try catalog.feed(Self.app, manifest, variant, "products.json")
            #expect(text(products) == (offersPro ? Self.goldenDefaultProducts : Self.goldenIOSBaseProducts))
            let catalogJSON = try #require(text(try catalog.feed(Self.app, manifest, variant, "catalog.json")))
            #expect(catalogJSON == (offersPro ? Self.goldenDefaultCatalog : Self.goldenIOSBaseCatalog))
        }
    }

    /// A rebuild writes the snapshot its diff was computed from: every product, every field,
    /// in source order, as a first publication would.
    @Test func aRebuildWritesTheCompleteSnapshot() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.game.plist", Self.goldenSource)
            try catalog.publish(at: buildMoment)
            try catalog.write(
                "com.example.game.plist",
                Self.goldenSource.replacingOccurrences(
                    of: "<string>com.example.game.next</string>\n\t\t\t<key>status</key>\n\t\t\t<string>draft</string>",
                    with: "<string>com.example.game.next</string>\n\t\t\t<key>status</key>\n\t\t\t<string>cleared</string>"))
            let plan = try #require(try catalog.publish(at: buildMoment.adding(60)).first)
            #expect(plan.revision == 2)
            let products = try #require(catalog.workflow.validate().catalogs.first).products
            let written = try catalog.tree.productSnapshot(Self.app, revision: 2)
            #expect(written.map(\.id) == products.map(\.id))
            #expect(written.map(\.json) == products.map { FeedRenderer.encode($0, for: .snapshot) })
        }
    }

    /// `public/` holds only what may be public, as it is copied to any static host: no file under
    /// it names the draft, the product scheduled for June or an editor's reference name, and no
    /// revision keeps its records there. The records tree beside it keeps them, and the feeds
    /// scheduled for June are served from it when June comes.
    @Test func publicHoldsOnlyWhatMayBePublic() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.game.plist", Self.goldenSource)
            try catalog.publish(at: buildMoment)
            let manifest = try #require(try catalog.tree.currentManifest(Self.app))
            #expect(manifest.schedule?.isEmpty == false, "the fixture schedules a change")
            let published = catalog.publicSnapshot()
            for (path, bytes) in published {
                let text = String(decoding: Gzip.decompress(bytes) ?? bytes, as: UTF8.self)
                for secret in ["com.example.game.next", "com.example.game.summer", "Pièces"] {
                    #expect(!text.contains(secret), "\(path) shows \(secret)")
                }
            }
            #expect(!published.keys.contains { $0.contains("identifiers.tsv") || $0.contains(".jsonl") || $0.contains("/scheduled/") })
            let records = catalog.tree.recordsDirectory(Self.app, 1)
            for name in ["identifiers.tsv", PublicTree.snapshotName, "scheduled"] {
                #expect(FileManager.default.fileExists(atPath: records.appendingPathComponent(name).path), "\(name) is kept")
            }
            #expect(!records.path.hasPrefix(catalog.publicDirectory.path + "/"))

            let (index, problems) = FeedIndex.load(catalog.tree)
            #expect(problems.isEmpty)
            let june = Timestamp(year: 2026, month: 6, day: 2, hour: 0, minute: 0, second: 0)!
            let feed = try index.feed(app: Self.app, kind: .products, platform: nil, appVersion: nil, at: june).get()
            #expect(String(decoding: feed.identity.bytes, as: UTF8.self).contains("com.example.game.summer"))
        }
    }

    /// A tree published before the records moved out of `public/` is served as it is, and the
    /// next build (even one that changes nothing) moves its records out.
    @Test func recordsOfAnOlderTreeMoveOutOfPublic() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.game.plist", Self.goldenSource)
            try catalog.publish(at: buildMoment)
            // The layout of older trees: the records inside the public revision.
            let fileManager = FileManager.default
            let records = catalog.tree.recordsDirectory(Self.app, 1)
            let revision = catalog.tree.revisionDirectory(Self.app, 1)
            for name in ["identifiers.tsv", PublicTree.snapshotName, "scheduled"] {
                try fileManager.moveItem(at: records.appendingPathComponent(name), to: revision.appendingPathComponent(name))
            }
            let (index, problems) = FeedIndex.load(catalog.tree)
            #expect(problems.isEmpty, "an older tree is still served")
            #expect(index.apps[Self.app]?.history["com.example.game.levels"] != nil)

            let plans = try catalog.publish(at: buildMoment)
            #expect(plans.map(\.isUnchanged) == [true])
            for name in ["identifiers.tsv", PublicTree.snapshotName, "scheduled"] {
                #expect(!fileManager.fileExists(atPath: revision.appendingPathComponent(name).path), "\(name) left in public/")
                #expect(fileManager.fileExists(atPath: records.appendingPathComponent(name).path), "\(name) not in the records")
            }
        }
    }

    /// Variants that select the same products may share one folder; whatever the sharing, each
    /// distinct feed is stored once per revision and every variant's record names where it is.
    @Test func variantsWithTheSameSelectionShareTheirFiles() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.game.plist", Self.goldenSource)
            try catalog.publish(at: buildMoment)
            let manifest = try catalog.expectComplete(Self.app, revision: 1)
            var directoryByHash: [String: String] = [:]
            for record in manifest.variants {
                if let directory = directoryByHash[record.products.sha256] {
                    #expect(record.directory == directory, "\(record.platform)/\(record.band) duplicates the feeds in \(directory)")
                } else {
                    directoryByHash[record.products.sha256] = record.directory
                }
            }
            #expect(Set(manifest.variants.map(\.directory)).count == 2)
            let stored = catalog.publicSnapshot().keys.filter {
                $0.hasPrefix("v1/apps/com.example.game/revisions/1/") && $0.hasSuffix("/products.json") && !$0.contains("/scheduled/")
            }
            #expect(stored.count == 2, "the default's and one other: \(stored.sorted())")
        }
    }

    /// availableFrom is inclusive and availableUntil exclusive, to the second.
    @Test(
        arguments: [
            (-1, false), (0, true), (1, true), (3599, true), (3600, false),
        ] as [(Int64, Bool)])
    func availabilityWindowBoundaries(offset: Int64, onSale: Bool) throws {
        try withCatalog { catalog in
            try catalog.write(
                "com.example.game.plist",
                productsPlist(
                    "<key>id</key>\n<string>com.example.game.always</string>",
                    """
                    <key>id</key>
                    <string>com.example.game.hour</string>
                    <key>availableFrom</key>
                    <date>2026-03-01T12:00:00Z</date>
                    <key>availableUntil</key>
                    <date>2026-03-01T13:00:00Z</date>
                    """))
            try catalog.publish(at: buildMoment.adding(offset))
            #expect(
                text(catalog.published("v1/apps/com.example.game/products.json"))
                    == (onSale ? #"["com.example.game.always","com.example.game.hour"]"# : #"["com.example.game.always"]"#))
        }
    }

    /// What the plan reports and the manifest records for a first publication.
    @Test func manifestOfAFirstPublication() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.game.plist", Self.goldenSource)
            let plans = try catalog.publish(at: buildMoment)
            let plan = try #require(plans.first)
            #expect(plans.count == 1)
            #expect(plan.app == Self.app)
            #expect(plan.revision == 1)
            #expect(plan.publishedAt == buildMoment)
            #expect(!plan.isUnchanged)
            #expect(plan.sellableCount == 4)
            #expect(plan.knownCount == 2)
            #expect(plan.changedFeedCount == plan.totalFeedCount)
            #expect(
                plan.diff.added == [
                    "com.example.game.coins", "com.example.game.levels", "com.example.game.pro", "com.example.game.old",
                    "com.example.game.next", "com.example.game.summer", "com.example.game.winter", "com.example.game.spring",
                    "com.example.game.gone",
                ])
            #expect(plan.diff.changed.isEmpty && plan.diff.removed.isEmpty)

            let manifest = try catalog.expectComplete(Self.app, revision: 1)
            #expect(try catalog.tree.currentManifest(Self.app) == manifest)
            #expect(
                catalog.published("v1/apps/com.example.game/manifest.json")
                    == catalog.published("v1/apps/com.example.game/revisions/1/manifest.json"))
            #expect(manifest == plan.manifest.withGzipOf(manifest))
            #expect(manifest.format == 1)
            #expect(manifest.app == Self.app)
            #expect(manifest.revision == 1)
            #expect(manifest.publishedAt == buildMoment)
            #expect(manifest.platforms == [.iOS, .macOS])
            #expect(manifest.bands == ["0.0", "2.0"])
            #expect(manifest.selector == VariantSelector(platforms: [.iOS, .macOS], bands: [.zero, AppVersion("2.0")!]))
            #expect(
                manifest.variants.map { "\($0.platform)/\($0.band)" } == [
                    "any/any", "any/0.0", "any/2.0", "ios/any", "ios/0.0", "ios/2.0", "macos/any", "macos/0.0", "macos/2.0",
                ])
            #expect(manifest.variants.compactMap(variantOf) == manifest.selector.variants)
            for record in manifest.variants {
                for feed in [record.products, record.catalog] {
                    #expect(feed.lastModified == buildMoment)
                    #expect(feed.entityTag == "\"" + feed.sha256.prefix(32) + "\"")
                    #expect(feed.sha256.count == 64 && feed.sha256.allSatisfy { "0123456789abcdef".contains($0) })
                    #expect(feed.gzip.entityTag == "\"" + feed.gzip.sha256.prefix(32) + "\"")
                    #expect(feed.gzip.sha256 != feed.sha256)
                }
                #expect(record.catalogRevision == 1)
                #expect(record.catalogPublishedAt == buildMoment)
                let variant = try #require(variantOf(record))
                let catalogBytes = try catalog.feed(Self.app, manifest, variant, "catalog.json")
                #expect(record.catalogContentSHA256.isEmpty, "written for older versions only")
                #expect(
                    text(catalogBytes)?.hasPrefix(#"{"app":"com.example.game","revision":1,"publishedAt":"2026-03-01T12:00:00Z","#) == true)
            }
            // The static copies are the default variant's bytes, gzip copies included.
            let base = "v1/apps/com.example.game/"
            for name in ["products.json", "catalog.json", "products.json.gz", "catalog.json.gz"] {
                #expect(catalog.published(base + name) == catalog.published(base + "revisions/1/" + name), "\(name)")
            }
            let history = try catalog.tree.history(Self.app, revision: 1)
            #expect(
                history.order == [
                    "com.example.game.coins", "com.example.game.levels", "com.example.game.pro", "com.example.game.old",
                    "com.example.game.spring", "com.example.game.gone", "com.example.game.summer",
                ])
            // On sale from 2026-06-01 by the schedule: published from then, not from the build.
            #expect(history["com.example.game.summer"]?.firstPublishedAt == Timestamp(iso8601: "2026-06-01T00:00:00Z"))
            #expect(history["com.example.game.old"]?.retiredRevision == 1)
            #expect(history["com.example.game.coins"]?.retiredRevision == nil)
            #expect(history["com.example.game.coins"]?.firstRevision == 1)
            #expect(history["com.example.game.coins"]?.firstPublishedAt == buildMoment)
        }
    }

    @Test func entityTagIsTheQuotedFirst128BitsOfTheHash() {
        let sha = ContentHash.sha256Hex(Array("[]".utf8))
        #expect(sha == "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945")
        #expect(ContentHash.entityTag(sha256: sha) == "\"4f53cda18c2baa0c0354bb5f9a3ecbe5\"")
    }

    @Test func gzipIsReproducibleAndRoundTrips() throws {
        let bytes = Array(Self.goldenDefaultCatalog.utf8)
        let compressed = try Gzip.compress(bytes)
        #expect(compressed == (try Gzip.compress(bytes)))
        // Magic, deflate, no flags (so no file name), and a zero modification time.
        #expect(Array(compressed.prefix(8)) == [0x1F, 0x8B, 0x08, 0, 0, 0, 0, 0])
        #expect(Gzip.decompress(compressed) == bytes)
        #expect(Gzip.decompress(try Gzip.compress([UInt8]())) == [])
        #expect(Gzip.decompress(Array("not gzip".utf8)) == nil)
    }

    @Test func bigFeedsGetTheFastestGzipAndStillRoundTrip() throws {
        #expect(Gzip.feedEffort(forBytes: 1 << 20) == .smallest)
        #expect(Gzip.feedEffort(forBytes: (1 << 20) + 1) == .fastest)
        let bytes = Array(String(repeating: Self.goldenDefaultCatalog, count: (1 << 20) / Self.goldenDefaultCatalog.utf8.count + 1).utf8)
        let fast = try Gzip.compress(bytes, effort: Gzip.feedEffort(forBytes: bytes.count))
        #expect(fast == (try Gzip.compress(bytes, effort: .fastest)))
        #expect(Array(fast.prefix(8)) == [0x1F, 0x8B, 0x08, 0, 0, 0, 0, 0])
        #expect(Gzip.decompress(fast) == bytes)
        // Incompressible bytes are stored, and still fit the output bound.
        var generator = SystemRandomNumberGenerator()
        let noise = (0..<(3 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        #expect(Gzip.decompress(try Gzip.compress(noise, effort: .fastest)) == noise)
        #expect(Gzip.decompress(try Gzip.compress([UInt8](), effort: .fastest)) == [])
    }

    // MARK: - Byte stability

    @Test func unchangedSourcesPublishNothing() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.game.plist", Self.goldenSource)
            try catalog.publish(at: buildMoment)
            let before = catalog.publicSnapshot()
            let folders = directories(under: catalog.publicDirectory)

            let plans = try catalog.publish(at: buildMoment.adding(3600))
            let plan = try #require(plans.first)
            #expect(plan.isUnchanged)
            #expect(plan.revision == 1)
            #expect(plan.publishedAt == buildMoment)
            #expect(plan.changedFeedCount == 0)
            #expect(plan.diff.added.isEmpty && plan.diff.changed.isEmpty && plan.diff.removed.isEmpty)
            #expect(!FileManager.default.fileExists(atPath: catalog.tree.revisionDirectory(Self.app, 2).path))
            #expect(directories(under: catalog.publicDirectory) == folders)
            let after = catalog.publicSnapshot()
            #expect(after.keys.sorted() == before.keys.sorted())
            #expect(after.keys.filter { after[$0] != before[$0] }.sorted() == [])
            let manifest = try #require(try catalog.tree.currentManifest(Self.app))
            #expect(manifest.revision == 1)
            #expect(manifest.variants.allSatisfy { $0.products.lastModified == buildMoment && $0.catalog.lastModified == buildMoment })
        }
    }

    // MARK: - Last-Modified

    /// An app on iOS and macOS with gold and silver everywhere, and `iOSOnly` products on iOS.
    static func twoPlatformApp(iOSOnly: [String]) -> String {
        var body = "<dict>\n\t<key>platforms</key>\n\t<array>\n\t\t<string>iOS</string>\n\t\t<string>macOS</string>\n\t</array>\n"
        body += "\t<key>products</key>\n\t<array>\n"
        for id in ["com.example.game.gold", "com.example.game.silver"] {
            body += "\t\t<dict>\n\t\t\t<key>id</key>\n\t\t\t<string>\(id)</string>\n\t\t</dict>\n"
        }
        for id in iOSOnly {
            body +=
                "\t\t<dict>\n\t\t\t<key>id</key>\n\t\t\t<string>\(id)</string>\n"
                + "\t\t\t<key>platforms</key>\n\t\t\t<array>\n\t\t\t\t<string>iOS</string>\n\t\t\t</array>\n\t\t</dict>\n"
        }
        return plist(body + "\t</array>\n</dict>")
    }

    /// Changed bytes get a Last-Modified later than anything published before, even within one
    /// second; unchanged bytes keep theirs, and an unchanged rich feed keeps its exact bytes.
    @Test func lastModifiedMovesForwardWithinOneSecond() throws {
        try withCatalog { catalog in
            let t = buildMoment
            let macOS = Variant(platform: .macOS, band: nil)
            let iOS = Variant(platform: .iOS, band: nil)
            try catalog.write("com.example.game.plist", Self.twoPlatformApp(iOSOnly: []))
            try catalog.publish(at: t)
            let first = try catalog.expectComplete(Self.app, revision: 1)
            let macCatalogBytes = try catalog.feed(Self.app, first, macOS, "catalog.json")

            // An iOS-only product: the default and iOS feeds change, the macOS ones do not.
            try catalog.write("com.example.game.plist", Self.twoPlatformApp(iOSOnly: ["com.example.game.ruby"]))
            #expect(try catalog.publish(at: t).map(\.revision) == [2])
            let second = try catalog.expectComplete(Self.app, revision: 2)
            // The revision carries the moment its changed feeds carry, so that both agree.
            #expect(second.publishedAt == t.adding(1))
            #expect(
                text(try catalog.feed(Self.app, second, .all, "catalog.json"))?.hasPrefix(
                    #"{"app":"com.example.game","revision":2,"publishedAt":"2026-03-01T12:00:01Z","#) == true)
            for variant in [Variant.all, iOS] {
                let record = try #require(second.record(for: variant))
                #expect(record.products.lastModified == t.adding(1), "\(variant)")
                #expect(record.catalog.lastModified == t.adding(1), "\(variant)")
                #expect(record.catalogRevision == 2)
                #expect(record.products.sha256 != first.record(for: variant)?.products.sha256)
            }
            let mac = try #require(second.record(for: macOS))
            let macBefore = try #require(first.record(for: macOS))
            #expect(mac.products == macBefore.products)
            #expect(mac.catalog == macBefore.catalog)
            #expect(mac.catalog.lastModified == t)
            #expect(mac.catalogRevision == 1)
            #expect(mac.catalogPublishedAt == t)
            #expect(try catalog.feed(Self.app, second, macOS, "catalog.json") == macCatalogBytes)
            #expect(text(macCatalogBytes)?.contains(#""revision":1,"#) == true)
            #expect(
                text(try catalog.feed(Self.app, second, .all, "products.json"))
                    == #"["com.example.game.gold","com.example.game.silver","com.example.game.ruby"]"#)
            #expect(
                text(try catalog.feed(Self.app, second, macOS, "products.json")) == #"["com.example.game.gold","com.example.game.silver"]"#)

            // Again within the same second: later still.
            try catalog.write("com.example.game.plist", Self.twoPlatformApp(iOSOnly: ["com.example.game.ruby", "com.example.game.jade"]))
            #expect(try catalog.publish(at: t).map(\.revision) == [3])
            let third = try catalog.expectComplete(Self.app, revision: 3)
            #expect(third.record(for: .all)?.products.lastModified == t.adding(2))
            #expect(third.record(for: iOS)?.catalog.lastModified == t.adding(2))
            #expect(third.record(for: macOS)?.products.lastModified == t)
            #expect(third.record(for: macOS)?.catalog == macBefore.catalog)
            #expect(third.record(for: macOS)?.catalogRevision == 1)
            #expect(
                catalog.published("v1/apps/com.example.game/products.json") == (try catalog.feed(Self.app, third, .all, "products.json")))

            // A later build moment is used as it is.
            try catalog.write(
                "com.example.game.plist",
                Self.twoPlatformApp(iOSOnly: ["com.example.game.ruby", "com.example.game.jade", "com.example.game.opal"]))
            #expect(try catalog.publish(at: t.adding(60)).map(\.revision) == [4])
            let fourth = try catalog.expectComplete(Self.app, revision: 4)
            #expect(fourth.record(for: .all)?.products.lastModified == t.adding(60))
            #expect(fourth.record(for: macOS)?.products.lastModified == t)
        }
    }

    /// A build plans with the history its validation read, never with one a later revision
    /// replaced: validated at revision 1 and planned after revision 2, the plan's history is
    /// revision 2's, with the identifier only revision 2 published.
    @Test func aPlanReadsTheHistoryAgainWhenTheRevisionMoved() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.game.plist", Self.twoPlatformApp(iOSOnly: []))
            try catalog.publish(at: buildMoment)
            let validated = try #require(catalog.workflow.validate().catalogs.first)
            try catalog.write("com.example.game.plist", Self.twoPlatformApp(iOSOnly: ["com.example.game.ruby"]))
            #expect(try catalog.publish(at: buildMoment.adding(60)).map(\.revision) == [2])
            let publisher = Publisher(publicDirectory: catalog.publicDirectory)
            let plan = try publisher.plan(validated, at: buildMoment.adding(120))
            #expect(plan.history["com.example.game.ruby"]?.firstRevision == 2)
            #expect(plan.history.order == ["com.example.game.gold", "com.example.game.silver", "com.example.game.ruby"])
            // Validated and planned at the same revision, the history it read is the one planned.
            let current = try #require(catalog.workflow.validate().catalogs.first)
            #expect(try publisher.plan(current, at: buildMoment.adding(180)).history == plan.history)
        }
    }

    // MARK: - History rules

    @Test func publishedIdentifierMayNotDisappear() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.app.plist", Self.seed)
            try catalog.publish(at: buildMoment)
            let before = catalog.publicSnapshot()
            try catalog.write(
                "com.example.app.plist",
                plist(
                    """
                    <array>
                    \t<string>com.example.level1</string>
                    \t<string>com.example.level2</string>
                    </array>
                    """))
            let expected = [
                "catalog/com.example.app.plist:1:1: error: product 'com.example.rocket_car' was published in revision 1 and can never be removed or reused; keep its definition with status 'retired' (a plain array of identifiers cannot say that: run 'catalog convert com.example.app' to rewrite it in the full form, then add the product back with status 'retired')"
            ]
            #expect(catalog.diagnostics() == expected)
            let build = try catalog.build(at: buildMoment.adding(60))
            #expect(build.diagnostics.map(\.description) == expected)
            #expect(build.hasErrors)
            #expect(build.plans.isEmpty)
            #expect(catalog.publicSnapshot() == before)
        }
    }

    /// Products are found in the history whatever their order: each is first compared with the
    /// identifier after the last one found, so products moved, added and removed must all still
    /// be found, or reported missing, once.
    @Test func publishedIdentifiersAreFoundInAnyOrder() throws {
        func array(_ ids: [String]) -> String {
            plist("<array>\n" + ids.map { "\t<string>com.example.\($0)</string>\n" }.joined() + "</array>")
        }
        func missing(_ id: String) -> String {
            "catalog/com.example.app.plist:1:1: error: product 'com.example.\(id)' was published in revision 1 and can never be removed or reused; keep its definition with status 'retired' (a plain array of identifiers cannot say that: run 'catalog convert com.example.app' to rewrite it in the full form, then add the product back with status 'retired')"
        }
        try withCatalog { catalog in
            try catalog.write("com.example.app.plist", array(["a", "b", "c", "d", "e", "f"]))
            try catalog.publish(at: buildMoment)
            for (ids, expected) in [
                (["f", "e", "d", "c", "b", "a"], []), (["a", "c", "b", "e", "d", "f"], []),
                (["e", "a", "x", "c", "d", "f"], [missing("b")]), (["x", "y", "a", "b", "c"], [missing("d"), missing("e"), missing("f")]),
                (["b", "c", "d", "e", "f", "a", "x"], []), (["a", "a2", "b", "c", "d", "e"], [missing("f")]),
            ] {
                try catalog.write("com.example.app.plist", array(ids))
                #expect(catalog.diagnostics() == expected, "\(ids)")
            }
        }
    }

    @Test func publishedIdentifierOfAFolderAppMayNotDisappear() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.app/a.plist", Self.seed)
            try catalog.publish(at: buildMoment)
            try catalog.write("com.example.app/a.plist", plist("<array>\n\t<string>com.example.level1</string>\n</array>"))
            #expect(
                catalog.diagnostics() == [
                    "catalog/com.example.app:1:1: error: product 'com.example.level2' was published in revision 1 and can never be removed or reused; keep its definition with status 'retired' (a plain array of identifiers cannot say that: run 'catalog convert com.example.app' to rewrite it in the full form, then add the product back with status 'retired')",
                    "catalog/com.example.app:1:1: error: product 'com.example.rocket_car' was published in revision 1 and can never be removed or reused; keep its definition with status 'retired' (a plain array of identifiers cannot say that: run 'catalog convert com.example.app' to rewrite it in the full form, then add the product back with status 'retired')",
                ])
        }
    }

    @Test func publishedAppMayNotLoseItsSources() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.app.plist", Self.seed)
            try catalog.write("com.example.other.plist", plist("<array>\n\t<string>com.example.other.gold</string>\n</array>"))
            try catalog.publish(at: buildMoment)
            let before = catalog.publicSnapshot()
            try catalog.remove("com.example.app.plist")
            let expected = [
                "catalog/com.example.app:1:1: error: app 'com.example.app' was published (revision 1) but has no sources; App Store identifiers can never disappear, so restore its definitions and mark its products 'retired'"
            ]
            #expect(catalog.diagnostics() == expected)
            let build = try catalog.build(at: buildMoment.adding(60))
            #expect(build.diagnostics.map(\.description) == expected)
            #expect(build.plans.isEmpty)
            #expect(catalog.publicSnapshot() == before)
        }
    }

    static func seedWithRocketCar(status: String?) -> String {
        productsPlist(
            "<key>id</key>\n<string>com.example.level1</string>",
            "<key>id</key>\n<string>com.example.level2</string>",
            "<key>id</key>\n<string>com.example.rocket_car</string>" + (status.map { "\n<key>status</key>\n<string>\($0)</string>" } ?? ""))
    }

    @Test func retiredIdentifierMayNeverBeReused() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.app.plist", Self.seedWithRocketCar(status: nil))
            try catalog.publish(at: buildMoment)

            // Retiring builds: no longer sold, listed as known.
            try catalog.write("com.example.app.plist", Self.seedWithRocketCar(status: "retired"))
            let plan = try #require(try catalog.publish(at: buildMoment.adding(60)).first)
            #expect(plan.revision == 2)
            #expect(plan.sellableCount == 2)
            #expect(plan.knownCount == 1)
            #expect(plan.diff.changed.map(\.summary) == ["com.example.rocket_car: status cleared → retired"])
            #expect(text(catalog.published("v1/apps/com.example.app/products.json")) == #"["com.example.level1","com.example.level2"]"#)
            #expect(
                text(catalog.published("v1/apps/com.example.app/catalog.json")) == """
                    {"app":"com.example.app","revision":2,"publishedAt":"2026-03-01T12:01:00Z",\
                    "products":[{"id":"com.example.level1"},{"id":"com.example.level2"}],"known":[{"id":"com.example.rocket_car","status":"retired"}]}
                    """)
            #expect(try catalog.tree.history("com.example.app", revision: 2)["com.example.rocket_car"]?.retiredRevision == 2)
            let before = catalog.publicSnapshot()

            // Cleared (or removed) again: an error at its id, and nothing published.
            for status in ["cleared", "removed", "draft"] {
                try catalog.write("com.example.app.plist", Self.seedWithRocketCar(status: status))
                let build = try catalog.build(at: buildMoment.adding(120))
                #expect(
                    build.diagnostics.map(\.description) == [
                        "catalog/com.example.app.plist:17:4: error: product 'com.example.rocket_car' was retired in revision 2; App Store identifiers can never be reused, so it must stay 'retired'"
                    ], "status \(status)")
                #expect(build.plans.isEmpty)
            }
            // Without a status it is cleared by default: the same error.
            try catalog.write("com.example.app.plist", Self.seedWithRocketCar(status: nil))
            #expect(
                catalog.diagnostics() == [
                    "catalog/com.example.app.plist:17:4: error: product 'com.example.rocket_car' was retired in revision 2; App Store identifiers can never be reused, so it must stay 'retired'"
                ])
            // Deleting it is refused too.
            try catalog.write(
                "com.example.app.plist",
                productsPlist(
                    "<key>id</key>\n<string>com.example.level1</string>", "<key>id</key>\n<string>com.example.level2</string>"))
            #expect(
                catalog.diagnostics() == [
                    "catalog/com.example.app.plist:1:1: error: product 'com.example.rocket_car' was published in revision 1 and can never be removed or reused; keep its definition with status 'retired'"
                ])
            #expect(catalog.publicSnapshot() == before)
        }
    }

    /// Only what was published is history: a draft may still be deleted.
    @Test func unpublishedDraftMayBeDeleted() throws {
        try withCatalog { catalog in
            try catalog.write(
                "com.example.app.plist",
                productsPlist(
                    "<key>id</key>\n<string>com.example.level1</string>",
                    "<key>id</key>\n<string>com.example.level9</string>\n<key>status</key>\n<string>draft</string>"))
            try catalog.publish(at: buildMoment)
            try catalog.write("com.example.app.plist", productsPlist("<key>id</key>\n<string>com.example.level1</string>"))
            #expect(catalog.diagnostics() == [])
            let plan = try #require(try catalog.publish(at: buildMoment.adding(60)).first)
            #expect(plan.diff.removed == ["com.example.level9"])
        }
    }

    // MARK: - Dry run

    @Test func dryRunOnAFreshTreeWritesNothing() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.app.plist", Self.seed)
            let sources = snapshot(of: catalog.catalogDirectory)
            let build = try catalog.build(at: buildMoment, dryRun: true)
            #expect(!build.hasErrors)
            let plan = try #require(build.plans.first)
            #expect(plan.revision == 1)
            #expect(!plan.isUnchanged)
            #expect(plan.diff.added == ["com.example.level1", "com.example.level2", "com.example.rocket_car"])
            #expect(!FileManager.default.fileExists(atPath: catalog.publicDirectory.path))
            #expect(snapshot(of: catalog.catalogDirectory) == sources)
            #expect(try FileManager.default.contentsOfDirectory(atPath: catalog.root.path).sorted() == ["catalog"])
        }
    }

    @Test func dryRunShowsTheProductDiffAndWritesNothing() throws {
        try withCatalog { catalog in
            try catalog.write(
                "com.example.game.plist",
                productsPlist(
                    "<key>id</key>\n<string>com.example.game.a</string>\n<key>type</key>\n<string>consumable</string>",
                    "<key>id</key>\n<string>com.example.game.b</string>",
                    "<key>id</key>\n<string>com.example.game.c</string>\n<key>status</key>\n<string>draft</string>",
                    "<key>id</key>\n<string>com.example.game.d</string>\n<key>referenceName</key>\n<string>Dee</string>\n<key>displayOrder</key>\n<integer>1</integer>"
                ))
            try catalog.publish(at: buildMoment)
            try catalog.write(
                "com.example.game.plist",
                productsPlist(
                    "<key>id</key>\n<string>com.example.game.a</string>\n<key>type</key>\n<string>consumable</string>",
                    "<key>id</key>\n<string>com.example.game.b</string>\n<key>status</key>\n<string>retired</string>",
                    """
                    <key>id</key>
                    <string>com.example.game.d</string>
                    <key>referenceName</key>
                    <string>Dee 2</string>
                    <key>type</key>
                    <string>consumable</string>
                    <key>metadata</key>
                    <dict>
                    \t<key>title</key>
                    \t<string>Dee</string>
                    </dict>
                    """,
                    "<key>id</key>\n<string>com.example.game.e</string>"))
            let before = catalog.publicSnapshot()
            let folders = directories(under: catalog.root)

            let build = try catalog.build(at: buildMoment.adding(60), dryRun: true)
            #expect(build.diagnostics.map(\.description) == [])
            let plan = try #require(build.plans.first)
            #expect(plan.revision == 2)
            #expect(!plan.isUnchanged)
            #expect(plan.diff.added == ["com.example.game.e"])
            #expect(
                plan.diff.changed.map(\.summary) == [
                    "com.example.game.b: status cleared → retired",
                    #"com.example.game.d: displayOrder removed (was 1), metadata added: {"title":"Dee"}, referenceName Dee → Dee 2, type added: consumable"#,
                ])
            #expect(plan.diff.removed == ["com.example.game.c"])
            #expect(plan.sellableCount == 3)
            #expect(plan.knownCount == 1)
            #expect(catalog.publicSnapshot() == before)
            #expect(directories(under: catalog.root) == folders)
            #expect(try catalog.tree.currentManifest("com.example.game")?.revision == 1)

            // The real build publishes what the dry run announced.
            let published = try #require(try catalog.publish(at: buildMoment.adding(60)).first)
            #expect(published.revision == 2)
            #expect(published.diff == plan.diff)
            #expect(published.manifest == plan.manifest)
            #expect(
                text(catalog.published("v1/apps/com.example.game/products.json"))
                    == #"["com.example.game.a","com.example.game.d","com.example.game.e"]"#)
        }
    }

    // MARK: - Durable writes

    /// Big files are written past the page cache in aligned blocks, the last one padded and cut
    /// back: every size around the block and chunk boundaries must come back byte for byte.
    @Test func durableWritesKeepEveryByteAtEverySize() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("durable-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let mebibyte = 1 << 20
        let sizes = [0, 1, 4095, mebibyte - 1, mebibyte, mebibyte + 1, mebibyte + 4096, 3 * mebibyte + 17]
        for size in sizes {
            // A pattern that does not repeat with the block size, so a misplaced block shows.
            let bytes = (0..<size).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 16) }
            let url = directory.appendingPathComponent("file-\(size)")
            try AtomicFile.writeDurably(bytes, to: url)
            #expect(FileManager.default.contents(atPath: url.path).map { [UInt8]($0) } == bytes, "size \(size)")
            // Never over an existing file: a leftover must not be silently replaced.
            #expect(throws: CatalogError.self) { try AtomicFile.writeDurably(bytes, to: url) }
        }
    }

    // MARK: - Atomicity

    /// Records the calls of `beforeStep`, and throws at one of them to simulate a crash there.
    final class StepProbe: @unchecked Sendable {
        // @unchecked Sendable: every access to the mutable state holds `lock`.
        private let lock = NSLock()
        private var names: [String] = []
        private var manifestReplaced: [Bool] = []
        let failAt: Int?
        let currentManifest: URL

        init(failAt: Int?, currentManifest: URL) {
            self.failAt = failAt
            self.currentManifest = currentManifest
        }

        struct Crash: Error {}

        func step(_ name: String) throws {
            let data = FileManager.default.contents(atPath: currentManifest.path)
            let revision = data.flatMap { try? JSONDecoder().decode(RevisionManifest.self, from: $0) }?.revision
            let count = lock.withLock {
                names.append(name)
                manifestReplaced.append(revision == 2)
                return names.count
            }
            if count == failAt { throw Crash() }
        }

        var steps: [String] { lock.withLock { names } }
        var replaced: [Bool] { lock.withLock { manifestReplaced } }
    }

    static let atomicityFirst = plist(
        """
        <dict>
        \t<key>platforms</key>
        \t<array>
        \t\t<string>iOS</string>
        \t\t<string>macOS</string>
        \t</array>
        \t<key>products</key>
        \t<array>
        \t\t<dict>
        \t\t\t<key>id</key>
        \t\t\t<string>com.example.game.gold</string>
        \t\t</dict>
        \t\t<dict>
        \t\t\t<key>id</key>
        \t\t\t<string>com.example.game.pro</string>
        \t\t\t<key>minimumAppVersion</key>
        \t\t\t<string>2.0</string>
        \t\t\t<key>platforms</key>
        \t\t\t<array>
        \t\t\t\t<string>iOS</string>
        \t\t\t</array>
        \t\t</dict>
        \t</array>
        </dict>
        """)
    static let atomicitySecond = atomicityFirst.replacingOccurrences(
        of: "\t</array>\n</dict>",
        with: "\t\t<dict>\n\t\t\t<key>id</key>\n\t\t\t<string>com.example.game.silver</string>\n\t\t</dict>\n\t</array>\n</dict>")

    /// Publishes revision 1 of the atomicity catalog, then runs the second build with `probe`.
    static func crashRun(_ catalog: TemporaryCatalog, probe: StepProbe) throws -> Result<CatalogWorkflow.Build, any Error> {
        try catalog.write("com.example.game.plist", atomicityFirst)
        try catalog.publish(at: buildMoment)
        try catalog.write("com.example.game.plist", atomicitySecond)
        return Result { try catalog.build(at: buildMoment.adding(10)) { $0.beforeStep = probe.step } }
    }

    /// A crash at any step of a publication leaves the previous revision fully served; the
    /// next build then publishes the new revision whole.
    @Test func crashAtAnyStepLeavesThePreviousRevision() throws {
        // A build that never fails, to count the steps and learn when the manifest is replaced.
        let (stepCount, replacedAt, firstStatic, secondStatic, finalTree) = try withCatalog { catalog in
            let probe = StepProbe(failAt: nil, currentManifest: catalog.tree.currentManifestURL(Self.app))
            try catalog.write("com.example.game.plist", Self.atomicityFirst)
            try catalog.publish(at: buildMoment)
            let firstStatic = Self.staticCopies(catalog)
            try catalog.write("com.example.game.plist", Self.atomicitySecond)
            let build = try catalog.build(at: buildMoment.adding(10)) { $0.beforeStep = probe.step }
            #expect(build.plans.map(\.revision) == [2])
            try catalog.expectComplete(Self.app, revision: 2)
            return (probe.steps.count, probe.replaced, firstStatic, Self.staticCopies(catalog), catalog.publicSnapshot())
        }
        #expect(stepCount > 10)
        #expect(replacedAt.last == true, "the last step comes after the manifest is replaced")
        #expect(replacedAt.first == false)
        for name in firstStatic.keys {
            #expect(firstStatic[name] != secondStatic[name], "\(name) must differ between the revisions for this test to mean anything")
        }

        for failAt in 1...stepCount {
            try withCatalog { catalog in
                let probe = StepProbe(failAt: failAt, currentManifest: catalog.tree.currentManifestURL(Self.app))
                let result = try Self.crashRun(catalog, probe: probe)
                #expect(throws: StepProbe.Crash.self, "crash at step \(failAt)") { try result.get() }
                // Feeds are written two at a time, so a step running beside the failing one may finish.
                #expect(probe.steps.count >= failAt)
                let step = "step \(failAt) (\(probe.steps.last ?? "?"))"

                // What readers see: one complete revision, the previous unless the manifest was already replaced.
                let expected = replacedAt[failAt - 1] ? 2 : 1
                let current = try #require(try catalog.tree.currentManifest(Self.app), "\(step)")
                #expect(current.revision == expected, "\(step)")
                let manifest = try catalog.expectComplete(Self.app, revision: current.revision)
                #expect(manifest == current, "\(step)")
                for (name, bytes) in Self.staticCopies(catalog) {
                    #expect(bytes == firstStatic[name] || bytes == secondStatic[name], "\(step): static \(name) is neither revision's")
                }
                if expected == 1 {
                    #expect(Self.staticCopies(catalog)["manifest.json"] == firstStatic["manifest.json"], "\(step)")
                }

                // Recovery: the next build publishes revision 2 whole, exactly as an uninterrupted one.
                let plans = try catalog.publish(at: buildMoment.adding(10))
                #expect(plans.map(\.revision) == [2], "\(step)")
                try catalog.expectComplete(Self.app, revision: 2)
                let tree = catalog.publicSnapshot()
                #expect(tree.keys.sorted() == finalTree.keys.sorted(), "\(step)")
                #expect(tree.keys.filter { tree[$0] != finalTree[$0] }.sorted() == [], "\(step)")
            }
        }
    }

    /// The app-level files a static host serves: the default variant's feeds and the manifest.
    static func staticCopies(_ catalog: TemporaryCatalog) -> [String: [UInt8]] {
        var result: [String: [UInt8]] = [:]
        for name in ["products.json", "products.json.gz", "catalog.json", "catalog.json.gz", "manifest.json"] {
            result[name] = catalog.published("v1/apps/\(app)/\(name)") ?? []
        }
        return result
    }
}

extension ProductDiff.Change {
    /// As `catalog build --dry-run` prints it, after `  ~ `.
    var summary: String { "\(id): \(details.joined(separator: ", "))" }
}

extension RevisionManifest {
    /// This manifest with the gzip records of `other`: a plan knows them only once published.
    func withGzipOf(_ other: RevisionManifest) -> RevisionManifest {
        var copy = self
        for index in copy.variants.indices where index < other.variants.count {
            copy.variants[index].products.gzip = other.variants[index].products.gzip
            copy.variants[index].catalog.gzip = other.variants[index].catalog.gzip
        }
        for state in (copy.schedule ?? []).indices where state < (other.schedule ?? []).count {
            for index in copy.schedule![state].variants.indices where index < other.schedule![state].variants.count {
                copy.schedule![state].variants[index].products.gzip = other.schedule![state].variants[index].products.gzip
                copy.schedule![state].variants[index].catalog.gzip = other.schedule![state].variants[index].catalog.gzip
            }
        }
        return copy
    }
}
