/// A place in a source file: 1-based line and byte column, as compilers print them.
public struct SourcePosition: Sendable, Hashable, Comparable, BitwiseCopyable, CustomStringConvertible {
    // 32 bits each: every value of a big catalog carries a position, so its size matters.
    private var storedLine: UInt32
    private var storedColumn: UInt32

    public var line: Int { Int(storedLine) }
    public var column: Int { Int(storedColumn) }

    public init(line: Int, column: Int) {
        storedLine = UInt32(clamping: line)
        storedColumn = UInt32(clamping: column)
    }

    /// The position used when a problem concerns a whole file rather than a place in it.
    public static let startOfFile = SourcePosition(line: 1, column: 1)

    public static func < (lhs: SourcePosition, rhs: SourcePosition) -> Bool {
        (lhs.line, lhs.column) < (rhs.line, rhs.column)
    }

    public var description: String { "\(line):\(column)" }
}

/// One problem found in a source file, printed compiler-style: `path:line:col: error: message`.
public struct Diagnostic: Error, Sendable, Hashable, Comparable, CustomStringConvertible {
    /// How serious a diagnostic is: errors stop a build, warnings do not.
    public enum Severity: String, Sendable, Hashable {
        case error
        case warning
    }

    public var severity: Severity
    public var file: String
    public var position: SourcePosition
    public var message: String

    public init(_ severity: Severity, file: String, at position: SourcePosition, _ message: String) {
        self.severity = severity
        self.file = file
        self.position = position
        self.message = message
    }

    public static func error(_ message: String, file: String, at position: SourcePosition) -> Diagnostic {
        Diagnostic(.error, file: file, at: position, message)
    }

    public static func warning(_ message: String, file: String, at position: SourcePosition) -> Diagnostic {
        Diagnostic(.warning, file: file, at: position, message)
    }

    /// Sorted by file, then line and column, so that a run's output reads top to bottom.
    public static func < (lhs: Diagnostic, rhs: Diagnostic) -> Bool {
        if lhs.file != rhs.file { return lhs.file < rhs.file }
        if lhs.position != rhs.position { return lhs.position < rhs.position }
        return lhs.message < rhs.message
    }

    public var description: String {
        "\(file):\(position.line):\(position.column): \(severity.rawValue): \(message)"
    }
}

extension Array where Element == Diagnostic {
    /// Whether any of these diagnostics is an error.
    public var containsErrors: Bool { contains { $0.severity == .error } }
}
