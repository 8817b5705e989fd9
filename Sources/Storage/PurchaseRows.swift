import Foundation
import Ledger
import PostgresNIO

/// A row of a purchase table, read by column name the same way in both stores, so that each stored
/// type decodes itself from one in one place (below) whatever the engine.
protocol StoredRow {
    func text(_ column: String) -> String?
    func integer(_ column: String) -> Int64?
}

extension StoredRow {
    func seconds(_ column: String) -> Date { Date(timeIntervalSince1970: TimeInterval(integer(column) ?? 0)) }
    func milliseconds(_ column: String) -> Date? { integer(column).map { Date(timeIntervalSince1970: TimeInterval($0) / 1000) } }
    var marketplace: Marketplace { Marketplace(rawValue: text("store") ?? "") }
}

/// The current row of a SQLite statement.
struct SQLiteRow: StoredRow {
    let statement: SQLiteStatement

    func text(_ column: String) -> String? { statement.column(column).flatMap { statement.text($0) } }
    func integer(_ column: String) -> Int64? { statement.column(column).flatMap { statement.optionalInteger($0) } }
}

/// A PostgreSQL row, by name.
struct PostgresStoredRow: StoredRow {
    let row: PostgresRandomAccessRow

    init(_ row: PostgresRow) { self.row = row.makeRandomAccess() }

    func text(_ column: String) -> String? { try? row[column].decode(String?.self) }
    func integer(_ column: String) -> Int64? { try? row[column].decode(Int64?.self) }
}

// Each stored type, decoded by name once.

extension CustomerKey {
    /// From `store`, `kind` and `value`.
    init?(row: some StoredRow) {
        guard let kind = row.text("kind"), let value = row.text("value") else { return nil }
        let store = row.text("store") ?? ""
        self.init(kind: Kind(rawValue: kind), value: value, marketplace: store.isEmpty ? nil : Marketplace(rawValue: store))
    }

    /// The row's `store` column: an app account's is empty, shared by every store.
    var storeColumn: String { marketplace?.rawValue ?? "" }
}

extension PurchaseReference {
    /// From `store` and `purchase_key`.
    init(row: some StoredRow) { self.init(row.marketplace, row.text("purchase_key") ?? "") }
}

extension TransferEvent {
    /// From `store`, `purchase_key`, `from_customer`, `to_customer`, `outcome` and `at`.
    init(row: some StoredRow) {
        self.init(
            purchase: PurchaseReference(row: row), fromCustomer: row.integer("from_customer") ?? 0,
            toCustomer: row.integer("to_customer") ?? 0, outcome: Outcome(rawValue: row.text("outcome") ?? "") ?? .refused,
            at: row.seconds("at"))
    }
}

extension RefusedClaim {
    /// From `store`, `purchase_key`, `claimant_store`, `claimant_kind`, `claimant_value`, `count`,
    /// `first_at` and `last_at`; the claimants counted together have an empty kind.
    init(row: some StoredRow) {
        let kind = row.text("claimant_kind") ?? ""
        let store = row.text("claimant_store") ?? ""
        self.init(
            purchase: PurchaseReference(row: row),
            claimant: kind.isEmpty
                ? nil
                : CustomerKey(
                    kind: .init(rawValue: kind), value: row.text("claimant_value") ?? "",
                    marketplace: store.isEmpty ? nil : Marketplace(rawValue: store)),
            count: Int(row.integer("count") ?? 0), firstAt: row.seconds("first_at"), lastAt: row.seconds("last_at"))
    }
}

extension RawNotification {
    /// The columns of `purchase_notifications`.
    static let columns = "sequence, app, store, notification_id, notification_type, subtype, environment, signed_at_ms, received_at, body"

    /// From ``columns``.
    init(row: some StoredRow) {
        self.init(
            sequence: row.integer("sequence") ?? 0, app: row.text("app") ?? "", marketplace: row.marketplace,
            notificationId: row.text("notification_id") ?? "", notificationType: row.text("notification_type"),
            subtype: row.text("subtype"), environment: row.text("environment"), signedDate: row.milliseconds("signed_at_ms"),
            receivedAt: row.seconds("received_at"), body: row.text("body") ?? "")
    }
}

extension WebhookEvent {
    /// The columns of `purchase_webhook_events` an event is read from.
    static let columns = """
        sequence, event_id, app, type, customer_id, store, purchase_key, transaction_id, product_id, environment, occurred_at_ms,
        created_at, attempts
        """

    /// From ``columns``; nil for a type this version does not know.
    init?(row: some StoredRow) {
        guard let type = WebhookEventType(rawValue: row.text("type") ?? "") else { return nil }
        self.init(
            sequence: row.integer("sequence") ?? 0, id: row.text("event_id") ?? "", app: row.text("app") ?? "", type: type,
            customerId: row.integer("customer_id"), marketplace: row.marketplace, purchaseKey: row.text("purchase_key") ?? "",
            transactionId: row.text("transaction_id"), productId: row.text("product_id"), environment: row.text("environment"),
            occurredAt: row.milliseconds("occurred_at_ms"), createdAt: row.seconds("created_at"),
            attempts: Int(row.integer("attempts") ?? 0))
    }
}

extension LedgerTransaction {
    /// From `store` and `payload`: the payload's fields by their answer names; nil when it does not decode.
    init?(row: some StoredRow) {
        guard var transaction = LedgerJSON.decode(LedgerTransaction.self, row.text("payload") ?? "") else { return nil }
        transaction.marketplace = row.marketplace
        self = transaction
    }
}

extension SubscriptionState {
    /// From `store` and `payload`, as ``LedgerTransaction``.
    init?(row: some StoredRow) {
        guard var state = LedgerJSON.decode(SubscriptionState.self, row.text("payload") ?? "") else { return nil }
        state.marketplace = row.marketplace
        self = state
    }
}
