import CatalogKit
import Dispatch
import Foundation
import Time

/// Reports in one SQLite file, in WAL mode with `synchronous = FULL`: a commit is on disk when
/// `store` returns, and readers (`catalog reports`, feedback) never block the writer.
///
/// One connection writes and two read, each confined to its own serial queue so that SQLite's
/// blocking calls (a commit waits for fsync) never occupy Swift's cooperative threads. The
/// readers are read-only and apart: `reader` takes the long aggregates of reports and feedback,
/// `lookupReader` the short lookups a request waits for (a token, the audit log), so that a
/// long aggregate never delays a token check. Readiness asks the writer.
public final class SQLiteStore: ReportStore {
    let writer: Confined<Writer>
    let reader: Confined<SQLiteConnection>
    let lookupReader: Confined<SQLiteConnection>
    public let path: String

    /// Opens (creating it and its folder if needed) and migrates the store at `path`.
    public static func open(path: String) async throws -> SQLiteStore {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let writerQueue = DispatchQueue(label: "catalog.sqlite.writer")
        let writer = try await Confined.make(on: writerQueue) { try Writer(path: path) }
        // Opened after the writer, which creates and migrates the file.
        let reader = try await Confined.make(on: DispatchQueue(label: "catalog.sqlite.reader")) {
            try SQLiteConnection(path: path, readOnly: true)
        }
        let lookupReader = try await Confined.make(on: DispatchQueue(label: "catalog.sqlite.lookup")) {
            try SQLiteConnection(path: path, readOnly: true)
        }
        return SQLiteStore(path: path, writer: writer, reader: reader, lookupReader: lookupReader)
    }

    private init(path: String, writer: Confined<Writer>, reader: Confined<SQLiteConnection>, lookupReader: Confined<SQLiteConnection>) {
        self.path = path
        self.writer = writer
        self.reader = reader
        self.lookupReader = lookupReader
    }

    /// The writer connection's `PRAGMA synchronous` (2 is FULL) and journal mode, for the test
    /// that durability really is what this type promises.
    public func durabilitySettings() async throws -> (synchronous: Int, journalMode: String) {
        try await writer.run { writer in
            (Int(try writer.connection.scalar("PRAGMA synchronous") ?? "") ?? -1, try writer.connection.scalar("PRAGMA journal_mode") ?? "")
        }
    }

    public func store(_ reports: [InvalidIdentifierReport]) async throws -> [StoreOutcome] {
        try await writer.run { try $0.store(reports) }
    }

    /// Calls back on the writer's own queue: the group committer's next batch starts right there.
    public func store(
        _ reports: [InvalidIdentifierReport], completion: @escaping @Sendable (Result<[StoreOutcome], any Error>) -> Void
    ) {
        writer.async { writer in completion(Result { try writer.store(reports) }) }
    }

    public func aggregate(_ query: AggregateQuery) async throws -> [ReportAggregate] {
        try await reader.run { connection in
            let filters: [SQLiteValue] = [.integer(query.since?.secondsSince1970 ?? .min), .init(query.app), .init(query.identifier)]
            let invalid = try connection.rows(Self.invalidQuery, filters) { s in
                InvalidRow(
                    app: s.text(0) ?? "", identifier: s.text(1) ?? "", platform: s.text(2), environment: s.text(3),
                    reports: Int(s.integer(4)), installs: Int(s.integer(5)), firstSeen: s.integer(6), lastSeen: s.integer(7),
                    appVersions: s.text(8), storefronts: s.text(9), feedRevisions: s.text(10))
            }
            let requested = try connection.rows(Self.requestedQuery, filters) { s in
                RequestedRow(
                    app: s.text(0) ?? "", identifier: s.text(1) ?? "", platform: s.text(2), environment: s.text(3),
                    requested: Int(s.integer(4)), invalidWhenRequested: Int(s.integer(5)))
            }
            return AggregateAssembly.assemble(invalid, requested: requested)
        }
    }

