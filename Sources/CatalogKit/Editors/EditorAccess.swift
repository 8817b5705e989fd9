import Crypto
import FeedSigning
import Time

/// What a token lets its holder do: viewers read, editors change, the developer's backend reads
/// customers and nothing else.
public enum EditorRole: String, CaseIterable, Sendable, Hashable, Codable {
    /// Reads, and changes the catalog, the published tree and verdicts.
    case editor
    /// Reads everything and previews publications; changes nothing.
    case viewer
    /// Reads customers and what they own (`GET /v1/apps/{app}/customers/{id}`), for the developer's
    /// backend; none of the editor API.
    case backend

    /// Whether the role may change anything.
    public var canEdit: Bool { self == .editor }

    /// Whether the role may use the editor API at all: a backend's token, which a server holds,
    /// reads customers only.
    public var canUseEditorAPI: Bool { self != .backend }
}

/// A named token as the store keeps it: only the SHA-256 of its secret, never the secret.
public struct EditorToken: Sendable, Hashable {
    /// The token's name: what audit entries show as the actor.
    public var name: String
    /// What the token lets its holder do.
    public var role: EditorRole
    /// Hex SHA-256 of the token text.
    public var secretHash: String
    /// When the token was created.
    public var createdAt: Timestamp
    /// When the token was revoked; nil while it is active.
    public var revokedAt: Timestamp?

    /// A token as the store keeps it; active unless `revokedAt` is given.
    public init(name: String, role: EditorRole, secretHash: String, createdAt: Timestamp, revokedAt: Timestamp? = nil) {
        self.name = name
        self.role = role
        self.secretHash = secretHash
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }
}

/// Making and checking token secrets.
public enum TokenSecret {
    /// A new secret: `cat_` and 256 random bits in base64url. Shown once, then only its hash is kept.
    public static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return "cat_" + Base64URL.encode(bytes)
    }

    /// The hex SHA-256 of `secret`'s UTF-8 bytes: what the store keeps and looks tokens up by.
    public static func hash(_ secret: String) -> String {
        ContentHash.sha256Hex(Array(secret.utf8))
    }

    /// Token names: what audit entries show as the actor.
    public static func nameProblem(_ name: String) -> String? {
        let allowed = name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "@")
        }
        guard (1...64).contains(name.utf8.count), allowed else {
            return "token name '\(name.prefix(64))' must be 1 to 64 letters, digits, '.', '-', '_' or '@'"
        }
        return nil
    }
}

/// One change to the catalog, its publication or its access, as the audit log keeps it.
public struct AuditEntry: Sendable, Hashable, Codable {
    /// What kind of change an entry records.
    public enum Action: String, Sendable, Hashable, Codable, CaseIterable {
        /// A product edit through the editor API, a publication, a rollback, a feedback verdict, a release of one.
        case edit, publish, rollback, verdict, release
        /// A token created.
        case tokenCreate = "token-create"
        /// A token revoked.
        case tokenRevoke = "token-revoke"
    }

    /// Assigned by the store, in order; 0 before it is stored.
    public var sequence: Int
    /// When the change was made.
    public var at: Timestamp
    /// A token's name, or the local user for the command line.
    public var actor: String
    /// What kind of change it was.
    public var action: Action
    /// The app it concerns; nil for a change to access, such as a token's.
    public var app: String?
    /// What changed, in one line.
    public var summary: String
    /// Content hashes of what changed, before and after, when there is content (a revision's
    /// manifest, a source file, a feedback file).
    public var beforeHash: String?
    /// The content hash after the change.
    public var afterHash: String?

    /// An entry to append; the store assigns its sequence number.
    public init(
        sequence: Int = 0, at: Timestamp, actor: String, action: Action, app: String? = nil, summary: String,
        beforeHash: String? = nil, afterHash: String? = nil
    ) {
        self.sequence = sequence
        self.at = at
        self.actor = actor
        self.action = action
        self.app = app
        self.summary = summary
        self.beforeHash = beforeHash
        self.afterHash = afterHash
    }
}

/// Tokens and the audit log, kept in the same store as reports so that replicas share them.
public protocol EditorStore: Sendable {
    /// Stores a new token; fails if an active token already has that name.
    func createToken(_ token: EditorToken) async throws
    /// Every token, revoked ones included, by name.
    func tokens() async throws -> [EditorToken]
    /// The active token with this secret hash, found through the store's unique index on it:
    /// one lookup per request, whatever the number of tokens. (An index compares hashes, not
    /// secrets: timing can tell an attacker no more than that a SHA-256 he cannot invert differs.)
    func activeToken(secretHash: String) async throws -> EditorToken?
    /// Revokes the active token `name`; false if there is none.
    func revokeToken(named name: String, at moment: Timestamp) async throws -> Bool
    /// Stores a new token and its audit entry in one transaction: neither is kept without the
    /// other. Fails like ``createToken(_:)`` when an active token already has the name.
    func createToken(_ token: EditorToken, audit: AuditEntry) async throws
    /// Revokes the active token `name` and appends its audit entry in one transaction; false, and
    /// no entry, if there is none.
    func revokeToken(named name: String, at moment: Timestamp, audit: AuditEntry) async throws -> Bool
    /// Appends to the audit log, durably.
    func appendAudit(_ entry: AuditEntry) async throws
    /// Newest first, at most `limit`, only `app`'s when given.
    func auditLog(app: String?, limit: Int) async throws -> [AuditEntry]
    /// The store's publications, when it keeps them for replicas (PostgreSQL); nil when
    /// publications live on the editor's disk only (SQLite).
    var publications: (any PublicationStore)? { get }
}

/// The error of ``EditorStore/createToken(_:)`` when an active token already has the name.
public struct TokenNameTaken: Error, CustomStringConvertible {
    /// The name asked for.
    public let name: String
    /// The error for `name`.
    public init(name: String) { self.name = name }
    public var description: String { "a token named '\(name)' already exists; revoke it first or choose another name" }
}

/// Everything `catalog` keeps in its store: reports, tokens and the audit log.
public typealias CatalogStore = ReportStore & EditorStore

extension AuditEntry {
    /// The entry for a revision `plan` published, or a rollback to `rolledBackTo`, with the
    /// manifest's hash before and after: the same words whether the CLI or the API made it.
    public static func publication(
        _ plan: PublicationPlan, rolledBackTo restored: Int? = nil, actor: String, at moment: Timestamp, manifestBefore: String?,
        tree: PublicTree
    ) -> AuditEntry {
        let summary =
            switch (restored, plan.isUnchanged) {
            case (let restored?, true): "rollback to revision \(restored): the content was already current"
            case (let restored?, false): "rolled back to revision \(restored) as revision \(plan.revision): \(plan.diff.outline)"
            case (nil, _): "published revision \(plan.revision): \(plan.diff.outline)"
            }
        return AuditEntry(
            at: moment, actor: actor, action: restored == nil ? .publish : .rollback, app: plan.app, summary: summary,
            beforeHash: manifestBefore, afterHash: tree.currentManifestHash(plan.app))
    }

    /// The entries for a feedback run's verdict changes, or a release: one per identifier.
    public static func feedback(_ changes: [VerdictChange], actor: String, at moment: Timestamp) -> [AuditEntry] {
        changes.map { change in
            AuditEntry(
                at: moment, actor: actor, action: change.kind == .released ? .release : .verdict, app: change.app, summary: "\(change)")
        }
    }
}
