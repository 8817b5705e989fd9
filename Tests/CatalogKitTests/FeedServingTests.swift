import CatalogKit
import CatalogTestSupport
import Foundation
import HTTPSemantics
import Testing

/// The serving core without a server: a published tree loaded into a ``FeedIndex``, and the
/// exact responses ``FeedResponse`` decides from it.
@Suite struct FeedServingTests {
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

    private func published() throws -> (TemporaryCatalog, FeedIndex) {
        let catalog = try TemporaryCatalog()
        try catalog.write("com.example.serve.plist", Self.source)
        try catalog.publish(at: buildMoment)
        let (index, problems) = FeedIndex.load(catalog.tree)
        #expect(problems.isEmpty)
        return (catalog, index)
    }

    private func ids(_ result: Result<ServedFeed, FeedIndex.LookupError>) -> String? {
        guard case .success(let feed) = result else { return nil }
        return text(feed.identity.bytes)
    }

    @Test func parametersSelectThePublishedVariant() throws {
        let (catalog, index) = try published()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        func lookup(_ platform: String?, _ version: String?) -> String? {
            ids(index.feed(app: "com.example.serve", kind: .products, platform: platform, appVersion: version, at: buildMoment))
        }
        #expect(lookup(nil, nil) == #"["com.example.serve.coins","com.example.serve.mac","com.example.serve.new"]"#)
        #expect(lookup("ios", nil) == #"["com.example.serve.coins","com.example.serve.new"]"#)
        #expect(lookup("iOS", "1.9") == #"["com.example.serve.coins"]"#)
        #expect(lookup("macos", "2.0.0") == #"["com.example.serve.coins","com.example.serve.mac","com.example.serve.new"]"#)
        #expect(lookup(nil, "1.0") == #"["com.example.serve.coins","com.example.serve.mac"]"#)
        // A platform the app does not distinguish gets the unnarrowed feed.
        #expect(lookup("tvos", nil) == lookup(nil, nil))
    }

    @Test func badParametersAndUnknownAppsSayWhy() throws {
        let (catalog, index) = try published()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        let cases: [(String, String?, String?, FeedIndex.LookupError)] = [
            ("com.example.none", nil, nil, .unknownApp("com.example.none")),
            ("com.example.serve", "android", nil, .unknownPlatform("android")),
            ("com.example.serve", nil, "2.x", .malformedAppVersion("2.x")),
            ("com.example.serve", nil, "", .malformedAppVersion("")),
        ]
        for (app, platform, version, error) in cases {
            guard case .failure(let actual) = index.feed(app: app, kind: .catalog, platform: platform, appVersion: version, at: buildMoment)
            else {
                Issue.record("\(app) \(String(describing: platform)) \(String(describing: version)) found a feed")
                continue
            }
            #expect(actual == error)
        }
        #expect(FeedIndex.LookupError.unknownApp("x").status == 404)
        #expect(FeedIndex.LookupError.unknownPlatform("x").status == 400)
        #expect(FeedIndex.LookupError.malformedAppVersion("x").status == 400)
    }

    @Test func anAppWhoseFilesDoNotMatchItsManifestIsNotServed() throws {
        let (catalog, _) = try published()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        let file = catalog.tree.revisionDirectory("com.example.serve", 1).appendingPathComponent("products.json")
        try FileManager.default.removeItem(at: file)  // the static copy is a hard link; replace, not edit
        try Data("[\"tampered\"]".utf8).write(to: file)
        let (index, problems) = FeedIndex.load(catalog.tree)
        #expect(index.apps["com.example.serve"] == nil)
        #expect(problems.count == 1)
        #expect(problems.first?.contains("content does not match the manifest") == true)
    }

    @Test func fullResponsesCarryEveryValidator() throws {
        let (catalog, index) = try published()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
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
        let (catalog, index) = try published()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
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
        let (catalog, index) = try published()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
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
        let (catalog, index) = try published()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
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

    @Test(arguments: [
        ([String](), false),
        (["gzip"], true),
        (["GZIP"], true),
        (["x-gzip"], true),
        (["deflate, gzip;q=0.5"], true),
        (["gzip;q=0"], false),
        (["gzip; q=0.000"], false),
        (["*"], true),
        (["*;q=0"], false),
        (["*, gzip;q=0"], false),
        (["identity"], false),
        (["br", "gzip"], true),
        (["br;q=1.0, deflate"], false),
    ])
    func acceptEncoding(fieldLines: [String], acceptsGzip: Bool) {
        #expect(AcceptEncoding.acceptsGzip(fieldLines) == acceptsGzip)
    }
}
