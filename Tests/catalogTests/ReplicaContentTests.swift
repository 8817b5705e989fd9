import AppStoreTestSupport
import CatalogKit
import CatalogTestSupport
import Content
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Content through the real processes (docs/content.md, "Replicas"): an editor node records a
/// revision's content, and a replica started with an empty cache folder has its blobs.
@Suite(.postgres)
struct ReplicaContentTests {
    private static let app = "com.example.app"

    /// A replica that follows the store gets the blobs of its app's current revision once the
    /// editor node records that revision's content (here added to the revision after its build,
    /// so the editor node's export records it, and the replica fetches it for the revision it
    /// already serves), byte for byte, in `records.content/` of its cache folder.
    @Test func aReplicaProcessGetsTheCurrentRevisionsBlobs() async throws {
        let store = try await TestPostgres.current.createDatabase()
        let workspace = try CommandTests.Workspace()
        defer { workspace.remove() }
        try CommandTests.writeDemo(workspace)
        let build = try await workspace.run("build", "--store", store)
        #expect(build.status == 0, "\(build.stderr)")

        let cache = workspace.root.appendingPathComponent("replica-cache")
        let replica = try ServeProcess(
            in: workspace, ["--feeds", "store", "--store", store, "--feeds-cache", cache.path, "--feeds-poll", "1h"])
        defer { _ = try? replica.process.terminate() }
        #expect(try await replica.body(of: "/v1/apps/\(Self.app)/products.json", within: 30) != nil, "\(replica.logText)")

        // The current revision's content, as `catalog build` writes it: its blob, several chunks
        // long, and the content manifest naming it.
        let tree = PublicTree(root: workspace.root.appendingPathComponent("public"))
        let revision = try #require(try tree.currentManifest(Self.app)?.revision)
        let video = Data((0..<(2 << 20) + 17).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
        let receipt = try BlobStore(root: tree.content).put(video)
        let manifest = try ContentManifest(items: [
            ContentManifest.Item(
                id: "pack", product: "com.example.app.pack",
                files: [ContentManifest.File(path: "video.bin", size: receipt.size, sha256: receipt.digest)])
        ])
        try manifest.encoded().write(to: tree.contentManifestURL(Self.app, revision))

        let editor = try ServeProcess(in: workspace, ["--store", store])
        defer { _ = try? editor.process.terminate() }
        let replicaBlob = BlobStore(root: cache.appendingPathComponent("records.content")).url(of: receipt.digest)
        var arrived: Data?
        for _ in 0..<300 where arrived == nil {  // thirty seconds at most: a bound, not a measure
            try await Task.sleep(for: .milliseconds(100))
            arrived = FileManager.default.contents(atPath: replicaBlob.path)
        }
        #expect(arrived == video, "the blob never reached the replica: \(replica.logText)")
        #expect(
            FileManager.default.contents(
                atPath: cache.appendingPathComponent("records/v1/apps/\(Self.app)/revisions/\(revision)/content.json").path)
                == manifest.encoded())
    }

