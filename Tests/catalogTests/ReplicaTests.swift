import AppStoreTestSupport
import CatalogKit
import CatalogTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// An editor node and serving replicas on one real PostgreSQL store, each a `catalog` process
/// (docs/operations.md, "Replicas"). Timing is measured by `scripts/cluster-test`; these tests
/// wait within generous bounds and check what arrives, and by which way.
@Suite(.postgres)
struct ReplicaTests {
    private static let app = "com.example.app"
    private static let feed = "/v1/apps/\(app)/products.json"

    /// A connection per request, never one kept from before: the process-wide session may hold a
    /// keep-alive connection to a port an earlier test's server used, and a server whose listener
    /// closed can still answer on it, with its own feeds, after a new server took the port.
    private static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpAdditionalHeaders = ["Connection": "close"]
        return URLSession(configuration: configuration)
    }()

    /// A workspace with the demo catalog, built into its own database of the suite's server.
    private static func editorWorkspace() async throws -> (CommandTests.Workspace, store: String) {
        let server = try TestPostgres.current
        let store = try await server.createDatabase()
        let workspace = try CommandTests.Workspace()
        try CommandTests.writeDemo(workspace)
        let build = try await workspace.run("build", "--store", store)
        #expect(build.status == 0, "\(build.stderr)")
        return (workspace, store)
    }

    /// Body, ETag and Last-Modified of `GET path`, nil if it was not a 200.
    private static func get(_ path: String, from server: ServeProcess) async -> (body: Data, etag: String?, lastModified: String?)? {
        guard let (data, response) = try? await Self.session.data(from: server.url(path)),
            let http = response as? HTTPURLResponse, http.statusCode == 200
        else { return nil }
        return (data, http.value(forHTTPHeaderField: "ETag"), http.value(forHTTPHeaderField: "Last-Modified"))
    }

    /// What `get` saw, for a failure's message: validators and the start of the body.
    private static func describe(_ answer: (body: Data, etag: String?, lastModified: String?)?) -> String {
        guard let answer else { return "no 200" }
        return
            "ETag \(answer.etag ?? "none"), Last-Modified \(answer.lastModified ?? "none"), body \(String(decoding: answer.body.prefix(200), as: UTF8.self))"
    }

    private static func describe(_ path: String, from server: ServeProcess) async -> String {
        guard let (data, response) = try? await Self.session.data(from: server.url(path)), let http = response as? HTTPURLResponse
        else {
            return "nothing"
        }
        return
            "\(http.statusCode) \(describe((data, http.value(forHTTPHeaderField: "ETag"), http.value(forHTTPHeaderField: "Last-Modified"))))"
    }

    /// Polls until `server` answers `path` as `reference` does at the same moment, body and
    /// validators alike, with `expected`'s ETag (that revision), for up to `seconds` (a bound, not a
    /// measure). Compared at the same moment because a feed published within the last second
    /// shows a Last-Modified no later than its Date (RFC 9110, 8.8.2.1): an answer kept from
    /// then differs from every later one in Last-Modified alone.
    private static func serves(
        _ server: ServeProcess, _ path: String = feed, like reference: ServeProcess,
        at expected: (body: Data, etag: String?, lastModified: String?)?, within seconds: Int = 20
    ) async throws -> Bool {
        for _ in 0..<(seconds * 20) {
            if let expected, let answer = await get(path, from: server), answer.etag == expected.etag,
                let now = await get(path, from: reference), answer.body == now.body, answer.etag == now.etag,
                answer.lastModified == now.lastModified
            {
                return true
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    private static func addProduct(_ workspace: CommandTests.Workspace, _ id: String) throws {
        let source = try #require(workspace.read("catalog/\(app).plist"))
        try workspace.write("catalog/\(app).plist", source.replacingOccurrences(of: "</array>", with: "<string>\(id)</string></array>"))
    }

    /// A replica with an empty disk serves what the editor node serves, validators included, and
    /// an older revision's snapshot too; the next publication reaches it by its announcement
    /// alone (the replica polls once an hour here).
    @Test func anEmptyReplicaServesTheEditorsFeedsAndFollowsAnnouncements() async throws {
        let (workspace, store) = try await Self.editorWorkspace()
        defer { workspace.remove() }
        let editor = try ServeProcess(in: workspace, ["--store", store])
        let cache = workspace.root.appendingPathComponent("replica-cache")
        let replica = try ServeProcess(
            in: workspace, ["--feeds", "store", "--store", store, "--feeds-cache", cache.path, "--feeds-poll", "1h"])
        defer {
            _ = try? editor.process.terminate()
            _ = try? replica.process.terminate()
        }
        #expect(try await editor.body(of: Self.feed, within: 30) != nil)
        let first = await Self.get(Self.feed, from: editor)
        #expect(try await Self.serves(replica, like: editor, at: first), "the replica never served revision 1: \(replica.logText)")

        try Self.addProduct(workspace, "com.example.replicated")
        #expect(try await workspace.run("build", "--store", store).status == 0)
        var second = await Self.get(Self.feed, from: editor)
        for _ in 0..<200 where second?.etag == first?.etag {  // the editor node reloads it
            try await Task.sleep(for: .milliseconds(50))
            second = await Self.get(Self.feed, from: editor)
        }
        #expect(second?.etag != first?.etag)
        let reached = try await Self.serves(replica, like: editor, at: second)
        let replicaAnswer = reached ? "" : await Self.describe(Self.feed, from: replica)
        #expect(
            reached,
            "revision 2 never reached the replica: it answers \(replicaAnswer), the editor \(Self.describe(second)); \(replica.logText)")
        let metrics = String(decoding: try await Self.session.data(from: replica.url("/metrics")).0, as: UTF8.self)
        #expect(metrics.contains("catalog_feeds_store_listening 1"), "\(metrics)")
        let snapshot = "/v1/apps/\(Self.app)/revisions/1/products.json"
        #expect(try await Self.serves(replica, snapshot, like: editor, at: await Self.get(snapshot, from: editor)))
        #expect(
            try await Self.serves(
                replica, "/v1/apps/com.example.game/catalog.json",
                like: editor, at: await Self.get("/v1/apps/com.example.game/catalog.json", from: editor)))
        #expect(try await replica.stop() == 0)

        // The database gone, the replica starts all the same from what its cache holds, and
        // says that it is not ready.
        let unreachable = "postgres://catalog@127.0.0.1:\(try LoopbackListener().port)/catalog"
        let restarted = try ServeProcess(in: workspace, ["--feeds", "store", "--store", unreachable, "--feeds-cache", cache.path])
        defer { _ = try? restarted.process.terminate() }
        // Compared with the editor's answer now, not with `second`: taken within a second of the
        // publication, its Last-Modified was the Date of then (RFC 9110, 8.8.2.1), and two fresh-clone
        // runs failed on that second alone while the bodies and ETags agreed.
        let servedFromCache = try await Self.serves(restarted, like: editor, at: second)
        let restartedAnswer = servedFromCache ? "" : await Self.describe(Self.feed, from: restarted)
        #expect(
            servedFromCache,
            "a replica with a cache did not serve it without its store: it answers \(restartedAnswer), the editor \(Self.describe(second)); \(restarted.logText)"
        )
        let (_, readiness) = try await Self.session.data(from: restarted.url("/readyz"))
        #expect((readiness as? HTTPURLResponse)?.statusCode == 503)
    }

    /// POSTs `body` as JSON to `path` of `server`; the status and the body.
    private static func post(_ path: String, _ body: [String: String], to server: ServeProcess, token: String? = nil) async throws -> (
        status: Int, body: String
    ) {
        var request = URLRequest(url: server.url(path))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try JSONSerialization.data(withJSONObject: body)
        let (data, response) = try await Self.session.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    /// Purchases on a replica (docs/purchases.md, "Replicas"): connected as the replica role that
    /// `catalog store roles` makes, with no catalog sources, it binds evidence to the app's settings
    /// from the revision's purchase record the store brought it, accepts an app's purchase and an App
    /// Store notification, and reads the customer back by the app's evidence; the editor node's
    /// backend read sees what the replica recorded. Before purchase records, the replica answered 421.
    @Test func aReplicaTakesPurchasesAndNotificationsAsTheReplicaRole() async throws {
        typealias PKI = AppStoreTestPKI
        let server = try TestPostgres.current
        let store = try await server.createDatabase()
        let database = String(store.split(separator: "/").last ?? "")
        let suffix = UUID().uuidString.filter(\.isHexDigit).prefix(8).lowercased()
        let (editorRole, replicaRole) = ("editor_\(suffix)", "replica_\(suffix)")
        let workspace = try CommandTests.Workspace()
        let replicaFolder = try CommandTests.Workspace()
        defer {
            workspace.remove()
            replicaFolder.remove()
        }
        let roles = try await workspace.run("store", "roles", "--replica-role", replicaRole, "--editor-role", editorRole)
        #expect(roles.status == 0, "\(roles.stderr)")
        try await server.psql(roles.stdout, database: database)
        try await server.psql("ALTER ROLE \(editorRole) PASSWORD 'editor-pw'; ALTER ROLE \(replicaRole) PASSWORD 'replica-pw'")
        let editorStore = "postgres://\(editorRole):editor-pw@127.0.0.1:\(server.port)/\(database)"
        let replicaStore = "postgres://\(replicaRole):replica-pw@127.0.0.1:\(server.port)/\(database)"
        try workspace.write("catalog/\(Self.app).plist", CustomersCommandTests.catalog)
        let pki = try PKI.ecdsa()
        for folder in [workspace, replicaFolder] { try folder.write("root.pem", PKI.pem(pki.root) + "\n") }
        let build = try await workspace.run("build", "--store", editorStore)
        #expect(build.status == 0, "\(build.stderr)")
        try await server.psql(roles.stdout, database: database)  // the tables exist now
        let token = try await workspace.run("token", "create", "shop", "--role", "backend", "--store", editorStore)
        #expect(token.status == 0, "\(token.stderr)")

        let editor = try ServeProcess(in: workspace, ["--store", editorStore, "--root-certificate", "root.pem"])
        let replica = try ServeProcess(
            in: replicaFolder, ["--feeds", "store", "--store", replicaStore, "--root-certificate", "root.pem"])
        defer {
            _ = try? editor.process.terminate()
            _ = try? replica.process.terminate()
        }
        #expect(try await replica.body(of: Self.feed, within: 30) != nil, "\(replica.logText)")
        #expect(try await editor.body(of: Self.feed, within: 30) != nil, "\(editor.logText)")

        let account = "11111111-1111-4111-8111-111111111111"
        // Active until 2099, so that the entitlement shows now, whenever the test runs.
        let transaction = try pki.jws(payload: PKI.transaction(["expiresDate": PKI.milliseconds(PKI.date(2099))]))
        let evidence = ["signedTransaction": transaction, "appAccountToken": account]
        let purchased = try await Self.post("/v1/apps/\(Self.app)/purchases", evidence, to: replica)
        #expect(purchased.status == 200, "\(purchased.body); \(replica.logText)")
        #expect(purchased.body.contains(#""entitlement":"pro""#), "\(purchased.body)")
        let notification = try pki.jws(
            payload: PKI.notification(
                type: "DID_RENEW",
                data: [
                    "signedTransactionInfo": try pki.jws(
                        payload: PKI.transaction([
                            "transactionId": "2000000000000003", "purchaseDate": PKI.milliseconds(PKI.date(2099)),
                            "expiresDate": PKI.milliseconds(PKI.date(2099, 2)),
                        ])),
                    "signedRenewalInfo": try pki.jws(payload: PKI.renewalInfo()),
                ]))
        let notified = try await Self.post(
            "/v1/apps/\(Self.app)/notifications/app-store", ["signedPayload": notification], to: replica)
        #expect(notified.status == 200, "\(notified.body); \(replica.logText)")
        let lookup = try await Self.post("/v1/apps/\(Self.app)/customers/lookup", evidence, to: replica)
        #expect(lookup.status == 200, "\(lookup.body)")
        #expect(lookup.body.contains(account) && lookup.body.contains("2000000000000003"), "\(lookup.body)")

        // The editor node reads what the replica recorded, by the backend's token.
        var request = URLRequest(url: editor.url("/v1/apps/\(Self.app)/customers/\(account)"))
        request.setValue("Bearer \(token.stdout.trimmingCharacters(in: .whitespacesAndNewlines))", forHTTPHeaderField: "Authorization")
        let (data, response) = try await Self.session.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 200, "\(String(decoding: data, as: UTF8.self))")
        let read = String(decoding: data, as: UTF8.self)
        #expect(read.contains("2000000000000001") && read.contains("2000000000000003"), "\(read)")
        #expect(try await server.psql("SELECT count(*) FROM purchase_notifications", database: database) == "1")
        // A backend's read by token belongs to the editor node: the replica's role reads no tokens.
        var byToken = URLRequest(url: replica.url("/v1/apps/\(Self.app)/customers/\(account)"))
        byToken.setValue("Bearer x", forHTTPHeaderField: "Authorization")
        let (_, misdirected) = try await Self.session.data(for: byToken)
        #expect((misdirected as? HTTPURLResponse)?.statusCode == 421)
        #expect(!replica.logText.contains("excess-rights"), "\(replica.logText)")
    }

    /// The editor API lives on the editor node: a replica refuses it, reads and writes, and says where to go.
    @Test func aReplicaSendsEditorsToTheEditorNode() async throws {
        let (workspace, store) = try await Self.editorWorkspace()
        defer { workspace.remove() }
        let replica = try ServeProcess(in: workspace, ["--feeds", "store", "--store", store])
        defer { _ = try? replica.process.terminate() }
        #expect(try await replica.body(of: Self.feed, within: 30) != nil)
        for (method, path) in [("POST", "/v1/admin/apps/\(Self.app)/publish"), ("GET", "/v1/admin/apps")] {
            var request = URLRequest(url: replica.url(path))
            request.httpMethod = method
            request.setValue("Bearer anything", forHTTPHeaderField: "Authorization")
            let (data, response) = try await Self.session.data(for: request)
            #expect((response as? HTTPURLResponse)?.statusCode == 421)
            #expect(String(decoding: data, as: UTF8.self).contains("--feeds public"))
        }
        // And what publishes is refused on a replica's command line.
        let refused = try await workspace.run("serve", "--feeds", "store", "--store", store, "--auto-feedback", "1h")
        #expect(refused.status == 64)
        #expect(refused.stderr.contains("belong on the editor node"))
        let sqlite = try await workspace.run("serve", "--feeds", "store")
        #expect(sqlite.status == 64)
        #expect(sqlite.stderr.contains("PostgreSQL"))
    }

    /// Two editor nodes with auto-feedback on one store: one runs it; killed, the other takes over.
    @Test func theAutoFeedbackLockMovesWhenItsHolderIsKilled() async throws {
        let (first, store) = try await Self.editorWorkspace()
        defer { first.remove() }
        let second = try CommandTests.Workspace()
        defer { second.remove() }
        try CommandTests.writeDemo(second)
        let arguments = ["--store", store, "--auto-feedback", "1h"]
        let nodes = [try ServeProcess(in: first, arguments), try ServeProcess(in: second, arguments)]
        defer { for node in nodes { node.process.terminate() } }
        let holds = { (node: ServeProcess) in node.logText.contains("store.lock.held") }
        var holder: Int?
        for _ in 0..<400 where holder == nil {
            holder = nodes.firstIndex(where: holds)
            try await Task.sleep(for: .milliseconds(50))
        }
        let first_ = try #require(holder, "neither node took the lock: \(nodes.map(\.logText))")
        let other = nodes[1 - first_]
        try await Task.sleep(for: .seconds(2))
        #expect(!holds(other), "both nodes held the auto-feedback lock")

        #expect(try await nodes[first_].stop(with: SIGKILL) == -1)
        var tookOver = false
        for _ in 0..<400 where !tookOver {
            tookOver = holds(other)
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(tookOver, "the lock never moved to the other node: \(other.logText)")
    }
}
