import CatalogKit
import CatalogTestSupport
import Content
import Foundation
import Testing

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
}