    /// Issue 30, "content served by a replica that has no disk of its own": once the replica has
    /// the blobs, a URL the editor node signed (both nodes given the same `--content-keys` file)
    /// downloads from the replica whole and by range, byte for byte, and the replica answers
    /// `POST …/content` itself, through the revision's purchase record, with URLs it signed.
    @Test func aReplicaServesSignedURLsAndAnswersContentRequests() async throws {
        typealias PKI = AppStoreTestPKI
        let store = try await TestPostgres.current.createDatabase()
        let workspace = try CommandTests.Workspace()
        defer { workspace.remove() }
        // The subscription product's content: whoever has an active period of it may download it.
        let item = """
            <key>content</key><array>
            <dict><key>id</key><string>pro-video</string><key>product</key><string>com.example.app.pro.monthly</string>
            <key>files</key><array><string>video.bin</string></array></dict>
            </array></dict></plist>
            """
        try workspace.write(
            "catalog/\(Self.app).plist", CustomersCommandTests.catalog.replacingOccurrences(of: "</dict></plist>", with: item))
        let content = workspace.root.appendingPathComponent("catalog/\(Self.app).content")
        try FileManager.default.createDirectory(at: content, withIntermediateDirectories: true)
        let video = Data((0..<(3 << 20) + 5).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ $0 >> 10) })
        try video.write(to: content.appendingPathComponent("video.bin"))
        let pki = try PKI.ecdsa()
        try workspace.write("root.pem", PKI.pem(pki.root) + "\n")
        try workspace.write(
            "content-keys.json",
            #"{"current": "k1", "keys": {"k1": "\#(Data(repeating: 7, count: 32).base64EncodedString().replacingOccurrences(of: "=", with: ""))"}}"#
        )
        let build = try await workspace.run("build", "--store", store)
        #expect(build.status == 0, "\(build.stderr)")
        let common = ["--store", store, "--root-certificate", "root.pem", "--content-keys", "content-keys.json"]

        let cache = workspace.root.appendingPathComponent("replica-cache")
        let replica = try ServeProcess(in: workspace, ["--feeds", "store", "--feeds-cache", cache.path, "--feeds-poll", "1h"] + common)
        defer { _ = try? replica.process.terminate() }
        let editor = try ServeProcess(in: workspace, common)
        defer { _ = try? editor.process.terminate() }
        #expect(try await replica.body(of: "/v1/apps/\(Self.app)/products.json", within: 30) != nil, "\(replica.logText)")
        #expect(try await editor.body(of: "/v1/apps/\(Self.app)/products.json", within: 30) != nil, "\(editor.logText)")
        let digest = ContentDigest.of(video)
        let replicaBlob = BlobStore(root: cache.appendingPathComponent("records.content")).url(of: digest)
        for _ in 0..<300 where !FileManager.default.fileExists(atPath: replicaBlob.path) {  // a bound, not a measure
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(FileManager.default.contents(atPath: replicaBlob.path) == video, "\(replica.logText)")

        let evidence = ["signedTransaction": try pki.jws(payload: PKI.transaction(["expiresDate": PKI.milliseconds(PKI.date(2099))]))]
        let fromEditor = try await Self.contentURL(evidence, at: editor)
        #expect(fromEditor.status == 200, "\(fromEditor.body); \(editor.logText)")
        let fromReplica = try await Self.contentURL(evidence, at: replica)
        #expect(fromReplica.status == 200, "\(fromReplica.body); \(replica.logText)")
        for url in [fromEditor.url, fromReplica.url].compactMap({ $0 }) {
            let whole = try await Self.get(replica.url(url))
            #expect(whole.status == 200 && whole.body == video, "\(whole.status), \(whole.body.count) bytes; \(replica.logText)")
            let range = try await Self.get(replica.url(url), range: "bytes=1048570-2097160")
            #expect(range.status == 206 && range.body == video[1_048_570...2_097_160], "\(range.status), \(range.body.count) bytes")
            let suffix = try await Self.get(replica.url(url), range: "bytes=-5")
            #expect(suffix.status == 206 && suffix.body == video.suffix(5))
        }
        #expect(fromEditor.url != nil && fromReplica.url != nil)

        // A backend's ask by customer key and token belongs on the editor node, which reads tokens.
        var byKey = URLRequest(url: replica.url("/v1/apps/\(Self.app)/content"))
        byKey.httpMethod = "POST"
        byKey.setValue("application/json", forHTTPHeaderField: "Content-Type")
        byKey.setValue("Bearer cat_unknown", forHTTPHeaderField: "Authorization")
        byKey.httpBody = Data(#"{"customer": "2000000000000001"}"#.utf8)
        let (refusal, answer) = try await URLSession.shared.data(for: byKey)
        #expect((answer as? HTTPURLResponse)?.statusCode == 421, "\(String(decoding: refusal, as: UTF8.self))")
    }

    /// `POST …/content` with `evidence` at `server`: the status, the body, and the first file's URL.
    static func contentURL(_ evidence: [String: String], at server: ServeProcess) async throws -> (status: Int, body: String, url: String?)
    {
        var request = URLRequest(url: server.url("/v1/apps/\(app)/content"))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try JSONSerialization.data(withJSONObject: evidence)
        let (data, response) = try await URLSession.shared.data(for: request)
        let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        let files = ((object?["items"] as? [[String: Any]])?.first?["files"] as? [[String: Any]]) ?? []
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self), files.first?["url"] as? String)
    }

    /// `GET url` with no encoding (and `range`, if given): the status and the body.
    static func get(_ url: URL, range: String? = nil) async throws -> (status: Int, body: Data) {
        var request = URLRequest(url: url)
        request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        if let range { request.setValue(range, forHTTPHeaderField: "Range") }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
    }
}
