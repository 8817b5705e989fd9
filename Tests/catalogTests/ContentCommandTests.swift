import Foundation
import Testing

/// `catalog content ls` over the repository's demo catalog, built as a reader would.
extension CommandTests {
    @Test func contentListOfTheDemoCatalog() async throws {
        let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let demo = package.appendingPathComponent("catalog", isDirectory: true)
        try await Self.withWorkspace { workspace in
            let build = try await workspace.run("build", "--catalog", demo.path, "--public", "site")
            #expect(build.status == 0, "\(build.stderr)")
            #expect(workspace.exists("site.content/sha256/50/501af1aeb4b0b895690bb3c9ed19b58172bfff9c5c2b2bbea6ce46b53a58f330"))

            let game = try await workspace.run("content", "ls", "com.example.game", "--public", "site")
            #expect(game.status == 0)
            #expect(
                game.stdout == """
                    com.example.game revision 1: 1 item
                    forest-levels  product com.example.game.level.forest  version 1  3 files, 123 bytes
                      level-1.json  41 bytes  sha256 501af1aeb4b0b895690bb3c9ed19b58172bfff9c5c2b2bbea6ce46b53a58f330
                      level-2.json  41 bytes  sha256 e521c3e1d64933f78a9b4a6929fee67e465a0f8a9fdb37185dd9bb6eff041e5c
                      level-3.json  41 bytes  sha256 93ff70ed7a9602c8976ba14c4eec8ccfceb3530964bc757451d3ea2600e5fd32

                    """)

            let news = try await workspace.run("content", "ls", "com.example.news", "--public", "site", "--json")
            #expect(news.status == 0)
            let listing = try #require(try JSONSerialization.jsonObject(with: Data(news.stdout.utf8)) as? [String: Any])
            #expect(listing["revision"] as? Int == 1)
            let items = try #require(listing["items"] as? [[String: Any]])
            #expect(items.map { $0["id"] as? String } == ["issue-2026-01", "issue-2026-02", "issue-2026-03"])
            #expect(items.first?["subscriptionGroup"] as? String == "news.plus")
            #expect(items.first?["published"] as? String == "2026-01-01T00:00:00Z")
            #expect(items.first?["version"] as? Int == 1)
            let files = try #require(items.first?["files"] as? [[String: Any]])
            #expect(files.map { $0["path"] as? String } == ["articles/lead.txt", "issue.json"])
            #expect(files.map { $0["size"] as? Int } == [46, 49])

            let app = try await workspace.run("content", "ls", "com.example.app", "--public", "site")
            #expect(app.stdout == "com.example.app revision 1: no content\n")
            let missing = try await workspace.run("content", "ls", "com.example.game", "--public", "site", "--revision", "2")
            #expect(missing.status == 1)
            #expect(missing.stderr.contains("'com.example.game' has no revision 2; its revisions are 1 to 1"))
        }
    }
}