    public func networkEvidence(_ query: AggregateQuery) async throws -> [NetworkEvidence] {
        try await reader.run { connection in
            try connection.rows(
                Self.evidenceQuery(of: "j.value", from: "reports r, json_each(r.invalid) j", allRequestedInvalid: false),
                Self.evidenceFilters(query)
            ) { row in
                NetworkEvidence(
                    app: row.text(0) ?? "", identifier: row.text(1), reports: Int(row.integer(2)), networks: Int(row.integer(3)),
                    networkInstalls: Int(row.integer(4)), verifiedInstalls: Int(row.integer(5)), requestWeight: row.double(6),
                    invalidWeight: row.double(7))
            }
        }
    }

    public func storeWideEvidence(_ query: AggregateQuery) async throws -> NetworkEvidence? {
        try await reader.run { connection in
            try connection.rows(
                Self.evidenceQuery(of: "NULL", from: "reports r", allRequestedInvalid: true), Self.evidenceFilters(query)
            ) { row in
                NetworkEvidence(
                    app: row.text(0) ?? "", identifier: nil, reports: Int(row.integer(2)), networks: Int(row.integer(3)),
                    networkInstalls: Int(row.integer(4)), verifiedInstalls: Int(row.integer(5)))
            }.first
        }
    }

    private static func evidenceFilters(_ query: AggregateQuery) -> [SQLiteValue] {
        [
            .integer(query.since?.secondsSince1970 ?? .min), .init(query.app), .init(query.identifier),
            .integer(Int64(max(query.installsPerNetwork, 1))),
        ]
    }

    /// Production reports, by network (``NetworkEvidence``): each unverified network adds its
    /// distinct installs up to `?4`, each verified install one. `?1` since, `?2` app or NULL,
    /// `?3` identifier or NULL. Reports stored before networks were recorded have none and
    /// count for nothing here, but as one network in an identifier's invalid rate
    /// (``rateBranch``). Only identifiers with evidence are kept (`HAVING`), whatever their rate.
    private static func evidenceQuery(of identifier: String, from source: String, allRequestedInvalid: Bool) -> String {
        """
        SELECT app, identifier, SUM(reports), SUM(networks), SUM(installs), SUM(verified), TOTAL(requested), TOTAL(invalid)
        FROM (
            SELECT r.app AS app, \(identifier) AS identifier, COUNT(*) AS reports,
                   COUNT(DISTINCT r.network) AS networks, 0 AS installs, COUNT(DISTINCT r.verified_install) AS verified,
                   0 AS requested, 0 AS invalid
            FROM \(source)
            WHERE r.environment = 'production' AND r.all_requested_invalid = \(allRequestedInvalid ? 1 : 0)
              AND (r.network IS NOT NULL OR r.verified_install IS NOT NULL)
              AND r.received_at >= ?1 AND (?2 IS NULL OR r.app = ?2) AND (?3 IS NULL OR \(identifier) = ?3)
            GROUP BY r.app, \(identifier)
            UNION ALL
            SELECT app, identifier, 0, 0, MIN(MAX(installs, 1), ?4), 0, 0, 0
            FROM (
                SELECT r.app AS app, \(identifier) AS identifier, COUNT(DISTINCT r.install_id) AS installs
                FROM \(source)
                WHERE r.environment = 'production' AND r.all_requested_invalid = \(allRequestedInvalid ? 1 : 0)
                  AND r.network IS NOT NULL AND r.verified_install IS NULL
                  AND r.received_at >= ?1 AND (?2 IS NULL OR r.app = ?2) AND (?3 IS NULL OR \(identifier) = ?3)
                GROUP BY r.app, \(identifier), r.network
            )
            \(allRequestedInvalid ? "" : rateBranch)
        )
        GROUP BY app, identifier
        HAVING SUM(reports) > 0
        ORDER BY SUM(installs) + SUM(verified) DESC, identifier
        """
    }

