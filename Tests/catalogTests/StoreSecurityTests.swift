import CatalogTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The shared PostgreSQL store as an operator runs it (docs/operations.md, "With PostgreSQL" and
/// "Replicas"): no password in any message, one report-network secret for every node, and a
/// replica that says when its role can do more than a replica needs.
@Suite(.postgres)
struct StoreSecurityTests {
    /// A store URL with a password, refused, unreachable or rejected by the server: whatever the
    /// command prints, the password is not in it.
    @Test func storeErrorsNeverPrintThePassword() async throws {
        let server = try TestPostgres.current
        try await CommandTests.withWorkspace { workspace in
            let urls = [
                "postgres://catalog:hunter2@127.0.0.1:\(server.port)/",  // names no database
                "postgres://:hunter2@127.0.0.1:\(server.port)/catalog",  // names no user
                "postgres://catalog:hunter2@127.0.0.1:\(server.port)/catalog?sslmode=maybe",
                "postgres://catalog:hun@ter2@127.0.0.1:\(server.port)/catalog",
                "postgres://catalog:hunter2@127.0.0.1:1/catalog",  // nobody listens
                "postgres://catalog:hunter2@127.0.0.1:\(server.port)/catalog",  // the wrong password
                "postgres://catalog:hunter2@127.0.0.1:\(server.port)/no_such_database",
            ]
            for url in urls {
                for arguments in [["reports", "--store", url], ["serve", "--store", url, "--print-config"], ["serve", "--store", url]] {
                    let run = try await CommandTests.run(arguments, in: workspace.root)
                    #expect(!(run.stderr + run.stdout).contains("hunter2"), "\(arguments): \(run.stderr)\(run.stdout)")
                    #expect(!(run.stderr + run.stdout).contains("ter2"), "\(arguments): \(run.stderr)\(run.stdout)")
                }
            }
        }
    }

    /// An editor node and a replica on one store, each in a folder of its own (no secret file
    /// shared between them): a client's reports, one through each, count as one network.
    @Test func nodesOnOneStoreHashAClientsNetworkAlike() async throws {
        let server = try TestPostgres.current
        let store = try await server.createDatabase()
        let database = String(store.split(separator: "/").last ?? "")
        let editorFolder = try CommandTests.Workspace()
        let replicaFolder = try CommandTests.Workspace()
        defer {
            editorFolder.remove()
            replicaFolder.remove()
        }
        try CommandTests.writeDemo(editorFolder)
        #expect(try await editorFolder.run("build", "--store", store).status == 0)
        let editor = try ServeProcess(in: editorFolder, ["--store", store])
        defer { _ = try? editor.process.terminate() }
        let replica = try ServeProcess(in: replicaFolder, ["--feeds", "store", "--store", store])
        defer { _ = try? replica.process.terminate() }
        let feed = "/v1/apps/com.example.app/products.json"
        #expect(try await editor.body(of: feed, within: 30) != nil, "\(editor.logText)")
        #expect(try await replica.body(of: feed, within: 30) != nil, "\(replica.logText)")
        for (node, name) in [(editor, "editor"), (replica, "replica")] {
            var request = URLRequest(url: node.url("/v1/apps/com.example.app/invalid-identifiers"))
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(
                #"{"invalidProductIdentifiers":["com.example.level1"],"installId":"install-\#(name)","environment":"production","reportId":"\#(UUID().uuidString.lowercased())"}"#
                    .utf8)
            let (_, response) = try await URLSession.shared.data(for: request)
            #expect((response as? HTTPURLResponse)?.statusCode == 202, "\(name)")
        }
        #expect(try await server.psql("SELECT count(*) FROM reports", database: database) == "2")
        #expect(
            try await server.psql("SELECT count(DISTINCT network) FROM reports", database: database) == "1",
            "one client counted as two networks")

        // The replica connects as the cluster's superuser here: far more than it needs, and it says so.
        #expect(replica.logText.contains("store.role.excess-rights"), "\(replica.logText)")
        #expect(!editor.logText.contains("store.role.excess-rights"), "only a replica checks")
    }

    /// A node told to use a secret file that is not the store's secret refuses to start, and
    /// says why, rather than count networks under names no other node uses.
    @Test func aNamedSecretFileThatDisagreesWithTheStoreIsRefused() async throws {
        let store = try await TestPostgres.current.createDatabase()
        try await CommandTests.withWorkspace { workspace in
            try CommandTests.writeDemo(workspace)
            #expect(try await workspace.run("build", "--store", store).status == 0)
            let first = try ServeProcess(in: workspace, ["--store", store])  // writes the store's secret
            #expect(try await first.body(of: "/healthz", within: 30) != nil, "\(first.logText)")
            #expect(try await first.stop() == 0)
            try workspace.write("other.secret", String(repeating: "ab", count: 32) + "\n")
            let refused = try ServeProcess(
                in: workspace, ["--feeds", "store", "--store", store, "--report-network-secret-file", "other.secret"])
            for _ in 0..<300 where refused.process.isRunning { try await Task.sleep(for: .milliseconds(100)) }
            #expect(!refused.process.isRunning, "a node with another secret started")
            if refused.process.isRunning { refused.process.terminate() }
            refused.process.waitUntilExit()
            #expect(refused.process.terminationStatus == 1)
            #expect(refused.logText.contains("is not the one the store"), "\(refused.logText)")
        }
    }

    /// Commands against PostgreSQL print nothing of PostgresNIO's: its pool is running before
    /// the first connection is leased (it warned, now and then, that it was not).
    @Test func commandsPrintNoPostgresNIOWarning() async throws {
        let store = try await TestPostgres.current.createDatabase()
        try await CommandTests.withWorkspace { workspace in
            try CommandTests.writeDemo(workspace)
            for _ in 0..<5 {
                let run = try await workspace.run("reports", "--store", store)
                #expect(run.status == 0, "\(run.stderr)")
                #expect(!run.stderr.contains("PostgresNIO"), "\(run.stderr)")
            }
        }
    }

    /// The roles as an operator makes them, from `catalog store roles`: the editor node builds
    /// as the editor role, and a replica connected as the replica role serves the feeds, stores
    /// a report (writing the store's network secret, as the first node to start) and finds
    /// nothing to warn of.
    @Test func aReplicaServesAndStoresReportsAsTheReplicaRole() async throws {
        let server = try TestPostgres.current
        let store = try await server.createDatabase()
        let database = String(store.split(separator: "/").last ?? "")
        let suffix = UUID().uuidString.filter(\.isHexDigit).prefix(8).lowercased()
        let (editorRole, replicaRole) = ("editor_\(suffix)", "replica_\(suffix)")
        let editorFolder = try CommandTests.Workspace()
        let replicaFolder = try CommandTests.Workspace()
        defer {
            editorFolder.remove()
            replicaFolder.remove()
        }
        let roles = try await editorFolder.run("store", "roles", "--replica-role", replicaRole, "--editor-role", editorRole)
        #expect(roles.status == 0, "\(roles.stderr)")
        try await server.psql(roles.stdout, database: database)
        try await server.psql("ALTER ROLE \(editorRole) PASSWORD 'editor-pw'; ALTER ROLE \(replicaRole) PASSWORD 'replica-pw'")
        try CommandTests.writeDemo(editorFolder)
        let build = try await editorFolder.run(
            "build", "--store", "postgres://\(editorRole):editor-pw@127.0.0.1:\(server.port)/\(database)")
        #expect(build.status == 0, "\(build.stderr)")
        try await server.psql(roles.stdout, database: database)  // the tables exist now

        let replica = try ServeProcess(
            in: replicaFolder,
            ["--feeds", "store", "--store", "postgres://\(replicaRole):replica-pw@127.0.0.1:\(server.port)/\(database)"])
        defer { _ = try? replica.process.terminate() }
        #expect(try await replica.body(of: "/v1/apps/com.example.app/products.json", within: 30) != nil, "\(replica.logText)")
        var request = URLRequest(url: replica.url("/v1/apps/com.example.app/invalid-identifiers"))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(#"{"invalidProductIdentifiers":["com.example.level1"],"installId":"replica-role"}"#.utf8)
        let (_, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 202, "\(replica.logText)")
        #expect(try await server.psql("SELECT count(*) FROM reports", database: database) == "1")
        #expect(try await server.psql("SELECT count(*) FROM network_secret", database: database) == "1")
        #expect(!replica.logText.contains("excess-rights"), "\(replica.logText)")
        #expect(!replica.logText.contains("error"), "\(replica.logText)")
    }
}
