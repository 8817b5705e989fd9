import CatalogKit
import Logging
import PostgresNIO

/// The two PostgreSQL roles of a shared store (docs/storage.md, "Roles"): the editor node's,
/// which owns the tables, migrates them and publishes, and the serving replicas', which read
/// publications and write reports and nothing else. A replica faces the internet; its role
/// cannot publish a file every replica would serve, create an editor token, or touch the audit log.
public enum StoreRoles {
    /// The replica role `catalog store roles` names unless told otherwise.
    public static let defaultReplicaRole = "catalog_replica"
    /// The editor role `catalog store roles` names unless told otherwise.
    public static let defaultEditorRole = "catalog_editor"

    /// Every right a serving replica uses, table by table: it checks the schema (read), stores
    /// reports (`RETURNING` reads them) and prunes them (retention runs on every node), reads
    /// publications, and reads the report-network secret, or writes it once if it starts first.
    static let replicaTables: [(table: String, privileges: [String])] = [
        ("schema_migrations", ["SELECT"]),
        ("reports", ["SELECT", "INSERT", "DELETE"]),
        ("published_files", ["SELECT"]),
        ("content_blobs", ["SELECT"]),
        ("content_chunks", ["SELECT"]),
        ("network_secret", ["SELECT", "INSERT"]),
        // Purchases and notifications are recorded on any node (docs/purchases.md, "Replicas"): the
        // binding rules read what is bound, move a purchase by updating its binding, move a claimed
        // customer's Apple keys to its app account, and count refused claims; the rest is only ever
        // added. Webhook events are only added: delivery is the editor node's.
        ("purchase_customers", ["SELECT", "INSERT"]),
        ("purchase_customer_keys", ["SELECT", "INSERT", "UPDATE"]),
        ("purchase_bindings", ["SELECT", "INSERT", "UPDATE"]),
        ("purchase_transactions", ["SELECT", "INSERT"]),
        ("purchase_states", ["SELECT", "INSERT"]),
        ("purchase_notifications", ["SELECT", "INSERT"]),
        ("purchase_transfers", ["SELECT", "INSERT"]),
        ("purchase_refused_claims", ["SELECT", "INSERT", "UPDATE"]),
        // `ON CONFLICT (event_id)` reads the column it names, and nothing more is read.
        ("purchase_webhook_events", ["INSERT", "SELECT (event_id)"]),
        // A replica queues what a store must be told of a purchase it saw, or asked of it after a
        // notification (an update unless one is pending); sending is the editor node's.
        ("purchase_acknowledgements", ["INSERT", "UPDATE", "SELECT (app, store, purchase_key, state)"]),
    ]
    /// `reports.id` and the purchase tables' ids are `BIGSERIAL`s: an insert takes the sequence's next value.
    static let replicaSequences: [(sequence: String, privileges: [String])] = [
        ("reports_id_seq", ["USAGE"]), ("purchase_customers_id_seq", ["USAGE"]), ("purchase_notifications_sequence_seq", ["USAGE"]),
        ("purchase_transfers_sequence_seq", ["USAGE"]), ("purchase_webhook_events_sequence_seq", ["USAGE"]),
    ]
    /// The tables of the schema (`Schema.postgres`) and the sequence a replica has no use for.
    static let tables = [
        "schema_migrations", "reports", "editor_tokens", "audit_log", "published_files", "network_secret", "purchase_customers",
        "purchase_customer_keys", "purchase_bindings", "purchase_transactions", "purchase_states", "purchase_notifications",
        "purchase_transfers", "purchase_webhook_events", "content_blobs", "content_chunks", "purchase_refused_claims",
        // Reconciliation is the editor node's alone: a replica has no right on its positions.
        "purchase_poll_positions", "purchase_consumption_answers", "purchase_acknowledgements",
    ]
    static let sequences = [
        "reports_id_seq", "publication_changes", "purchase_customers_id_seq", "purchase_notifications_sequence_seq",
        "purchase_transfers_sequence_seq", "purchase_webhook_events_sequence_seq",
    ]
    static let tablePrivileges = ["SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER"]
    static let sequencePrivileges = ["USAGE", "SELECT", "UPDATE"]

