import CatalogKit
import CatalogServer
import CatalogTestSupport
import Foundation
import Logging
import Storage
import Testing

/// Publications through a real PostgreSQL store into a replica's tree (docs/operations.md,
/// "Replicas"): the same files, byte for byte, and a publication whose announcement is lost
/// still arrives, by polling.
@Suite(.postgres)
struct PublicationFollowerTests {
    private let logger = Logger(label: "test")

    /// A store in a database of its own, an editor's published tree (revision 1) and an empty
    /// replica tree, for `body`; removed afterwards.
    func withEditorAndReplica(_ body: (PostgresStore, CatalogServerTests.Fixture, PublicTree) async throws -> Void)
        async throws
    {
        let server = try TestPostgres.current
        let url = try StoreURL(parsing: try await server.createDatabase())
        let store = try #require(try await openStore(url, logger: logger) as? PostgresStore)
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
        let replica = FileManager.default.temporaryDirectory.appendingPathComponent("replica-\(UUID().uuidString)")
        defer {
            fixture.remove()
            try? FileManager.default.removeItem(at: replica)
        }
        do {
            try await body(
                store, fixture,
                PublicTree(root: replica.appendingPathComponent("public"), records: replica.appendingPathComponent("records")))
        } catch {
            try? await store.close()
            throw error
        }
        try await store.close()
    }

    /// Every file below `directory`, relative path to bytes; the replica's own bookkeeping left out.
    private func files(_ directory: URL) -> [String: Data] {
        var files: [String: Data] = [:]
        let base = directory.resolvingSymlinksInPath().path
        for case let relative as String in FileManager.default.enumerator(atPath: base)?.allObjects ?? [] {
            var isDirectory: ObjCBool = false
            let path = base + "/" + relative
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
                relative != "store-change"
            {
                files[relative] = FileManager.default.contents(atPath: path)
            }
        }
        return files
    }

    @Test func aReplicaTreeIsTheEditorsTreeByteForByte() async throws {
        try await withEditorAndReplica { store, fixture, tree in
            try await store.recordPublication(nil, app: CatalogServerTests.app, tree: fixture.publicTree)
            #expect(try await PublicationFollowerService.catchUp(store: store, tree: tree) > 0)
            #expect(files(tree.root) == files(fixture.publicTree.root))
            #expect(files(tree.records) == files(fixture.publicTree.records))

            // A second revision: only what changed travels, and the trees agree again. Nothing new: nothing read.
            try fixture.publish(["com.example.served.coins", "com.example.served.gems"])
            try await store.recordPublication(nil, app: CatalogServerTests.app, tree: fixture.publicTree)
            #expect(try await PublicationFollowerService.catchUp(store: store, tree: tree) > 0)
            #expect(files(tree.root) == files(fixture.publicTree.root))
            #expect(try tree.currentManifest(CatalogServerTests.app)?.revision == 2)
            #expect(try await PublicationFollowerService.catchUp(store: store, tree: tree) == 0)
        }
    }

