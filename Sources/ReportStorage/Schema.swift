/// One step of a store's schema: applied once, in order, inside a transaction, and recorded in
/// `schema_migrations`. Released migrations are never edited; a change is a new version.
struct Migration: Sendable {
    var version: Int
    var sql: String
}

/// The store's schema, the same tables and meaning on both engines (docs/storage.md): reports
/// (version 1), then editor tokens and the audit log (version 2), then where each report came
/// from: its network's keyed hash, its verified install, and whether it was a store-wide failure
/// (version 3; rows stored before it have no network and never count toward a quarantine).
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
                """),
        Migration(
            version: 2,
            sql: """
                CREATE TABLE editor_tokens (
                    name TEXT NOT NULL,
                    role TEXT NOT NULL,
                    secret_hash TEXT NOT NULL UNIQUE,
                    created_at INTEGER NOT NULL,
                    revoked_at INTEGER
                );
                CREATE UNIQUE INDEX editor_tokens_active_name ON editor_tokens (name) WHERE revoked_at IS NULL;
                CREATE TABLE audit_log (
                    sequence INTEGER PRIMARY KEY,
                    at INTEGER NOT NULL,
                    actor TEXT NOT NULL,
                    action TEXT NOT NULL,
                    app TEXT,
                    summary TEXT NOT NULL,
                    before_hash TEXT,
                    after_hash TEXT
                );
                CREATE INDEX audit_log_by_app ON audit_log (app, sequence);
                """),
        Migration(
            version: 3,
            sql: """
                ALTER TABLE reports ADD COLUMN network TEXT;
                ALTER TABLE reports ADD COLUMN verified_install TEXT;
                ALTER TABLE reports ADD COLUMN all_requested_invalid INTEGER;
                UPDATE reports SET all_requested_invalid = NOT EXISTS (
                    SELECT 1 FROM json_each(reports.requested) q
                    WHERE q.value NOT IN (SELECT i.value FROM json_each(reports.invalid) i))
                WHERE requested IS NOT NULL AND json_array_length(requested) > 0;
                """),
        // The audit log only grows: whoever holds the file, the catalog's own statements included,
        // cannot rewrite or remove an entry without first dropping these triggers.
        Migration(
            version: 4,
            sql: """
                CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
                BEGIN SELECT RAISE(ABORT, 'audit_log entries are never changed or deleted'); END;
                CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
                BEGIN SELECT RAISE(ABORT, 'audit_log entries are never changed or deleted'); END;
                """),
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
                """),
        Migration(
            version: 2,
            sql: """
                CREATE TABLE editor_tokens (
                    name TEXT NOT NULL,
                    role TEXT NOT NULL,
                    secret_hash TEXT NOT NULL UNIQUE,
                    created_at BIGINT NOT NULL,
                    revoked_at BIGINT
                );
                CREATE UNIQUE INDEX editor_tokens_active_name ON editor_tokens (name) WHERE revoked_at IS NULL;
                CREATE TABLE audit_log (
                    sequence BIGSERIAL PRIMARY KEY,
                    at BIGINT NOT NULL,
                    actor TEXT NOT NULL,
                    action TEXT NOT NULL,
                    app TEXT,
                    summary TEXT NOT NULL,
                    before_hash TEXT,
                    after_hash TEXT
                );
                CREATE INDEX audit_log_by_app ON audit_log (app, sequence);
                """),
        Migration(
            version: 3,
            sql: """
                ALTER TABLE reports ADD COLUMN network TEXT, ADD COLUMN verified_install TEXT,
                    ADD COLUMN all_requested_invalid BOOLEAN;
                UPDATE reports SET all_requested_invalid = (requested <@ invalid) WHERE cardinality(requested) > 0;
                """),
        // Every file of every publication, for replicas that serve without a disk of their own:
        // one row per path, its latest bytes (NULL once removed) and the change that wrote them,
        // numbered in commit order (publications take a lock for it).
        Migration(
            version: 4,
            sql: """
                CREATE SEQUENCE publication_changes;
                CREATE TABLE published_files (
                    path TEXT PRIMARY KEY,
                    app TEXT NOT NULL,
                    revision BIGINT,
                    sha256 TEXT,
                    content BYTEA,
                    change BIGINT NOT NULL
                );
                CREATE INDEX published_files_by_change ON published_files (change);
                CREATE INDEX published_files_by_app ON published_files (app);
                """),
        // The audit log only grows, for the editor role (which owns the table) as for any other:
        // UPDATE, DELETE and TRUNCATE raise. Revoked rights alone would not hold the owner.
        Migration(
            version: 5,
            sql: """
                CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $function$
                BEGIN
                    RAISE EXCEPTION 'audit_log entries are never changed or deleted (%)', TG_OP
                        USING ERRCODE = 'insufficient_privilege';
                END
                $function$;
                CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
                    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
                CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
                    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
                """),
        // The secret report networks are hashed with, one row written once: every node on the
        // store hashes a client's network alike (docs/feedback.md).
        Migration(
            version: 6,
            sql: """
                CREATE TABLE network_secret (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    secret TEXT NOT NULL,
                    created_at BIGINT NOT NULL
                );
                """),
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