    /// The SQL that creates both roles if they do not exist and gives each exactly its rights on
    /// the current schema. Every statement can be run again: run it before the editor node's
    /// first start (the roles, the schema's rights) and again once the editor node has created
    /// or migrated the tables (each table's rights; a table not created yet is skipped).
    public static func sql(replicaRole: String, editorRole: String) throws(StoreRoleError) -> String {
        for name in [replicaRole, editorRole] { try check(name) }
        guard replicaRole != editorRole else { throw StoreRoleError("the replica role and the editor role must differ") }
        let (replica, editor) = ("\"\(replicaRole)\"", "\"\(editorRole)\"")
        var grants: [String] = []
        for table in tables {
            var block = "    IF to_regclass('\(table)') IS NOT NULL THEN\n        REVOKE ALL ON \(table) FROM \(replica);\n"
            if let allowed = replicaTables.first(where: { $0.table == table }) {
                block += "        GRANT \(allowed.privileges.joined(separator: ", ")) ON \(table) TO \(replica);\n"
            }
            grants.append(block + "    END IF;")
        }
        for sequence in sequences {
            var block = "    IF to_regclass('\(sequence)') IS NOT NULL THEN\n        REVOKE ALL ON SEQUENCE \(sequence) FROM \(replica);\n"
            if let allowed = replicaSequences.first(where: { $0.sequence == sequence }) {
                block += "        GRANT \(allowed.privileges.joined(separator: ", ")) ON SEQUENCE \(sequence) TO \(replica);\n"
            }
            grants.append(block + "    END IF;")
        }
        return """
            -- The roles of a catalog PostgreSQL store, for schema version \(Schema.postgres.last?.version ?? 0) (docs/storage.md, "Roles").
            -- Run as a superuser or the database's owner, connected to the store's database
            -- (psql -d DATABASE -f roles.sql): once before the editor node's first start, and again
            -- after it has created or migrated the tables (its first start, and every upgrade).
            -- Every statement can be run again.
            --
            -- \(editor): the editor node (catalog build, catalog serve --feeds public, every other
            --   command). It owns the tables: it creates and migrates them and publishes.
            -- \(replica): serving replicas (catalog serve --feeds store). They read publications,
            --   store and prune reports, read the report-network secret, and record purchases and
            --   notifications; nothing else: no publishing, no editor tokens, no audit log.
            -- Give each a password afterwards (in psql: \\password \(editorRole)), or another way in pg_hba.conf.

            DO $roles$ BEGIN
                IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '\(editorRole)') THEN CREATE ROLE \(editor) LOGIN; END IF;
                IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '\(replicaRole)') THEN CREATE ROLE \(replica) LOGIN; END IF;
                EXECUTE format('GRANT CONNECT ON DATABASE %I TO \(editor), \(replica)', current_database());
                -- Only the editor role creates objects in the store's schema.
                EXECUTE format('REVOKE CREATE ON SCHEMA %I FROM PUBLIC', current_schema());
                EXECUTE format('GRANT USAGE, CREATE ON SCHEMA %I TO \(editor)', current_schema());
                EXECUTE format('REVOKE CREATE ON SCHEMA %I FROM \(replica)', current_schema());
                EXECUTE format('GRANT USAGE ON SCHEMA %I TO \(replica)', current_schema());
            END $roles$;

            -- The replica's rights, table by table; tables the editor node has not created yet are skipped.
            -- Tables created by another role before: hand them over first (ALTER TABLE … OWNER TO \(editor)).
            DO $grants$ BEGIN
            \(grants.joined(separator: "\n"))
            END $grants$;

            """
    }

    /// A role name this tool prints into SQL: letters, digits and `_`, not starting with a
    /// digit, at most 63 bytes (PostgreSQL's limit), so that it needs no escaping anywhere.
    static func check(_ name: String) throws(StoreRoleError) {
        let valid =
            !name.isEmpty && name.utf8.count <= 63 && name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") })
            && !(name.first?.isNumber ?? true)
        guard valid else {
            throw StoreRoleError("role name '\(name)' must be letters, digits and _, not start with a digit, and be at most 63 characters")
        }
    }
}

