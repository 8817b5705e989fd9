import Foundation
import Ledger
import PostgresNIO

/// The acknowledgement outbox in the SQLite file (docs/google-play.md, "Acknowledgement").
extension SQLiteStore: StoreAcknowledgementStore {
    public func enqueueAcknowledgement(_ acknowledgement: StoreAcknowledgement) async throws -> Bool {
        let values = acknowledgement.sqliteValues
        return try await writer.run { writer in
            try writer.run(
                """
                INSERT INTO purchase_acknowledgements (\(StoreAcknowledgement.columns))
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) ON CONFLICT (app, store, purchase_key) DO NOTHING
                """, values) == 1
        }
    }

    public func requestRefresh(_ acknowledgement: StoreAcknowledgement) async throws {
        var refresh = acknowledgement
        refresh.state = .pending
        let values = refresh.sqliteValues
        _ = try await writer.run { writer in
            try writer.run(
                """
                INSERT INTO purchase_acknowledgements (\(StoreAcknowledgement.columns))
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
                ON CONFLICT (app, store, purchase_key) DO UPDATE SET action = excluded.action, state = excluded.state, attempts = 0,
                    next_attempt_at = excluded.next_attempt_at, error = NULL, updated_at = excluded.updated_at
                WHERE purchase_acknowledgements.state <> 'pending'
                """, values)
        }
    }

    public func dueAcknowledgements(at now: Date, limit: Int) async throws -> [StoreAcknowledgement] {
        try await reader.run { connection in
            try connection.rows(
                """
                SELECT \(StoreAcknowledgement.columns) FROM purchase_acknowledgements
                WHERE state = 'pending' AND next_attempt_at <= ?1 ORDER BY deadline_at IS NULL, deadline_at, updated_at, purchase_key LIMIT ?2
                """, [.integer(Int64(now.timeIntervalSince1970)), .integer(Int64(max(limit, 0)))]
            ) { StoreAcknowledgement(row: SQLiteRow(statement: $0)) }.compactMap { $0 }
        }
    }

    public func saveAcknowledgement(_ acknowledgement: StoreAcknowledgement) async throws {
        let values = acknowledgement.sqliteValues
        _ = try await writer.run { writer in
            try writer.run(
                """
                INSERT INTO purchase_acknowledgements (\(StoreAcknowledgement.columns))
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
                ON CONFLICT (app, store, purchase_key) DO UPDATE SET product_id = excluded.product_id, action = excluded.action,
                    state = excluded.state, attempts = excluded.attempts, next_attempt_at = excluded.next_attempt_at,
                    deadline_at = excluded.deadline_at, error = excluded.error, updated_at = excluded.updated_at
                """, values)
        }
    }

    public func acknowledgements(in state: StoreAcknowledgement.State) async throws -> [StoreAcknowledgement] {
        try await reader.run { connection in
            try connection.rows(
                "SELECT \(StoreAcknowledgement.columns) FROM purchase_acknowledgements WHERE state = ?1 ORDER BY app, store, purchase_key",
                [.text(state.rawValue)]
            ) { StoreAcknowledgement(row: SQLiteRow(statement: $0)) }.compactMap { $0 }
        }
    }
}

/// The acknowledgement outbox in PostgreSQL, as in SQLite.
extension PostgresStore: StoreAcknowledgementStore {
    public func enqueueAcknowledgement(_ acknowledgement: StoreAcknowledgement) async throws -> Bool {
        let row = acknowledgement.integers
        return try await withStoreErrors("cannot queue an acknowledgement") {
            try await client.withConnection { connection in
                let rows = try await connection.query(
                    """
                    INSERT INTO purchase_acknowledgements (\(unescaped: StoreAcknowledgement.columns))
                    VALUES (\(acknowledgement.app), \(acknowledgement.marketplace.rawValue), \(acknowledgement.purchaseKey),
                            \(acknowledgement.productId), \(acknowledgement.action.rawValue), \(acknowledgement.state.rawValue),
                            \(row.attempts), \(row.next), \(row.deadline), \(acknowledgement.error), \(row.updated))
                    ON CONFLICT (app, store, purchase_key) DO NOTHING RETURNING purchase_key
                    """, logger: logger)
                var inserted = false
                for try await _ in rows { inserted = true }
                return inserted
            }
        }
    }

    public func requestRefresh(_ acknowledgement: StoreAcknowledgement) async throws {
        var refresh = acknowledgement
        refresh.state = .pending
        let row = refresh.integers
        try await withStoreErrors("cannot queue a refresh") {
            try await client.withConnection { connection in
                try await connection.execute(
                    """
                    INSERT INTO purchase_acknowledgements (\(unescaped: StoreAcknowledgement.columns))
                    VALUES (\(refresh.app), \(refresh.marketplace.rawValue), \(refresh.purchaseKey), \(refresh.productId),
                            \(refresh.action.rawValue), \(refresh.state.rawValue), \(row.attempts), \(row.next), \(row.deadline),
                            \(refresh.error), \(row.updated))
                    ON CONFLICT (app, store, purchase_key) DO UPDATE SET action = excluded.action, state = excluded.state, attempts = 0,
                        next_attempt_at = excluded.next_attempt_at, error = NULL, updated_at = excluded.updated_at
                    WHERE purchase_acknowledgements.state <> 'pending'
                    """, logger: logger)
            }
        }
    }