    /// An identifier's invalid rate by network, as a branch of ``evidenceQuery(of:from:allRequestedInvalid:)``:
    /// one row per voice among the production reports that requested the identifier (a verified
    /// install, or else a network, NULL included), weighing its distinct installs up to `?4` (a
    /// verified install one), with its weight times the share of its requests that named the
    /// identifier invalid.
    private static let rateBranch = """
        UNION ALL
        SELECT app, identifier, 0, 0, 0, 0, weight, weight * invalid * 1.0 / requests
        FROM (
            SELECT r.app AS app, q.value AS identifier, COUNT(*) AS requests,
                   SUM(EXISTS (SELECT 1 FROM json_each(r.invalid) i WHERE i.value = q.value)) AS invalid,
                   CASE WHEN r.verified_install IS NULL THEN MIN(MAX(COUNT(DISTINCT r.install_id), 1), ?4) ELSE 1 END AS weight
            FROM reports r, json_each(r.requested) q
            WHERE r.environment = 'production' AND r.requested IS NOT NULL
              AND r.received_at >= ?1 AND (?2 IS NULL OR r.app = ?2) AND (?3 IS NULL OR q.value = ?3)
            GROUP BY r.app, q.value, r.verified_install, CASE WHEN r.verified_install IS NULL THEN r.network END
        )
        """

    public func dailyCounts(app: String, identifier: String, since: Timestamp) async throws -> [DailyReportCount] {
        try await reader.run { connection in
            // Integer division floors the day: reception times are never before 1970.
            try connection.rows(
                """
                SELECT r.received_at / 86400 AS day, COUNT(*)
                FROM reports r, json_each(r.invalid) j
                WHERE r.app = ?1 AND r.received_at >= ?2 AND j.value = ?3
                GROUP BY day ORDER BY day
                """,
                [.text(app), .integer(since.secondsSince1970), .text(identifier)]
            ) { row in DailyReportCount(day: row.integer(0), reports: Int(row.integer(1))) }
        }
    }

    /// Reports deleted per writer turn when pruning: each batch is its own short transaction, so
    /// group commits of new reports go between batches instead of waiting for the whole prune.
    static let pruneBatch = 5_000

    public func prune(receivedBefore moment: Timestamp) async throws -> Int {
        var total = 0
        while true {
            let deleted = try await writer.run {
                try $0.connection.run(
                    "DELETE FROM reports WHERE id IN (SELECT id FROM reports WHERE received_at < ?1 LIMIT ?2)",
                    [.integer(moment.secondsSince1970), .integer(Int64(Self.pruneBatch))])
            }
            total += deleted
            if deleted < Self.pruneBatch { return total }
        }
    }

    public func prune(keepingPerApp quota: Int) async throws -> [String: Int] {
        let quota = max(quota, 1)
        let apps = try await writer.run { writer in
            try writer.connection.rows("SELECT app, COUNT(*) FROM reports GROUP BY app HAVING COUNT(*) > ?1", [.integer(Int64(quota))]) {
                row in (row.text(0) ?? "", Int(row.integer(1)))
            }
        }
        var pruned: [String: Int] = [:]
        for (app, count) in apps {
            // The heaviest network first (docs/feedback.md): a report's depth is its place among
            // its network's reports, newest first, and the deepest go first (the oldest among
            // equals). A flood is cut down to the genuine networks' level before any of theirs goes.
            // Chosen in one pass, then deleted in batches.
            let doomed = try await writer.run { writer in
                try writer.connection.rows(
                    """
                    SELECT id FROM (
                        SELECT id, received_at, row_number() OVER (PARTITION BY network ORDER BY received_at DESC, id DESC) AS depth
                        FROM reports WHERE app = ?1)
                    ORDER BY depth DESC, received_at, id LIMIT ?2
                    """, [.text(app), .integer(Int64(count - quota))]
                ) { row in row.integer(0) }
            }
            var total = 0
            for start in stride(from: 0, to: doomed.count, by: Self.pruneBatch) {
                let batch = doomed[start..<min(start + Self.pruneBatch, doomed.count)]
                let ids = "[" + batch.map(String.init).joined(separator: ",") + "]"
                total += try await writer.run { writer in
                    try writer.connection.run("DELETE FROM reports WHERE id IN (SELECT value FROM json_each(?1))", [.text(ids)])
                }
            }
            pruned[app] = total
        }
        return pruned
    }

