import CatalogKit
import PropertyList

/// Tokens and the audit log in PostgreSQL. Not built yet.
extension PostgresReportStore: EditorStore {
    private var notYet: StoreSchemaError { StoreSchemaError(description: "tokens and the audit log are not in the PostgreSQL store yet") }
    public func createToken(_ token: EditorToken) async throws { throw notYet }
    public func tokens() async throws -> [EditorToken] { throw notYet }
    public func revokeToken(named name: String, at moment: Timestamp) async throws -> Bool { throw notYet }
    public func appendAudit(_ entry: AuditEntry) async throws { throw notYet }
    public func auditLog(app: String?, limit: Int) async throws -> [AuditEntry] { throw notYet }
}
