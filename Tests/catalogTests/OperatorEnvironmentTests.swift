import CatalogTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue 27, item 7: every command reads its settings as `catalog serve` does. Followed as a new
/// operator would, with docs/operations.md's environment (the PostgreSQL URL in `CATALOG_STORE`)
/// and nothing else, `catalog token create` made its token in a stray `var/catalog.sqlite`, the
/// server on PostgreSQL answered it 401, and `catalog build` audited into that stray file.
@Suite(.postgres)
struct OperatorEnvironmentTests {
    @Test func everyCommandUsesTheStoreTheEnvironmentNames() async throws {
        let store = try await TestPostgres.current.createDatabase()
        let environment = ["CATALOG_STORE": store]
        try await CommandTests.withWorkspace { workspace in
            try CommandTests.writeDemo(workspace)
            let created = try await CommandTests.run(
                ["token", "create", "ops", "--role", "editor"], in: workspace.root, environment: environment)
            #expect(created.status == 0, "\(created.stderr)")
            let token = created.stdout.trimmingCharacters(in: .whitespacesAndNewlines)

            let server = try ServeProcess(in: workspace, environment: environment)
            defer { if server.process.isRunning { server.process.terminate() } }
            #expect(try await server.body(of: "/healthz", within: 30) != nil, "\(server.logText)")
            var request = URLRequest(url: server.url("/v1/admin/apps"))
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            let (_, response) = try await URLSession.shared.data(for: request)
            #expect((response as? HTTPURLResponse)?.statusCode == 200, "the server's store does not know the token: \(server.logText)")
            _ = try await server.stop()

            try workspace.write(
                "catalog/com.example.app.plist",
                try #require(workspace.read("catalog/com.example.app.plist")).replacingOccurrences(
                    of: "</array>", with: "<string>com.example.operator</string></array>"))
            let build = try await CommandTests.run(["build"], in: workspace.root, environment: environment)
            #expect(build.status == 0, "\(build.stderr)")
            let audit = try await CommandTests.run(["audit"], in: workspace.root, environment: environment)
            #expect(audit.status == 0, "\(audit.stderr)")
            #expect(audit.stdout.contains("token-create"), "\(audit.stdout)")
            #expect(audit.stdout.contains("publish") && audit.stdout.contains("com.example.app"), "\(audit.stdout)")
            let audited = try await TestPostgres.current.psql(
                "SELECT count(*) FROM audit_log", database: String(store.split(separator: "/").last ?? ""))
            #expect(audited.trimmingCharacters(in: .whitespacesAndNewlines) != "0", "\(audited)")
            #expect(
                !workspace.exists("var"), "a command made a store of its own: \(workspace.files().keys.filter { $0.hasPrefix("var/") })")
        }
    }
}
