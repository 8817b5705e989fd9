import PropertyList

/// A JSON value with the byte offset it starts at, for files that editors write and that
/// diagnostics must point into (`.storekit`), and for metadata read back from the model.
struct JSONNode: Sendable {
    var value: JSONValue
    var offset: Int
}

enum JSONValue: Sendable {
    case string(String)
    case integer(Int64)
    case real(Double)
    case boolean(Bool)
    case null
    case array([JSONNode])
    /// Members in the order written; keys are unique (the parser rejects duplicates).
    case object([(key: String, value: JSONNode)])

    /// How messages name this kind: "expected a string, found an array".
    var kindName: String {
        switch self {
        case .string: "a string"
        case .integer, .real: "a number"
        case .boolean: "a boolean"
        case .null: "null"
        case .array: "an array"
        case .object: "an object"
        }
    }

    subscript(key: String) -> JSONNode? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }
}

/// Builds a ``JSONNode`` tree with the strict ``JSONScanner`` (RFC 8259), rejecting duplicate
/// keys, which JSON allows but which would make one of the two values silently lost.
enum JSONTree {
    struct ParseError: Error {
        var message: String
        var offset: Int
    }

    static let maximumDepth = 32

    static func parse(_ bytes: [UInt8]) throws(ParseError) -> JSONNode {
        do {
            return try bytes.withUnsafeBufferPointer { buffer in
                var scanner = JSONScanner(buffer)
                do {
                    let root = try node(&scanner, depth: 0)
                    try scanner.expectEnd()
                    return root
                } catch let error as JSONScanner.SyntaxError {
                    throw ParseError(message: error.message, offset: scanner.offset)
                }
            }
        } catch let error as ParseError {
            throw error
        } catch {
            throw ParseError(message: "\(error)", offset: 0)
        }
    }

    private static func node(_ scanner: inout JSONScanner, depth: Int) throws -> JSONNode {
        let kind = try scanner.peekKind()
        let offset = scanner.offset
        guard depth < maximumDepth else { throw ParseError(message: "values nested more than \(maximumDepth) deep", offset: offset) }
        switch kind {
        case .string: return JSONNode(value: .string(try scanner.readString()), offset: offset)
        case .boolean: return JSONNode(value: .boolean(try scanner.readBoolean()), offset: offset)
        case .null:
            try scanner.readNull()
            return JSONNode(value: .null, offset: offset)
        case .number:
            let text = try scanner.readNumber()
            if let integer = Int64(text) { return JSONNode(value: .integer(integer), offset: offset) }
            guard let real = Double(text), real.isFinite else {
                throw ParseError(message: "number \(text) is out of range", offset: offset)
            }
            return JSONNode(value: .real(real), offset: offset)
        case .array:
            var items: [JSONNode] = []
            try scanner.readArray { _, scanner in items.append(try node(&scanner, depth: depth + 1)) }
            return JSONNode(value: .array(items), offset: offset)
        case .object:
            var members: [(key: String, value: JSONNode)] = []
            var seen: Set<String> = []
            try scanner.readObject { key, scanner in
                let value = try node(&scanner, depth: depth + 1)
                guard seen.insert(key).inserted else {
                    throw ParseError(message: "key '\(key)' appears twice in one object", offset: value.offset)
                }
                members.append((key, value))
            }
            return JSONNode(value: .object(members), offset: offset)
        }
    }

    /// Renders `value` as Xcode writes JSON files: two-space indentation, `"key" : value`,
    /// keys sorted (by bytes, so that the order never depends on a locale), and a final newline.
    /// The same value always gives the same bytes.
    static func render(_ value: JSONValue) -> [UInt8] {
        var bytes: [UInt8] = []
        render(value, indent: 0, into: &bytes)
        bytes.append(0x0A)
        return bytes
    }

    private static func render(_ value: JSONValue, indent: Int, into bytes: inout [UInt8]) {
        func newline(_ level: Int) {
            bytes.append(0x0A)
            bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: level * 2))
        }
        var scalar = JSONWriter()
        switch value {
        case .string(let text): scalar.string(text)
        case .integer(let number): scalar.integer(number)
        case .real(let number): scalar.real(number)
        case .boolean(let flag): scalar.boolean(flag)
        case .null: scalar.raw(Array("null".utf8))
        case .array(let items):
            guard !items.isEmpty else { return bytes.append(contentsOf: Array("[]".utf8)) }
            bytes.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                newline(indent + 1)
                render(item.value, indent: indent + 1, into: &bytes)
            }
            newline(indent)
            bytes.append(UInt8(ascii: "]"))
            return
        case .object(let members):
            guard !members.isEmpty else { return bytes.append(contentsOf: Array("{}".utf8)) }
            bytes.append(UInt8(ascii: "{"))
            for (index, member) in members.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }).enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                newline(indent + 1)
                var key = JSONWriter()
                key.string(member.key)
                bytes.append(contentsOf: key.bytes)
                bytes.append(contentsOf: Array(" : ".utf8))
                render(member.value.value, indent: indent + 1, into: &bytes)
            }
            newline(indent)
            bytes.append(UInt8(ascii: "}"))
            return
        }
        bytes.append(contentsOf: scalar.bytes)
    }
}

/// Turns byte offsets into the line and column that compilers print.
struct LineIndex {
    private var lineStarts: [Int] = [0]

    init(_ bytes: [UInt8]) {
        for (offset, byte) in bytes.enumerated() where byte == 0x0A { lineStarts.append(offset + 1) }
    }

    func position(_ offset: Int) -> SourcePosition {
        // The last line starting at or before the offset.
        var low = 0
        var high = lineStarts.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if lineStarts[middle] <= offset { low = middle } else { high = middle - 1 }
        }
        return SourcePosition(line: low + 1, column: offset - lineStarts[low] + 1)
    }
}
