import CSQLite

/// A thin layer over the SQLite C API: one connection, prepared statements, errors with
/// SQLite's own message. Not thread-safe; each user confines a connection to one queue.
final class SQLiteConnection {
    let handle: OpaquePointer

    /// - Parameter readOnly: a reader's connection, which cannot write even by mistake.
    init(path: String, readOnly: Bool = false) throws(SQLiteError) {
        var db: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX
        let code = sqlite3_open_v2(path, &db, flags, nil)
        guard code == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(db)
            throw SQLiteError("cannot open \(path): \(message)")
        }
        handle = db
        // Another process (a second `catalog` command) may hold the write lock for a moment.
        sqlite3_busy_timeout(db, 10_000)
    }

    deinit {
        sqlite3_close_v2(handle)
    }

    func execute(_ sql: String) throws(SQLiteError) {
        var message: UnsafeMutablePointer<CChar>?
        guard sqlite3_exec(handle, sql, nil, nil, &message) == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? lastError
            sqlite3_free(message)
            throw SQLiteError(text)
        }
    }

    func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK,
            let statement
        else { throw SQLiteError(lastError) }
        return SQLiteStatement(statement, connection: self)
    }

    /// The first column of the first row of `sql`, as text.
    func scalar(_ sql: String) throws(SQLiteError) -> String? {
        let statement = try prepare(sql)
        return try statement.step() ? statement.text(0) : nil
    }

    /// Runs `sql` with `values` bound to `?1`, `?2`, …; returns how many rows it changed.
    @discardableResult
    func run(_ sql: String, _ values: [SQLiteValue] = []) throws(SQLiteError) -> Int {
        let statement = try prepare(sql)
        try statement.bind(values)
        while try statement.step() {}
        return changes
    }

    /// The rows of `sql` with `values` bound, each made by `row`.
    func rows<Row>(_ sql: String, _ values: [SQLiteValue] = [], _ row: (SQLiteStatement) -> Row) throws(SQLiteError) -> [Row] {
        let statement = try prepare(sql)
        try statement.bind(values)
        var rows: [Row] = []
        while try statement.step() { rows.append(row(statement)) }
        return rows
    }

    /// Runs `body` in a write transaction, committed if it returns, rolled back if it throws.
    func transaction<Result>(_ body: () throws -> Result) throws -> Result {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    var changes: Int { Int(sqlite3_changes(handle)) }

    /// The rowid of the last row inserted.
    var lastInsertedRow: Int64 { sqlite3_last_insert_rowid(handle) }

    var lastError: String { String(cString: sqlite3_errmsg(handle)) }
}

final class SQLiteStatement {
    private let statement: OpaquePointer
    private let connection: SQLiteConnection
    /// Each result column's index by its name, read once from the prepared statement.
    private lazy var columns: [String: Int32] = {
        var columns: [String: Int32] = [:]
        for index in 0..<sqlite3_column_count(statement) {
            if let name = sqlite3_column_name(statement, index) { columns[String(cString: name)] = index }
        }
        return columns
    }()

    /// The index of the result column named `name`.
    func column(_ name: String) -> Int32? { columns[name] }

    fileprivate init(_ statement: OpaquePointer, connection: SQLiteConnection) {
        self.statement = statement
        self.connection = connection
    }

    deinit {
        sqlite3_finalize(statement)
    }

    /// Binds values to `?1`, `?2`, … in order, after clearing the previous run.
    func bind(_ values: [SQLiteValue]) throws(SQLiteError) {
        sqlite3_reset(statement)
        sqlite3_clear_bindings(statement)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32
            switch value {
            case .null: code = sqlite3_bind_null(statement, index)
            case .integer(let number): code = sqlite3_bind_int64(statement, index, number)
            // With its length, not up to the first NUL: a value is stored whole or refused, never cut short.
            case .text(let text):
                code = sqlite3_bind_text(statement, index, text, Int32(clamping: text.utf8.count), SQLiteStatement.transient)
            case .blob(let bytes):
                code = bytes.withUnsafeBytes {
                    // A zero-length blob, not NULL, even without an address.
                    sqlite3_bind_blob(
                        statement, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(clamping: $0.count),
                        SQLiteStatement.transient)
                }
            }
            guard code == SQLITE_OK else { throw SQLiteError(connection.lastError) }
        }
    }

    /// Ends the current run early (a lookup that read its one row), so it holds nothing open.
    func reset() {
        sqlite3_reset(statement)
    }

    /// Runs to the next row: true when there is one, false when done.
    func step() throws(SQLiteError) -> Bool {
        switch sqlite3_step(statement) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw SQLiteError(connection.lastError)
        }
    }

    func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }

    func double(_ column: Int32) -> Double { sqlite3_column_double(statement, column) }

    func optionalInteger(_ column: Int32) -> Int64? {
        sqlite3_column_type(statement, column) == SQLITE_NULL ? nil : sqlite3_column_int64(statement, column)
    }

    func text(_ column: Int32) -> String? {
        guard let bytes = sqlite3_column_text(statement, column) else { return nil }
        // By its length, as it was bound: a NUL inside the value does not end it.
        return String(decoding: UnsafeBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(statement, column))), as: UTF8.self)
    }

    /// The column's bytes, whatever its type (a blob's as stored, text's as UTF-8); nil when NULL.
    func blob(_ column: Int32) -> [UInt8]? {
        guard sqlite3_column_type(statement, column) != SQLITE_NULL else { return nil }
        let bytes = sqlite3_column_blob(statement, column)
        let count = Int(sqlite3_column_bytes(statement, column))
        guard let bytes, count > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: bytes, count: count))
    }

    /// SQLite copies bound text and blobs at once, so Swift's temporary C string may go away.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
}

enum SQLiteValue {
    case null
    case integer(Int64)
    case text(String)
    case blob([UInt8])

    init(_ text: String?) { self = text.map(SQLiteValue.text) ?? .null }
    init(_ number: Int?) { self = number.map { .integer(Int64($0)) } ?? .null }
}

public struct SQLiteError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = "SQLite: \(description)" }
}
