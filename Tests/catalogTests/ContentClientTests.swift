import AppStoreTestSupport
import CatalogClient
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// Issue 30 end to end: `ContentDownloadManager` (CatalogClient) against the real `catalog serve`
/// on loopback, with content that `catalog build` published from a catalog with content items, and
/// purchase evidence signed by a PKI the server trusts (`--root-certificate`)
/// (docs/content.md, "The client: downloads").
@Suite struct ContentClientTests {
    typealias PKI = AppStoreTestPKI
    static let app = "com.example.app"
    static let levels = "com.example.app.levels"
    static let magazine = "com.example.app.news.monthly"

    /// A level pack sold with a product, and two issues of a magazine (its subscription group),
    /// the content's files in `catalog/com.example.app.content/`.
    static let catalog = """
        <?xml version="1.0" encoding="UTF-8"?>
        <plist version="1.0"><dict><key>platforms</key><array><string>iOS</string></array>
        <key>appAppleId</key><integer>1234567890</integer>
        <key>products</key><array>
        <dict><key>id</key><string>\(magazine)</string><key>type</key><string>auto-renewable</string>
        <key>subscription</key><dict><key>group</key><string>news.plus</string><key>period</key><string>P1M</string></dict>
        <key>entitlements</key><array><string>news</string></array></dict>
        <dict><key>id</key><string>\(levels)</string><key>type</key><string>non-consumable</string></dict>
        </array>
        <key>content</key><array>
        <dict><key>id</key><string>levels</string><key>product</key><string>\(levels)</string>
        <key>folder</key><string>levels</string>
        <key>files</key><array><string>pack.bin</string><string>readme.txt</string></array></dict>
        <dict><key>id</key><string>issue-2026-01</string><key>group</key><string>news.plus</string>
        <key>published</key><date>2026-01-01T00:00:00Z</date>
        <key>files</key><array><string>issues/2026-01.pdf</string></array></dict>
        <dict><key>id</key><string>issue-2026-02</string><key>group</key><string>news.plus</string>
        <key>published</key><date>2026-02-01T00:00:00Z</date>
        <key>files</key><array><string>issues/2026-02.pdf</string></array></dict>
        </array></dict></plist>
        """