    /// Writes a consistent copy of the whole store to a new file at `path` (`VACUUM INTO`), from
    /// the aggregates' read-only connection: one read transaction, so the copy is the store as
    /// of one moment, while the server goes on committing. Refuses to overwrite a file.
    public func backup(to path: String) async throws {
        guard !FileManager.default.fileExists(atPath: path) else { throw SQLiteError("\(path) exists; back up to a new file") }
        try await reader.run { try $0.run("VACUUM INTO ?1", [.text(path)]) }
    }

    /// Asks the writer: a store whose commits are stuck is not ready, however well it reads.
    public func ping() async throws {
        _ = try await writer.run { try $0.connection.scalar("SELECT 1") }
    }

    public func close() async throws {}

    /// `?1` since, `?2` app or NULL, `?3` identifier or NULL.
    private static let invalidQuery = """
        SELECT r.app, j.value, r.platform, r.environment, COUNT(*), COUNT(DISTINCT r.install_id),
               MIN(r.received_at), MAX(r.received_at),
               group_concat(DISTINCT r.app_version), group_concat(DISTINCT r.storefront), group_concat(DISTINCT r.feed_revision)
        FROM reports r, json_each(r.invalid) j
        WHERE r.received_at >= ?1 AND (?2 IS NULL OR r.app = ?2) AND (?3 IS NULL OR j.value = ?3)
        GROUP BY r.app, j.value, r.platform, r.environment
        """

    private static let requestedQuery = """
        SELECT r.app, q.value, r.platform, r.environment, COUNT(*),
               SUM(EXISTS (SELECT 1 FROM json_each(r.invalid) i WHERE i.value = q.value))
        FROM reports r, json_each(r.requested) q
        WHERE r.requested IS NOT NULL AND r.received_at >= ?1 AND (?2 IS NULL OR r.app = ?2) AND (?3 IS NULL OR q.value = ?3)
        GROUP BY r.app, q.value, r.platform, r.environment
        """

    /// The writing connection and its prepared insert.
    final class Writer {
        let connection: SQLiteConnection
        private let insert: SQLiteStatement
        /// Statements prepared once and run again (the purchase intake's), by their SQL.
        private var statements: [String: SQLiteStatement] = [:]
        /// The bases notification bodies are compressed against (docs/storage.md, "Notification bodies").
        let notificationBodies = NotificationBodyCompressor()

        /// `sql` prepared, once for the connection's life.
        func statement(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
            if let statement = statements[sql] { return statement }
            let statement = try connection.prepare(sql)
            statements[sql] = statement
            return statement
        }

        /// Runs the cached `sql` with `values`; returns how many rows it changed.
        @discardableResult
        func run(_ sql: String, _ values: [SQLiteValue]) throws(SQLiteError) -> Int {
            let statement = try statement(sql)
            try statement.bind(values)
            while try statement.step() {}
            return connection.changes
        }

        /// The rows of the cached `sql` with `values` bound, each made by `row`.
        func rows<Row>(_ sql: String, _ values: [SQLiteValue], _ row: (SQLiteStatement) -> Row) throws(SQLiteError) -> [Row] {
            let statement = try statement(sql)
            try statement.bind(values)
            var rows: [Row] = []
            while try statement.step() { rows.append(row(statement)) }
            return rows
        }

        /// The first column of the first row of the cached `sql`, as an integer.
        func integer(_ sql: String, _ values: [SQLiteValue]) throws(SQLiteError) -> Int64? {
            let statement = try statement(sql)
            try statement.bind(values)
            defer { statement.reset() }
            return try statement.step() ? statement.optionalInteger(0) : nil
        }

