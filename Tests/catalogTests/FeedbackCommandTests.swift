import CatalogKit
import CatalogTestSupport
import Foundation
import Storage
import Testing
import Time

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The feedback loop end to end, as an editor runs it: reports in a real SQLite file,
/// `catalog feedback`, `catalog build`, `catalog feedback release`, and the published feeds.
@Suite struct FeedbackCommandTests {
    static let app = "com.example.app"

    /// Three products and no grace period, so that reports right after the first build count.
    static let catalog = plist(
        """
        <dict>
        \t<key>feedbackPolicy</key>
        \t<dict>
        \t\t<key>graceHours</key>
        \t\t<integer>0</integer>
        \t</dict>
        \t<key>products</key>
        \t<array>
        \t\t<dict><key>id</key><string>com.example.level1</string></dict>
        \t\t<dict><key>id</key><string>com.example.level2</string><key>type</key><string>non-consumable</string></dict>
        \t\t<dict><key>id</key><string>com.example.rocket_car</string></dict>
        \t</array>
        </dict>
        """)

    /// Reports stored through the store's own API into the file `catalog feedback` opens by default.
    static func storeReports(_ reports: [InvalidIdentifierReport], in workspace: CommandTests.Workspace) async throws {
        let store = try await SQLiteStore.open(path: workspace.root.appendingPathComponent("var/catalog.sqlite").path)
        let outcomes = try await store.store(reports)
        try await store.close()
        #expect(outcomes == Array(repeating: .stored, count: reports.count))
    }

    static func knownEntries(_ workspace: CommandTests.Workspace) throws -> [[String: String]] {
        let text = try #require(workspace.read("public/v1/apps/com.example.app/catalog.json"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        return try #require(object["known"] as? [[String: String]])
    }

