import CatalogKit
import CatalogServer
import CatalogTestSupport
import Content
import Foundation
import Logging
import Storage
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

extension PublicationFollowerTests {
    /// The transfer of a blob is cut off after its first chunk (the connection lost, or the
    /// replica stopped): no part of it is stored, not even its temporary file, and its revision
    /// is not current. The next catch-up, with the store back, brings it whole.
    @Test func aTransferCutOffMidBlobLeavesNoPartialBlob() async throws {
        try await withEditorAndReplica { store, fixture, tree in
            let large = Self.randomBytes(3 * (1 << 20) + 5)
            let manifest = try Self.addContent(["video.bin": large], to: fixture.publicTree, revision: 1)
            try await store.recordPublication(nil, app: Self.app, tree: fixture.publicTree)
            let video = try #require(manifest.digests.first)
            let replica = BlobStore(root: tree.content)

            await #expect(throws: CutOff.self) {
                try await PublicationFollowerService.catchUp(store: CuttingStore(store: store), tree: tree)
            }
            #expect(!replica.contains(video), "a blob cut off mid-transfer was stored")
            #expect(try replica.list().isEmpty)
            #expect(Self.temporaryFiles(replica).isEmpty, "a blob cut off mid-transfer left its temporary file")
            #expect(try tree.currentManifest(Self.app) == nil, "a revision whose content was cut off became current")

            #expect(try await PublicationFollowerService.catchUp(store: store, tree: tree) > 0)
            #expect(try tree.currentManifest(Self.app)?.revision == 1)
            #expect(FileManager.default.contents(atPath: replica.url(of: video).path) == large)
        }
    }

    /// A replica killed mid-blob leaves only a temporary file, never a blob under its name; when
    /// it starts again, the follower clears the old temporary file and brings the blob whole.
    @Test func aReplicaKilledMidBlobStartsAgainClean() async throws {
        try await withEditorAndReplica { store, fixture, tree in
            let large = Self.randomBytes(2 * (1 << 20) + 3)
            let manifest = try Self.addContent(["video.bin": large], to: fixture.publicTree, revision: 1)
            try await store.recordPublication(nil, app: Self.app, tree: fixture.publicTree)
            let video = try #require(manifest.digests.first)
            // What a kill -9 after the first chunk leaves: the first MiB aside, written two hours ago.
            let replica = BlobStore(root: tree.content)
            let temporaries = tree.content.appendingPathComponent("tmp")
            try FileManager.default.createDirectory(at: temporaries, withIntermediateDirectories: true)
            let leftover = temporaries.appendingPathComponent("\(video.hex).12345.678")
            try large.prefix(1 << 20).write(to: leftover)
            try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-7200)], ofItemAtPath: leftover.path)
            #expect(try replica.list().isEmpty, "a temporary file counts as a blob")

            let follower = PublicationFollowerService(
                store: store, tree: tree, pollInterval: .milliseconds(200), metrics: ServerMetrics(), logger: Logger(label: "test"))
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await follower.run() }
                var current = false
                for _ in 0..<200 where !current {  // twenty seconds at most: a bound, not a measure
                    try await Task.sleep(for: .milliseconds(100))
                    current = (try? tree.currentManifest(Self.app))??.revision == 1
                }
                #expect(current, "the publication never arrived")
                group.cancelAll()
            }
            #expect(FileManager.default.contents(atPath: replica.url(of: video).path) == large)
            #expect(Self.temporaryFiles(replica).isEmpty, "the killed transfer's temporary file was left")
        }
    }
}

/// The connection lost mid-blob.
private struct CutOff: Error {}

/// A store whose blobs stop after their first chunk, as when the connection is lost mid-transfer.
private struct CuttingStore: PublicationStore {
    let store: PostgresStore

    func publishedFileHashes(app: String) async throws -> [String: String] { try await store.publishedFileHashes(app: app) }
    func recordPublication(app: String, files: [PublishedFile], blobs: [PublishedBlob], audit: AuditEntry?) async throws {
        try await store.recordPublication(app: app, files: files, blobs: blobs, audit: audit)
    }
    func publishedChanges(after change: Int64, _ receive: (PublishedFile) async throws -> Void) async throws -> Int64 {
        try await store.publishedChanges(after: change, receive)
    }
    func publishedBlob(_ sha256: String, _ receive: ([UInt8]) async throws -> Void) async throws {
        var chunks = 0
        try await store.publishedBlob(sha256) { chunk in
            guard chunks == 0 else { throw CutOff() }
            chunks += 1
            try await receive(chunk)
        }
    }
    func followAnnouncements(listening: @Sendable () -> Void, announced: @Sendable () -> Void) async throws {
        try await store.followAnnouncements(listening: listening, announced: announced)
    }
    func whileHoldingLock(_ name: String, _ body: @escaping @Sendable () async throws -> Void) async throws {
        try await store.whileHoldingLock(name, body)
    }
}
