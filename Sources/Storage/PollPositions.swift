import Foundation
import Ledger
import PostgresNIO

/// Poll positions in the SQLite file (docs/app-store-api.md, "Reconciliation").
extension SQLiteStore: PollPositionStore {
    public func pollPosition(app: String, marketplace: Marketplace, stream: String) async throws -> PollPosition? {
        try await reader.run { connection in
            try connection.rows(
                "SELECT \(PollPosition.columns) FROM purchase_poll_positions WHERE app = ?1 AND store = ?2 AND stream = ?3",
                [.text(app), .text(marketplace.rawValue), .text(stream)]
            ) { PollPosition(row: SQLiteRow(statement: $0)) }.compactMap { $0 }.first
        }
    }

    public func savePollPosition(_ position: PollPosition) async throws {
        _ = try await writer.run { writer in
            try writer.run(
                """
                INSERT INTO purchase_poll_positions (app, store, stream, window_start_ms, window_end_ms, cursor, done, updated_at)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                ON CONFLICT (app, store, stream) DO UPDATE SET window_start_ms = excluded.window_start_ms,
                    window_end_ms = excluded.window_end_ms, cursor = excluded.cursor, done = excluded.done, updated_at = excluded.updated_at
                """,
                [
                    .text(position.app), .text(position.marketplace.rawValue), .text(position.stream), .integer(position.windowStart),
                    .integer(position.windowEnd), position.cursor.map { .text($0) } ?? .null, .integer(position.done ? 1 : 0),
                    .integer(Int64(position.updatedAt.timeIntervalSince1970)),
                ])
        }
    }

    public func pollPositions() async throws -> [PollPosition] {
        try await reader.run { connection in
            try connection.rows("SELECT \(PollPosition.columns) FROM purchase_poll_positions ORDER BY app, store, stream", []) {
                PollPosition(row: SQLiteRow(statement: $0))
            }.compactMap { $0 }
        }
    }
}

/// Poll positions in PostgreSQL, as in SQLite.
extension PostgresStore: PollPositionStore {
    public func pollPosition(app: String, marketplace: Marketplace, stream: String) async throws -> PollPosition? {
        try await positions(
            "SELECT \(unescaped: PollPosition.columns) FROM purchase_poll_positions WHERE app = \(app) AND store = \(marketplace.rawValue) AND stream = \(stream)"
        ).first
    }

    public func savePollPosition(_ position: PollPosition) async throws {
        let updated = Int64(position.updatedAt.timeIntervalSince1970)
        let done: Int64 = position.done ? 1 : 0
        try await withStoreErrors("cannot save a poll position") {
            try await client.withConnection { connection in
                try await connection.execute(
                    """
                    INSERT INTO purchase_poll_positions (app, store, stream, window_start_ms, window_end_ms, cursor, done, updated_at)
                    VALUES (\(position.app), \(position.marketplace.rawValue), \(position.stream), \(position.windowStart),
                            \(position.windowEnd), \(position.cursor), \(done), \(updated))
                    ON CONFLICT (app, store, stream) DO UPDATE SET window_start_ms = excluded.window_start_ms,
                        window_end_ms = excluded.window_end_ms, cursor = excluded.cursor, done = excluded.done,
                        updated_at = excluded.updated_at
                    """, logger: logger)
            }
        }
    }

    public func pollPositions() async throws -> [PollPosition] {
        try await positions("SELECT \(unescaped: PollPosition.columns) FROM purchase_poll_positions ORDER BY app, store, stream")
    }

    private func positions(_ query: PostgresQuery) async throws -> [PollPosition] {
        try await withStoreErrors("cannot read poll positions") {
            try await client.withConnection { connection in
                var positions: [PollPosition] = []
                for try await row in try await connection.query(query, logger: logger) {
                    if let position = PollPosition(row: PostgresStoredRow(row)) { positions.append(position) }
                }
                return positions
            }
        }
    }
}

extension PollPosition {
    static let columns = "app, store, stream, window_start_ms, window_end_ms, cursor, done, updated_at"

    /// A row of `columns`; nil when a required column is missing.
    init?(row: some StoredRow) {
        guard let app = row.text("app"), let stream = row.text("stream"), let start = row.integer("window_start_ms"),
            let end = row.integer("window_end_ms")
        else { return nil }
        self.init(
            app: app, marketplace: row.marketplace, stream: stream, windowStart: start, windowEnd: end, cursor: row.text("cursor"),
            done: row.integer("done") == 1, updatedAt: row.seconds("updated_at"))
    }
}
