import CatalogKit
import CatalogServer
import CatalogTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Storage
import Testing

/// `--admin-port`: the editor API, the dashboard and `/metrics` move to a second listener, and
/// the public one refuses them, so that only feeds, reports and health face the internet.
@Suite struct AdminListenerTests {
    /// The status of `GET path` on a fresh connection to `port`.
    static func status(_ path: String, port: Int) async throws -> Int {
        let socket = try LoopbackSocket(port: port)
        defer { socket.close() }
        #expect(socket.send(Array("GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n".utf8)))
        let response = try await socket.awaitResponses(1, heads: [])
        return response.first?.status ?? 0
    }

    @Test func adminRoutesMoveToTheAdminPortAndThePublicPortRefusesThem() async throws {
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        let store = try await SQLiteStore.open(path: fixture.root.appendingPathComponent("var/catalog.sqlite").path)
        let adminPort = try LoopbackListener().port  // free a moment ago: the listener closes at once
        let workflow = CatalogWorkflow(
            catalogDirectory: fixture.catalog, catalogDisplayPath: "catalog", publicDirectory: fixture.publicTree.root)
        let app = buildApplication(
            publicDirectory: fixture.publicTree, port: 0, reportStore: store, workflow: workflow,
            adminListener: (host: "127.0.0.1", port: adminPort), logger: Logger(label: "test"))
        try await app.test(.live) { client in
            let port = try #require(client.port)
            let feed = "/v1/apps/\(CatalogServerTests.app)/products.json"
            // The admin listener starts beside the public one: wait for it.
            for _ in 0..<100 {
                if let probe = try? LoopbackSocket(port: adminPort) {
                    probe.close()
                    break
                }
                try await Task.sleep(for: .milliseconds(50))
            }

            // Public: feeds and health; no editor API, dashboard or metrics.
            #expect(try await Self.status(feed, port: port) == 200)
            #expect(try await Self.status("/healthz", port: port) == 200)
            for path in ["/v1/admin/apps", "/editor/", "/metrics"] {
                #expect(try await Self.status(path, port: port) == 404, "\(path) on the public port")
            }
            // Admin: the editor API (which asks for a token), the dashboard, metrics; no feeds.
            #expect(try await Self.status("/v1/admin/apps", port: adminPort) == 401)
            #expect(try await Self.status("/editor/", port: adminPort) == 200)
            #expect(try await Self.status("/metrics", port: adminPort) == 200)
            #expect(try await Self.status(feed, port: adminPort) == 404)

            // Each side's OpenAPI document describes what it answers.
            let publicDocument = try await client.execute(uri: "/openapi.yaml", method: .get)
            let text = String(buffer: publicDocument.body)
            #expect(text.contains("/v1/apps/{app}/products.json:"))
            #expect(!text.contains("\n  /v1/admin/") && !text.contains("\n  /metrics:") && !text.contains("\n  /editor"))
        }
        try await store.close()
    }
}
