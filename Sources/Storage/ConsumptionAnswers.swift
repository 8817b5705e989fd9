import Foundation
import Ledger
import PostgresNIO

/// Consumption answers in the SQLite file (docs/app-store-api.md, "Consumption requests").
extension SQLiteStore: ConsumptionAnswerStore {
    public func dueConsumptionRequests(at now: Date, limit: Int) async throws -> [(
        notification: RawNotification, answer: ConsumptionAnswer?
    )] {
        try await reader.run { connection in
            try connection.rows(
                """
                SELECT \(ConsumptionAnswer.notificationColumns), \(RawNotification.sqliteBodyColumns), \(ConsumptionAnswer.columns)
                FROM purchase_notifications n LEFT JOIN purchase_consumption_answers a
                    ON a.app = n.app AND a.store = n.store AND a.notification_id = n.notification_id
                WHERE n.store = 'appStore' AND n.notification_type = 'CONSUMPTION_REQUEST'
                  AND (a.state IS NULL OR (a.state = 'pending' AND a.next_attempt_at <= ?1))
                ORDER BY n.sequence LIMIT ?2
                """, [.integer(Int64(now.timeIntervalSince1970)), .integer(Int64(max(limit, 0)))]
            ) { statement in
                RawNotification.stored(in: statement).map { ($0, ConsumptionAnswer(row: SQLiteRow(statement: statement))) }
            }.map { try $0.get() }
        }
    }

    public func saveConsumptionAnswer(_ answer: ConsumptionAnswer) async throws {
        _ = try await writer.run { writer in
            try writer.run(
                """
                INSERT INTO purchase_consumption_answers (app, store, notification_id, transaction_id, state, attempts, next_attempt_at,
                                                          body, status, error, updated_at)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
                ON CONFLICT (app, store, notification_id) DO UPDATE SET transaction_id = excluded.transaction_id,
                    state = excluded.state, attempts = excluded.attempts, next_attempt_at = excluded.next_attempt_at,
                    body = excluded.body, status = excluded.status, error = excluded.error, updated_at = excluded.updated_at
                """,
                [
                    .text(answer.app), .text(answer.marketplace.rawValue), .text(answer.notificationId), .init(answer.transactionId),
                    .text(answer.state.rawValue), .integer(Int64(answer.attempts)),
                    answer.nextAttemptAt.map { .integer(Int64($0.timeIntervalSince1970.rounded(.up))) } ?? .null, .init(answer.body),
                    answer.status.map { .integer(Int64($0)) } ?? .null, .init(answer.error),
                    .integer(Int64(answer.updatedAt.timeIntervalSince1970)),
                ])
        }
    }

    public func consumptionAnswers(app: String, transactionIds: [String]) async throws -> [ConsumptionAnswer] {
        guard !transactionIds.isEmpty else { return [] }
        return try await reader.run { connection in
            let placeholders = transactionIds.indices.map { "?\($0 + 2)" }.joined(separator: ", ")
            return try connection.rows(
                """
                SELECT \(ConsumptionAnswer.columns) FROM purchase_consumption_answers a
                WHERE a.app = ?1 AND a.transaction_id IN (\(placeholders)) ORDER BY a.updated_at, a.notification_id
                """, [.text(app)] + transactionIds.map { .text($0) }
            ) { ConsumptionAnswer(row: SQLiteRow(statement: $0)) }.compactMap { $0 }
        }
    }
}

/// Consumption answers in PostgreSQL, as in SQLite.
extension PostgresStore: ConsumptionAnswerStore {
    public func dueConsumptionRequests(at now: Date, limit: Int) async throws -> [(
        notification: RawNotification, answer: ConsumptionAnswer?
    )] {
        let now = Int64(now.timeIntervalSince1970)
        let limit = Int64(max(limit, 0))
        return try await withStoreErrors("cannot read consumption requests") {
            try await client.withConnection { connection in
                var due: [(notification: RawNotification, answer: ConsumptionAnswer?)] = []
                let rows = try await connection.query(
                    """
                    SELECT \(unescaped: ConsumptionAnswer.notificationColumns), \(unescaped: ConsumptionAnswer.columns)
                    FROM purchase_notifications n LEFT JOIN purchase_consumption_answers a
                        ON a.app = n.app AND a.store = n.store AND a.notification_id = n.notification_id
                    WHERE n.store = 'appStore' AND n.notification_type = 'CONSUMPTION_REQUEST'
                      AND (a.state IS NULL OR (a.state = 'pending' AND a.next_attempt_at <= \(now)))
                    ORDER BY n.sequence LIMIT \(limit)
                    """, logger: logger)
                for try await row in rows {
                    let stored = PostgresStoredRow(row)
                    due.append((RawNotification(row: stored), ConsumptionAnswer(row: stored)))
                }
                return due
            }
        }
    }

