import CatalogClient
import CatalogKit
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing
import Time

/// A client against a static host (docs/client.md, "Static hosting"): a stand-in on loopback that
/// serves the published `public/` tree as files, ignoring queries and answering 404 for what it
/// does not hold and 405 to a POST, as nginx or a CDN does. The client finds its variant's own
/// path from `variants.json` and verifies it in enforce mode; reports say they have nowhere to go.
@Suite struct StaticHostTests {
    static let app = ServedCatalog.app
    static let keys = SignatureTests.Keys()

    /// iOS and macOS, and a band from 2.0: an iOS 2.3.1 client's variant is `ios/2.0`, which differs
    /// from the default (it lacks the macOS-only product) and from `ios/0.0` (it has the new one).
    static let source = """
        <?xml version="1.0" encoding="UTF-8"?>
        <plist version="1.0"><dict><key>platforms</key><array><string>iOS</string><string>macOS</string></array>
        <key>products</key><array>
        <dict><key>id</key><string>com.example.client.coins</string><key>type</key><string>consumable</string></dict>
        <dict><key>id</key><string>com.example.client.new</string><key>type</key><string>consumable</string><key>minimumAppVersion</key><string>2.0</string></dict>
        <dict><key>id</key><string>com.example.client.mac</string><key>platforms</key><array><string>macOS</string></array></dict>
        <dict><key>id</key><string>com.example.client.gone</string><key>status</key><string>retired</string></dict>
        <dict><key>id</key><string>com.example.client.gone2</string><key>status</key><string>retired</string></dict>
        </array></dict></plist>
        """

    /// A signed publication of ``source`` in a fresh fixture.
    static func published() throws -> ServedCatalog {
        let fixture = try ServedCatalog(ids: [], signer: try keys.signer())
        try Data(source.utf8).write(to: fixture.catalog.appendingPathComponent("\(app).plist"))
        let build = try fixture.workflow.build(at: Timestamp(secondsSince1970: Timestamp.now.secondsSince1970 - 10), dryRun: false)
        #expect(!build.hasErrors, "\(build.diagnostics)")
        return fixture
    }

