import CatalogKit
import CatalogTestSupport
import Foundation
import HTTPSemantics
import Testing
import Time

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// `catalog build --message`, `history`, `diff` and `rollback` as an editor runs them.
@Suite struct HistoryCommandTests {
    static let app = "com.example.app"

    /// The seed's products in the full form, with a price in level1's metadata.
    static func catalog(price: String, extra: String = "") -> String {
        plist(
            """
            <dict>
            \t<key>products</key>
            \t<array>
            \t\t<dict>
            \t\t\t<key>id</key>
            \t\t\t<string>com.example.level1</string>
            \t\t\t<key>metadata</key>
            \t\t\t<dict>
            \t\t\t\t<key>price</key>
            \t\t\t\t<real>\(price)</real>
            \t\t\t</dict>
            \t\t</dict>
            \t\t<dict><key>id</key><string>com.example.level2</string></dict>
            \t\t<dict><key>id</key><string>com.example.rocket_car</string></dict>\(extra)
            \t</array>
            </dict>
            """)
    }

    /// Who the CLI records as the author: the account running the tests.
    static var user: String {
        String(cString: getpwuid(geteuid())!.pointee.pw_name)
    }

    static func publishedAt(_ workspace: CommandTests.Workspace, _ revision: Int) throws -> String {
        try PublicTree(root: workspace.root.appendingPathComponent("public")).manifest(app, revision: revision).publishedAt.iso8601
    }

    @Test func historyAndDiffGolden() async throws {
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("catalog/\(Self.app).plist", Self.catalog(price: "0.99"))
            #expect(try await workspace.run("build", "--message", "launch").status == 0)
            try workspace.write("catalog/\(Self.app).plist", Self.catalog(price: "1.99"))
            #expect(try await workspace.run("build").status == 0)
            let first = try Self.publishedAt(workspace, 1)
            let second = try Self.publishedAt(workspace, 2)

            let history = try await workspace.run("history", Self.app)
            #expect(history.status == 0 && history.stderr == "")
            #expect(
                history.stdout == """
                    revision 2  \(second)  \(Self.user)
                      1 changed

                    revision 1  \(first)  \(Self.user)
                      launch
                      3 added

                    """)