        init(path: String) throws {
            connection = try SQLiteConnection(path: path)
            let mode = try connection.scalar("PRAGMA journal_mode = WAL")
            guard mode == "wal" else { throw SQLiteError("\(path) cannot use write-ahead logging (journal mode is \(mode ?? "unknown"))") }
            // FULL: WAL's default (NORMAL) may lose the last commits on power loss, and a 202
            // promises the report survives. Set here, after opening, where nothing resets it.
            try connection.execute("PRAGMA synchronous = FULL")
            try Writer.migrate(connection)
            insert = try connection.prepare(
                """
                INSERT INTO reports (app, report_id, received_at, platform, environment, app_version, storefront,
                                     feed_revision, install_id, invalid, requested, network, verified_install,
                                     all_requested_invalid)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
                ON CONFLICT (app, report_id) DO NOTHING
                """)
        }

        private static func migrate(_ connection: SQLiteConnection) throws {
            try connection.transaction {
                try connection.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)")
                let current = Int(try connection.scalar("SELECT COALESCE(MAX(version), 0) FROM schema_migrations") ?? "0") ?? 0
                try Schema.check(storeVersion: current, known: Schema.sqlite)
                for migration in Schema.sqlite where migration.version > current {
                    try connection.execute(migration.sql)
                    try connection.run(
                        "INSERT INTO schema_migrations (version, applied_at) VALUES (?1, ?2)",
                        [.integer(Int64(migration.version)), .integer(Timestamp.now.secondsSince1970)])
                }
            }
        }

        func store(_ reports: [InvalidIdentifierReport]) throws -> [StoreOutcome] {
            try connection.transaction {
                var outcomes: [StoreOutcome] = []
                outcomes.reserveCapacity(reports.count)
                for report in reports {
                    try insert.bind([
                        .text(report.app), .text(report.reportID), .integer(report.receivedAt.secondsSince1970),
                        .init(report.platform?.rawValue), .init(report.environment?.rawValue), .init(report.appVersion?.description),
                        .init(report.storefront), .init(report.feedRevision), .init(report.installID),
                        .text(jsonArray(report.invalid)), .init(report.requested.map(jsonArray)), .init(report.network),
                        .init(report.verifiedInstall), .init(report.allRequestedInvalid.map { $0 ? 1 : 0 }),
                    ])
                    _ = try insert.step()
                    outcomes.append(connection.changes == 1 ? .stored : .duplicate)
                }
                return outcomes
            }
        }
    }
}

/// A JSON array of strings, as SQLite's `json_each` reads it.
///
/// Written by hand, a value per report like PostgreSQL's batch, where `JSONEncoder` measured slower
/// (docs/benchmarks.md, "JSON on the report path"); not measured on its own.
private func jsonArray(_ strings: [String]) -> String {
    var json = JSONWriter(capacity: strings.reduce(2) { $0 + $1.utf8.count + 3 })
    json.beginArray()
    for string in strings { json.string(string) }
    json.endArray()
    return String(decoding: json.bytes, as: UTF8.self)
}

/// A value used only on one serial queue: the one place where a non-Sendable SQLite connection
/// is handed across concurrency domains, safely because every access goes through `queue`.
final class Confined<Value>: @unchecked Sendable {
    private let queue: DispatchQueue
    private let value: Value

    private init(queue: DispatchQueue, value: Value) {
        self.queue = queue
        self.value = value
    }

    static func make(on queue: DispatchQueue, _ create: @escaping @Sendable () throws -> Value) async throws -> Confined {
        let box = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<UncheckedBox<Value>, any Error>) in
            queue.async { continuation.resume(with: Result { UncheckedBox(try create()) }) }
        }
        return Confined(queue: queue, value: box.value)
    }

    /// Runs `body` on the queue, without waiting for it.
    func async(_ body: @escaping @Sendable (Value) -> Void) {
        queue.async { body(self.value) }
    }

    func run<Result: Sendable>(_ body: @escaping @Sendable (Value) throws -> Result) async throws -> Result {
        try await withCheckedThrowingContinuation { continuation in
            self.async { value in continuation.resume(with: Swift.Result { try body(value) }) }
        }
    }
}

private struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
