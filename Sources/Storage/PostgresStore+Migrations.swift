import Logging
import PostgresNIO
import Time

// Checked and applied once, when the store opens.
extension PostgresStore {
    /// Refuses a server that would acknowledge commits it has not flushed: a 202 promises that
    /// the report survives a crash. Every level of `synchronous_commit` but `off` flushes locally.
    static func requireDurableCommits(_ connection: PostgresConnection, logger: Logger) async throws {
        for setting in ["synchronous_commit", "fsync"] {
            var value = ""
            for try await row in try await connection.query(PostgresQuery(unsafeSQL: "SHOW \(setting)"), logger: logger).decode(String.self)
            {
                value = row
            }
            if value == "off" {
                throw UndurableServer(
                    description: "\(setting) is off on this server, so acknowledged reports could be lost in a crash; "
                        + "turn it on (ALTER SYSTEM SET \(setting) = on, or for this database or role)")
            }
        }
    }

    /// Applies the migrations this store lacks, in one transaction.
    static func migrate(_ connection: PostgresConnection, logger: Logger) async throws {
        // A store already up to date is only read: a replica's role has no right to create
        // tables (docs/storage.md, "Roles"), and CREATE TABLE IF NOT EXISTS checks that right,
        // and sends a notice, even when the table exists.
        let known = Schema.postgres.last?.version ?? 0
        var exists = false
        for try await found in try await connection.query("SELECT to_regclass('schema_migrations') IS NOT NULL", logger: logger)
            .decode(Bool.self)
        {
            exists = found
        }
        var applied = 0
        if exists {
            for try await version in try await connection.query(
                "SELECT COALESCE(MAX(version), 0)::bigint FROM schema_migrations", logger: logger
            ).decode(Int.self) {
                applied = version
            }
        }
        if exists && applied >= known {
            try Schema.check(storeVersion: applied, known: Schema.postgres)
            return
        }
        try await connection.withTransaction(logger: logger) { connection in
            // Replicas that start together queue here: the first migrates, the others then find
            // the work done. The lock is this database's and ends with the transaction.
            try await connection.execute("SELECT pg_advisory_xact_lock(hashtext('catalog.schema_migrations'))", logger: logger)
            try await connection.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)",
                logger: logger)
            var current = 0
            for try await version in try await connection.query(
                "SELECT COALESCE(MAX(version), 0)::bigint FROM schema_migrations", logger: logger
            ).decode(Int.self) {
                current = version
            }
            try Schema.check(storeVersion: current, known: Schema.postgres)
            for migration in Schema.postgres where migration.version > current {
                // A migration may hold several statements, which one extended-protocol query cannot;
                // a DO block makes them one. The text is ours, never a value.
                try await connection.execute(
                    PostgresQuery(unsafeSQL: "DO $migration$ BEGIN \(migration.sql) END $migration$"), logger: logger)
                try await connection.execute(
                    "INSERT INTO schema_migrations (version, applied_at) VALUES (\(migration.version), \(Timestamp.now.secondsSince1970))",
                    logger: logger)
                logger.info("store migration applied", metadata: ["store.migration": "\(migration.version)"])
            }
        }
    }
}

private struct UndurableServer: Error, CustomStringConvertible {
    var description: String
}