/// A role name `StoreRoles` cannot print.
public struct StoreRoleError: Error, CustomStringConvertible {
    /// What is wrong with the names, for the operator.
    public let description: String
    init(_ description: String) { self.description = description }
}

extension PostgresStore {
    /// The rights this store's role holds beyond a serving replica's (``StoreRoles``), each as
    /// "INSERT, UPDATE on published_files": empty for a role made by `catalog store roles`. A
    /// superuser, or the tables' owner, holds every right on them.
    public func rightsBeyondAReplica() async throws -> [String] {
        let (tables, tablePrivileges) = (StoreRoles.tables, StoreRoles.tablePrivileges)
        let (sequences, sequencePrivileges) = (StoreRoles.sequences, StoreRoles.sequencePrivileges)
        return try await withStoreErrors("cannot read the rights of its role") {
            try await client.withConnection { connection in
                var held: [String: [String]] = [:]
                var order: [String] = []
                func hold(_ object: String, _ privilege: String) {
                    if held[object] == nil { order.append(object) }
                    held[object, default: []].append(privilege)
                }
                let tableRows = try await connection.query(
                    """
                    SELECT t.name, p.privilege FROM unnest(\(tables)::text[]) WITH ORDINALITY AS t(name, n)
                    CROSS JOIN unnest(\(tablePrivileges)::text[]) WITH ORDINALITY AS p(privilege, m)
                    WHERE to_regclass(t.name) IS NOT NULL AND has_table_privilege(t.name, p.privilege)
                    ORDER BY t.n, p.m
                    """, logger: logger)
                for try await (table, privilege) in tableRows.decode((String, String).self)
                where !(StoreRoles.replicaTables.first { $0.table == table }?.privileges.contains(privilege) ?? false) {
                    hold(table, privilege)
                }
                let sequenceRows = try await connection.query(
                    """
                    SELECT s.name, p.privilege FROM unnest(\(sequences)::text[]) WITH ORDINALITY AS s(name, n)
                    CROSS JOIN unnest(\(sequencePrivileges)::text[]) WITH ORDINALITY AS p(privilege, m)
                    WHERE to_regclass(s.name) IS NOT NULL AND has_sequence_privilege(s.name, p.privilege)
                    ORDER BY s.n, p.m
                    """, logger: logger)
                for try await (sequence, privilege) in sequenceRows.decode((String, String).self)
                where !(StoreRoles.replicaSequences.first { $0.sequence == sequence }?.privileges.contains(privilege) ?? false) {
                    hold("sequence \(sequence)", privilege)
                }
                var excess = order.map { "\(held[$0, default: []].joined(separator: ", ")) on \($0)" }
                let roleRows = try await connection.query(
                    """
                    SELECT r.rolsuper, has_schema_privilege(current_schema(), 'CREATE'), current_schema()
                    FROM pg_roles r WHERE r.rolname = current_user
                    """, logger: logger)
                for try await (superuser, create, schema) in roleRows.decode((Bool, Bool, String).self) {
                    if create { excess.append("CREATE on schema \(schema)") }
                    if superuser { excess.insert("superuser", at: 0) }
                }
                return excess
            }
        }
    }

    /// Warns, naming them, of the rights this store's role holds beyond a serving replica's
    /// (``rightsBeyondAReplica()``); for `catalog serve --feeds store` at start. Says nothing
    /// when the store cannot be asked: the replica serves its cache meanwhile.
    public func warnOfRightsBeyondAReplica() async {
        guard connectedAtOpen, let excess = try? await rightsBeyondAReplica(), !excess.isEmpty else { return }
        logger.warning(
            "store.role.excess-rights",
            metadata: [
                "store.url": "\(location)", "rights": "\(excess.joined(separator: "; "))",
                "hint":
                    "a serving replica needs only to read publications and write reports; connect it as the replica role that 'catalog store roles' prints",
            ])
    }
}