    /// The announcement of a publication never arrives (the store below drops every one): the
    /// follower's poll brings the publication all the same.
    @Test func aPublicationWhoseAnnouncementIsLostArrivesByPolling() async throws {
        try await withEditorAndReplica { store, fixture, tree in
            let metrics = ServerMetrics()
            let follower = PublicationFollowerService(
                store: DeafStore(store: store), tree: tree, pollInterval: .milliseconds(300), metrics: metrics, logger: logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await follower.run() }
                try await store.recordPublication(nil, app: CatalogServerTests.app, tree: fixture.publicTree)
                #expect(try await Self.revision(of: tree, reaches: 1), "the first publication never arrived")
                try fixture.publish(["com.example.served.coins", "com.example.served.gems"])
                try await store.recordPublication(nil, app: CatalogServerTests.app, tree: fixture.publicTree)
                #expect(try await Self.revision(of: tree, reaches: 2), "a publication whose announcement was lost never arrived")
                let exposition = String(decoding: metrics.render(), as: UTF8.self)
                #expect(exposition.contains("catalog_feeds_store_listening 1"), "\(exposition)")
                #expect(exposition.contains("catalog_feeds_store_change \(tree.storeChange)"), "\(exposition)")
                group.cancelAll()
            }
        }
    }

    /// A row changed in the database, its bytes replaced and its recorded hash left as it was:
    /// the replica refuses it before writing it, keeps serving what it had, and counts it.
    @Test func aTamperedRowIsNeverWrittenNorServed() async throws {
        try await withEditorAndReplica { store, fixture, tree in
            try await store.recordPublication(nil, app: CatalogServerTests.app, tree: fixture.publicTree)
            #expect(try await PublicationFollowerService.catchUp(store: store, tree: tree) > 0)
            let served = files(tree.root)["v1/apps/\(CatalogServerTests.app)/products.json"]
            #expect(served != nil)

            try fixture.publish(["com.example.served.coins", "com.example.served.gems"])
            try await store.recordPublication(nil, app: CatalogServerTests.app, tree: fixture.publicTree)
            let server = try TestPostgres.current
            let database = String(store.location.split(separator: "/").last ?? "")
            // Revision 2's products feed, and its current copy, now say something else; hashes untouched.
            try await server.psql(
                """
                UPDATE published_files SET content = convert_to('{"products":[{"id":"com.attacker.free"}]}', 'UTF8')
                WHERE path LIKE '%/products.json' AND (revision = 2 OR revision IS NULL)
                """, database: database)
            await #expect(throws: CatalogError.self) { try await PublicationFollowerService.catchUp(store: store, tree: tree) }
            let after = files(tree.root)
            #expect(
                !after.values.contains { String(decoding: $0, as: UTF8.self).contains("com.attacker.free") }, "a tampered row was written")
            #expect(after["v1/apps/\(CatalogServerTests.app)/products.json"] == served, "the replica no longer serves what it had")
            #expect(try tree.currentManifest(CatalogServerTests.app)?.revision == 1)

            // The follower logs and counts the refusal on each try.
            let metrics = ServerMetrics()
            let follower = PublicationFollowerService(
                store: DeafStore(store: store), tree: tree, pollInterval: .milliseconds(200), metrics: metrics, logger: logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await follower.run() }
                var counted = false
                for _ in 0..<100 where !counted {
                    try await Task.sleep(for: .milliseconds(100))
                    counted = String(decoding: metrics.render(), as: UTF8.self).contains("catalog_feeds_store_files_refused_total 1")
                }
                #expect(counted, "\(String(decoding: metrics.render(), as: UTF8.self))")
                group.cancelAll()
            }
            #expect(try tree.currentManifest(CatalogServerTests.app)?.revision == 1)
        }
    }

    /// A store's paths are written only inside the replica's folders.
    @Test(arguments: [
        "public/v1/apps/com.example.served/../../../../escape", "public/v1/apps/com.example.served/.hidden",
        "etc/v1/apps/com.example.served/x",
        "public/v1/apps/com.example.other/manifest.json", "public/v1/apps/com.example.served",
    ])
    func aPathOutsideTheTreeIsRefused(path: String) throws {
        let replica = FileManager.default.temporaryDirectory.appendingPathComponent("replica-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: replica) }
        let tree = PublicTree(root: replica.appendingPathComponent("public"))
        #expect(throws: CatalogError.self) { try tree.apply(PublishedFile(path: path, app: CatalogServerTests.app, bytes: [1])) }
    }

    /// Polls for up to twenty seconds (a bound, not a measure).
    private static func revision(of tree: PublicTree, reaches revision: Int) async throws -> Bool {
        for _ in 0..<200 {
            if (try? tree.currentManifest(CatalogServerTests.app))??.revision == revision { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }
}

/// A store whose announcements connection is up and never delivers one: a lost notification.
private struct DeafStore: PublicationStore {
    let store: PostgresStore

    func publishedFileHashes(app: String) async throws -> [String: String] { try await store.publishedFileHashes(app: app) }
    func recordPublication(app: String, files: [PublishedFile], blobs: [PublishedBlob], audit: AuditEntry?) async throws {
        try await store.recordPublication(app: app, files: files, blobs: blobs, audit: audit)
    }
    func publishedBlob(_ sha256: String, _ receive: ([UInt8]) async throws -> Void) async throws {
        try await store.publishedBlob(sha256, receive)
    }
    func publishedChanges(after change: Int64, _ receive: (PublishedFile) async throws -> Void) async throws -> Int64 {
        try await store.publishedChanges(after: change, receive)
    }
    func followAnnouncements(listening: @Sendable () -> Void, announced: @Sendable () -> Void) async throws {
        listening()
        try await Task.sleep(for: .seconds(3600))
    }
    func whileHoldingLock(_ name: String, _ body: @escaping @Sendable () async throws -> Void) async throws {
        try await store.whileHoldingLock(name, body)
    }
}
