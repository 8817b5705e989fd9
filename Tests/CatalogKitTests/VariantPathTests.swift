import CatalogKit
import CatalogTestSupport
import FeedSigning
import Foundation
import Testing
import Time

/// Every variant at a path of its own in the static tree (docs/publishing.md): what a static host
/// serves as it is, so that an app with platforms and app-version bands works from it with
/// signatures enforced.
@Suite struct VariantPathTests {
    static let app = "com.example.signed"

    private func signedCatalog(_ source: String = SigningTests.source) throws -> TemporaryCatalog {
        let catalog = try TemporaryCatalog()
        try catalog.write("\(Self.app).plist", source)
        var workflow = catalog.workflow
        workflow.signer = try SigningTests.signer()
        let build = try workflow.build(at: buildMoment, dryRun: false)
        #expect(!build.hasErrors, "\(build.diagnostics)")
        return catalog
    }

    /// The platform and version a variant's own path stands for (`any` for none).
    static func request(_ record: VariantRecord) -> (platform: String?, appVersion: String?) {
        (record.platform == "any" ? nil : record.platform, record.band == "any" ? nil : record.band)
    }

    /// Each variant's feeds, gzip copies and signatures sit at `variants/<platform>/<band>/` (the
    /// default at the app's URL), byte for byte the revision's, and each signature verifies for
    /// exactly the variant whose path holds it; `variants.json` lists the platforms and bands.
    @Test func everyVariantHasAStaticPathSignedForIt() throws {
        let catalog = try signedCatalog()
        defer { catalog.cleanUp() }
        let tree = catalog.tree
        let manifest = try #require(try tree.currentManifest(Self.app))
        #expect(manifest.variants.count == 9)
        for record in manifest.variants {
            let directory = FeedVariants.directory(key: "\(record.platform)/\(record.band)")
            #expect(directory == (record.platform == "any" && record.band == "any" ? "" : "variants/\(record.platform)/\(record.band)/"))
            for kind in FeedKind.allCases {
                let path = "v1/apps/\(Self.app)/\(directory)\(kind.rawValue)"
                let bytes = try #require(catalog.published(path), "\(path)")
                #expect(bytes == (try tree.feedBytes(Self.app, revision: 1, directory: record.directory, name: kind.rawValue)))
                #expect(
                    catalog.published(path + ".gz")
                        == (try tree.feedBytes(Self.app, revision: 1, directory: record.directory, name: kind.rawValue + ".gz")))
                let signature = try #require(text(catalog.published(path + ".jws")))
                let claims = try SigningTests.verifier.verify(signature, over: bytes, now: Date()).claims
                let asked = Self.request(record)
                #expect(
                    claims.covers(app: Self.app, feed: kind.rawValue, platform: asked.platform, appVersion: asked.appVersion), "\(path)")
                // Another variant's request would refuse these bytes unless they serve it too.
                for other in manifest.variants where other.directory != record.directory {
                    let theirs = Self.request(other)
                    #expect(
                        !claims.covers(app: Self.app, feed: kind.rawValue, platform: theirs.platform, appVersion: theirs.appVersion),
                        "\(path) must not verify for \(other.platform)/\(other.band)")
                }
            }
        }
        #expect(catalog.published("v1/apps/\(Self.app)/variants/any/any/products.json") == nil, "the default's path is the app's own")
        let index = try #require(catalog.published("v1/apps/\(Self.app)/\(FeedVariants.indexName)"))
        #expect(FeedVariants(json: Data(index)) == FeedVariants(platforms: ["ios", "macos"], bands: ["0.0", "2.0"]))
        #expect(text(index) == #"{"bands":["0.0","2.0"],"platforms":["ios","macos"]}"# + "\n")
    }

    /// The variant a client computes from `variants.json` is the one whose path holds the feed
    /// `catalog serve` would choose for that platform and version.
    @Test(arguments: [
        ("ios", "2.3.1", "ios/2.0"), ("ios", "1.9.9", "ios/0.0"), ("macos", nil, "macos/any"), ("watchos", "2.0", "any/2.0"),
        (nil, nil, "any/any"), ("IOS", "banana", "ios/any"),
    ])
    func theIndexPicksTheServersVariant(platform: String?, appVersion: String?, expected: String) throws {
        let catalog = try signedCatalog()
        defer { catalog.cleanUp() }
        let index = try #require(
            catalog.published("v1/apps/\(Self.app)/\(FeedVariants.indexName)").flatMap { FeedVariants(json: Data($0)) })
        #expect(index.key(platform: platform, appVersion: appVersion) == expected)
        let manifest = try #require(try catalog.tree.currentManifest(Self.app))
        let chosen = manifest.selector.variant(
            platform: platform.flatMap { Platform(name: $0) }, appVersion: appVersion.flatMap { AppVersion($0) })
        #expect(chosen.description == expected)
    }

    /// A variant the definitions no longer distinguish leaves the static tree (a static host then
    /// answers 404, as `catalog serve` does), and the index follows.
    @Test func aDroppedVariantLeavesTheStaticTree() throws {
        let catalog = try signedCatalog()
        defer { catalog.cleanUp() }
        #expect(catalog.published("v1/apps/\(Self.app)/variants/macos/2.0/products.json") != nil)
        // The band moves from 2.0 to 3.0.
        let moved = SigningTests.source.replacingOccurrences(
            of: "<key>minimumAppVersion</key><string>2.0</string>", with: "<key>minimumAppVersion</key><string>3.0</string>")
        #expect(moved != SigningTests.source)
        try catalog.write("\(Self.app).plist", moved)
        var workflow = catalog.workflow
        workflow.signer = try SigningTests.signer()
        let build = try workflow.build(at: buildMoment.adding(10), dryRun: false)
        #expect(!build.hasErrors, "\(build.diagnostics)")
        for platform in ["any", "ios", "macos"] {
            let variants = catalog.publicDirectory.appendingPathComponent("v1/apps/\(Self.app)/variants/\(platform)")
            #expect(!FileManager.default.fileExists(atPath: variants.appendingPathComponent("2.0").path), "\(platform)/2.0")
            #expect(
                FileManager.default.fileExists(atPath: variants.appendingPathComponent("3.0/products.json.jws").path), "\(platform)/3.0")
        }
        let index = try #require(
            catalog.published("v1/apps/\(Self.app)/\(FeedVariants.indexName)").flatMap { FeedVariants(json: Data($0)) })
        #expect(index == FeedVariants(platforms: ["ios", "macos"], bands: ["0.0", "3.0"]))
    }

    /// A signature refresh writes new signature files; the static copies at every variant's path
    /// are swapped for them too, or a static host would serve signatures that expire.
    @Test func aRefreshReplacesEveryVariantPathsSignature() throws {
        let catalog = try signedCatalog()
        defer { catalog.cleanUp() }
        let before = catalog.published("v1/apps/\(Self.app)/variants/ios/2.0/products.json.jws")
        var workflow = catalog.workflow
        workflow.signer = try SigningTests.signer()
        #expect(try workflow.refreshSignatures(at: Date().addingTimeInterval(5), window: nil) > 0)
        let manifest = try #require(try catalog.tree.currentManifest(Self.app))
        for record in manifest.variants {
            for kind in FeedKind.allCases {
                let path =
                    "v1/apps/\(Self.app)/" + FeedVariants.directory(key: "\(record.platform)/\(record.band)") + kind.rawValue + ".jws"
                let current = RevisionSignatures.read(
                    catalog.tree, app: Self.app, revision: 1, state: 0, directory: record.directory, kind: kind)
                #expect(text(catalog.published(path)) == current, "\(path)")
            }
        }
        #expect(catalog.published("v1/apps/\(Self.app)/variants/ios/2.0/products.json.jws") != before)
    }

    /// A tree published before variants had paths of their own gets them from the next build,
    /// even one that changes nothing.
    @Test func anUnchangedBuildAddsVariantPathsToAnOlderTree() throws {
        let catalog = try signedCatalog()
        defer { catalog.cleanUp() }
        let complete = catalog.publicSnapshot()
        let appDirectory = catalog.tree.appDirectory(Self.app)
        try FileManager.default.removeItem(at: appDirectory.appendingPathComponent("variants"))
        try FileManager.default.removeItem(at: appDirectory.appendingPathComponent(FeedVariants.indexName))
        var workflow = catalog.workflow
        workflow.signer = try SigningTests.signer()
        let build = try workflow.build(at: buildMoment.adding(10), dryRun: false)
        #expect(build.plans.map(\.isUnchanged) == [true])
        #expect(catalog.publicSnapshot() == complete)
    }

    /// `catalog serve` switches a variant's own path on time, like the query form: at each moment
    /// both answer the same feed (the static tree keeps the state at build time).
    @Test func variantPathsFollowTheScheduleOnTheServedSide() throws {
        let scheduled = SigningTests.source.replacingOccurrences(
            of: "<key>minimumAppVersion</key><string>2.0</string>",
            with: "<key>minimumAppVersion</key><string>2.0</string><key>availableFrom</key><date>2026-04-01T00:00:00Z</date>")
        #expect(scheduled != SigningTests.source)
        let catalog = try signedCatalog(scheduled)
        defer { catalog.cleanUp() }
        let (index, problems) = FeedIndex.load(catalog.tree)
        #expect(problems == [])
        let switchAt = try #require(Timestamp(iso8601: "2026-04-01T00:00:00Z"))
        var seen: [[UInt8]] = []
        for moment in [buildMoment, switchAt] {
            let byQuery = try index.feed(app: Self.app, kind: .products, platform: "ios", appVersion: "2.3.1", at: moment).get()
            let byPath = try index.feed(app: Self.app, kind: .products, platformKey: "ios", bandKey: "2.0", at: moment).get()
            #expect(byPath === byQuery || byPath.identity.bytes == byQuery.identity.bytes, "\(moment.iso8601)")
            #expect(byPath.identity.entityTag == byQuery.identity.entityTag)
            #expect(byPath.lastModifiedHeader == byQuery.lastModifiedHeader)
            #expect(byPath.signature == byQuery.signature)
            seen.append(byPath.identity.bytes)
        }
        #expect(text(seen[0])?.contains("com.example.signed.new") == false, "not on sale before its moment")
        #expect(text(seen[1])?.contains("com.example.signed.new") == true, "on sale from its moment")
    }
}
