import CatalogClient
import CatalogKit
import CatalogServer
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Storage
import Testing
import Time

/// A catalog published into a temporary directory and served by the real `catalog serve`
/// application on a loopback port, with a client directory beside it.
struct ServedCatalog {
    static let app = "com.example.client"

    let root: URL
    var catalog: URL { root.appendingPathComponent("catalog") }
    var publicTree: PublicTree { PublicTree(root: root.appendingPathComponent("public")) }
    /// Where clients keep their cache and report queue: a new client on it is an app relaunched.
    var clientDirectory: URL { root.appendingPathComponent("client") }

    /// The identifiers the report tests name invalid: published once, now retired, so that the
    /// server stores reports about them (it stores only identifiers the app published) while the
    /// feeds stay `ids`.
    static let retired = ["com.example.client.gone", "com.example.client.gone2"]

    /// Signs every revision published, when set.
    let signer: FeedSigner?

    init(ids: [String], retired: [String] = ServedCatalog.retired, signer: FeedSigner? = nil) throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("client-\(UUID().uuidString)")
        self.signer = signer
        try FileManager.default.createDirectory(at: catalog, withIntermediateDirectories: true)
        try publish(ids, retired: retired)
    }

    /// Publishes `ids` as a new revision, dated a little after the last one so that Last-Modified
    /// moves forward whatever the clock says (the server holds a just-published date back to Date).
    func publish(_ ids: [String], retired: [String] = ServedCatalog.retired) throws {
        let products =
            ids.map { "<dict><key>id</key><string>\($0)</string><key>type</key><string>consumable</string></dict>" }
            + retired.map { "<dict><key>id</key><string>\($0)</string><key>status</key><string>retired</string></dict>" }
        let text = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>platforms</key><array><string>iOS</string><string>macOS</string></array>
            <key>products</key><array>\(products.joined())
            <dict><key>id</key><string>com.example.client.mac</string><key>platforms</key><array><string>macOS</string></array></dict>
            </array></dict></plist>
            """
        try Data(text.utf8).write(to: catalog.appendingPathComponent("\(Self.app).plist"))
        let revision = (try publicTree.currentManifest(Self.app)?.revision) ?? 0
        let moment = Timestamp(secondsSince1970: Timestamp.now.secondsSince1970 - 100 + Int64(revision))
        let build = try workflow.build(at: moment, dryRun: false)
        #expect(!build.hasErrors, "the test catalog does not build: \(build.diagnostics)")
    }

    var workflow: CatalogWorkflow {
        var workflow = CatalogWorkflow(catalogDirectory: catalog, catalogDisplayPath: "catalog", publicDirectory: publicTree.root)
        workflow.signer = signer
        return workflow
    }

    /// Runs the server with `cacheControl`, storing reports in a new SQLite file with `limits`,
    /// for the duration of `body`, which gets its base URL and a way to read what it did.
    func serve(
        cacheControl: String = "public, max-age=300", perInstall: RateLimit? = nil,
        _ body: @Sendable (_ server: URL, _ counters: ServerCounters) async throws -> Void
    ) async throws {
        var configuration = ServeConfiguration()
        configuration.cacheControl = cacheControl
        var reports = ReportsConfiguration()
        reports.perAddress = nil
        reports.perInstall = perInstall
        let store = try await SQLiteStore.open(path: root.appendingPathComponent("server-\(UUID().uuidString).sqlite").path)
        let application = buildApplication(
            publicDirectory: publicTree, port: 0, configuration: configuration, reloadInterval: .milliseconds(100), reportStore: store,
            purchaseStore: store, reportsConfiguration: reports, logger: Logger(label: "test"))
        try await application.test(.live) { client in
            let port = try #require(client.port)
            let server = try #require(URL(string: "http://127.0.0.1:\(port)"))
            try await body(server, ServerCounters(client: client, store: store))
        }
        try await store.close()
    }

    /// A client on this fixture's directory; `configure` adjusts what tests need.
    func client(
        server: URL, fallback: [String] = ["com.example.client.bundled"],
        _ configure: (inout CatalogClient.Configuration) -> Void = { _ in }
    )
        -> CatalogClient
    {
        var configuration = CatalogClient.Configuration(
            server: server, app: Self.app, fallbackIdentifiers: fallback, directory: clientDirectory)
        configuration.platform = .iOS
        configuration.appVersion = "2.3.1"
        // Short waits keep failing tests short; nothing asserts on them.
        configuration.fetchBackoff = Backoff(initial: 0.01, maximum: 0.05)
        configuration.reportBackoff = Backoff(initial: 0.01, maximum: 0.05)
        configuration.log = { _ in }
        configure(&configuration)
        return CatalogClient(configuration: configuration)
    }

    /// The report files a client on this directory has queued, oldest first.
    func queuedReports() throws -> [URL] {
        let directory = clientDirectory.appendingPathComponent("data/reports")
        guard FileManager.default.fileExists(atPath: directory.path) else { return [] }
        return try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".json") }.sorted()
            .map { directory.appendingPathComponent($0) }
    }

    func remove() {
        try? FileManager.default.removeItem(at: root)
    }
}

/// The server's own count of what it answered, from `/metrics`: proof of what went over the wire.
struct ServerCounters: Sendable {
    let client: any TestClientProtocol
    let store: SQLiteStore

    /// The server's aggregate of stored reports for the fixture's app, by identifier.
    func storedReports() async throws -> [String: Int] {
        let aggregates = try await store.aggregate(AggregateQuery(app: ServedCatalog.app))
        return aggregates.reduce(into: [:]) { $0[$1.identifier, default: 0] += $1.reports }
    }

    /// `catalog_http_requests_total` for a route and status.
    func requests(_ route: String, _ status: Int) async throws -> Int {
        let response = try await client.execute(uri: "/metrics", method: .get)
        let prefix = #"catalog_http_requests_total{route="\#(route)",status="\#(status)"} "#
        for line in String(buffer: response.body).split(separator: "\n") where line.hasPrefix(prefix) {
            return Int(line.dropFirst(prefix.count)) ?? -1
        }
        return 0
    }

    /// Requests of every status for `route`.
    func allRequests(_ route: String = "products") async throws -> Int {
        var total = 0
        for status in [200, 202, 304, 400, 404, 413, 429, 500, 503] { total += try await requests(route, status) }
        return total
    }
}

/// A loopback port nothing listens on: one the server just gave back.
func closedServerURL() async throws -> URL {
    let fixture = try ServedCatalog(ids: [])
    defer { fixture.remove() }
    let box = URLBox()
    try await fixture.serve { server, _ in box.url = server }
    return try #require(box.url)
}

final class URLBox: @unchecked Sendable {
    // @unchecked: written once inside a serve body, read after it returned.
    var url: URL?
}
