import Foundation
import Ledger

/// The webhook outbox in the SQLite file (docs/purchases.md, "Webhooks"): events are written by
/// ``SQLiteStore/Writer/enqueueWebhooks(for:outcome:)`` inside the transaction that records
/// the evidence, and settled here by the delivery service.
extension SQLiteStore: WebhookOutbox {
    public func dueWebhookEvents(at now: Date, limit: Int) async throws -> [WebhookEvent] {
        try await reader.run { connection in
            try connection.rows(
                """
                SELECT \(WebhookEvent.columns) FROM purchase_webhook_events e
                WHERE state = 'pending' AND next_attempt_at <= ?1
                  AND NOT EXISTS (SELECT 1 FROM purchase_webhook_events o
                                  WHERE o.state = 'pending' AND o.customer_id = e.customer_id AND o.sequence < e.sequence)
                ORDER BY sequence LIMIT ?2
                """, [.integer(Int64(now.timeIntervalSince1970)), .integer(Int64(max(limit, 0)))], Self.webhookEvent
            ).compactMap { $0 }
        }
    }

    public func pendingWebhookEvents(limit: Int) async throws -> [WebhookEvent] {
        try await reader.run { connection in
            try connection.rows(
                "SELECT \(WebhookEvent.columns) FROM purchase_webhook_events WHERE state = 'pending' ORDER BY sequence LIMIT ?1",
                [.integer(Int64(max(limit, 0)))], Self.webhookEvent
            ).compactMap { $0 }
        }
    }

    public func markWebhookDelivered(_ sequence: Int64, attempts: Int, at now: Date) async throws {
        _ = try await writer.run { writer in
            try writer.run(
                "UPDATE purchase_webhook_events SET state = 'delivered', attempts = ?2, finished_at = ?3, last_error = NULL WHERE sequence = ?1",
                [.integer(sequence), .integer(Int64(attempts)), .integer(Int64(now.timeIntervalSince1970))])
        }
    }

    public func markWebhookFailed(_ sequence: Int64, attempts: Int, retryAt: Date?, error: String, at now: Date) async throws {
        _ = try await writer.run { writer in
            try writer.run(
                """
                UPDATE purchase_webhook_events
                SET state = CASE WHEN ?3 IS NULL THEN 'dead' ELSE 'pending' END, attempts = ?2,
                    next_attempt_at = coalesce(?3, next_attempt_at), last_error = ?4,
                    finished_at = CASE WHEN ?3 IS NULL THEN ?5 ELSE NULL END
                WHERE sequence = ?1
                """,
                [
                    .integer(sequence), .integer(Int64(attempts)),
                    retryAt.map { .integer(Int64($0.timeIntervalSince1970.rounded(.up))) } ?? .null,
                    .text(error), .integer(Int64(now.timeIntervalSince1970)),
                ])
        }
    }

    public func webhookState(id: String) async throws -> (state: String, attempts: Int)? {
        try await reader.run { connection in
            try connection.rows("SELECT state, attempts FROM purchase_webhook_events WHERE event_id = ?1", [.text(id)]) {
                (state: $0.text(0) ?? "", attempts: Int($0.integer(1)))
            }.first
        }
    }

    static func webhookEvent(_ row: SQLiteStatement) -> WebhookEvent? { WebhookEvent(row: SQLiteRow(statement: row)) }
}

extension SQLiteStore.Writer {
    /// Writes an event into the outbox, inside the caller's transaction; an event already there (the
    /// same change told twice) is not written again.
    func enqueue(_ event: WebhookEvent) throws {
        let created = Int64(event.createdAt.timeIntervalSince1970)
        try run(
            """
            INSERT INTO purchase_webhook_events (event_id, app, type, customer_id, store, purchase_key, transaction_id, product_id,
                                                 environment, occurred_at_ms, created_at, next_attempt_at)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11) ON CONFLICT (event_id) DO NOTHING
            """,
            [
                .text(event.id), .text(event.app), .text(event.type.rawValue), event.customerId.map { .integer($0) } ?? .null,
                .text(event.marketplace.rawValue), .text(event.purchaseKey), .init(event.transactionId), .init(event.productId),
                .init(event.environment),
                event.occurredAt.map { .integer(Int64(($0.timeIntervalSince1970 * 1000).rounded())) } ?? .null, .integer(created),
            ])
    }
}
