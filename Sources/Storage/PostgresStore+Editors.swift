import CatalogKit
import PostgresNIO
import Time

/// Tokens and the audit log in the same PostgreSQL database as the reports, with the semantics of
/// `SQLiteStore`'s. Writes commit like reports do: `transaction` returns once durable.
extension PostgresStore: EditorStore {
    public func createToken(_ token: EditorToken) async throws {
        try await insertToken(token, audit: nil)
    }

    public func createToken(_ token: EditorToken, audit: AuditEntry) async throws {
        try await insertToken(token, audit: audit)
    }

    /// The token and, when given, its audit entry, in one transaction.
    private func insertToken(_ token: EditorToken, audit: AuditEntry?) async throws {
        // The partial unique index holds one active token per name, also against another replica
        // creating the same name at the same moment; its conflict is the answer, not an error.
        let created = try await transaction("cannot create a token") { connection, logger in
            let rows = try await connection.query(
                """
                INSERT INTO editor_tokens (name, role, secret_hash, created_at)
                VALUES (\(token.name), \(token.role.rawValue), \(token.secretHash), \(token.createdAt.secondsSince1970))
                ON CONFLICT (name) WHERE revoked_at IS NULL DO NOTHING
                RETURNING 1
                """, logger: logger)
            let inserted = try await rows.collect().count == 1
            if inserted, let audit { try await Self.insertAudit(audit, connection, logger) }
            return inserted
        }
        guard created else { throw TokenNameTaken(name: token.name) }
    }

    public func tokens() async throws -> [EditorToken] {
        try await withStoreErrors("cannot list tokens") {
            try await client.withConnection { connection in
                // COLLATE "C": byte order, as SQLite sorts, whatever the database's locale.
                let rows = try await connection.query(
                    """
                    SELECT name, role, secret_hash, created_at, revoked_at FROM editor_tokens
                    ORDER BY name COLLATE "C", created_at
                    """, logger: logger)
                var tokens: [EditorToken] = []
                for try await (name, role, secretHash, createdAt, revokedAt) in rows.decode((String, String, String, Int64, Int64?).self) {
                    tokens.append(
                        EditorToken(
                            name: name, role: EditorRole(rawValue: role) ?? .viewer, secretHash: secretHash,
                            createdAt: Timestamp(secondsSince1970: createdAt), revokedAt: revokedAt.map(Timestamp.init(secondsSince1970:))))
                }
                return tokens
            }
        }
    }

    public func activeToken(secretHash: String) async throws -> EditorToken? {
        try await withStoreErrors("cannot look a token up") {
            try await client.withConnection { connection in
                let rows = try await connection.query(
                    """
                    SELECT name, role, secret_hash, created_at FROM editor_tokens
                    WHERE secret_hash = \(secretHash) AND revoked_at IS NULL
                    """, logger: logger)
                for try await (name, role, hash, createdAt) in rows.decode((String, String, String, Int64).self) {
                    return EditorToken(
                        name: name, role: EditorRole(rawValue: role) ?? .viewer, secretHash: hash,
                        createdAt: Timestamp(secondsSince1970: createdAt))
                }
                return nil
            }
        }
    }

    public func revokeToken(named name: String, at moment: Timestamp) async throws -> Bool {
        try await revokeToken(named: name, at: moment, audit: nil)
    }

    public func revokeToken(named name: String, at moment: Timestamp, audit: AuditEntry) async throws -> Bool {
        try await revokeToken(named: name, at: moment, audit: .some(audit))
    }

    /// The revocation and, when there was a token to revoke and an entry is given, its audit
    /// entry, in one transaction.
    private func revokeToken(named name: String, at moment: Timestamp, audit: AuditEntry?) async throws -> Bool {
        try await transaction("cannot revoke a token") { connection, logger in
            let rows = try await connection.query(
                "UPDATE editor_tokens SET revoked_at = \(moment.secondsSince1970) WHERE name = \(name) AND revoked_at IS NULL RETURNING 1",
                logger: logger)
            let revoked = try await !rows.collect().isEmpty
            if revoked, let audit { try await Self.insertAudit(audit, connection, logger) }
            return revoked
        }
    }

    public func appendAudit(_ entry: AuditEntry) async throws {
        try await transaction("cannot append to the audit log") { connection, logger in
            try await Self.insertAudit(entry, connection, logger)
        }
    }

    /// The audit entry's row, in the caller's transaction.
    static func insertAudit(_ entry: AuditEntry, _ connection: PostgresConnection, _ logger: Logger) async throws {
        try await connection.execute(
            """
            INSERT INTO audit_log (at, actor, action, app, summary, before_hash, after_hash)
            VALUES (\(entry.at.secondsSince1970), \(entry.actor), \(entry.action.rawValue), \(entry.app), \(entry.summary),
                    \(entry.beforeHash), \(entry.afterHash))
            """, logger: logger)
    }

    public func auditLog(app: String?, limit: Int) async throws -> [AuditEntry] {
        try await withStoreErrors("cannot read the audit log") {
            try await client.withConnection { connection in
                let rows = try await connection.query(
                    """
                    SELECT sequence, at, actor, action, app, summary, before_hash, after_hash FROM audit_log
                    WHERE \(app)::text IS NULL OR app = \(app) ORDER BY sequence DESC LIMIT \(limit)
                    """, logger: logger)
                var entries: [AuditEntry] = []
                for try await row in rows.decode((Int, Int64, String, String, String?, String, String?, String?).self) {
                    entries.append(
                        AuditEntry(
                            sequence: row.0, at: Timestamp(secondsSince1970: row.1), actor: row.2,
                            action: AuditEntry.Action(rawValue: row.3) ?? .edit, app: row.4, summary: row.5, beforeHash: row.6,
                            afterHash: row.7))
                }
                return entries
            }
        }
    }
}