    public func saveConsumptionAnswer(_ answer: ConsumptionAnswer) async throws {
        let next = answer.nextAttemptAt.map { Int64($0.timeIntervalSince1970.rounded(.up)) }
        let status = answer.status.map(Int64.init)
        let updated = Int64(answer.updatedAt.timeIntervalSince1970)
        let attempts = Int64(answer.attempts)
        try await withStoreErrors("cannot save a consumption answer") {
            try await client.withConnection { connection in
                try await connection.execute(
                    """
                    INSERT INTO purchase_consumption_answers (app, store, notification_id, transaction_id, state, attempts, next_attempt_at,
                                                              body, status, error, updated_at)
                    VALUES (\(answer.app), \(answer.marketplace.rawValue), \(answer.notificationId), \(answer.transactionId),
                            \(answer.state.rawValue), \(attempts), \(next), \(answer.body), \(status), \(answer.error), \(updated))
                    ON CONFLICT (app, store, notification_id) DO UPDATE SET transaction_id = excluded.transaction_id,
                        state = excluded.state, attempts = excluded.attempts, next_attempt_at = excluded.next_attempt_at,
                        body = excluded.body, status = excluded.status, error = excluded.error, updated_at = excluded.updated_at
                    """, logger: logger)
            }
        }
    }

    public func consumptionAnswers(app: String, transactionIds: [String]) async throws -> [ConsumptionAnswer] {
        guard !transactionIds.isEmpty else { return [] }
        return try await withStoreErrors("cannot read consumption answers") {
            try await client.withConnection { connection in
                var answers: [ConsumptionAnswer] = []
                let rows = try await connection.query(
                    """
                    SELECT \(unescaped: ConsumptionAnswer.columns) FROM purchase_consumption_answers a
                    WHERE a.app = \(app) AND a.transaction_id = ANY(\(transactionIds)) ORDER BY a.updated_at, a.notification_id
                    """, logger: logger)
                for try await row in rows {
                    if let answer = ConsumptionAnswer(row: PostgresStoredRow(row)) { answers.append(answer) }
                }
                return answers
            }
        }
    }
}

extension ConsumptionAnswer {
    /// The notification's columns, by the names ``RawNotification/init(row:)`` reads.
    static let notificationColumns =
        "n.sequence, n.app, n.store, n.notification_id, n.notification_type, n.subtype, n.environment, n.signed_at_ms, n.received_at, n.body"
    /// The answer's columns, prefixed so that they do not shadow the notification's.
    static let columns = """
        a.app AS answer_app, a.store AS answer_store, a.notification_id AS answer_notification_id, a.transaction_id AS answer_transaction_id,
        a.state AS answer_state, a.attempts AS answer_attempts, a.next_attempt_at AS answer_next_attempt_at, a.body AS answer_body,
        a.status AS answer_status, a.error AS answer_error, a.updated_at AS answer_updated_at
        """

    /// A row of ``columns``; nil when there is no answer (a request never answered).
    init?(row: some StoredRow) {
        guard let app = row.text("answer_app"), let store = row.text("answer_store"), let id = row.text("answer_notification_id"),
            let state = row.text("answer_state").flatMap(State.init(rawValue:))
        else { return nil }
        self.init(
            app: app, marketplace: Marketplace(rawValue: store), notificationId: id, transactionId: row.text("answer_transaction_id"),
            state: state, attempts: Int(row.integer("answer_attempts") ?? 0),
            nextAttemptAt: row.integer("answer_next_attempt_at").map { Date(timeIntervalSince1970: TimeInterval($0)) },
            body: row.text("answer_body"), status: row.integer("answer_status").map { Int($0) }, error: row.text("answer_error"),
            updatedAt: row.seconds("answer_updated_at"))
    }
}