    @Test func quarantineAndReleaseEndToEnd() async throws {
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("catalog/com.example.app.plist", Self.catalog)
            #expect(try await workspace.run("build").status == 0)
            #expect(workspace.read("public/v1/apps/com.example.app/products.json") == seedProductsJSON)
            let manifest = try #require(try PublicTree(root: workspace.root.appendingPathComponent("public")).currentManifest(Self.app))

            // Reports arrive after the first publication: 20 distinct production installs that
            // asked for level1 and level2 and were told level2 is invalid, and two testers.
            let now = Timestamp.now
            try await Self.storeReports(
                invalidReports("com.example.level2", installs: 20, at: now, requested: .list(["com.example.level1", "com.example.level2"]))
                    + invalidReports("com.example.level1", installs: 2, at: now, environment: .sandbox, installPrefix: "tester"),
                in: workspace)

            let reason =
                "reported invalid by 20 production installs from 20 networks since \(manifest.publishedAt.iso8601), invalid rate 1.0"
            let feedback = try await workspace.run("feedback")
            #expect(feedback.status == 0)
            // Issue 27: the run says which store it judged (it said nothing, and judged an empty one).
            #expect(feedback.stderr == "judging the reports in sqlite:var/catalog.sqlite\n")
            #expect(feedback.stdout == "com.example.app: quarantined com.example.level2 (\(reason))\n")
            let file = try #require(workspace.read("catalog/com.example.app.feedback.plist"))
            #expect(file.contains("<string>\(reason)</string>"))

            // `catalog reports` shows the same verdict beside the aggregate, most affected first,
            // and that the build that takes it off sale is still to run.
            let table = try await workspace.run("reports", "--app", Self.app)
            #expect(table.status == 0)
            let rows = table.stdout.split(separator: "\n").map {
                $0.split(separator: " ", omittingEmptySubsequences: true).prefix(6).joined(separator: " ")
            }
            #expect(
                rows == [
                    "IDENTIFIER VERDICT PLATFORM ENVIRONMENT INSTALLS REPORTS",
                    "com.example.level2 quarantined (next build) iOS production",
                    "com.example.level1 - iOS sandbox 2 2",
                ])
            let json = try await workspace.run("reports", "--json", "--since", "1h")
            let aggregates = try #require(
                (try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])?["aggregates"] as? [[String: Any]])
            #expect(aggregates.first?["verdict"] as? String == "quarantined")
            #expect(aggregates.first?["reason"] as? String == reason)
            #expect(aggregates.first?["invalidRate"] as? Double == 1.0)

            let again = try await workspace.run("feedback")
            #expect(again.status == 0 && again.stdout == "", "no verdict changed")
            #expect(workspace.read("catalog/com.example.app.feedback.plist") == file, "nothing changed, nothing written")

            let build = try await workspace.run("build")
            #expect(build.status == 0)
            #expect(
                build.stdout == """
                    com.example.app: published revision 2: 2 on sale, 1 known; products 1 quarantined; 2 of 2 feeds changed
                    com.example.app: quarantined com.example.level2 (\(reason))

                    """)
            #expect(workspace.read("public/v1/apps/com.example.app/products.json") == #"["com.example.level1","com.example.rocket_car"]"#)
            #expect(
                try Self.knownEntries(workspace) == [
                    ["id": "com.example.level2", "type": "non-consumable", "status": "quarantined", "reason": reason]
                ])

            let release = try await workspace.run("feedback", "release", Self.app, "com.example.level2")
            #expect(release.status == 0)
            #expect(release.stdout == "com.example.app: released com.example.level2 (was quarantined: \(reason))\n")
            let afterRelease = try await workspace.run("feedback")
            #expect(afterRelease.status == 0 && afterRelease.stdout == "", "the reports before the release no longer count")

            let rebuild = try await workspace.run("build")
            #expect(rebuild.status == 0)
            #expect(
                rebuild.stdout == """
                    com.example.app: published revision 3: 3 on sale, 0 known; products 1 released; 2 of 2 feeds changed
                    com.example.app: released com.example.level2

                    """)
            #expect(workspace.read("public/v1/apps/com.example.app/products.json") == seedProductsJSON)
            #expect(try Self.knownEntries(workspace) == [])
        }
    }

    @Test func releaseRefusesWhatIsNotJudged() async throws {
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("catalog/com.example.app.plist", Self.catalog)
            let notJudged = try await workspace.run("feedback", "release", Self.app, "com.example.level1")
            #expect(notJudged.status == 1)
            #expect(
                notJudged.stderr
                    == "error: 'com.example.level1' is neither quarantined nor suspect in 'com.example.app'; nothing to release\n")
            let unknownApp = try await workspace.run("feedback", "release", "com.example.nope", "com.example.level1")
            #expect(unknownApp.status == 1)
            #expect(
                unknownApp.stderr
                    == "error: unknown app 'com.example.nope': no com.example.nope.plist, com.example.nope.xml or com.example.nope/ in catalog\n"
            )
            #expect(!workspace.exists("catalog/com.example.app.feedback.plist"))
        }
    }

    /// `catalog feedback quarantine`: an editor's decision, then a build takes the id off sale;
    /// twice, or for an id not on sale, is an error.
    @Test func anEditorQuarantinesFromTheCommandLine() async throws {
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("catalog/com.example.app.plist", Self.catalog)
            #expect(try await workspace.run("build").status == 0)
            let confirmed = try await workspace.run("feedback", "quarantine", Self.app, "com.example.level1")
            #expect(confirmed.status == 0, "\(confirmed.stderr)")
            #expect(confirmed.stdout.hasPrefix("com.example.app: quarantined com.example.level1 (quarantined by "))
            #expect(workspace.read("catalog/com.example.app.feedback.plist")?.contains("<key>confirmedBy</key>") == true)
            let again = try await workspace.run("feedback", "quarantine", Self.app, "com.example.level1")
            #expect(again.status == 1 && again.stderr == "error: 'com.example.level1' is already quarantined in 'com.example.app'\n")
            let unknown = try await workspace.run("feedback", "quarantine", Self.app, "com.example.nope")
            #expect(unknown.status == 1 && unknown.stderr.contains("is not a cleared product of 'com.example.app'"))
            #expect(try await workspace.run("build").status == 0)
            #expect(workspace.read("public/v1/apps/com.example.app/products.json") == #"["com.example.level2","com.example.rocket_car"]"#)
        }
    }

    /// A feedback file with errors is neither acted on nor overwritten.
    @Test func malformedFeedbackFileIsLeftAlone() async throws {
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("catalog/com.example.app.plist", Self.catalog)
            try workspace.write("catalog/com.example.app.feedback.plist", plist("<array/>"))
            let run = try await workspace.run("feedback")
            #expect(run.status == 1)
            #expect(
                run.stderr == """
                    judging the reports in sqlite:var/catalog.sqlite
                    catalog/com.example.app.feedback.plist:4:1: error: the root must be a <dict>, found <array>
                    1 error, 0 warnings

                    """)
            #expect(workspace.read("catalog/com.example.app.feedback.plist") == plist("<array/>"))
            let release = try await workspace.run("feedback", "release", Self.app, "com.example.level1")
            #expect(release.status == 1)
            #expect(release.stderr.hasSuffix("error: the feedback file of 'com.example.app' has errors; fix them first\n"))
        }
    }

    /// `catalog serve --auto-feedback`: the loop runs at start, and the served feed follows.
    ///
    /// First the attack of issue 15, from one network (127.0.200.0/24): a flood of invented
    /// installs naming every identifier invalid, without a requested list, with one that makes
    /// every requested identifier invalid, and as product reports, in every environment. Not
    /// one identifier leaves the feed. Then genuine product reports from 20 networks
    /// (127.0.N.1) take the one bad identifier off sale.
    @Test func serveRunsTheLoop() async throws {
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("catalog/com.example.app.plist", Self.catalog)
            let server = try ServeProcess(
                in: workspace, ["--auto-feedback", "1s", "--report-limit-install", "0", "--report-limit-address", "0"])
            defer { if server.process.isRunning { server.process.terminate() } }
            let feed = "/v1/apps/com.example.app/products.json"
            let report = "/v1/apps/com.example.app/invalid-identifiers"
            let json = [("Content-Type", "application/json")]
            #expect(try await server.body(of: feed) == seedProductsJSON)

            let all = #""com.example.level1","com.example.level2","com.example.rocket_car""#
            let shapes = [
                #"{"invalidProductIdentifiers":[\#(all)],"environment":"production""#,
                #"{"invalidProductIdentifiers":[\#(all)],"requestedProductIdentifiers":[\#(all)],"environment":"production""#,
                #"{"invalidProductIdentifiers":["com.example.level2"],"requestedProductIdentifiers":[\#(all)],"environment":"production""#,
                #"{"invalidProductIdentifiers":[\#(all)],"requestedProductIdentifiers":[\#(all),"com.example.fine"],"environment":"sandbox""#,
            ]
            for install in 0..<200 {
                let body = shapes[install % shapes.count] + #","platform":"iOS","installId":"invented-\#(install)"}"#
                let answer = try LoopbackClient.request(
                    from: "127.0.200.\(1 + install % 250)", port: server.port, path: report, headers: json, body: body)
                #expect(answer.status == 202, "\(answer.text)")
            }
            // Three feedback runs after the attack: nothing leaves the feed.
            try await Task.sleep(for: .seconds(3.5))
            #expect(try await server.body(of: feed) == seedProductsJSON, "one network took products off sale")
            #expect(workspace.exists("var/report-network.secret"), "the network secret is made beside the store")

            // Genuine product reports, one install on each of 20 networks.
            for network in 0..<20 {
                let body =
                    #"{"invalidProductIdentifiers":["com.example.level2"],"requestedProductIdentifiers":[\#(all)],"platform":"iOS","environment":"production","installId":"install-\#(network)"}"#
                let answer = try LoopbackClient.request(
                    from: "127.0.\(network).1", port: server.port, path: report, headers: json, body: body)
                #expect(answer.status == 202, "\(answer.text)")
            }

            // Within twenty seconds: feedback, build, then the reload picks the revision up.
            let quarantined = #"["com.example.level1","com.example.rocket_car"]"#
            #expect(try await server.body(of: feed, within: 20) { $0 == quarantined } == quarantined)
            let file = try #require(workspace.read("catalog/com.example.app.feedback.plist"))
            #expect(file.contains("<string>propagation-window</string>"), "published seconds ago: \(file)")
            #expect(try await server.stop() == 0)
            #expect(
                server.logText.contains("feedback.verdict") && server.logText.contains("feedback.identifier=com.example.level2"),
                "\(server.logText)")
        }
    }
}
