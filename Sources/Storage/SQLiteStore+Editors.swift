import CatalogKit
import Time

/// Tokens and the audit log in the same SQLite file as the reports.
extension SQLiteStore: EditorStore {
    public func createToken(_ token: EditorToken) async throws {
        try await insertToken(token, audit: nil)
    }

    public func createToken(_ token: EditorToken, audit: AuditEntry) async throws {
        try await insertToken(token, audit: audit)
    }

    /// The token and, when given, its audit entry, in one transaction.
    private func insertToken(_ token: EditorToken, audit: AuditEntry?) async throws {
        try await writer.run { writer in
            try writer.connection.transaction {
                let taken = try writer.connection.rows(
                    "SELECT 1 FROM editor_tokens WHERE name = ?1 AND revoked_at IS NULL", [.text(token.name)]
                ) { _ in true }
                guard taken.isEmpty else { throw TokenNameTaken(name: token.name) }
                try writer.connection.run(
                    "INSERT INTO editor_tokens (name, role, secret_hash, created_at) VALUES (?1, ?2, ?3, ?4)",
                    [.text(token.name), .text(token.role.rawValue), .text(token.secretHash), .integer(token.createdAt.secondsSince1970)])
                if let audit { try Self.insertAudit(audit, writer.connection) }
            }
        }
    }

    public func tokens() async throws -> [EditorToken] {
        try await lookupReader.run { connection in
            try connection.rows("SELECT name, role, secret_hash, created_at, revoked_at FROM editor_tokens ORDER BY name, created_at") {
                row in
                EditorToken(
                    name: row.text(0) ?? "", role: EditorRole(rawValue: row.text(1) ?? "") ?? .viewer, secretHash: row.text(2) ?? "",
                    createdAt: Timestamp(secondsSince1970: row.integer(3)),
                    revokedAt: row.optionalInteger(4).map(Timestamp.init(secondsSince1970:)))
            }
        }
    }

    public func activeToken(secretHash: String) async throws -> EditorToken? {
        try await lookupReader.run { connection in
            try connection.rows(
                "SELECT name, role, secret_hash, created_at FROM editor_tokens WHERE secret_hash = ?1 AND revoked_at IS NULL",
                [.text(secretHash)]
            ) { row in
                EditorToken(
                    name: row.text(0) ?? "", role: EditorRole(rawValue: row.text(1) ?? "") ?? .viewer, secretHash: row.text(2) ?? "",
                    createdAt: Timestamp(secondsSince1970: row.integer(3)))
            }.first
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
        try await writer.run { writer in
            try writer.connection.transaction {
                let revoked =
                    try writer.connection.run(
                        "UPDATE editor_tokens SET revoked_at = ?2 WHERE name = ?1 AND revoked_at IS NULL",
                        [.text(name), .integer(moment.secondsSince1970)]) > 0
                if revoked, let audit { try Self.insertAudit(audit, writer.connection) }
                return revoked
            }
        }
    }

    public func appendAudit(_ entry: AuditEntry) async throws {
        try await writer.run { writer in try Self.insertAudit(entry, writer.connection) }
    }

    /// The audit entry's row, in the caller's transaction if any.
    static func insertAudit(_ entry: AuditEntry, _ connection: SQLiteConnection) throws {
        try connection.run(
            "INSERT INTO audit_log (at, actor, action, app, summary, before_hash, after_hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            [
                .integer(entry.at.secondsSince1970), .text(entry.actor), .text(entry.action.rawValue), .init(entry.app),
                .text(entry.summary), .init(entry.beforeHash), .init(entry.afterHash),
            ])
    }

    public func auditLog(app: String?, limit: Int) async throws -> [AuditEntry] {
        try await lookupReader.run { connection in
            try connection.rows(
                """
                SELECT sequence, at, actor, action, app, summary, before_hash, after_hash FROM audit_log
                WHERE ?1 IS NULL OR app = ?1 ORDER BY sequence DESC LIMIT ?2
                """,
                [.init(app), .integer(Int64(limit))]
            ) { row in
                AuditEntry(
                    sequence: Int(row.integer(0)), at: Timestamp(secondsSince1970: row.integer(1)), actor: row.text(2) ?? "",
                    action: AuditEntry.Action(rawValue: row.text(3) ?? "") ?? .edit, app: row.text(4), summary: row.text(5) ?? "",
                    beforeHash: row.text(6), afterHash: row.text(7))
            }
        }
    }
}
