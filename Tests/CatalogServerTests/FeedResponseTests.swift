import CatalogKit
import CatalogServer
import CatalogTestSupport
import FeedSigning
import Foundation
import HTTPSemantics
import Testing
import Time

/// The exact responses ``FeedResponse`` decides for a feed of a published tree, without a server
/// (moved from CatalogKitTests' FeedServingTests, with the HTTP they test).
@Suite struct FeedResponseTests {
    static let buildMoment = Timestamp(secondsSince1970: 1_772_366_400)  // 2026-03-01T12:00:00Z

    /// An app on iOS and macOS with a macOS-only product and one that needs app version 2.0.
    static let source = plist(
        """
        <dict>
        \t<key>platforms</key><array><string>iOS</string><string>macOS</string></array>
        \t<key>products</key>
        \t<array>
        \t\t<dict><key>id</key><string>com.example.serve.coins</string></dict>
        \t\t<dict><key>id</key><string>com.example.serve.mac</string><key>platforms</key><array><string>macOS</string></array></dict>
        \t\t<dict><key>id</key><string>com.example.serve.new</string><key>minimumAppVersion</key><string>2.0</string></dict>
        \t</array>
        </dict>
        """)

    /// A folder with `catalog/` and `public/`, the source published at ``buildMoment``.
    struct Published {
        let root: URL
        let index: FeedIndex

        init(signer: FeedSigner? = nil) throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("feed-response-\(UUID().uuidString)")
            let catalog = root.appendingPathComponent("catalog")
            try FileManager.default.createDirectory(at: catalog, withIntermediateDirectories: true)
            try Data(FeedResponseTests.source.utf8).write(to: catalog.appendingPathComponent("com.example.serve.plist"))
            let tree = PublicTree(root: root.appendingPathComponent("public"))
            var workflow = CatalogWorkflow(catalogDirectory: catalog, catalogDisplayPath: "catalog", publicDirectory: tree.root)
            workflow.signer = signer
            let build = try workflow.build(at: FeedResponseTests.buildMoment, dryRun: false)
            #expect(!build.hasErrors, "\(build.diagnostics)")
            let (index, problems) = FeedIndex.load(tree)
            #expect(problems.isEmpty)
            self.index = index
        }

