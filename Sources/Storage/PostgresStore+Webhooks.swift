import Foundation
import Ledger
import PostgresNIO

/// The webhook outbox in PostgreSQL, with the semantics of `SQLiteStore`'s. Replicas that
/// deliver at the same moment may both send an event (delivery is at least once; the event id
/// lets the receiver deduplicate).
extension PostgresStore: WebhookOutbox {
    public func dueWebhookEvents(at now: Date, limit: Int) async throws -> [WebhookEvent] {
        let now = Int64(now.timeIntervalSince1970)
        let limit = Int64(max(limit, 0))
        return try await webhookEvents(
            PostgresQuery(
                unsafeSQL: """
                    SELECT \(WebhookEvent.columns) FROM purchase_webhook_events e
                    WHERE state = 'pending' AND next_attempt_at <= $1
                      AND NOT EXISTS (SELECT 1 FROM purchase_webhook_events o
                                      WHERE o.state = 'pending' AND o.customer_id = e.customer_id AND o.sequence < e.sequence)
                    ORDER BY sequence LIMIT $2
                    """,
                binds: {
                    var binds = PostgresBindings()
                    binds.append(now)
                    binds.append(limit)
                    return binds
                }()))
    }

    public func pendingWebhookEvents(limit: Int) async throws -> [WebhookEvent] {
        let limit = Int64(max(limit, 0))
        return try await webhookEvents(
            PostgresQuery(
                unsafeSQL: "SELECT \(WebhookEvent.columns) FROM purchase_webhook_events WHERE state = 'pending' ORDER BY sequence LIMIT $1",
                binds: {
                    var binds = PostgresBindings()
                    binds.append(limit)
                    return binds
                }()))
    }

    public func markWebhookDelivered(_ sequence: Int64, attempts: Int, at now: Date) async throws {
        let now = Int64(now.timeIntervalSince1970)
        let attempts = Int32(clamping: attempts)
        try await withStoreErrors("cannot settle a webhook event") {
            try await client.withConnection { connection in
                try await connection.execute(
                    """
                    UPDATE purchase_webhook_events SET state = 'delivered', attempts = \(attempts), finished_at = \(now), last_error = NULL
                    WHERE sequence = \(sequence)
                    """, logger: logger)
            }
        }
    }

    public func markWebhookFailed(_ sequence: Int64, attempts: Int, retryAt: Date?, error: String, at now: Date) async throws {
        let now = Int64(now.timeIntervalSince1970)
        let attempts = Int32(clamping: attempts)
        let retry = retryAt.map { Int64($0.timeIntervalSince1970.rounded(.up)) }
        let state = retry == nil ? "dead" : "pending"
        let finished: Int64? = retry == nil ? now : nil
        try await withStoreErrors("cannot settle a webhook event") {
            try await client.withConnection { connection in
                try await connection.execute(
                    """
                    UPDATE purchase_webhook_events
                    SET state = \(state), attempts = \(attempts), next_attempt_at = coalesce(\(retry), next_attempt_at),
                        last_error = \(error), finished_at = \(finished)
                    WHERE sequence = \(sequence)
                    """, logger: logger)
            }
        }
    }

    public func webhookState(id: String) async throws -> (state: String, attempts: Int)? {
        try await withStoreErrors("cannot read a webhook event") {
            try await client.withConnection { connection in
                for try await (state, attempts) in try await connection.query(
                    "SELECT state, attempts FROM purchase_webhook_events WHERE event_id = \(id)", logger: logger
                ).decode((String, Int32).self) {
                    return (state: state, attempts: Int(attempts))
                }
                return nil
            }
        }
    }

    private func webhookEvents(_ query: PostgresQuery) async throws -> [WebhookEvent] {
        try await withStoreErrors("cannot read webhook events") {
            try await client.withConnection { connection in
                var events: [WebhookEvent] = []
                for try await row in try await connection.query(query, logger: logger) {
                    if let event = WebhookEvent(row: PostgresStoredRow(row)) { events.append(event) }
                }
                return events
            }
        }
    }

    /// Writes an event into the outbox, inside the caller's transaction; an event already there (the
    /// same change told twice) is not written again.
    static func enqueue(_ event: WebhookEvent, _ connection: PostgresConnection, _ logger: Logger) async throws {
        let created = Int64(event.createdAt.timeIntervalSince1970)
        let occurred = event.occurredAt.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) }
        try await connection.execute(
            """
            INSERT INTO purchase_webhook_events (event_id, app, type, customer_id, store, purchase_key, transaction_id, product_id,
                                                 environment, occurred_at_ms, created_at, next_attempt_at)
            VALUES (\(event.id), \(event.app), \(event.type.rawValue), \(event.customerId), \(event.marketplace.rawValue),
                    \(event.purchaseKey),
                    \(event.transactionId), \(event.productId), \(event.environment), \(occurred), \(created), \(created))
            ON CONFLICT (event_id) DO NOTHING
            """, logger: logger)
    }
}