            let json = try await workspace.run("history", Self.app, "--json", "--limit", "1")
            #expect(json.status == 0)
            #expect(
                json.stdout == """
                    [
                      {
                        "added" : 0,
                        "author" : "\(Self.user)",
                        "changed" : 1,
                        "publishedAt" : "\(second)",
                        "quarantined" : 0,
                        "released" : 0,
                        "removed" : 0,
                        "revision" : 2
                      }
                    ]

                    """)

            let between = try await workspace.run("diff", Self.app, "1", "2")
            #expect(between.status == 0 && between.stderr == "")
            #expect(
                between.stdout == """
                    com.example.app: revision 1 → revision 2: 1 changed
                      ~ com.example.level1: metadata.price 0.99 → 1.99

                    """)
            // One revision: against the current one.
            #expect(try await workspace.run("diff", Self.app, "1").stdout == between.stdout)
            #expect(
                try await workspace.run("diff", Self.app, "2").stdout == "com.example.app: revision 2 → revision 2: no product changes\n")

            // None: what the next build would publish; nothing is written.
            try workspace.write(
                "catalog/\(Self.app).plist",
                Self.catalog(price: "1.99", extra: "\n\t\t<dict><key>id</key><string>com.example.level3</string></dict>"))
            let before = workspace.files()
            let pending = try await workspace.run("diff", Self.app)
            #expect(pending.status == 0 && pending.stderr == "")
            #expect(
                pending.stdout == """
                    com.example.app: revision 2 → sources: 1 added
                      + com.example.level3

                    """)
            #expect(workspace.files() == before)
        }
    }

    @Test(arguments: [
        (["history", "com.example.nope"], 1, "error: unknown app 'com.example.nope': it was never published\n"),
        (["diff", "com.example.app", "1", "3"], 1, "error: 'com.example.app' has no revision 3; its revisions are 1 to 1\n"),
        (
            ["diff", "com.example.nope"], 1,
            "error: unknown app 'com.example.nope': it has no sources in catalog and was never published\n"
        ),
        (["rollback", "com.example.app", "2"], 1, "error: 'com.example.app' has no revision 2; its revisions are 1 to 1\n"),
        (["rollback", "com.example.nope", "1"], 1, "error: unknown app 'com.example.nope': it was never published\n"),
        (["diff", "com.example.app", "one"], 64, "Error: The value 'one' is invalid for '<from>'"),
        (["rollback", "com.example.app", "0"], 64, "Error: revisions count from 1; '0' is not one\n"),
        (["rollback", "com.example.app"], 64, "Error: Missing expected argument '<revision>'"),
        (["history"], 64, "Error: Missing expected argument '<app>'"),
        (["history", "bad app"], 64, "Error: "),
    ])
    func errorsExitWithTheirStatus(arguments: [String], status: Int32, stderr: String) async throws {
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("catalog/\(Self.app).plist", seedCatalog)
            #expect(try await workspace.run("build").status == 0)
            let before = workspace.files()
            let run = try await CommandTests.run(arguments, in: workspace.root)
            #expect(run.status == status)
            #expect(run.stderr.hasPrefix(stderr), "\(run.stderr)")
            #expect(run.stdout == "")
            #expect(workspace.files() == before, "a failed command writes nothing")
        }
    }

    /// A server runs throughout: after the rollback it serves revision 1's bytes and ETag again,
    /// with a Last-Modified later than revision 2's, without a restart.
    @Test func rollbackIsServedWithTheOldValidators() async throws {
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("catalog/\(Self.app).plist", Self.catalog(price: "0.99"))
            #expect(try await workspace.run("build").status == 0)
            let original = try #require(workspace.read("public/v1/apps/\(Self.app)/revisions/1/products.json"))
            let server = try ServeProcess(in: workspace)
            defer { if server.process.isRunning { server.process.terminate() } }
            let (_, first) = try #require(await Self.get(server, until: { _ in true }))
            let etag = try #require(first.value(forHTTPHeaderField: "ETag"))

            try workspace.write(
                "catalog/\(Self.app).plist",
                Self.catalog(price: "1.99", extra: "\n\t\t<dict><key>id</key><string>com.example.level3</string></dict>"))
            #expect(try await workspace.run("build", "--message", "level 3").status == 0)
            #expect(await Self.get(server, until: { $0.value(forHTTPHeaderField: "ETag") != etag }) != nil, "revision 2 is served")
            let secondModified = try Self.lastModified(workspace, revision: 2)

            let rollback = try await workspace.run("rollback", Self.app, "1")
            #expect(rollback.status == 0 && rollback.stderr == "")
            #expect(
                rollback.stdout == """
                    com.example.app: published revision 3: 3 on sale, 1 known; products 2 changed; 2 of 2 feeds changed
                      content of revision 1 written to catalog/com.example.app.plist
                      com.example.level3: kept retired; App Store identifiers can never be reused
                    Commit the sources: the next 'catalog build' publishes nothing new.

                    """)
            // A Last-Modified moved forward may be ahead of the clock by a second, and a server
            // never sends one later than its clock: wait until it serves the recorded one.
            let thirdModified = try Self.lastModified(workspace, revision: 3)
            #expect(thirdModified > secondModified)
            let (body, _) = try #require(
                await Self.get(server) {
                    $0.value(forHTTPHeaderField: "ETag") == etag
                        && $0.value(forHTTPHeaderField: "Last-Modified") == HTTPDate.format(thirdModified)
                })
            #expect(body == original)

            let manifest = try #require(try PublicTree(root: workspace.root.appendingPathComponent("public")).currentManifest(Self.app))
            #expect(manifest.author == Self.user && manifest.message == "rollback to 1" && manifest.rollbackOf == 1)
            #expect(try await workspace.run("build").stdout == "com.example.app: unchanged at revision 3\n")
            #expect(try await workspace.run("history", Self.app, "--limit", "1").stdout.contains("  rollback to 1\n  2 changed\n"))
            #expect(try await server.stop() == 0)
        }
    }

    /// The Last-Modified of the default `products.json` of `revision`, as its manifest records it.
    static func lastModified(_ workspace: CommandTests.Workspace, revision: Int) throws -> Timestamp {
        let manifest = try PublicTree(root: workspace.root.appendingPathComponent("public")).manifest(app, revision: revision)
        return try #require(manifest.variants.first).products.lastModified
    }

    /// No local cache: each request must reach the server, whatever the feed's max-age.
    static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        return URLSession(configuration: configuration)
    }()

    /// `GET products.json` until `done` holds for its response, for up to ten seconds.
    static func get(_ server: ServeProcess, until done: (HTTPURLResponse) -> Bool) async -> (String, HTTPURLResponse)? {
        for _ in 0..<100 {
            if let (data, response) = try? await session.data(from: server.url("/v1/apps/\(app)/products.json")),
                let http = response as? HTTPURLResponse, http.statusCode == 200, done(http)
            {
                return (String(decoding: data, as: UTF8.self), http)
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return nil
    }
}