        func remove() { try? FileManager.default.removeItem(at: root) }
    }

    /// What a lookup that finds no feed answers (moved from FeedServingTests.badParametersAndUnknownAppsSayWhy).
    @Test func lookupErrorsAnswer404Or400() {
        #expect(FeedIndex.LookupError.unknownApp("x").status == 404)
        #expect(FeedIndex.LookupError.unknownPlatform("x").status == 400)
        #expect(FeedIndex.LookupError.malformedAppVersion("x").status == 400)
    }

    /// A signed feed's detached JWS goes out as `Catalog-Signature` on a 200, and on a 304 too, so
    /// that a signature re-issued over unchanged bytes reaches a client that revalidates (moved from
    /// SigningTests.aRefreshReissuesSignaturesAndLeavesBytesAndValidators, which checked the 200).
    @Test func theSignatureTravelsOn200And304() throws {
        let root = Ed25519PrivateKey()
        let key = Ed25519PrivateKey()
        let certificate = KeyCertificate.issue(for: key.publicKey, by: root, now: Date() - 60, lifetime: 86_400)
        let published = try Published(signer: try FeedSigner(key: key.certified(certificate), lifetime: 3600))
        defer { published.remove() }
        let feed = try published.index.feed(app: "com.example.serve", kind: .products, platform: nil, appVersion: nil, at: .now).get()
        let signature = try #require(feed.signature)
        let full = FeedResponse.decide(
            feed: feed, conditions: ConditionalRequest(), acceptEncoding: [], isHead: false, now: .now, cacheControl: "c")
        #expect(full.status == 200)
        #expect(full.header("Catalog-Signature") == signature)
        let revalidated = FeedResponse.decide(
            feed: feed, conditions: ConditionalRequest(ifNoneMatch: [feed.identity.entityTag]), acceptEncoding: [], isHead: false,
            now: .now, cacheControl: "c")
        #expect(revalidated.status == 304)
        #expect(revalidated.header("Catalog-Signature") == signature)
    }

    @Test func fullResponsesCarryEveryValidator() throws {
        let published = try Published()
        defer { published.remove() }
        let index = published.index
        let buildMoment = Self.buildMoment
        let feed = try index.feed(app: "com.example.serve", kind: .products, platform: nil, appVersion: nil, at: buildMoment).get()
        let now = buildMoment.adding(60)
        let response = FeedResponse.decide(
            feed: feed, conditions: ConditionalRequest(), acceptEncoding: [], isHead: false, now: now, cacheControl: "public, max-age=300")
        #expect(response.status == 200)
        #expect(
            response.headers.map(\.name) == ["Date", "ETag", "Last-Modified", "Cache-Control", "Vary", "Content-Type", "Content-Length"])
        #expect(response.header("Date") == "Sun, 01 Mar 2026 12:01:00 GMT")
        #expect(response.header("Last-Modified") == "Sun, 01 Mar 2026 12:00:00 GMT")
        #expect(response.header("ETag") == feed.identity.entityTag)
        #expect(response.header("Vary") == "Accept-Encoding")
        #expect(response.header("Content-Length") == String(feed.identity.bytes.count))
        #expect(response.body == feed.identity.bytes)

        let head = FeedResponse.decide(
            feed: feed, conditions: ConditionalRequest(), acceptEncoding: [], isHead: true, now: now, cacheControl: "public, max-age=300")
        #expect(head.status == 200)
        #expect(head.headers.map(\.name) == response.headers.map(\.name))
        #expect(head.headers.map(\.value) == response.headers.map(\.value))
        #expect(head.body == nil)
    }

    @Test func gzipHasItsOwnEntityTag() throws {
        let published = try Published()
        defer { published.remove() }
        let index = published.index
        let buildMoment = Self.buildMoment
        let feed = try index.feed(app: "com.example.serve", kind: .catalog, platform: "ios", appVersion: nil, at: buildMoment).get()
        let now = buildMoment.adding(60)
        let gzip = FeedResponse.decide(
            feed: feed, conditions: ConditionalRequest(), acceptEncoding: ["br, gzip;q=0.8"], isHead: false, now: now, cacheControl: "c")
        #expect(gzip.header("Content-Encoding") == "gzip")
        #expect(gzip.header("ETag") == feed.gzip.entityTag)
        #expect(feed.gzip.entityTag != feed.identity.entityTag)
        #expect(gzip.body.flatMap(Gzip.decompress) == feed.identity.bytes)
        // The identity tag does not validate the gzip representation, and the reverse.
        let crossed = FeedResponse.decide(
            feed: feed, conditions: ConditionalRequest(ifNoneMatch: [feed.identity.entityTag]), acceptEncoding: ["gzip"],
            isHead: false, now: now, cacheControl: "c")
        #expect(crossed.status == 200)
    }

    @Test func notModifiedHasValidatorsAndNoBody() throws {
        let published = try Published()
        defer { published.remove() }
        let index = published.index
        let buildMoment = Self.buildMoment
        let feed = try index.feed(app: "com.example.serve", kind: .products, platform: nil, appVersion: nil, at: buildMoment).get()
        let now = buildMoment.adding(60)
        for conditions in [
            ConditionalRequest(ifNoneMatch: [feed.identity.entityTag]),
            ConditionalRequest(ifModifiedSince: [feed.lastModifiedHeader]),
        ] {
            let response = FeedResponse.decide(
                feed: feed, conditions: conditions, acceptEncoding: [], isHead: false, now: now, cacheControl: "public, max-age=300")
            #expect(response.status == 304)
            #expect(response.headers.map(\.name) == ["Date", "ETag", "Last-Modified", "Cache-Control", "Vary"])
            #expect(response.body == nil)
        }
    }

    @Test func lastModifiedIsNeverLaterThanDate() throws {
        let published = try Published()
        defer { published.remove() }
        let index = published.index
        let buildMoment = Self.buildMoment
        let feed = try index.feed(app: "com.example.serve", kind: .products, platform: nil, appVersion: nil, at: buildMoment).get()
        let early = buildMoment.adding(-1)  // a clock just behind the publish moment
        let response = FeedResponse.decide(
            feed: feed, conditions: ConditionalRequest(), acceptEncoding: [], isHead: false, now: early, cacheControl: "c")
        #expect(response.header("Last-Modified") == response.header("Date"))
        // With a Date header up to a second behind, Last-Modified shows a second earlier still...
        let lagging = FeedResponse.decide(
            feed: feed, conditions: ConditionalRequest(), acceptEncoding: [], isHead: false, now: buildMoment, cacheControl: "c",
            dateLag: 1)
        #expect(lagging.header("Last-Modified") == HTTPDate.format(buildMoment.adding(-1)))
        // ...and a client revalidating with that earlier date gets the full response, not a stale 304.
        let revalidated = FeedResponse.decide(
            feed: feed, conditions: ConditionalRequest(ifModifiedSince: [lagging.header("Last-Modified")!]), acceptEncoding: [],
            isHead: false, now: buildMoment, cacheControl: "c", dateLag: 1)
        #expect(revalidated.status == 200)
    }
}

extension Timestamp {
    fileprivate func adding(_ seconds: Int64) -> Timestamp {
        Timestamp(secondsSince1970: secondsSince1970 + seconds)
    }
}
