import CatalogKit
import Logging
import NIOCore
import PostgresNIO

/// The two ways a PostgreSQL store could keep content blobs, side by side for
/// `scripts/bench-content-store` (docs/benchmarks.md, "Content store"): the chunked rows the store
/// uses (`content_chunks`, written and read by the same code a publication and a replica run),
/// and large objects (`lo_put`/`lo_get` a MiB at a time), which it does not.
public enum PostgresContentBenchmark {
    /// How a blob is kept.
    public enum Method: String, Sendable, CaseIterable {
        /// `content_blobs` and `content_chunks`, a row a MiB: what the store does.
        case rows
        /// A large object per blob (`pg_largeobject`), a MiB per call.
        case largeObjects = "large-objects"
    }

    /// Writes `blob` into `store` the way `method` keeps it, in one transaction.
    public static func write(_ blob: PublishedBlob, method: Method, store: PostgresStore) async throws {
        switch method {
        case .rows:
            try await store.recordPublication(app: "bench", files: [], blobs: [blob], audit: nil)
        case .largeObjects:
            try await store.transaction("cannot write a large object") { connection, logger in
                try await connection.execute(
                    "CREATE TABLE IF NOT EXISTS bench_large_objects (sha256 TEXT PRIMARY KEY, oid OID NOT NULL, size BIGINT NOT NULL)",
                    logger: logger)
                var oid: Int64 = 0
                for try await value in try await connection.query("SELECT lo_create(0)::bigint", logger: logger).decode(Int64.self) {
                    oid = value
                }
                var offset: Int64 = 0
                try await blob.forEachChunk(ofBytes: PostgresStore.contentChunkBytes) { chunk in
                    try await connection.execute("SELECT lo_put(\(oid)::oid, \(offset), \(ByteBuffer(bytes: chunk)))", logger: logger)
                    offset += Int64(chunk.count)
                }
                try await connection.execute(
                    "INSERT INTO bench_large_objects (sha256, oid, size) VALUES (\(blob.sha256), \(oid)::oid, \(blob.size))", logger: logger
                )
            }
        }
    }

    /// Reads the blob of `sha256` back, a chunk at a time, and returns how many bytes came.
    public static func read(_ sha256: String, method: Method, store: PostgresStore) async throws -> Int64 {
        var total: Int64 = 0
        switch method {
        case .rows:
            try await store.publishedBlob(sha256) { chunk in total += Int64(chunk.count) }
        case .largeObjects:
            total = try await store.transaction("cannot read a large object") { connection, logger in
                var found: (oid: Int64, size: Int64)?
                for try await row in try await connection.query(
                    "SELECT oid::bigint, size FROM bench_large_objects WHERE sha256 = \(sha256)", logger: logger
                ).decode((Int64, Int64).self) {
                    found = row
                }
                guard let (oid, size) = found else { return 0 }
                var read: Int64 = 0
                let step = Int64(PostgresStore.contentChunkBytes)
                while read < size {
                    for try await chunk in try await connection.query(
                        "SELECT lo_get(\(oid)::oid, \(read), \(Int32(min(step, size - read))))", logger: logger
                    ).decode(ByteBuffer.self) {
                        read += Int64(chunk.readableBytes)
                    }
                }
                return read
            }
        }
        return total
    }
}