    /// Serves `root` as a static host does during `body`, which gets the base URL and the paths
    /// asked for so far.
    static func withStaticHost(
        _ root: URL, _ body: @Sendable (URL, _ paths: @Sendable () -> [String]) async throws -> Void
    ) async throws {
        let paths = Mutex<[String]>([])
        let router = Router()
        router.on("**", method: .get) { request, _ -> Response in
            let path = request.uri.path
            paths.withLock { $0.append(path) }
            guard !path.contains(".."), let data = FileManager.default.contents(atPath: root.path + path) else {
                return Response(
                    status: .notFound, headers: [.contentType: "text/html"], body: .init(byteBuffer: .init(string: "<h1>404</h1>")))
            }
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: .init(bytes: [UInt8](data))))
        }
        router.on("**", method: .post) { request, _ -> Response in
            paths.withLock { $0.append("POST " + request.uri.path) }
            return Response(
                status: .methodNotAllowed, headers: [.contentType: "text/html"], body: .init(byteBuffer: .init(string: "<h1>405</h1>")))
        }
        try await Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0))).test(.live) { client in
            let port = try #require(client.port)
            try await body(try #require(URL(string: "http://127.0.0.1:\(port)")), { paths.withLock { $0 } })
        }
    }

    /// The identifiers of the variant `directory` of the current revision, as published.
    static func identifiers(_ fixture: ServedCatalog, platform: String, band: String) throws -> [String] {
        let manifest = try #require(try fixture.publicTree.currentManifest(app))
        let record = try #require(manifest.variants.first { $0.platform == platform && $0.band == band })
        let bytes = try fixture.publicTree.feedBytes(app, revision: manifest.revision, directory: record.directory, name: "products.json")
        return try JSONDecoder().decode([String].self, from: Data(bytes))
    }

    /// Before variant paths, every fetch of an app with platforms from a static host was refused in
    /// enforce mode (the host served the default feed, signed for other variants): the app lived on
    /// its bundled list. Now each platform and version gets its own variant's list, verified.
    @Test(arguments: [
        ("iOS", "2.3.1", "ios", "2.0"), ("iOS", "1.2", "ios", "0.0"), ("macOS", "2.0", "macos", "2.0"), ("watchOS", "3.1", "any", "2.0"),
    ])
    func eachVariantVerifiesFromAStaticHost(platformName: String, version: String, expectedPlatform: String, band: String) async throws {
        let fixture = try Self.published()
        defer { fixture.remove() }
        let expected = try Self.identifiers(fixture, platform: expectedPlatform, band: band)
        let revision = try fixture.publicTree.currentManifest(Self.app)?.revision
        try await Self.withStaticHost(fixture.publicTree.root) { server, paths in
            let client = fixture.client(server: server) { $0.signatures = Self.keys.policy(.enforce) }
            let platform = try #require(Self.platform(platformName))
            let list = await client.products(platform: platform, appVersion: version)
            #expect(list.error == nil, "\(String(describing: list.error))")
            #expect(list.source == .network)
            #expect(list.identifiers == expected)
            #expect(list.signedRevision == revision)
            let variantPath = "/v1/apps/\(Self.app)/variants/\(expectedPlatform)/\(band)/products.json"
            #expect(paths().contains(variantPath), "\(paths())")
            #expect(paths().contains("/v1/apps/\(Self.app)/variants.json"))

            // A relaunch: the index kept on disk gives the path at once, and the cache revalidates.
            let again = await fixture.client(server: server) { $0.signatures = Self.keys.policy(.enforce) }.products(
                platform: platform, appVersion: version)
            #expect(again.identifiers == expected)
            #expect(again.signedRevision == revision)
        }
    }

    /// The client's platform of this name (CatalogKit has a `Platform` of its own).
    static func platform(_ name: String) -> ClientPlatform? {
        ClientPlatform(rawValue: name)
    }

    /// The index is not signed: one that lies (no platforms, so the default's path) gets the
    /// default feed, whose signature does not cover iOS 2.3.1: refused, never used.
    @Test func aLyingIndexCannotServeAnotherVariant() async throws {
        let fixture = try Self.published()
        defer { fixture.remove() }
        let index = fixture.publicTree.appDirectory(Self.app).appendingPathComponent("variants.json")
        try Data(#"{"bands":[],"platforms":[]}"#.utf8).write(to: index)
        try await Self.withStaticHost(fixture.publicTree.root) { server, paths in
            let list = await fixture.client(server: server) { $0.signatures = Self.keys.policy(.enforce) }.products(
                platform: .iOS, appVersion: "2.3.1")
            #expect(list.source == .fallback)
            #expect(list.error?.code == .signature)
            #expect(list.error?.message.contains("wrongBinding") == true, "\(String(describing: list.error))")
            #expect(!list.identifiers.contains("com.example.client.mac"))
            #expect(paths().contains("/v1/apps/\(Self.app)/products.json"))
        }
    }

    /// A host without `variants.json` (a server or a build from before variant paths) gets the
    /// query form, as before; the log says why once.
    @Test func aHostWithoutTheIndexGetsTheQueryForm() async throws {
        let fixture = try ServedCatalog(ids: ["com.example.client.coins"])
        defer { fixture.remove() }
        try FileManager.default.removeItem(at: fixture.publicTree.appDirectory(Self.app).appendingPathComponent("variants.json"))
        let log = LogRecorder()
        try await Self.withStaticHost(fixture.publicTree.root) { server, paths in
            let client = fixture.client(server: server) { $0.log = log.record }
            let first = await client.products(platform: .iOS, appVersion: "2.3.1")
            let second = await client.refresh(platform: .iOS, appVersion: "2.3.1")
            #expect(first.source == .network)
            #expect(second.source == .network)
            #expect(paths().filter { $0.hasSuffix("variants.json") }.count == 1, "asked once per process: \(paths())")
            #expect(paths().filter { $0 == "/v1/apps/\(Self.app)/products.json" }.count == 2)
            #expect(log.messages.filter { $0.contains("no variant paths") }.count == 1, "\(log.messages)")
        }
    }

    /// A static host cannot take reports: they are kept, not dropped, and the log says once that
    /// they need a `catalog serve`; with ``CatalogClient/Configuration/reportServer`` they go there.
    @Test func reportsToAStaticHostWaitForAReportServer() async throws {
        let fixture = try ServedCatalog(ids: ["com.example.client.coins"])
        defer { fixture.remove() }
        let log = LogRecorder()
        try await Self.withStaticHost(fixture.publicTree.root) { host, paths in
            let client = fixture.client(server: host) {
                $0.sendsReportsAutomatically = false
                $0.reportBackoff = Backoff(initial: 0, maximum: 0)
                $0.log = log.record
            }
            try await client.reportInvalidIdentifiers(["com.example.client.gone"], environment: .sandbox)
            let first = await client.sendPendingReports()
            // Past the (zero) back-off the first round set: a wait, not an assertion on time.
            try await Task.sleep(for: .milliseconds(50))
            let second = await client.sendPendingReports()
            for delivery in [first, second] {
                #expect(delivery.error?.code == .noReportEndpoint)
                #expect(delivery.error?.status == 405)
                #expect(delivery.dropped == 0)
                #expect(delivery.pending == 1)
            }
            #expect(try fixture.queuedReports().count == 1, "kept for a report server")
            #expect(paths().filter { $0.hasPrefix("POST ") }.count == 2)
            #expect(log.messages.filter { $0.contains("reportServer") }.count == 1, "said once: \(log.messages)")
            #expect(!log.messages.contains { $0.contains("dropped") })

            try await fixture.serve { server, counters in
                let relaunched = fixture.client(server: host) {
                    $0.sendsReportsAutomatically = false
                    $0.reportServer = server
                }
                let delivery = await relaunched.sendPendingReports()
                #expect(delivery.sent == 1)
                #expect(delivery.pending == 0)
                let accepted = try await counters.requests("reports", 202)
                #expect(accepted == 1)
            }
        }
    }

    /// catalog serve's own 404 (an app it does not publish) still drops the report: that is the
    /// service refusing it, not a host without the route.
    @Test func theServicesOwn404StillDrops() async throws {
        let fixture = try ServedCatalog(ids: ["com.example.client.coins"])
        defer { fixture.remove() }
        try await fixture.serve { server, _ in
            let client = fixture.client(server: server) {
                $0.app = "com.example.unknown"
                $0.sendsReportsAutomatically = false
            }
            try await client.reportInvalidIdentifiers(["com.example.client.gone"], environment: .sandbox)
            let delivery = await client.sendPendingReports()
            #expect(delivery.dropped == 1)
            #expect(delivery.error?.code == .rejected)
        }
    }
}
