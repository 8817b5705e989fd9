import CatalogKit
import CatalogServer
import CatalogTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Storage
import Synchronization
import Testing
import Time

/// The editor API through real HTTP on loopback, on a real catalog directory and SQLite store.
@Suite struct AdminAPITests {
    static let app = CatalogServerTests.app
    static let appPath = "/v1/admin/apps/\(app)"

    /// A published fixture, a store with an editor's, a viewer's and a revoked token.
    struct Server {
        let fixture: CatalogServerTests.Fixture
        let store: SQLiteStore
        let editor: String
        let viewer: String
        let revoked: String
        var workflow: CatalogWorkflow {
            CatalogWorkflow(catalogDirectory: fixture.catalog, catalogDisplayPath: "catalog", publicDirectory: fixture.publicTree.root)
        }
        var source: URL { fixture.catalog.appendingPathComponent("\(AdminAPITests.app).plist") }

        func headers(_ token: String?, ifMatch: String? = nil, json: Bool = false) -> HTTPFields {
            var fields = HTTPFields()
            if let token { fields[.authorization] = "Bearer \(token)" }
            if let ifMatch { fields[.ifMatch] = ifMatch }
            if json { fields[.contentType] = "application/json" }
            return fields
        }
    }

    static func withServer(_ body: @Sendable (any TestClientProtocol, Server) async throws -> Void) async throws {
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        let store = try await SQLiteStore.open(path: fixture.root.appendingPathComponent("var/catalog.sqlite").path)
        var secrets: [String] = []
        for (name, role) in [("ada", EditorRole.editor), ("vic", .viewer), ("old", .editor)] {
            let secret = TokenSecret.generate()
            try await store.createToken(EditorToken(name: name, role: role, secretHash: TokenSecret.hash(secret), createdAt: .now))
            secrets.append(secret)
        }
        _ = try await store.revokeToken(named: "old", at: .now)
        let server = Server(fixture: fixture, store: store, editor: secrets[0], viewer: secrets[1], revoked: secrets[2])
        let app = buildApplication(
            publicDirectory: fixture.publicTree, port: 0, reloadInterval: .milliseconds(50), reportStore: store,
            workflow: server.workflow, logger: Logger(label: "test"))
        try await app.test(.live) { client in try await body(client, server) }
    }

