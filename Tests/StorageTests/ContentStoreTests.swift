import CatalogKit
import CatalogTestSupport
import Foundation
import Logging
import Testing

@testable import Storage

/// Content blobs in a PostgreSQL store (docs/storage.md, `content_blobs` and `content_chunks`):
/// what a replica's role may do with them, and what a publication refuses to record.
@Suite(.postgres)
struct ContentStoreTests {
    private let logger = Logger(label: "test")

    /// A file of `bytes` in a temporary folder, as a blob to publish; removed by `body`'s caller.
    private func withBlobFile(_ bytes: [UInt8], _ body: (PublishedBlob) async throws -> Void) async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("blob-\(UUID().uuidString)")
        try Data(bytes).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        try await body(PublishedBlob(sha256: ContentHash.sha256Hex(bytes), size: Int64(bytes.count), source: file))
    }

    private func open(_ url: String) async throws -> PostgresStore {
        guard case .postgres(let address) = try StoreURL(parsing: url) else { throw StoreURLError("not PostgreSQL") }
        return try await PostgresStore.open(address, logger: logger)
    }

    /// A replica's role reads a blob, chunk by chunk, and can neither add a blob nor change one:
    /// every replica would serve what it wrote.
    @Test func aReplicasRoleReadsBlobsAndCannotWriteThem() async throws {
        let server = try TestPostgres.current
        let url = try await server.createDatabase()
        let database = String(url.split(separator: "/").last ?? "")
        let suffix = UUID().uuidString.filter(\.isHexDigit).prefix(8).lowercased()
        let (editorRole, replicaRole) = ("editor_\(suffix)", "replica_\(suffix)")
        let roles = try StoreRoles.sql(replicaRole: replicaRole, editorRole: editorRole)
        try await server.psql(roles, database: database)
        try await server.psql("ALTER ROLE \(editorRole) PASSWORD 'editor-pw'; ALTER ROLE \(replicaRole) PASSWORD 'replica-pw'")
        let bytes = (0..<(PostgresStore.contentChunkBytes + 10)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try await withBlobFile(bytes) { blob in
            let editor = try await open("postgres://\(editorRole):editor-pw@127.0.0.1:\(server.port)/\(database)")
            try await editor.recordPublication(app: "com.example.app", files: [], blobs: [blob], audit: nil)
            try await editor.close()
            try await server.psql(roles, database: database)

            let replica = try await open("postgres://\(replicaRole):replica-pw@127.0.0.1:\(server.port)/\(database)")
            let rights = try await replica.rightsBeyondAReplica()
            #expect(rights == [], "a replica's role holds exactly what it needs")
            var received: [[UInt8]] = []
            try await replica.publishedBlob(blob.sha256) { received.append($0) }
            #expect(received.map(\.count) == [PostgresStore.contentChunkBytes, 10])
            #expect(Array(received.joined()) == bytes)
            await #expect(throws: (any Error).self, "a replica recorded a blob") {
                try await withBlobFile([1, 2, 3]) { other in
                    try await replica.recordPublication(app: "com.example.app", files: [], blobs: [other], audit: nil)
                }
            }
            try await replica.close()
            for statement in [
                "UPDATE content_chunks SET bytes = '\\x00'", "DELETE FROM content_blobs",
                "INSERT INTO content_blobs (sha256, size, chunk_bytes) VALUES ('x', 1, 1)",
            ] {
                await #expect(throws: TestPostgresError.self, "a replica ran \(statement)") {
                    try await server.psql("SET ROLE \(replicaRole); \(statement)", database: database)
                }
            }
            let chunks = try await server.psql("SELECT count(*) FROM content_chunks", database: database)
            #expect(chunks == "2")
        }
    }

    /// A blob whose file does not hold the bytes its digest names (changed after the manifest was
    /// written) is refused, and nothing of the publication is recorded.
    @Test func aBlobWhoseBytesAreNotItsDigestIsNotRecorded() async throws {
        let store = try await open(try await TestPostgres.current.createDatabase())
        try await withBlobFile(Array(repeating: 7, count: 3000)) { blob in
            var wrong = blob
            wrong.sha256 = ContentHash.sha256Hex([UInt8](repeating: 8, count: 3000))
            let manifest = PublishedFile(
                path: "public/v1/apps/com.example.app/manifest.json", app: "com.example.app", bytes: Array("{}".utf8))
            await #expect(throws: CatalogError.self) {
                try await store.recordPublication(app: "com.example.app", files: [manifest], blobs: [wrong], audit: nil)
            }
            let recorded = try await store.publishedFileHashes(app: "com.example.app")
            #expect(recorded.isEmpty, "the publication was recorded")
            await #expect(throws: (any Error).self) { try await store.publishedBlob(wrong.sha256) { _ in } }
        }
        try await store.close()
    }
}
