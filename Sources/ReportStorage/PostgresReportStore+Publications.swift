import CatalogKit
import Logging
import NIOCore
import PostgresNIO

/// Publications in the shared store, for serving replicas (docs/operations.md, "Replicas"):
/// every file of the published tree, each row numbered by the change that wrote it, and a
/// notification on the channel ``PostgresReportStore/publicationChannel`` when one commits.
extension PostgresReportStore: PublicationStore {
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

    public func recordPublication(app: String, files: [PublishedFile], audit: AuditEntry?) async throws {
        try await transaction("cannot record the publication of \(app)") { connection, logger in
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
