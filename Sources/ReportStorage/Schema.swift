/// One step of a store's schema: applied once, in order, inside a transaction, and recorded in
/// `schema_migrations`. Released migrations are never edited; a change is a new version.
struct Migration: Sendable {
    var version: Int
    var sql: String
}

/// The report store's schema, the same tables and meaning on both engines (docs/storage.md).
///
/// A report is one row: its identifier lists are stored with it (a JSON array in SQLite, a
/// `text[]` in PostgreSQL) and unnested only when aggregating, so that storing a report costs
/// one row however many identifiers it names. Times are whole seconds since 1970 (UTC).
enum Schema {
    static let sqlite: [Migration] = [
        Migration(
            version: 1,
            sql: """
                CREATE TABLE reports (
                    id INTEGER PRIMARY KEY,
                    app TEXT NOT NULL,
                    report_id TEXT NOT NULL,
                    received_at INTEGER NOT NULL,
                    platform TEXT,
                    environment TEXT,
                    app_version TEXT,
                    storefront TEXT,
                    feed_revision INTEGER,
                    install_id TEXT,
                    invalid TEXT NOT NULL,
                    requested TEXT,
                    UNIQUE (app, report_id)
                );
                CREATE INDEX reports_by_app_and_time ON reports (app, received_at);
                CREATE INDEX reports_by_time ON reports (received_at);
                """)
    ]

    static let postgres: [Migration] = [
        Migration(
            version: 1,
            sql: """
                CREATE TABLE reports (
                    id BIGSERIAL PRIMARY KEY,
                    app TEXT NOT NULL,
                    report_id TEXT NOT NULL,
                    received_at BIGINT NOT NULL,
                    platform TEXT,
                    environment TEXT,
                    app_version TEXT,
                    storefront TEXT,
                    feed_revision BIGINT,
                    install_id TEXT,
                    invalid TEXT[] NOT NULL,
                    requested TEXT[],
                    UNIQUE (app, report_id)
                );
                CREATE INDEX reports_by_app_and_time ON reports (app, received_at);
                CREATE INDEX reports_by_time ON reports (received_at);
                """)
    ]

    /// Refuses a store that a newer `catalog` migrated: this one would misread it.
    static func check(storeVersion: Int, known migrations: [Migration]) throws(StoreSchemaError) {
        let latest = migrations.last?.version ?? 0
        if storeVersion > latest {
            throw StoreSchemaError(
                description: "the store's schema is at version \(storeVersion), newer than this catalog knows (\(latest)); upgrade catalog")
        }
    }
}

public struct StoreSchemaError: Error, CustomStringConvertible {
    public let description: String
}
