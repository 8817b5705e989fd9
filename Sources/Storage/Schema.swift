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
    /// The tables of the stores' server APIs (docs/app-store-api.md), the same SQL in both
    /// databases: how far reading a history has got, and what became of each consumption request.
    static let storeAPITables = """
        CREATE TABLE purchase_poll_positions (
            app TEXT NOT NULL,
            store TEXT NOT NULL,
            stream TEXT NOT NULL,
            window_start_ms BIGINT NOT NULL,
            window_end_ms BIGINT NOT NULL,
            cursor TEXT,
            done BIGINT NOT NULL,
            updated_at BIGINT NOT NULL,
            PRIMARY KEY (app, store, stream)
        );
        CREATE TABLE purchase_consumption_answers (
            app TEXT NOT NULL,
            store TEXT NOT NULL,
            notification_id TEXT NOT NULL,
            transaction_id TEXT,
            state TEXT NOT NULL,
            attempts BIGINT NOT NULL,
            next_attempt_at BIGINT,
            body TEXT,
            status BIGINT,
            error TEXT,
            updated_at BIGINT NOT NULL,
            PRIMARY KEY (app, store, notification_id)
        );
        CREATE INDEX purchase_consumption_answers_by_transaction ON purchase_consumption_answers (app, transaction_id);
        CREATE INDEX purchase_notifications_by_type ON purchase_notifications (store, notification_type, sequence);
        """

    /// The acknowledgement outbox (docs/google-play.md, "Acknowledgement"), the same SQL in both
    /// databases: one row per purchase a store must be told of before its deadline.
    static let acknowledgementTable = """
        CREATE TABLE purchase_acknowledgements (
            app TEXT NOT NULL,
            store TEXT NOT NULL,
            purchase_key TEXT NOT NULL,
            product_id TEXT NOT NULL,
            action TEXT NOT NULL,
            state TEXT NOT NULL,
            attempts BIGINT NOT NULL,
            next_attempt_at BIGINT,
            deadline_at BIGINT,
            error TEXT,
            updated_at BIGINT NOT NULL,
            PRIMARY KEY (app, store, purchase_key)
        );
        CREATE INDEX purchase_acknowledgements_due ON purchase_acknowledgements (state, next_attempt_at);
        """

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
        // Customers, their purchases and the App Store's notifications (docs/purchases.md, "Storage").
        // The ledger is not stored as state: every signed payload is, each version once (its hash),
        // and the ledger is derived from them, so arrival order never matters. Times in
        // `*_at_ms` are milliseconds since 1970, as Apple signs them; the others whole seconds.
        Migration(
            version: 5,
            sql: """
                CREATE TABLE purchase_customers (
                    id INTEGER PRIMARY KEY,
                    app TEXT NOT NULL,
                    created_at INTEGER NOT NULL
                );
                CREATE TABLE purchase_customer_keys (
                    app TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    value TEXT NOT NULL,
                    customer_id INTEGER NOT NULL REFERENCES purchase_customers (id),
                    PRIMARY KEY (app, kind, value)
                );
                CREATE INDEX purchase_customer_keys_by_customer ON purchase_customer_keys (customer_id);
                CREATE TABLE purchase_bindings (
                    app TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    customer_id INTEGER NOT NULL REFERENCES purchase_customers (id),
                    bound_at INTEGER NOT NULL,
                    PRIMARY KEY (app, original_transaction_id)
                );
                CREATE INDEX purchase_bindings_by_customer ON purchase_bindings (customer_id);
                CREATE TABLE purchase_transactions (
                    app TEXT NOT NULL,
                    transaction_id TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    environment TEXT,
                    signed_at_ms INTEGER,
                    payload TEXT NOT NULL,
                    payload_sha256 TEXT NOT NULL,
                    source TEXT NOT NULL,
                    received_at INTEGER NOT NULL,
                    PRIMARY KEY (app, transaction_id, payload_sha256)
                );
                CREATE INDEX purchase_transactions_by_original ON purchase_transactions (app, original_transaction_id);
                CREATE TABLE purchase_renewal_infos (
                    app TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    environment TEXT,
                    signed_at_ms INTEGER,
                    payload TEXT NOT NULL,
                    payload_sha256 TEXT NOT NULL,
                    source TEXT NOT NULL,
                    received_at INTEGER NOT NULL,
                    PRIMARY KEY (app, original_transaction_id, payload_sha256)
                );
                CREATE TABLE purchase_notifications (
                    sequence INTEGER PRIMARY KEY,
                    app TEXT NOT NULL,
                    notification_uuid TEXT NOT NULL,
                    notification_type TEXT,
                    subtype TEXT,
                    environment TEXT,
                    signed_at_ms INTEGER,
                    received_at INTEGER NOT NULL,
                    body TEXT NOT NULL,
                    UNIQUE (app, notification_uuid)
                );
                CREATE TABLE purchase_transfers (
                    sequence INTEGER PRIMARY KEY,
                    app TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    from_customer INTEGER NOT NULL,
                    to_customer INTEGER NOT NULL,
                    outcome TEXT NOT NULL,
                    at INTEGER NOT NULL
                );
                CREATE INDEX purchase_transfers_by_from ON purchase_transfers (from_customer);
                CREATE INDEX purchase_transfers_by_to ON purchase_transfers (to_customer);
                """),
        // The webhook outbox (docs/purchases.md, "Webhooks"): events written in the transaction of
        // the evidence that caused them, settled by the delivery service. `state` is pending,
        // delivered or dead; times are whole seconds.
        Migration(
            version: 6,
            sql: """
                CREATE TABLE purchase_webhook_events (
                    sequence INTEGER PRIMARY KEY,
                    event_id TEXT NOT NULL UNIQUE,
                    app TEXT NOT NULL,
                    type TEXT NOT NULL,
                    customer_id INTEGER,
                    original_transaction_id TEXT NOT NULL,
                    transaction_id TEXT,
                    product_id TEXT,
                    environment TEXT,
                    occurred_at_ms INTEGER,
                    created_at INTEGER NOT NULL,
                    state TEXT NOT NULL DEFAULT 'pending',
                    attempts INTEGER NOT NULL DEFAULT 0,
                    next_attempt_at INTEGER NOT NULL,
                    last_error TEXT,
                    finished_at INTEGER
                );
                CREATE INDEX purchase_webhook_events_pending ON purchase_webhook_events (state, customer_id, sequence);
                """),
        // Claims refused under `keep` (docs/purchases.md, "Customers and transfers"), kept against
        // the purchase instead of making a customer for each claimant: one row per claimant key,
        // up to a bound per purchase, the rest counted in one row with an empty kind and value.
        Migration(
            version: 7,
            sql: """
                CREATE TABLE purchase_refused_claims (
                    app TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    claimant_kind TEXT NOT NULL,
                    claimant_value TEXT NOT NULL,
                    count INTEGER NOT NULL,
                    first_at INTEGER NOT NULL,
                    last_at INTEGER NOT NULL,
                    PRIMARY KEY (app, original_transaction_id, claimant_kind, claimant_value)
                );
                """),
        // The schema learns stores (docs/storage.md, "Purchase tables"): every purchase table and
        // key names the store (`appStore`, `googlePlay`), a purchase is its store's `purchase_key`
        // (the App Store's original transaction id), and key kinds are the ledger's (`appAccount`,
        // shared by every store; a store's `storeAccount` and `purchase`). The App Store's rows are
        // moved in place. Tables whose key changes are rebuilt, as SQLite changes no primary key;
        // `purchase_renewal_infos` becomes `purchase_states`, the ledger's subscription states.
        Migration(
            version: 8,
            sql: """
                CREATE TABLE purchase_customer_keys_v8 (
                    app TEXT NOT NULL,
                    store TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    value TEXT NOT NULL,
                    customer_id INTEGER NOT NULL REFERENCES purchase_customers (id),
                    PRIMARY KEY (app, store, kind, value)
                );
                INSERT INTO purchase_customer_keys_v8 (app, store, kind, value, customer_id)
                    SELECT app, CASE kind WHEN 'appAccountToken' THEN '' ELSE 'appStore' END,
                           CASE kind WHEN 'appAccountToken' THEN 'appAccount' WHEN 'appTransactionId' THEN 'storeAccount'
                                     ELSE 'purchase' END,
                           value, customer_id
                    FROM purchase_customer_keys;
                DROP TABLE purchase_customer_keys;
                ALTER TABLE purchase_customer_keys_v8 RENAME TO purchase_customer_keys;
                CREATE INDEX purchase_customer_keys_by_customer ON purchase_customer_keys (customer_id);

                CREATE TABLE purchase_bindings_v8 (
                    app TEXT NOT NULL,
                    store TEXT NOT NULL,
                    purchase_key TEXT NOT NULL,
                    customer_id INTEGER NOT NULL REFERENCES purchase_customers (id),
                    bound_at INTEGER NOT NULL,
                    PRIMARY KEY (app, store, purchase_key)
                );
                INSERT INTO purchase_bindings_v8 (app, store, purchase_key, customer_id, bound_at)
                    SELECT app, 'appStore', original_transaction_id, customer_id, bound_at FROM purchase_bindings;
                DROP TABLE purchase_bindings;
                ALTER TABLE purchase_bindings_v8 RENAME TO purchase_bindings;
                CREATE INDEX purchase_bindings_by_customer ON purchase_bindings (customer_id);

                CREATE TABLE purchase_transactions_v8 (
                    app TEXT NOT NULL,
                    store TEXT NOT NULL,
                    transaction_id TEXT NOT NULL,
                    purchase_key TEXT NOT NULL,
                    environment TEXT,
                    signed_at_ms INTEGER,
                    payload TEXT NOT NULL,
                    payload_sha256 TEXT NOT NULL,
                    source TEXT NOT NULL,
                    received_at INTEGER NOT NULL,
                    PRIMARY KEY (app, store, transaction_id, payload_sha256)
                );
                INSERT INTO purchase_transactions_v8 (app, store, transaction_id, purchase_key, environment, signed_at_ms, payload,
                                                      payload_sha256, source, received_at)
                    SELECT app, 'appStore', transaction_id, original_transaction_id, environment, signed_at_ms, payload, payload_sha256,
                           source, received_at
                    FROM purchase_transactions;
                DROP TABLE purchase_transactions;
                ALTER TABLE purchase_transactions_v8 RENAME TO purchase_transactions;
                CREATE INDEX purchase_transactions_by_purchase ON purchase_transactions (app, store, purchase_key);

                CREATE TABLE purchase_states (
                    app TEXT NOT NULL,
                    store TEXT NOT NULL,
                    purchase_key TEXT NOT NULL,
                    environment TEXT,
                    signed_at_ms INTEGER,
                    payload TEXT NOT NULL,
                    payload_sha256 TEXT NOT NULL,
                    source TEXT NOT NULL,
                    received_at INTEGER NOT NULL,
                    PRIMARY KEY (app, store, purchase_key, payload_sha256)
                );
                INSERT INTO purchase_states (app, store, purchase_key, environment, signed_at_ms, payload, payload_sha256, source,
                                             received_at)
                    SELECT app, 'appStore', original_transaction_id, environment, signed_at_ms, payload, payload_sha256, source,
                           received_at
                    FROM purchase_renewal_infos;
                DROP TABLE purchase_renewal_infos;

                CREATE TABLE purchase_notifications_v8 (
                    sequence INTEGER PRIMARY KEY,
                    app TEXT NOT NULL,
                    store TEXT NOT NULL,
                    notification_id TEXT NOT NULL,
                    notification_type TEXT,
                    subtype TEXT,
                    environment TEXT,
                    signed_at_ms INTEGER,
                    received_at INTEGER NOT NULL,
                    body TEXT NOT NULL,
                    UNIQUE (app, store, notification_id)
                );
                INSERT INTO purchase_notifications_v8 (sequence, app, store, notification_id, notification_type, subtype, environment,
                                                       signed_at_ms, received_at, body)
                    SELECT sequence, app, 'appStore', notification_uuid, notification_type, subtype, environment, signed_at_ms,
                           received_at, body
                    FROM purchase_notifications;
                DROP TABLE purchase_notifications;
                ALTER TABLE purchase_notifications_v8 RENAME TO purchase_notifications;

                ALTER TABLE purchase_transfers ADD COLUMN store TEXT NOT NULL DEFAULT 'appStore';
                ALTER TABLE purchase_transfers RENAME COLUMN original_transaction_id TO purchase_key;

                CREATE TABLE purchase_refused_claims_v8 (
                    app TEXT NOT NULL,
                    store TEXT NOT NULL,
                    purchase_key TEXT NOT NULL,
                    claimant_store TEXT NOT NULL,
                    claimant_kind TEXT NOT NULL,
                    claimant_value TEXT NOT NULL,
                    count INTEGER NOT NULL,
                    first_at INTEGER NOT NULL,
                    last_at INTEGER NOT NULL,
                    PRIMARY KEY (app, store, purchase_key, claimant_store, claimant_kind, claimant_value)
                );
                INSERT INTO purchase_refused_claims_v8 (app, store, purchase_key, claimant_store, claimant_kind, claimant_value, count,
                                                        first_at, last_at)
                    SELECT app, 'appStore', original_transaction_id, '',
                           CASE claimant_kind WHEN 'appAccountToken' THEN 'appAccount' ELSE claimant_kind END,
                           claimant_value, count, first_at, last_at
                    FROM purchase_refused_claims;
                DROP TABLE purchase_refused_claims;
                ALTER TABLE purchase_refused_claims_v8 RENAME TO purchase_refused_claims;

                ALTER TABLE purchase_webhook_events ADD COLUMN store TEXT NOT NULL DEFAULT 'appStore';
                ALTER TABLE purchase_webhook_events RENAME COLUMN original_transaction_id TO purchase_key;
                """),
        // How far reading a store's history has got (docs/app-store-api.md, "Reconciliation"): one
        // row per app, store and stream, rewritten after every page recorded; and what became of
        // each consumption request ("Consumption requests"), found by the notifications' type.
        Migration(
            version: 9,
            sql: storeAPITables),
        // What Google Play must be told of each purchase within its three days.
        Migration(
            version: 10,
            sql: acknowledgementTable),
        // Notification bodies compressed against an earlier notification's (docs/storage.md,
        // "Notification bodies"): with `body_base`, `body` is a blob, the body's raw DEFLATE with the
        // body of notification `body_base`, itself kept as posted, as the preset dictionary.
        Migration(
            version: 11,
            sql: "ALTER TABLE purchase_notifications ADD COLUMN body_base INTEGER;"),
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
        // The purchase tables of SQLite's version 5, the same meaning.
        Migration(
            version: 7,
            sql: """
                CREATE TABLE purchase_customers (
                    id BIGSERIAL PRIMARY KEY,
                    app TEXT NOT NULL,
                    created_at BIGINT NOT NULL
                );
                CREATE TABLE purchase_customer_keys (
                    app TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    value TEXT NOT NULL,
                    customer_id BIGINT NOT NULL REFERENCES purchase_customers (id),
                    PRIMARY KEY (app, kind, value)
                );
                CREATE INDEX purchase_customer_keys_by_customer ON purchase_customer_keys (customer_id);
                CREATE TABLE purchase_bindings (
                    app TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    customer_id BIGINT NOT NULL REFERENCES purchase_customers (id),
                    bound_at BIGINT NOT NULL,
                    PRIMARY KEY (app, original_transaction_id)
                );
                CREATE INDEX purchase_bindings_by_customer ON purchase_bindings (customer_id);
                CREATE TABLE purchase_transactions (
                    app TEXT NOT NULL,
                    transaction_id TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    environment TEXT,
                    signed_at_ms BIGINT,
                    payload TEXT NOT NULL,
                    payload_sha256 TEXT NOT NULL,
                    source TEXT NOT NULL,
                    received_at BIGINT NOT NULL,
                    PRIMARY KEY (app, transaction_id, payload_sha256)
                );
                CREATE INDEX purchase_transactions_by_original ON purchase_transactions (app, original_transaction_id);
                CREATE TABLE purchase_renewal_infos (
                    app TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    environment TEXT,
                    signed_at_ms BIGINT,
                    payload TEXT NOT NULL,
                    payload_sha256 TEXT NOT NULL,
                    source TEXT NOT NULL,
                    received_at BIGINT NOT NULL,
                    PRIMARY KEY (app, original_transaction_id, payload_sha256)
                );
                CREATE TABLE purchase_notifications (
                    sequence BIGSERIAL PRIMARY KEY,
                    app TEXT NOT NULL,
                    notification_uuid TEXT NOT NULL,
                    notification_type TEXT,
                    subtype TEXT,
                    environment TEXT,
                    signed_at_ms BIGINT,
                    received_at BIGINT NOT NULL,
                    body TEXT NOT NULL,
                    UNIQUE (app, notification_uuid)
                );
                CREATE TABLE purchase_transfers (
                    sequence BIGSERIAL PRIMARY KEY,
                    app TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    from_customer BIGINT NOT NULL,
                    to_customer BIGINT NOT NULL,
                    outcome TEXT NOT NULL,
                    at BIGINT NOT NULL
                );
                CREATE INDEX purchase_transfers_by_from ON purchase_transfers (from_customer);
                CREATE INDEX purchase_transfers_by_to ON purchase_transfers (to_customer);
                """),
        // SQLite's version 6, the same meaning.
        Migration(
            version: 8,
            sql: """
                CREATE TABLE purchase_webhook_events (
                    sequence BIGSERIAL PRIMARY KEY,
                    event_id TEXT NOT NULL UNIQUE,
                    app TEXT NOT NULL,
                    type TEXT NOT NULL,
                    customer_id BIGINT,
                    original_transaction_id TEXT NOT NULL,
                    transaction_id TEXT,
                    product_id TEXT,
                    environment TEXT,
                    occurred_at_ms BIGINT,
                    created_at BIGINT NOT NULL,
                    state TEXT NOT NULL DEFAULT 'pending',
                    attempts INTEGER NOT NULL DEFAULT 0,
                    next_attempt_at BIGINT NOT NULL,
                    last_error TEXT,
                    finished_at BIGINT
                );
                CREATE INDEX purchase_webhook_events_pending ON purchase_webhook_events (state, customer_id, sequence);
                """),
        // Content blobs for replicas (docs/content.md, "Replicas"): each blob named by its SHA-256,
        // its bytes in rows of a MiB (`chunk_bytes`; the last may hold fewer), written in the
        // transaction of the publication whose content manifest first names it. Chunks are stored
        // out of line and uncompressed: content is mostly compressed already, and a replica
        // checks every byte against the digest anyway (docs/benchmarks.md, "Content store").
        Migration(
            version: 9,
            sql: """
                CREATE TABLE content_blobs (
                    sha256 TEXT PRIMARY KEY,
                    size BIGINT NOT NULL CHECK (size >= 0),
                    chunk_bytes INTEGER NOT NULL CHECK (chunk_bytes > 0)
                );
                CREATE TABLE content_chunks (
                    sha256 TEXT NOT NULL REFERENCES content_blobs (sha256) ON DELETE CASCADE,
                    number INTEGER NOT NULL CHECK (number >= 0),
                    bytes BYTEA NOT NULL,
                    PRIMARY KEY (sha256, number)
                );
                ALTER TABLE content_chunks ALTER COLUMN bytes SET STORAGE EXTERNAL;
                """),
        // SQLite's version 7, the same meaning.
        Migration(
            version: 10,
            sql: """
                CREATE TABLE purchase_refused_claims (
                    app TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    claimant_kind TEXT NOT NULL,
                    claimant_value TEXT NOT NULL,
                    count BIGINT NOT NULL,
                    first_at BIGINT NOT NULL,
                    last_at BIGINT NOT NULL,
                    PRIMARY KEY (app, original_transaction_id, claimant_kind, claimant_value)
                );
                """),
        // SQLite's version 8, the same meaning: the store in every purchase table and key, a
        // purchase's `purchase_key`, the ledger's key kinds, `purchase_states`; the App Store's rows
        // moved in place (a primary key can change here without a rebuild).
        Migration(
            version: 11,
            sql: """
                ALTER TABLE purchase_customer_keys ADD COLUMN store TEXT NOT NULL DEFAULT '';
                UPDATE purchase_customer_keys
                    SET store = CASE kind WHEN 'appAccountToken' THEN '' ELSE 'appStore' END,
                        kind = CASE kind WHEN 'appAccountToken' THEN 'appAccount' WHEN 'appTransactionId' THEN 'storeAccount'
                                         ELSE 'purchase' END;
                ALTER TABLE purchase_customer_keys ALTER COLUMN store DROP DEFAULT,
                    DROP CONSTRAINT purchase_customer_keys_pkey, ADD PRIMARY KEY (app, store, kind, value);

                ALTER TABLE purchase_bindings ADD COLUMN store TEXT NOT NULL DEFAULT 'appStore';
                ALTER TABLE purchase_bindings RENAME COLUMN original_transaction_id TO purchase_key;
                ALTER TABLE purchase_bindings ALTER COLUMN store DROP DEFAULT,
                    DROP CONSTRAINT purchase_bindings_pkey, ADD PRIMARY KEY (app, store, purchase_key);

                ALTER TABLE purchase_transactions ADD COLUMN store TEXT NOT NULL DEFAULT 'appStore';
                ALTER TABLE purchase_transactions RENAME COLUMN original_transaction_id TO purchase_key;
                ALTER TABLE purchase_transactions ALTER COLUMN store DROP DEFAULT,
                    DROP CONSTRAINT purchase_transactions_pkey, ADD PRIMARY KEY (app, store, transaction_id, payload_sha256);
                DROP INDEX purchase_transactions_by_original;
                CREATE INDEX purchase_transactions_by_purchase ON purchase_transactions (app, store, purchase_key);

                ALTER TABLE purchase_renewal_infos RENAME TO purchase_states;
                ALTER TABLE purchase_states ADD COLUMN store TEXT NOT NULL DEFAULT 'appStore';
                ALTER TABLE purchase_states RENAME COLUMN original_transaction_id TO purchase_key;
                ALTER TABLE purchase_states ALTER COLUMN store DROP DEFAULT,
                    DROP CONSTRAINT purchase_renewal_infos_pkey, ADD PRIMARY KEY (app, store, purchase_key, payload_sha256);

                ALTER TABLE purchase_notifications ADD COLUMN store TEXT NOT NULL DEFAULT 'appStore';
                ALTER TABLE purchase_notifications RENAME COLUMN notification_uuid TO notification_id;
                ALTER TABLE purchase_notifications ALTER COLUMN store DROP DEFAULT,
                    DROP CONSTRAINT purchase_notifications_app_notification_uuid_key, ADD UNIQUE (app, store, notification_id);

                ALTER TABLE purchase_transfers ADD COLUMN store TEXT NOT NULL DEFAULT 'appStore';
                ALTER TABLE purchase_transfers RENAME COLUMN original_transaction_id TO purchase_key;
                ALTER TABLE purchase_transfers ALTER COLUMN store DROP DEFAULT;

                ALTER TABLE purchase_refused_claims ADD COLUMN store TEXT NOT NULL DEFAULT 'appStore',
                    ADD COLUMN claimant_store TEXT NOT NULL DEFAULT '';
                ALTER TABLE purchase_refused_claims RENAME COLUMN original_transaction_id TO purchase_key;
                UPDATE purchase_refused_claims SET claimant_kind = 'appAccount' WHERE claimant_kind = 'appAccountToken';
                ALTER TABLE purchase_refused_claims ALTER COLUMN store DROP DEFAULT, ALTER COLUMN claimant_store DROP DEFAULT,
                    DROP CONSTRAINT purchase_refused_claims_pkey,
                    ADD PRIMARY KEY (app, store, purchase_key, claimant_store, claimant_kind, claimant_value);

                ALTER TABLE purchase_webhook_events ADD COLUMN store TEXT NOT NULL DEFAULT 'appStore';
                ALTER TABLE purchase_webhook_events RENAME COLUMN original_transaction_id TO purchase_key;
                ALTER TABLE purchase_webhook_events ALTER COLUMN store DROP DEFAULT;
                """),
        // SQLite's version 9: how far reading a store's history has got, and consumption answers.
        Migration(
            version: 12,
            sql: storeAPITables),
        // SQLite's version 10: the acknowledgement outbox.
        Migration(
            version: 13,
            sql: acknowledgementTable),
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
