import CatalogKit
import Logging
import NIOCore
import PostgresNIO

/// Publications in the shared store, for serving replicas (docs/operations.md, "Replicas"):
/// every file of the published tree, each row numbered by the change that wrote it, and a
/// notification on the channel ``PostgresStore/publicationChannel`` when one commits.
extension PostgresStore: PublicationStore {
    /// The `LISTEN`/`NOTIFY` channel publications are announced on; the payload is the app.
    public static let publicationChannel = "catalog_publications"

    public func publishedFileHashes(app: String) async throws -> [String: String] {
        try await withStoreErrors("cannot read the publications of \(app)") {
            try await client.withConnection { connection in
                let rows = try await connection.query(
                    "SELECT path, sha256 FROM published_files WHERE app = \(app) AND content IS NOT NULL", logger: logger)
                var hashes: [String: String] = [:]
                for try await (path, sha256) in rows.decode((String, String).self) { hashes[path] = sha256 }
                return hashes
            }
        }
    }

    public func recordPublication(app: String, files: [PublishedFile], blobs: [PublishedBlob], audit: AuditEntry?) async throws {
        try await transaction("cannot record the publication of \(app)") { connection, logger in
            // Blobs first, before the lock: a long upload holds back no other publication, and
            // the same transaction still commits them with the manifests that name them.
            for blob in blobs { try await Self.insertBlob(blob, connection, logger) }
            // Publications queue here, so that change numbers are taken in the order they commit:
            // a replica that has read up to change n never misses one below it committed later.
            try await connection.execute("SELECT pg_advisory_xact_lock(hashtext('catalog.publications'))", logger: logger)
            for file in files {
                try await connection.execute(
                    """
                    INSERT INTO published_files (path, app, revision, sha256, content, change)
                    VALUES (\(file.path), \(file.app), \(file.revision), \(file.sha256), \(file.bytes.map { ByteBuffer(bytes: $0) }),
                            nextval('publication_changes'))
                    ON CONFLICT (path) DO UPDATE SET revision = EXCLUDED.revision, sha256 = EXCLUDED.sha256,
                        content = EXCLUDED.content, change = EXCLUDED.change
                    """, logger: logger)
            }
            if let audit { try await Self.insertAudit(audit, connection, logger) }
            // Delivered when the transaction commits, and only then.
            try await connection.execute("SELECT pg_notify(\(Self.publicationChannel), \(app))", logger: logger)
        }
    }

    public func publishedChanges(after change: Int64, _ receive: (PublishedFile) async throws -> Void) async throws -> Int64 {
        try await withStoreErrors("cannot read the publications") {
            try await client.withConnection { connection in
                // One statement, so one snapshot: whole publications only. Each app's current
                // manifest comes last, since a server loads a publication when it changes.
                let rows = try await connection.query(
                    """
                    SELECT path, app, content, sha256, change FROM published_files WHERE change > \(change)
                    ORDER BY (revision IS NULL), (revision IS NULL AND path = 'public/v1/apps/' || app || '/manifest.json'), change
                    """, logger: logger)
                var last = change
                for try await (path, app, content, sha256, change) in rows.decode((String, String, ByteBuffer?, String?, Int64).self) {
                    do {
                        try await receive(
                            PublishedFile(path: path, app: app, bytes: content.map { Array($0.readableBytesView) }, sha256: sha256))
                    } catch {
                        throw CallerError(error: error)
                    }
                    last = max(last, change)
                }
                return last
            }
        }
    }

    /// How many bytes each row of `content_chunks` holds (the last of a blob may hold fewer):
    /// large enough that a row's overhead and a round trip are nothing beside its bytes, small
    /// enough that one chunk is all either side holds in memory (docs/benchmarks.md, "Content store").
    public static let contentChunkBytes = 1 << 20

    /// Records a blob the store lacks, chunk by chunk from the editor's file, which is checked
    /// against its digest as it is read: a mismatch throws, and the transaction rolls back. A
    /// blob the store holds is not read again; a transaction writing the same blob meanwhile
    /// makes this one wait for its outcome, and then write it or not.
    static func insertBlob(_ blob: PublishedBlob, _ connection: PostgresConnection, _ logger: Logger) async throws {
        let chunkBytes = contentChunkBytes
        let inserted = try await connection.query(
            """
            INSERT INTO content_blobs (sha256, size, chunk_bytes) VALUES (\(blob.sha256), \(blob.size), \(Int32(chunkBytes)))
            ON CONFLICT (sha256) DO NOTHING RETURNING sha256
            """, logger: logger)
        var isNew = false
        for try await _ in inserted.decode(String.self) { isNew = true }
        guard isNew else { return }
        var number: Int32 = 0
        do {
            try await blob.forEachChunk(ofBytes: chunkBytes) { chunk in
                try await connection.execute(
                    "INSERT INTO content_chunks (sha256, number, bytes) VALUES (\(blob.sha256), \(number), \(ByteBuffer(bytes: chunk)))",
                    logger: logger)
                number += 1
            }
        } catch let error as CatalogError {
            throw CallerError(error: error)
        }
    }