    static func json(_ response: TestResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(String(buffer: response.body).utf8)) as? [String: Any])
    }

    static func etag(_ client: some TestClientProtocol, _ server: Server) async throws -> String {
        let response = try await client.execute(uri: appPath, method: .get, headers: server.headers(server.viewer))
        return try #require(response.headers[.eTag])
    }

    // MARK: - Tokens

    @Test func everyAdminRouteWantsAToken() async throws {
        try await Self.withServer { client, server in
            let routes: [(String, HTTPRequest.Method)] = [
                ("/v1/admin/apps", .get), (Self.appPath, .get), ("\(Self.appPath)/products", .post),
                ("\(Self.appPath)/products/com.example.served.coins", .put),
                ("\(Self.appPath)/products/com.example.served.coins/retire", .post),
                ("\(Self.appPath)/publish", .post), ("\(Self.appPath)/reports", .get),
                ("\(Self.appPath)/feedback/com.example.served.coins/release", .post), ("/v1/admin/audit", .get),
                ("\(Self.appPath)/feedback/com.example.served.coins/quarantine", .post),
            ]
            for (path, method) in routes {
                for (token, invalid) in [(nil, false), ("cat_wrong", true), (server.revoked, true)] as [(String?, Bool)] {
                    let response = try await client.execute(uri: path, method: method, headers: server.headers(token))
                    #expect(response.status == .unauthorized, "\(method) \(path)")
                    #expect(response.headers[.contentType] == "application/json")
                    let challenge = try #require(response.headers[.wwwAuthenticate])
                    #expect(challenge.hasPrefix("Bearer"))
                    #expect(challenge.contains("invalid_token") == invalid)
                }
            }
        }
    }

    @Test func aViewerReadsButCannotChangeAnything() async throws {
        try await Self.withServer { client, server in
            let read = try await client.execute(uri: Self.appPath, method: .get, headers: server.headers(server.viewer))
            #expect(read.status == .ok)
            let etag = try #require(read.headers[.eTag])
            let before = try Data(contentsOf: server.source)
            let attempts: [(String, HTTPRequest.Method, String?)] = [
                ("\(Self.appPath)/products", .post, #"{"id":"com.example.served.gems"}"#),
                ("\(Self.appPath)/products/com.example.served.coins", .put, #"{"status":"draft"}"#),
                ("\(Self.appPath)/products/com.example.served.coins/retire", .post, nil),
                ("\(Self.appPath)/publish", .post, nil),
                ("\(Self.appPath)/feedback/com.example.served.coins/release", .post, nil),
                ("\(Self.appPath)/feedback/com.example.served.coins/quarantine", .post, nil),
            ]
            for (path, method, body) in attempts {
                let response = try await client.execute(
                    uri: path, method: method, headers: server.headers(server.viewer, ifMatch: etag, json: body != nil),
                    body: body.map { ByteBuffer(string: $0) })
                #expect(response.status == .forbidden, "\(method) \(path)")
            }
            #expect(try Data(contentsOf: server.source) == before)
            // A preview changes nothing: viewers may see it.
            let preview = try await client.execute(
                uri: "\(Self.appPath)/publish?dryRun=true", method: .post, headers: server.headers(server.viewer))
            #expect(preview.status == .ok)
            // A dryRun that is neither true nor false is refused, not taken for a real publish.
            let unclear = try await client.execute(
                uri: "\(Self.appPath)/publish?dryRun=yes", method: .post, headers: server.headers(server.editor, ifMatch: "*"))
            #expect(unclear.status == .badRequest)
            #expect(try await server.store.auditLog(app: nil, limit: 10).isEmpty)
        }
    }

    // MARK: - Reading

    @Test func listsAppsAndOneAppWithItsSourceRevision() async throws {
        try await Self.withServer { client, server in
            let list = try await client.execute(uri: "/v1/admin/apps", method: .get, headers: server.headers(server.viewer))
            #expect(list.status == .ok)
            let apps = try #require(try Self.json(list)["apps"] as? [[String: Any]])
            #expect(apps.map { $0["app"] as? String } == [Self.app])
            #expect(apps[0]["publishedRevision"] as? Int == 1)

            let response = try await client.execute(uri: Self.appPath, method: .get, headers: server.headers(server.viewer))
            #expect(response.status == .ok)
            let body = try Self.json(response)
            let revision = try #require(body["sourceRevision"] as? String)
            #expect(response.headers[.eTag] == "\"\(revision)\"")
            #expect(apps[0]["sourceRevision"] as? String == revision)
            #expect(revision == (try server.workflow.sourceRevision(Self.app)))
            let products = try #require(body["products"] as? [[String: Any]])
            #expect(products.map { $0["id"] as? String } == ["com.example.served.coins", "com.example.served.mac"])
            #expect(products[0]["status"] as? String == "cleared")
            #expect((body["published"] as? [String: Any])?["revision"] as? Int == 1)
            #expect(body["editable"] as? Bool == true)
            #expect(body["files"] as? [String] == ["catalog/\(Self.app).plist"])

            let missing = try await client.execute(
                uri: "/v1/admin/apps/com.example.none", method: .get, headers: server.headers(server.viewer))
            #expect(missing.status == .notFound)
        }
    }

    // MARK: - Changing products

    @Test func createUpdateAndRetireAreWrittenBackCanonicallyAndAudited() async throws {
        try await Self.withServer { client, server in
            var etag = try await Self.etag(client, server)
            let created = try await client.execute(
                uri: "\(Self.appPath)/products", method: .post, headers: server.headers(server.editor, ifMatch: etag, json: true),
                body: ByteBuffer(
                    string:
                        #"{"id":"com.example.served.gems","type":"consumable","referenceName":"Gems","displayOrder":2,"metadata":{"tier":1}}"#
                ))
            #expect(created.status == .created)
            let createdETag = try #require(created.headers[.eTag])
            #expect(createdETag != etag)
            #expect((try Self.json(created)["product"] as? [String: Any])?["referenceName"] as? String == "Gems")
            etag = createdETag

            let updated = try await client.execute(
                uri: "\(Self.appPath)/products/com.example.served.coins", method: .put,
                headers: server.headers(server.editor, ifMatch: etag, json: true),
                body: ByteBuffer(string: #"{"type":"consumable","status":"draft","availableFrom":"2030-01-01T00:00:00Z"}"#))
            #expect(updated.status == .ok)
            etag = try #require(updated.headers[.eTag])

            let retired = try await client.execute(
                uri: "\(Self.appPath)/products/com.example.served.mac/retire", method: .post,
                headers: server.headers(server.editor, ifMatch: etag))
            #expect(retired.status == .ok)
            #expect((try Self.json(retired)["product"] as? [String: Any])?["status"] as? String == "retired")

            // The file is the canonical plist of exactly these definitions.
            let expected = plist(
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
                \t\t\t<string>com.example.served.coins</string>
                \t\t\t<key>type</key>
                \t\t\t<string>consumable</string>
                \t\t\t<key>status</key>
                \t\t\t<string>draft</string>
                \t\t\t<key>availableFrom</key>
                \t\t\t<date>2030-01-01T00:00:00Z</date>
                \t\t</dict>
                \t\t<dict>
                \t\t\t<key>id</key>
                \t\t\t<string>com.example.served.mac</string>
                \t\t\t<key>status</key>
                \t\t\t<string>retired</string>
                \t\t\t<key>platforms</key>
                \t\t\t<array>
                \t\t\t\t<string>macOS</string>
                \t\t\t</array>
                \t\t</dict>
                \t\t<dict>
                \t\t\t<key>id</key>
                \t\t\t<string>com.example.served.gems</string>
                \t\t\t<key>type</key>
                \t\t\t<string>consumable</string>
                \t\t\t<key>referenceName</key>
                \t\t\t<string>Gems</string>
                \t\t\t<key>displayOrder</key>
                \t\t\t<integer>2</integer>
                \t\t\t<key>metadata</key>
                \t\t\t<dict>
                \t\t\t\t<key>tier</key>
                \t\t\t\t<integer>1</integer>
                \t\t\t</dict>
                \t\t</dict>
                \t</array>
                </dict>
                """)
            #expect(String(decoding: try Data(contentsOf: server.source), as: UTF8.self) == expected)
            #expect(!server.workflow.validate().hasErrors)

            let entries = try await server.store.auditLog(app: Self.app, limit: 10)
            #expect(entries.map(\.action) == [.edit, .edit, .edit])
            #expect(
                entries.allSatisfy { $0.actor == "ada" && $0.beforeHash != nil && $0.afterHash != nil && $0.beforeHash != $0.afterHash })
            #expect(
                entries.map(\.summary) == [
                    "retire com.example.served.mac in catalog/\(Self.app).plist",
                    "update com.example.served.coins in catalog/\(Self.app).plist: availableFrom added: 2030-01-01T00:00:00Z, "
                        + "status cleared → draft, type added: consumable",
                    "create com.example.served.gems in catalog/\(Self.app).plist",
                ])
            // Each entry's after is the next one's before: the log chains the file's states.
            #expect(entries[1].afterHash == entries[0].beforeHash)
            #expect(entries[2].afterHash == entries[1].beforeHash)
        }
    }

    @Test func ifMatchIsRequiredAndMustBeCurrent() async throws {
        try await Self.withServer { client, server in
            let etag = try await Self.etag(client, server)
            let before = try Data(contentsOf: server.source)
            let path = "\(Self.appPath)/products/com.example.served.coins/retire"
            let missing = try await client.execute(uri: path, method: .post, headers: server.headers(server.editor))
            #expect(missing.status == .preconditionRequired)
            let weak = try await client.execute(uri: path, method: .post, headers: server.headers(server.editor, ifMatch: "W/\(etag)"))
            #expect(weak.status == .preconditionFailed)

            // Someone else changes the app: the first editor's ETag is stale.
            let other = try await client.execute(
                uri: "\(Self.appPath)/products", method: .post, headers: server.headers(server.editor, ifMatch: etag, json: true),
                body: ByteBuffer(string: #"{"id":"com.example.served.gems"}"#))
            #expect(other.status == .created)
            let changed = try Data(contentsOf: server.source)
            #expect(changed != before)
            let stale = try await client.execute(uri: path, method: .post, headers: server.headers(server.editor, ifMatch: etag))
            #expect(stale.status == .preconditionFailed)
            #expect(stale.headers[.eTag] == other.headers[.eTag])
            #expect(try Data(contentsOf: server.source) == changed)
            // `*` is for scripts that mean to overwrite whatever is there.
            let any = try await client.execute(
                uri: "\(Self.appPath)/products/com.example.served.gems/retire", method: .post,
                headers: server.headers(server.editor, ifMatch: "*"))
            #expect(any.status == .ok)
            let current = try #require((try Self.json(stale)["error"] as? [String: Any])?["current"] as? [String: Any])
            #expect((current["products"] as? [[String: Any]])?.count == 3)
        }
    }

    @Test func aChangeThatBreaksARuleIs422WithTheDiagnostics() async throws {
        try await Self.withServer { client, server in
            let etag = try await Self.etag(client, server)
            let before = try Data(contentsOf: server.source)
            let duplicate = try await client.execute(
                uri: "\(Self.appPath)/products", method: .post, headers: server.headers(server.editor, ifMatch: etag, json: true),
                body: ByteBuffer(string: #"{"id":"com.example.served.coins","type":"gold"}"#))
            #expect(duplicate.status == .unprocessableContent)
            let error = try #require(try Self.json(duplicate)["error"] as? [String: Any])
            let messages = (error["diagnostics"] as? [[String: Any]] ?? []).compactMap { $0["message"] as? String }
            #expect(messages.contains { $0.contains("duplicate product id 'com.example.served.coins'") })
            #expect(messages.contains { $0.contains("gold") })

            // Identifiers never change: a rename would make a published one disappear.
            let renamed = try await client.execute(
                uri: "\(Self.appPath)/products/com.example.served.coins", method: .put,
                headers: server.headers(server.editor, ifMatch: etag, json: true), body: ByteBuffer(string: #"{"id":"com.example.other"}"#))
            #expect(renamed.status == .unprocessableContent)

            for (body, status) in [
                ("not json", HTTPResponse.Status.badRequest), ("[1]", .badRequest), (#"{"id":null}"#, .badRequest),
                (#"{"type":"consumable"}"#, .unprocessableContent),
            ] {
                let response = try await client.execute(
                    uri: "\(Self.appPath)/products", method: .post, headers: server.headers(server.editor, ifMatch: etag, json: true),
                    body: ByteBuffer(string: body))
                #expect(response.status == status, "\(body)")
            }
            let text = try await client.execute(
                uri: "\(Self.appPath)/products", method: .post, headers: server.headers(server.editor, ifMatch: etag),
                body: ByteBuffer(string: #"{"id":"x"}"#))
            #expect(text.status == .unsupportedMediaType)
            let unknown = try await client.execute(
                uri: "\(Self.appPath)/products/com.example.none/retire", method: .post,
                headers: server.headers(server.editor, ifMatch: etag))
            #expect(unknown.status == .notFound)
            let delete = try await client.execute(
                uri: "\(Self.appPath)/products/com.example.served.coins", method: .delete, headers: server.headers(server.editor))
            #expect(delete.status == .methodNotAllowed)
            #expect(delete.headers[.allow] == "PUT")
            #expect(String(buffer: delete.body).contains("never deleted"))
            let large = try await client.execute(
                uri: "\(Self.appPath)/products", method: .post, headers: server.headers(server.editor, ifMatch: etag, json: true),
                body: ByteBuffer(string: #"{"id":"com.example.big","referenceName":""# + String(repeating: "x", count: 70_000) + #""}"#))
            #expect(large.status == .contentTooLarge)
            #expect(try Data(contentsOf: server.source) == before)
            #expect(try await server.store.auditLog(app: nil, limit: 10).isEmpty)
        }
    }

    @Test func catalogXMLSourcesAreNotRewritten() async throws {
        try await Self.withServer { client, server in
            let xml = server.fixture.catalog.appendingPathComponent("com.example.xml.xml")
            try Data(
                """
                <?xml version="1.0" encoding="UTF-8"?>
                <catalog xmlns="urn:iap-catalog:1" app="com.example.xml"><product id="com.example.xml.one"/></catalog>
                """.utf8
            ).write(to: xml)
            let state = try await client.execute(
                uri: "/v1/admin/apps/com.example.xml", method: .get, headers: server.headers(server.editor))
            #expect(state.status == .ok)
            #expect(try Self.json(state)["editable"] as? Bool == false)
            let etag = try #require(state.headers[.eTag])
            let response = try await client.execute(
                uri: "/v1/admin/apps/com.example.xml/products/com.example.xml.one/retire", method: .post,
                headers: server.headers(server.editor, ifMatch: etag))
            #expect(response.status == .conflict)
            #expect(String(buffer: response.body).contains("only property-list sources"))
        }
    }

    @Test func aFolderAppIsEditedInTheFileThatDefinesTheProduct() async throws {
        try await Self.withServer { client, server in
            let folder = server.fixture.catalog.appendingPathComponent("com.example.folder")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data(plist("<array><string>com.example.folder.a</string></array>").utf8).write(to: folder.appendingPathComponent("1.plist"))
            try Data(
                plist("<dict><key>products</key><array><dict><key>id</key><string>com.example.folder.b</string></dict></array></dict>").utf8
            )
            .write(to: folder.appendingPathComponent("2.plist"))
            let first = try Data(contentsOf: folder.appendingPathComponent("1.plist"))
            let etag = try #require(
                try await client.execute(uri: "/v1/admin/apps/com.example.folder", method: .get, headers: server.headers(server.editor))
                    .headers[.eTag])
            let response = try await client.execute(
                uri: "/v1/admin/apps/com.example.folder/products/com.example.folder.b/retire", method: .post,
                headers: server.headers(server.editor, ifMatch: etag))
            #expect(response.status == .ok)
            #expect(try Self.json(response)["file"] as? String == "catalog/com.example.folder/2.plist")
            #expect(try Data(contentsOf: folder.appendingPathComponent("1.plist")) == first)
            #expect(String(decoding: try Data(contentsOf: folder.appendingPathComponent("2.plist")), as: UTF8.self).contains("retired"))
        }
    }

    // MARK: - Publishing

    @Test func aDryRunShowsTheDiffAndPublishingServesIt() async throws {
        try await Self.withServer { client, server in
            var etag = try await Self.etag(client, server)
            let created = try await client.execute(
                uri: "\(Self.appPath)/products", method: .post, headers: server.headers(server.editor, ifMatch: etag, json: true),
                body: ByteBuffer(string: #"{"id":"com.example.served.gems","platforms":["iOS"]}"#))
            etag = try #require(created.headers[.eTag])
            let manifest = try Data(contentsOf: server.fixture.publicTree.currentManifestURL(Self.app))

            let preview = try await client.execute(
                uri: "\(Self.appPath)/publish?dryRun=true", method: .post, headers: server.headers(server.editor))
            #expect(preview.status == .ok)
            let planned = try Self.json(preview)
            #expect(planned["dryRun"] as? Bool == true)
            #expect(planned["revision"] as? Int == 2)
            #expect((planned["diff"] as? [String: Any])?["added"] as? [String] == ["com.example.served.gems"])
            #expect(try Data(contentsOf: server.fixture.publicTree.currentManifestURL(Self.app)) == manifest)

            let missing = try await client.execute(uri: "\(Self.appPath)/publish", method: .post, headers: server.headers(server.editor))
            #expect(missing.status == .preconditionRequired)
            let published = try await client.execute(
                uri: "\(Self.appPath)/publish", method: .post, headers: server.headers(server.editor, ifMatch: etag))
            #expect(published.status == .ok)
            #expect(try Self.json(published)["revision"] as? Int == 2)
            #expect(try server.fixture.publicTree.currentManifest(Self.app)?.revision == 2)
            // The public feed serves it once the server reloads: wait for that event, a bounded number of times.
            var feed = ""
            for _ in 0..<200 where !feed.contains("com.example.served.gems") {
                feed = String(buffer: try await client.execute(uri: CatalogServerTests.feedPath + "?platform=ios", method: .get).body)
                if !feed.contains("com.example.served.gems") { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(feed == #"["com.example.served.coins","com.example.served.gems"]"#)

            let entries = try await server.store.auditLog(app: Self.app, limit: 1)
            #expect(entries.first?.action == .publish)
            #expect(entries.first?.summary == "published revision 2: 1 added")
            #expect(entries.first?.beforeHash == ContentHash.sha256Hex(manifest))
            #expect(entries.first?.afterHash != entries.first?.beforeHash)
        }
    }

    @Test func ofTwoConcurrentPublishesExactlyOneWins() async throws {
        try await Self.withServer { client, server in
            let etag = try await Self.etag(client, server)
            let created = try await client.execute(
                uri: "\(Self.appPath)/products", method: .post, headers: server.headers(server.editor, ifMatch: etag, json: true),
                body: ByteBuffer(string: #"{"id":"com.example.served.gems"}"#))
            let current = try #require(created.headers[.eTag])
            #expect(current != etag)
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        try await client.execute(
                            uri: "\(Self.appPath)/publish", method: .post, headers: server.headers(server.editor, ifMatch: current)
                        ).status
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.sorted { $0.code < $1.code } == [.ok, .preconditionFailed])
            #expect(try server.fixture.publicTree.currentManifest(Self.app)?.revision == 2)
            #expect(try await server.store.auditLog(app: Self.app, limit: 10).filter { $0.action == .publish }.count == 1)
        }
    }

    // MARK: - History

    @Test func historyDiffAndRollback() async throws {
        try await Self.withServer { client, server in
            var etag = try await Self.etag(client, server)
            let created = try await client.execute(
                uri: "\(Self.appPath)/products", method: .post, headers: server.headers(server.editor, ifMatch: etag, json: true),
                body: ByteBuffer(string: #"{"id":"com.example.served.gems"}"#))
            etag = try #require(created.headers[.eTag])
            let published = try await client.execute(
                uri: "\(Self.appPath)/publish?message=more%20gems", method: .post, headers: server.headers(server.editor, ifMatch: etag))
            #expect(published.status == .ok)
            etag = try #require(published.headers[.eTag])

            let history = try await client.execute(uri: "\(Self.appPath)/revisions", method: .get, headers: server.headers(server.viewer))
            #expect(history.status == .ok)
            let revisions = try #require(try Self.json(history)["revisions"] as? [[String: Any]])
            #expect(revisions.map { $0["revision"] as? Int } == [2, 1])
            #expect(revisions[0]["author"] as? String == "ada")
            #expect(revisions[0]["message"] as? String == "more gems")
            #expect(revisions[0]["added"] as? Int == 1)

            let diff = try await client.execute(
                uri: "\(Self.appPath)/diff?from=1&to=2", method: .get, headers: server.headers(server.viewer))
            #expect(diff.status == .ok)
            let body = try Self.json(diff)
            #expect(body["from"] as? Int == 1)
            #expect(body["to"] as? Int == 2)
            #expect((body["diff"] as? [String: Any])?["added"] as? [String] == ["com.example.served.gems"])
            let pending = try Self.json(
                try await client.execute(uri: "\(Self.appPath)/diff", method: .get, headers: server.headers(server.viewer)))
            #expect(pending["to"] as? String == "sources")
            // `to` alone: what that revision changed; the first added everything.
            let second = try Self.json(
                try await client.execute(uri: "\(Self.appPath)/diff?to=2", method: .get, headers: server.headers(server.viewer)))
            #expect(second["from"] as? Int == 1)
            #expect((second["diff"] as? [String: Any])?["added"] as? [String] == ["com.example.served.gems"])
            let first = try Self.json(
                try await client.execute(uri: "\(Self.appPath)/diff?to=1", method: .get, headers: server.headers(server.viewer)))
            #expect(first["from"] is NSNull)
            #expect((first["diff"] as? [String: Any])?["added"] as? [String] == ["com.example.served.coins", "com.example.served.mac"])
            let missing = try await client.execute(uri: "\(Self.appPath)/diff?from=9", method: .get, headers: server.headers(server.viewer))
            #expect(missing.status == .notFound)

            let path = "\(Self.appPath)/revisions/1/rollback"
            #expect(
                try await client.execute(uri: path, method: .post, headers: server.headers(server.editor)).status == .preconditionRequired)
            #expect(
                try await client.execute(uri: path, method: .post, headers: server.headers(server.viewer, ifMatch: etag)).status
                    == .forbidden)
            let rolledBack = try await client.execute(uri: path, method: .post, headers: server.headers(server.editor, ifMatch: etag))
            #expect(rolledBack.status == .ok)
            let result = try Self.json(rolledBack)
            #expect(result["revision"] as? Int == 3)
            #expect(result["keptRetired"] as? [String] == ["com.example.served.gems"])
            #expect(rolledBack.headers[.eTag] != etag)
            #expect(try server.fixture.publicTree.currentManifest(Self.app)?.rollbackOf == 1)
            // The identifier published since stays in the sources, retired.
            #expect(String(decoding: try Data(contentsOf: server.source), as: UTF8.self).contains("<string>retired</string>"))
            let stale = try await client.execute(uri: path, method: .post, headers: server.headers(server.editor, ifMatch: etag))
            #expect(stale.status == .preconditionFailed)

            let entries = try await server.store.auditLog(app: Self.app, limit: 10)
            #expect(entries.map(\.action) == [.rollback, .publish, .edit])
            #expect(entries[0].actor == "ada")
            #expect(entries[0].beforeHash != nil && entries[0].afterHash != nil && entries[0].beforeHash != entries[0].afterHash)
        }
    }

    // MARK: - Reports, feedback and the audit log

    @Test func reportsReleaseAndAudit() async throws {
        try await Self.withServer { client, server in
            let reports = try await client.execute(
                uri: "\(Self.appPath)/reports?since=24h", method: .get, headers: server.headers(server.viewer))
            #expect(reports.status == .ok)
            #expect((try Self.json(reports)["aggregates"] as? [Any])?.isEmpty == true)
            for since in ["soon", "0h", "99999999999999999999w"] {
                let bad = try await client.execute(
                    uri: "\(Self.appPath)/reports?since=\(since)", method: .get, headers: server.headers(server.viewer))
                #expect(bad.status == .badRequest, "since=\(since)")
            }

            // A quarantine in the feedback file, released through the API.
            let feedback = FeedbackFile(verdicts: [
                "com.example.served.coins": Verdict(status: .quarantined, reason: "20 installs", since: Timestamp(secondsSince1970: 1_000))
            ])
            _ = try feedback.write(to: server.workflow.feedbackURL(Self.app))
            let state = try await client.execute(uri: Self.appPath, method: .get, headers: server.headers(server.viewer))
            let verdicts = try #require(try Self.json(state)["verdicts"] as? [String: [String: Any]])
            #expect(verdicts["com.example.served.coins"]?["status"] as? String == "quarantined")

            let released = try await client.execute(
                uri: "\(Self.appPath)/feedback/com.example.served.coins/release", method: .post, headers: server.headers(server.editor))
            #expect(released.status == .ok)
            #expect(released.headers[.eTag] != state.headers[.eTag])
            let again = try await client.execute(
                uri: "\(Self.appPath)/feedback/com.example.served.coins/release", method: .post, headers: server.headers(server.editor))
            #expect(again.status == .notFound)

            let audit = try await client.execute(
                uri: "/v1/admin/audit?app=\(Self.app)&limit=5", method: .get, headers: server.headers(server.viewer))
            #expect(audit.status == .ok)
            let entries = try #require(try Self.json(audit)["entries"] as? [[String: Any]])
            #expect(entries.count == 1)
            #expect(entries[0]["action"] as? String == "release")
            #expect(entries[0]["actor"] as? String == "ada")
            #expect(entries[0]["beforeHash"] as? String != entries[0]["afterHash"] as? String)
            let badLimit = try await client.execute(uri: "/v1/admin/audit?limit=0", method: .get, headers: server.headers(server.viewer))
            #expect(badLimit.status == .badRequest)
        }
    }

    /// An editor's quarantine, past the budget: audited, recorded as confirmed, refused twice
    /// and for what is not on sale. The reports come one page at a time.
    @Test func anEditorConfirmsAQuarantine() async throws {
        try await Self.withServer { client, server in
            let path = "\(Self.appPath)/feedback/com.example.served.coins/quarantine"
            let confirmed = try await client.execute(uri: path, method: .post, headers: server.headers(server.editor))
            #expect(confirmed.status == .ok, "\(String(buffer: confirmed.body))")
            #expect(try Self.json(confirmed)["quarantined"] as? String == "com.example.served.coins")
            let verdict = FeedbackFile.read(server.workflow.feedbackURL(Self.app), displayPath: "feedback").file?.verdicts[
                "com.example.served.coins"]
            #expect(verdict?.status == .quarantined && verdict?.confirmedBy == "ada")
            let again = try await client.execute(uri: path, method: .post, headers: server.headers(server.editor))
            #expect(again.status == .notFound)
            let unknown = try await client.execute(
                uri: "\(Self.appPath)/feedback/com.example.served.nothing/quarantine", method: .post, headers: server.headers(server.editor)
            )
            #expect(unknown.status == .notFound)
            let audit = try await client.execute(
                uri: "/v1/admin/audit?app=\(Self.app)&limit=5", method: .get, headers: server.headers(server.viewer))
            let entries = try #require(try Self.json(audit)["entries"] as? [[String: Any]])
            #expect(entries.first?["action"] as? String == "verdict")
            #expect((entries.first?["summary"] as? String)?.contains("quarantined com.example.served.coins") == true)

            let page = try await client.execute(
                uri: "\(Self.appPath)/reports?limit=1&offset=0", method: .get, headers: server.headers(server.viewer))
            #expect(page.status == .ok)
            let document = try Self.json(page)
            #expect(document["total"] as? Int == 0 && document["offset"] as? Int == 0 && document["alerts"] != nil)
            for query in ["limit=0", "limit=1001", "offset=-1", "offset=x"] {
                let bad = try await client.execute(
                    uri: "\(Self.appPath)/reports?\(query)", method: .get, headers: server.headers(server.viewer))
                #expect(bad.status == .badRequest, "\(query)")
            }
        }
    }
}

/// A real SQLite store whose audit log can be made to fail: for what a change does when its
/// audit entry cannot be written.
final class AuditFailingStore: CatalogStore {
    let base: SQLiteStore
    let failing = Mutex(false)

    init(_ base: SQLiteStore) { self.base = base }

    var publications: (any PublicationStore)? { nil }

    struct AuditDown: Error, CustomStringConvertible {
        var description: String { "the audit log is down (test)" }
    }

    func appendAudit(_ entry: AuditEntry) async throws {
        if failing.withLock({ $0 }) { throw AuditDown() }
        try await base.appendAudit(entry)
    }

    func createToken(_ token: EditorToken) async throws { try await base.createToken(token) }
    func createToken(_ token: EditorToken, audit: AuditEntry) async throws {
        if failing.withLock({ $0 }) { throw AuditDown() }
        try await base.createToken(token, audit: audit)
    }
    func revokeToken(named name: String, at moment: Timestamp, audit: AuditEntry) async throws -> Bool {
        if failing.withLock({ $0 }) { throw AuditDown() }
        return try await base.revokeToken(named: name, at: moment, audit: audit)
    }
    func tokens() async throws -> [EditorToken] { try await base.tokens() }
    func activeToken(secretHash: String) async throws -> EditorToken? { try await base.activeToken(secretHash: secretHash) }
    func revokeToken(named name: String, at moment: Timestamp) async throws -> Bool {
        try await base.revokeToken(named: name, at: moment)
    }
    func auditLog(app: String?, limit: Int) async throws -> [AuditEntry] { try await base.auditLog(app: app, limit: limit) }
    func store(_ reports: [InvalidIdentifierReport]) async throws -> [StoreOutcome] { try await base.store(reports) }
    func store(
        _ reports: [InvalidIdentifierReport], completion: @escaping @Sendable (Result<[StoreOutcome], any Error>) -> Void
    ) { base.store(reports, completion: completion) }
    func aggregate(_ query: AggregateQuery) async throws -> [ReportAggregate] { try await base.aggregate(query) }
    func dailyCounts(app: String, identifier: String, since: Timestamp) async throws -> [DailyReportCount] {
        try await base.dailyCounts(app: app, identifier: identifier, since: since)
    }
    func networkEvidence(_ query: AggregateQuery) async throws -> [NetworkEvidence] { try await base.networkEvidence(query) }
    func storeWideEvidence(_ query: AggregateQuery) async throws -> NetworkEvidence? { try await base.storeWideEvidence(query) }
    func prune(receivedBefore moment: Timestamp) async throws -> Int { try await base.prune(receivedBefore: moment) }
    func prune(keepingPerApp quota: Int) async throws -> [String: Int] { try await base.prune(keepingPerApp: quota) }
    func ping() async throws { try await base.ping() }
    func close() async throws { try await base.close() }
}

/// Every change through the editor API and its audit entry: no change stays without its entry.
@Suite struct AdminAuditAtomicityTests {
    static let app = CatalogServerTests.app
    static let appPath = "/v1/admin/apps/\(app)"

    /// Everything a change could touch: the sources, the feedback file, and the published tree
    /// (public and records), as path → bytes.
    static func files(_ fixture: CatalogServerTests.Fixture) -> [String: Data] {
        var found: [String: Data] = [:]
        let trees = [fixture.catalog, fixture.publicTree.root, fixture.publicTree.records]
        for tree in trees {
            let walker = FileManager.default.enumerator(at: tree, includingPropertiesForKeys: [.isRegularFileKey])
            while let url = walker?.nextObject() as? URL {
                guard (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true,
                    !url.lastPathComponent.hasPrefix("."), let data = try? Data(contentsOf: url)
                else { continue }
                found[url.standardizedFileURL.path] = data
            }
        }
        return found
    }

    /// The attack (or the accident): the audit store fails after the change was made. Each of
    /// edit, publish, rollback, release and quarantine must answer 5xx and leave every file as it
    /// was; with the audit log back, the same requests succeed and are audited.
    @Test func aChangeWhoseAuditEntryFailsIsUndoneAndAnswers5xx() async throws {
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        let base = try await SQLiteStore.open(path: fixture.root.appendingPathComponent("var/catalog.sqlite").path)
        let store = AuditFailingStore(base)
        let secret = TokenSecret.generate()
        try await base.createToken(EditorToken(name: "ada", role: .editor, secretHash: TokenSecret.hash(secret), createdAt: .now))
        let workflow = CatalogWorkflow(
            catalogDirectory: fixture.catalog, catalogDisplayPath: "catalog", publicDirectory: fixture.publicTree.root)
        @Sendable func headers(ifMatch: String? = nil, json: Bool = false) -> HTTPFields {
            var fields: HTTPFields = [.authorization: "Bearer \(secret)"]
            if let ifMatch { fields[.ifMatch] = ifMatch }
            if json { fields[.contentType] = "application/json" }
            return fields
        }
        // Something to publish, and a quarantine to release.
        _ = try FeedbackFile(verdicts: [
            "com.example.served.mac": Verdict(status: .quarantined, reason: "20 installs", since: Timestamp(secondsSince1970: 1_000))
        ]).write(to: workflow.feedbackURL(Self.app))
        let app = buildApplication(
            publicDirectory: fixture.publicTree, port: 0, reloadInterval: .milliseconds(50), reportStore: store, workflow: workflow,
            logger: Logger(label: "test"))
        try await app.test(.live) { client in
            func etag() async throws -> String {
                try #require(try await client.execute(uri: Self.appPath, method: .get, headers: headers()).headers[.eTag])
            }
            let created = try await client.execute(
                uri: "\(Self.appPath)/products", method: .post, headers: headers(ifMatch: try await etag(), json: true),
                body: ByteBuffer(string: #"{"id":"com.example.served.gems"}"#))
            #expect(created.status == .created)
            // Revision 2, so that a rollback to 1 changes something, then a change left to publish.
            let revisionOne = try await client.execute(uri: CatalogServerTests.feedPath, method: .get)
            let first = try await client.execute(uri: "\(Self.appPath)/publish", method: .post, headers: headers(ifMatch: try await etag()))
            #expect(first.status == .ok)
            let pending = try await client.execute(
                uri: "\(Self.appPath)/products", method: .post, headers: headers(ifMatch: try await etag(), json: true),
                body: ByteBuffer(string: #"{"id":"com.example.served.pearls"}"#))
            #expect(pending.status == .created)

            store.failing.withLock { $0 = true }
            let before = Self.files(fixture)
            // What is served before the failing changes: revision 2, once the server has reloaded it
            // (every 50 ms here); read too early, it was revision 1's, which no undo brings back.
            var feedBefore = try await client.execute(uri: CatalogServerTests.feedPath, method: .get)
            for _ in 0..<100 where feedBefore.headers[.eTag] == revisionOne.headers[.eTag] {
                try await Task.sleep(for: .milliseconds(100))
                feedBefore = try await client.execute(uri: CatalogServerTests.feedPath, method: .get)
            }
            let changes: [(String, HTTPRequest.Method, String?)] = [
                ("\(Self.appPath)/products/com.example.served.coins", .put, #"{"type":"consumable","status":"draft"}"#),
                ("\(Self.appPath)/products", .post, #"{"id":"com.example.served.rubies"}"#),
                ("\(Self.appPath)/products/com.example.served.mac/retire", .post, nil),
                ("\(Self.appPath)/publish", .post, nil),
                ("\(Self.appPath)/revisions/1/rollback", .post, nil),
                ("\(Self.appPath)/feedback/com.example.served.mac/release", .post, nil),
                ("\(Self.appPath)/feedback/com.example.served.coins/quarantine", .post, nil),
            ]
            for (path, method, body) in changes {
                let response = try await client.execute(
                    uri: path, method: method, headers: headers(ifMatch: try await etag(), json: body != nil),
                    body: body.map { ByteBuffer(string: $0) })
                #expect(response.status.code >= 500, "\(method) \(path): \(response.status)")
                #expect(String(buffer: response.body).contains("audit"), "\(method) \(path): \(String(buffer: response.body))")
                let after = Self.files(fixture)
                #expect(after.keys.sorted() == before.keys.sorted(), "\(method) \(path) left files behind or removed some")
                for (file, bytes) in before where after[file] != bytes {
                    Issue.record("\(method) \(path) changed \(file) without an audit entry")
                }
            }
            // What is served did not move either: once the reload that follows an undo has run (the
            // server may have picked the change up in the moment before its undo), the feed is the
            // one from before. Polled, with a bound: a reload runs every 250 ms.
            var feedAfter = try await client.execute(uri: CatalogServerTests.feedPath, method: .get)
            for _ in 0..<100 where feedAfter.headers[.eTag] != feedBefore.headers[.eTag] {
                try await Task.sleep(for: .milliseconds(100))
                feedAfter = try await client.execute(uri: CatalogServerTests.feedPath, method: .get)
            }
            #expect(feedAfter.headers[.eTag] == feedBefore.headers[.eTag])
            #expect(try await base.auditLog(app: Self.app, limit: 10).map(\.action) == [.edit, .publish, .edit])

            // The audit log is back: the same changes go through and are audited.
            store.failing.withLock { $0 = false }
            let published = try await client.execute(
                uri: "\(Self.appPath)/publish", method: .post, headers: headers(ifMatch: try await etag()))
            #expect(published.status == .ok)
            let released = try await client.execute(
                uri: "\(Self.appPath)/feedback/com.example.served.mac/release", method: .post, headers: headers())
            #expect(released.status == .ok)
            #expect(try await base.auditLog(app: Self.app, limit: 10).map(\.action) == [.release, .publish, .edit, .publish, .edit])
        }
    }
}