    public func dueAcknowledgements(at now: Date, limit: Int) async throws -> [StoreAcknowledgement] {
        let now = Int64(now.timeIntervalSince1970)
        let limit = Int64(max(limit, 0))
        return try await acknowledgements(
            """
            SELECT \(unescaped: StoreAcknowledgement.columns) FROM purchase_acknowledgements
            WHERE state = 'pending' AND next_attempt_at <= \(now) ORDER BY deadline_at NULLS LAST, updated_at, purchase_key LIMIT \(limit)
            """)
    }

    public func saveAcknowledgement(_ acknowledgement: StoreAcknowledgement) async throws {
        let row = acknowledgement.integers
        try await withStoreErrors("cannot save an acknowledgement") {
            try await client.withConnection { connection in
                try await connection.execute(
                    """
                    INSERT INTO purchase_acknowledgements (\(unescaped: StoreAcknowledgement.columns))
                    VALUES (\(acknowledgement.app), \(acknowledgement.marketplace.rawValue), \(acknowledgement.purchaseKey),
                            \(acknowledgement.productId), \(acknowledgement.action.rawValue), \(acknowledgement.state.rawValue),
                            \(row.attempts), \(row.next), \(row.deadline), \(acknowledgement.error), \(row.updated))
                    ON CONFLICT (app, store, purchase_key) DO UPDATE SET product_id = excluded.product_id, action = excluded.action,
                        state = excluded.state, attempts = excluded.attempts, next_attempt_at = excluded.next_attempt_at,
                        deadline_at = excluded.deadline_at, error = excluded.error, updated_at = excluded.updated_at
                    """, logger: logger)
            }
        }
    }

    public func acknowledgements(in state: StoreAcknowledgement.State) async throws -> [StoreAcknowledgement] {
        try await acknowledgements(
            """
            SELECT \(unescaped: StoreAcknowledgement.columns) FROM purchase_acknowledgements WHERE state = \(state.rawValue)
            ORDER BY app, store, purchase_key
            """)
    }

    private func acknowledgements(_ query: PostgresQuery) async throws -> [StoreAcknowledgement] {
        try await withStoreErrors("cannot read acknowledgements") {
            try await client.withConnection { connection in
                var found: [StoreAcknowledgement] = []
                for try await row in try await connection.query(query, logger: logger) {
                    if let acknowledgement = StoreAcknowledgement(row: PostgresStoredRow(row)) { found.append(acknowledgement) }
                }
                return found
            }
        }
    }
}

extension StoreAcknowledgement {
    static let columns = "app, store, purchase_key, product_id, action, state, attempts, next_attempt_at, deadline_at, error, updated_at"

    /// The row's integers: attempts, and times in whole seconds (the next attempt rounded up, so
    /// that it is never due early).
    var integers: (attempts: Int64, next: Int64?, deadline: Int64?, updated: Int64) {
        (
            Int64(attempts), nextAttemptAt.map { Int64($0.timeIntervalSince1970.rounded(.up)) },
            deadline.map { Int64($0.timeIntervalSince1970.rounded(.down)) }, Int64(updatedAt.timeIntervalSince1970)
        )
    }

    /// The row's values in `columns`' order.
    var sqliteValues: [SQLiteValue] {
        let row = integers
        return [
            .text(app), .text(marketplace.rawValue), .text(purchaseKey), .text(productId), .text(action.rawValue), .text(state.rawValue),
            .integer(row.attempts), row.next.map { .integer($0) } ?? .null, row.deadline.map { .integer($0) } ?? .null,
            error.map { .text($0) } ?? .null, .integer(row.updated),
        ]
    }

    /// A row of `columns`; nil when a required column is missing or unknown.
    init?(row: some StoredRow) {
        guard let app = row.text("app"), let key = row.text("purchase_key"), let product = row.text("product_id"),
            let action = row.text("action").flatMap(Action.init), let state = row.text("state").flatMap(State.init)
        else { return nil }
        self.init(
            app: app, marketplace: row.marketplace, purchaseKey: key, productId: product, action: action, state: state,
            attempts: Int(row.integer("attempts") ?? 0),
            nextAttemptAt: row.integer("next_attempt_at").map { Date(timeIntervalSince1970: TimeInterval($0)) },
            deadline: row.integer("deadline_at").map { Date(timeIntervalSince1970: TimeInterval($0)) }, error: row.text("error"),
            updatedAt: row.seconds("updated_at"))
    }
}