    public func publishedBlob(_ sha256: String, _ receive: ([UInt8]) async throws -> Void) async throws {
        try await withStoreErrors("cannot read the blob \(sha256)") {
            try await client.withConnection { connection in
                let rows = try await connection.query(
                    "SELECT size, chunk_bytes FROM content_blobs WHERE sha256 = \(sha256)", logger: logger)
                var found: (size: Int64, chunkBytes: Int32)?
                for try await row in rows.decode((Int64, Int32).self) { found = row }
                guard let (size, chunkBytes) = found, chunkBytes > 0 else {
                    throw CallerError(
                        error: CatalogError.corruptPublication(path: "content/\(sha256)", message: "the store holds no such blob"))
                }
                // One chunk a query: a row stream would buffer rows ahead of the reader, and
                // these rows are a MiB each. Memory stays at one chunk whatever the size.
                let count = (size + Int64(chunkBytes) - 1) / Int64(chunkBytes)
                for number in 0..<count {
                    let chunk = try await connection.query(
                        "SELECT bytes FROM content_chunks WHERE sha256 = \(sha256) AND number = \(Int32(number))", logger: logger)
                    var bytes: ByteBuffer?
                    for try await value in chunk.decode(ByteBuffer.self) { bytes = value }
                    guard let bytes else {
                        throw CallerError(
                            error: CatalogError.corruptPublication(
                                path: "content/\(sha256)", message: "the store lacks chunk \(number) of its \(count)"))
                    }
                    do {
                        try await receive(Array(bytes.readableBytesView))
                    } catch {
                        throw CallerError(error: error)
                    }
                }
            }
        }
    }

    public func followAnnouncements(listening: @Sendable () -> Void, announced: @Sendable () -> Void) async throws {
        try await withStoreErrors("cannot listen for publications") {
            try await client.withConnection { connection in
                try await connection.listen(on: Self.publicationChannel) { notifications in
                    listening()
                    for try await _ in notifications { announced() }
                }
            }
        }
    }

    public func whileHoldingLock(_ name: String, _ body: @escaping @Sendable () async throws -> Void) async throws {
        let logger = logger
        while !Task.isCancelled {
            do {
                try await withStoreErrors("cannot hold the lock \(name)") {
                    try await client.withConnection { connection in
                        // A session's lock: PostgreSQL releases it when the session ends, however
                        // its process ended, and then another node's try takes it.
                        while try await !Self.tryLock(name, connection, logger) { try await Task.sleep(for: .seconds(1)) }
                        logger.notice("store.lock.held", metadata: ["store.lock": "\(name)"])
                        do {
                            try await withThrowingTaskGroup(of: Void.self) { group in
                                group.addTask { try await body() }
                                // A lost connection means a lost lock, which another node may take:
                                // the body stops at once rather than run beside the new holder.
                                group.addTask {
                                    while true {
                                        try await Task.sleep(for: .seconds(1))
                                        try await connection.execute("SELECT 1", logger: logger)
                                    }
                                }
                                try await group.next()
                                group.cancelAll()
                            }
                        } catch {
                            _ = try? await connection.execute("SELECT pg_advisory_unlock(hashtext(\(name)))", logger: logger)
                            throw error
                        }
                        _ = try? await connection.execute("SELECT pg_advisory_unlock(hashtext(\(name)))", logger: logger)
                    }
                }
            } catch  where Task.isCancelled {
                return
            } catch {
                logger.warning("store.lock.lost", metadata: ["store.lock": "\(name)", "error": "\(error)"])
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    private static func tryLock(_ name: String, _ connection: PostgresConnection, _ logger: Logger) async throws -> Bool {
        let rows = try await connection.query("SELECT pg_try_advisory_lock(hashtext(\(name)))", logger: logger)
        var held = false
        for try await value in rows.decode(Bool.self) { held = value }
        return held
    }
}