    /// Bytes that are not all alike, so that a splice of the wrong ranges shows in the digest.
    static func bytes(_ count: Int, seed: Int = 1) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &+ $0 >> 9) })
    }

    /// The client's configuration: retries close together, and enough of them to outlast a
    /// server being started again (bounded: 60 attempts of at most half a second).
    static func manager(_ server: URL, root: URL, evidence signed: String) -> ContentDownloadManager {
        var configuration = CatalogClient.Configuration(server: server, app: app, fallbackIdentifiers: [], directory: root)
        configuration.fetchBackoff = Backoff(initial: 0.2, maximum: 0.5)
        configuration.log = { _ in }
        return ContentDownloadManager(configuration: configuration, evidence: .transaction(signedTransaction: signed), attemptsPerFile: 60)
    }

    /// The level pack downloaded whole through the real server with its digests checked, its
    /// connection cut mid-file by killing the server while a relay holds the download 8 MiB in
    /// (resumed by range once the server is back on the same port), a magazine issue downloaded by
    /// a subscriber, and a refund notification after which the list no longer grants the pack.
    @Test func theClientDownloadsResumesAndLosesARefundedItemFromTheRealServer() async throws {
        let pki = try PKI.ecdsa()
        try await CommandTests.withWorkspace { workspace in
            let pack = Self.bytes(32 << 20)  // well past the relay's cut
            let readme = Data("The level pack.\n".utf8)
            let issues = [Self.bytes(300_000, seed: 7), Self.bytes(200_000, seed: 9)]
            try workspace.write("catalog/\(Self.app).plist", Self.catalog)
            let content = workspace.root.appendingPathComponent("catalog/\(Self.app).content")
            try FileManager.default.createDirectory(at: content.appendingPathComponent("levels"), withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: content.appendingPathComponent("issues"), withIntermediateDirectories: true)
            try pack.write(to: content.appendingPathComponent("levels/pack.bin"))
            try readme.write(to: content.appendingPathComponent("levels/readme.txt"))
            try issues[0].write(to: content.appendingPathComponent("issues/2026-01.pdf"))
            try issues[1].write(to: content.appendingPathComponent("issues/2026-02.pdf"))
            try workspace.write("root.pem", PKI.pem(pki.root) + "\n")
            var secret = [UInt8](repeating: 0, count: 32)
            for index in secret.indices { secret[index] = UInt8.random(in: 0...255) }
            let key = Data(secret).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            try workspace.write("content-keys.json", #"{"current": "k1", "keys": {"k1": "\#(key)"}}"#)
            let store = "sqlite:var/catalog.sqlite"
            let build = try await workspace.run("build", "--store", store)
            #expect(build.status == 0, "\(build.stderr)")

            let arguments = ["--store", store, "--root-certificate", "root.pem", "--content-keys", "content-keys.json"]
            var server = try ServeProcess(in: workspace, arguments)
            defer { _ = try? server.process.terminate() }
            #expect(try await server.body(of: "/v1/apps/\(Self.app)/products.json", within: 30) != nil, "\(server.logText)")
            // The clients reach the server through a relay that stops the first response to pass
            // 8 MiB, inside the 96 MiB pack.
            let relay = try CuttingRelay(upstreamPort: server.port, cutAfter: 8 << 20)
            defer { relay.stop() }
            let origin = try #require(URL(string: "http://127.0.0.1:\(relay.port)"))

            // The level pack: bought, downloaded, cut mid-file, resumed.
            let bought = try pki.jws(
                payload: PKI.transaction([
                    "transactionId": "2000000000000010", "originalTransactionId": "2000000000000010", "productId": Self.levels,
                    "type": "Non-Consumable", "purchaseDate": PKI.milliseconds(PKI.date(2026)),
                    "originalPurchaseDate": PKI.milliseconds(PKI.date(2026)), "expiresDate": NSNull(),
                    "subscriptionGroupIdentifier": NSNull(), "webOrderLineItemId": NSNull(),
                ]))
            let player = workspace.root.appendingPathComponent("player")
            let manager = Self.manager(origin, root: player, evidence: bought)
            let list = try await manager.available()
            #expect(list.map(\.item) == ["levels"], "\(server.logText)")
            let levels = try #require(list.first)
            #expect(levels.files.map(\.path) == ["pack.bin", "readme.txt"])

            let updates = await manager.updates()
            await manager.download(levels)
            // The server dies while the pack is surely mid-file, and is started again; then the
            // client's connection ends, 8 MiB into the pack.
            try #require(try await relay.waitForCut(seconds: 120), "the pack's download never passed 8 MiB")
            kill(server.process.processIdentifier, SIGKILL)
            server.process.waitUntilExit()
            server = try ServeProcess(in: workspace, arguments, port: server.port)
            relay.release()
            var written: [Int64] = []
            for await status in updates where status.item == "levels" {
                written.append(status.bytesWritten)
                if status.isDone { break }
            }
            let done = try #require(await manager.waitForDownload("levels"))
            #expect(done.state == .finished, "\(String(describing: done.error)); \(server.logText)")
            let folder = try #require(done.location)
            #expect(try Data(contentsOf: folder.appendingPathComponent("pack.bin")) == pack)
            #expect(try Data(contentsOf: folder.appendingPathComponent("readme.txt")) == readme)
            // What was received before the cut was kept and only the rest asked for (by range):
            // the progress never went back.
            #expect(written == written.sorted(), "the progress went back: \(written)")
            // And the restarted server, which sent the rest, answered the pack's blob with a 206.
            let metrics = try await server.body(of: "/metrics") ?? ""
            let partial = metrics.split(separator: "\n").filter {
                $0.hasPrefix("catalog_http_requests_total") && $0.contains(#"route="content""#) && $0.contains(#"status="206""#)
            }
            #expect(!partial.isEmpty, "no 206 of content after the restart: \(metrics)")

            // A magazine subscriber since January 15: the issue current then and the one of
            // February, each downloaded and verified.
            let subscribed = try pki.jws(
                payload: PKI.transaction([
                    "transactionId": "2000000000000020", "originalTransactionId": "2000000000000020",
                    "webOrderLineItemId": "2000000000000021", "productId": Self.magazine,
                    "purchaseDate": PKI.milliseconds(PKI.date(2026, 1, 15)),
                    "originalPurchaseDate": PKI.milliseconds(PKI.date(2026, 1, 15)), "expiresDate": PKI.milliseconds(PKI.date(2099)),
                ]))
            let reader = Self.manager(origin, root: workspace.root.appendingPathComponent("reader"), evidence: subscribed)
            let magazine = try await reader.available()
            #expect(magazine.map(\.item) == ["issue-2026-01", "issue-2026-02"], "\(server.logText)")
            for (index, issue) in magazine.enumerated() {
                await reader.download(issue)
                let finished = try #require(await reader.waitForDownload(issue.item))
                #expect(finished.state == .finished, "\(String(describing: finished.error))")
                let file = try #require(finished.location).appendingPathComponent("issues/2026-0\(index + 1).pdf")
                #expect(try Data(contentsOf: file) == issues[index])
            }

            // Apple refunds the level pack: the list no longer grants it.
            let refunded = try pki.jws(
                payload: PKI.transaction([
                    "transactionId": "2000000000000010", "originalTransactionId": "2000000000000010", "productId": Self.levels,
                    "type": "Non-Consumable", "purchaseDate": PKI.milliseconds(PKI.date(2026)),
                    "originalPurchaseDate": PKI.milliseconds(PKI.date(2026)), "expiresDate": NSNull(),
                    "subscriptionGroupIdentifier": NSNull(), "webOrderLineItemId": NSNull(),
                    "revocationDate": PKI.milliseconds(PKI.date(2026, 3)), "revocationReason": 0,
                ]))
            let notification = try pki.jws(payload: PKI.notification(type: "REFUND", data: ["signedTransactionInfo": refunded]))
            var request = URLRequest(url: server.url("/v1/apps/\(Self.app)/notifications/app-store"))
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = try JSONSerialization.data(withJSONObject: ["signedPayload": notification])
            let (body, response) = try await URLSession.shared.data(for: request)
            #expect((response as? HTTPURLResponse)?.statusCode == 200, "\(String(decoding: body, as: UTF8.self))")
            let after = try await manager.available()
            #expect(after.isEmpty, "the refunded pack is still listed: \(after.map(\.item))")
        }
    }
}
