import CatalogKit
import CatalogServer
import CatalogTestSupport
import Content
import Foundation
import ReportStorage
import Testing

/// Content through a real PostgreSQL store to a replica with no disk of its own (docs/content.md,
/// "Replicas"): the editor's publication records the blobs its content manifests name, and the
/// replica has them, byte for byte and verified, before the revision naming them is current.
extension PublicationFollowerTests {
    static let app = CatalogServerTests.app

    /// Bytes no two calls repeat: a blob of its own each time.
    static func randomBytes(_ count: Int) -> Data {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    /// Stores `files` in the editor's blob store and writes the content manifest of `revision`
    /// naming them, as `catalog build` does: one item sold with a product.
    @discardableResult
    static func addContent(_ files: [String: Data], to tree: PublicTree, revision: Int) throws -> ContentManifest {
        let blobs = BlobStore(root: tree.content)
        var entries: [ContentManifest.File] = []
        for (path, data) in files {
            let receipt = try blobs.put(data)
            entries.append(ContentManifest.File(path: path, size: receipt.size, sha256: receipt.digest))
        }
        let manifest = try ContentManifest(items: [ContentManifest.Item(id: "pack", product: "com.example.served.coins", files: entries)])
        try manifest.encoded().write(to: tree.contentManifestURL(app, revision))
        return manifest
    }

    /// Every file of the store's temporary folder: a transfer cut off must leave none behind.
    static func temporaryFiles(_ blobs: BlobStore) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: blobs.root.appendingPathComponent("tmp").path)) ?? []
    }

    /// A replica that starts with an empty folder gets every blob of the current revision, a
    /// small one and one of several chunks, byte for byte, before that revision is current; the
    /// next revision sends only the blob the store lacks.
    @Test func aReplicaWithAnEmptyFolderGetsEveryBlobByteForByte() async throws {
        try await withEditorAndReplica { store, fixture, tree in
            let large = Self.randomBytes(5 * (1 << 19) + 1)  // two and a half chunks of a MiB, and a byte
            let manifest = try Self.addContent(
                ["levels/1.json": Data(#"{"level":1}"#.utf8), "video.bin": large], to: fixture.publicTree, revision: 1)
            try await store.recordPublication(nil, app: Self.app, tree: fixture.publicTree)
            #expect(try await PublicationFollowerService.catchUp(store: store, tree: tree) > 0)

            #expect(try tree.currentManifest(Self.app)?.revision == 1)
            let (editor, replica) = (BlobStore(root: fixture.publicTree.content), BlobStore(root: tree.content))
            #expect(try replica.list() == manifest.digests.sorted(), "the replica lacks a blob its current revision names")
            for digest in manifest.digests {
                #expect(
                    FileManager.default.contents(atPath: replica.url(of: digest).path)
                        == FileManager.default.contents(atPath: editor.url(of: digest).path), "blob \(digest.hex) differs")
                #expect(try replica.verify(digest))
            }
            #expect(FileManager.default.contents(atPath: tree.contentManifestURL(Self.app, 1).path) == manifest.encoded())
            #expect(Self.temporaryFiles(replica).isEmpty)

            // Revision 2 keeps the video and adds a level: one blob more in the store, not two.
            try fixture.publish(["com.example.served.coins", "com.example.served.gems"])
            let second = try Self.addContent(
                ["levels/1.json": Data(#"{"level":1}"#.utf8), "levels/2.json": Data(#"{"level":2}"#.utf8), "video.bin": large],
                to: fixture.publicTree, revision: 2)
            try await store.recordPublication(nil, app: Self.app, tree: fixture.publicTree)
            let database = String(store.location.split(separator: "/").last ?? "")
            #expect(try await TestPostgres.current.psql("SELECT count(*) FROM content_blobs", database: database) == "3")
            #expect(try await PublicationFollowerService.catchUp(store: store, tree: tree) > 0)
            #expect(try tree.currentManifest(Self.app)?.revision == 2)
            #expect(try replica.list() == second.digests.union(manifest.digests).sorted())
        }
    }

    /// A chunk changed in the database (by hand, or by an attacker with the store's write
    /// rights): the replica refuses the blob as it writes it, stores nothing of it, and keeps
    /// serving the revision it had, whose content is whole.
    @Test func aTamperedChunkIsNeverStoredAndItsRevisionNeverCurrent() async throws {
        try await withEditorAndReplica { store, fixture, tree in
            try Self.addContent(["levels/1.json": Data(#"{"level":1}"#.utf8)], to: fixture.publicTree, revision: 1)
            try await store.recordPublication(nil, app: Self.app, tree: fixture.publicTree)
            _ = try await PublicationFollowerService.catchUp(store: store, tree: tree)
            #expect(try tree.currentManifest(Self.app)?.revision == 1)

            try fixture.publish(["com.example.served.coins", "com.example.served.gems"])
            let large = Self.randomBytes(3 * (1 << 20) - 7)
            let second = try Self.addContent(["video.bin": large], to: fixture.publicTree, revision: 2)
            try await store.recordPublication(nil, app: Self.app, tree: fixture.publicTree)
            let database = String(store.location.split(separator: "/").last ?? "")
            let video = try #require(second.items.first?.files.first?.sha256)
            // One byte of the second chunk, one more: the same length, other bytes.
            try await TestPostgres.current.psql(
                """
                UPDATE content_chunks SET bytes = set_byte(bytes, 10, (get_byte(bytes, 10) + 1) % 256)
                WHERE sha256 = '\(video.hex)' AND number = 1
                """, database: database)

            await #expect(throws: (any Error).self) { try await PublicationFollowerService.catchUp(store: store, tree: tree) }
            let replica = BlobStore(root: tree.content)
            #expect(!replica.contains(video), "a tampered blob was stored")
            #expect(Self.temporaryFiles(replica).isEmpty, "a refused blob left its temporary file")
            #expect(try tree.currentManifest(Self.app)?.revision == 1, "a revision whose content is missing became current")
        }
    }

    /// A content manifest that names a blob the editor's store does not hold is never recorded:
    /// a replica would be handed a revision it could never serve whole.
    @Test func aManifestNamingAMissingBlobIsNotRecorded() async throws {
        try await withEditorAndReplica { store, fixture, tree in
            let manifest = try Self.addContent(["levels/1.json": Data(#"{"level":1}"#.utf8)], to: fixture.publicTree, revision: 1)
            let editor = BlobStore(root: fixture.publicTree.content)
            for digest in manifest.digests { try FileManager.default.removeItem(at: editor.url(of: digest)) }

            await #expect(throws: (any Error).self) {
                try await store.recordPublication(nil, app: Self.app, tree: fixture.publicTree)
            }
            #expect(try await store.publishedFileHashes(app: Self.app).isEmpty, "a part of the publication was recorded")
            #expect(try await PublicationFollowerService.catchUp(store: store, tree: tree) == 0)
            #expect(try tree.currentManifest(Self.app) == nil)
        }
    }

    /// The replica's blob store is a cache of what its manifests name: a blob no manifest it
    /// holds names (left by an older layout, or copied in by hand) is removed.
    @Test func aBlobNoManifestNamesIsPruned() async throws {
        try await withEditorAndReplica { store, fixture, tree in
            let manifest = try Self.addContent(["levels/1.json": Data(#"{"level":1}"#.utf8)], to: fixture.publicTree, revision: 1)
            let replica = BlobStore(root: tree.content)
            try FileManager.default.createDirectory(at: tree.content.deletingLastPathComponent(), withIntermediateDirectories: true)
            let stray = try replica.put(Self.randomBytes(100)).digest
            try await store.recordPublication(nil, app: Self.app, tree: fixture.publicTree)
            _ = try await PublicationFollowerService.catchUp(store: store, tree: tree)
            #expect(!replica.contains(stray), "a blob no manifest names was kept")
            #expect(try replica.list() == manifest.digests.sorted())
        }
    }
}
