import CatalogKit
import Ledger
import Logging

/// Everything a store `openStore` opens can do, each capability its own protocol (reports,
/// tokens and the audit log, purchases, the webhook outbox), composed here once so that a caller
/// takes the one it needs and never discovers one by a cast. What only a shared store does is
/// declared too: ``EditorStore/publications`` and ``postgres``.
public protocol Store: CatalogStore, PurchaseStore, WebhookOutbox, PollPositionStore, ConsumptionAnswerStore, StoreAcknowledgementStore {
    /// The PostgreSQL store, for what only it does (roles, the network secret replicas share,
    /// the content benchmark); nil for SQLite.
    var postgres: PostgresStore? { get }
}

extension SQLiteStore: Store {
    public var postgres: PostgresStore? { nil }
    public var publications: (any PublicationStore)? { nil }
}

extension PostgresStore: Store {
    public var postgres: PostgresStore? { self }
    public var publications: (any PublicationStore)? { self }
}

/// Opens the store `url` names, migrated and ready. Callers `close()` it when done.
///
/// `evenIfUnreachable`: a PostgreSQL server that cannot be reached yet is not an error (see
/// ``PostgresStore/open(_:logger:connectTimeout:evenIfUnreachable:)``).
public func openStore(_ url: StoreURL, logger: Logger, evenIfUnreachable: Bool = false) async throws -> any Store {
    switch url {
    case .sqlite(let path):
        return try await SQLiteStore.open(path: path)
    case .postgres(let address):
        return try await PostgresStore.open(address, logger: logger, evenIfUnreachable: evenIfUnreachable)
    }
}
