import CatalogKit
import Foundation

/// Decodes the App Store's signed payloads into their `Decodable` models, with Apple's dates
/// (milliseconds since 1970, sometimes fractional), as `JSONDecoder` with `.millisecondsSince1970`
/// does. A payload is read once into a tape of its values, and a model's fields are found there by
/// comparing bytes: Foundation's decoder built a dictionary of every object's keys and allocated a
/// string for each, 13.7% of a verification's CPU, the largest part after the signatures and their
/// digests (docs/benchmarks.md, "A tape decoder for Apple's payloads").
///
/// The JSON is RFC 8259's, strictly: one value, whitespace only around it, UTF-8, escapes and
/// numbers as the grammar spells them, nested at most `JSONScanner.maximumDepth` (32) deep. A key a model
/// reads that appears twice in the same object is refused rather than read one way or the other.
/// Errors are `DecodingError`s with the field's path, as `JSONDecoder`'s are.
enum PayloadDecoder {
    static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        let tape = try JSONTape(bytes)
        return try TapeDecoder(tape: tape, node: 0).value(T.self)
    }
}

/// A JSON document's values in document order, read by CatalogKit's `JSONScanner` (the package's
/// one reader of JSON's grammar): an object or array is followed by its members (an object's as
/// key, value, key, value), and every node knows the index just past its own members, so a value is
/// skipped in one step. Strings are kept as where they are, made only when a model reads them.
final class JSONTape: Sendable {
    enum Kind: UInt8 {
        case object, array, string, escapedString, number, `true`, `false`, null
    }

    struct Node {
        var kind: Kind
        /// A string's characters (without the quotes), a number's text; empty for the others.
        var range: Range<Int>
        /// The index of the node after this value and its members.
        var after: Int
    }

    let bytes: [UInt8]
    let nodes: [Node]

    init(_ bytes: [UInt8]) throws(DecodingError) {
        self.bytes = bytes
        do {
            nodes = try bytes.withUnsafeBufferPointer { buffer in
                // Once over the whole document, so that every string is valid UTF-8; ASCII (Apple's
                // payloads) is told apart by one vectorised pass.
                if buffer.reduce(0, |) & 0x80 != 0, String(validating: buffer, as: UTF8.self) == nil {
                    throw JSONScanner.SyntaxError(message: "the payload is not UTF-8")
                }
                var nodes: [Node] = []
                nodes.reserveCapacity(64)
                var scanner = JSONScanner(buffer)
                try Self.read(&scanner, into: &nodes, depth: 1)
                try scanner.expectEnd()
                return nodes
            }
        } catch let error as JSONScanner.SyntaxError {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: [], debugDescription: "The given data was not valid JSON: \(error.message)."))
        } catch {
            throw DecodingError.dataCorrupted(DecodingError.Context(codingPath: [], debugDescription: "The given data was not valid JSON."))
        }
    }

    /// Appends the value at the scanner, and its members, to `nodes`.
    private static func read(_ scanner: inout JSONScanner, into nodes: inout [Node], depth: Int) throws {
        func append(_ kind: Kind, _ range: Range<Int> = 0..<0) { nodes.append(Node(kind: kind, range: range, after: nodes.count + 1)) }
        func string(_ characters: JSONScanner.StringBytes) { append(characters.escaped ? .escapedString : .string, characters.range) }
        let kind = try scanner.peekKind()
        switch kind {
        case .object, .array:
            // Deeper documents are refused, as the scanner refuses them in values it skips: Apple's
            // payloads are three levels deep.
            let limit = JSONScanner.maximumDepth
            guard depth <= limit else { throw JSONScanner.SyntaxError(message: "values nested more than \(limit) deep") }
            let me = nodes.count
            append(kind == .object ? .object : .array)
            if kind == .object {
                try scanner.readObjectKeys { key, scanner in
                    string(key)
                    try read(&scanner, into: &nodes, depth: depth + 1)
                }
            } else {
                try scanner.readArray { _, scanner in try read(&scanner, into: &nodes, depth: depth + 1) }
            }
            nodes[me].after = nodes.count
        case .string: string(try scanner.readStringBytes())
        case .number:
            let start = scanner.offset
            _ = try scanner.readNumber()
            append(.number, start..<scanner.offset)
        case .boolean: append(try scanner.readBoolean() ? .true : .false)
        case .null:
            try scanner.readNull()
            append(.null)
        }
    }

    /// The string at `node`, its escapes decoded.
    func string(at node: Int) -> String {
        let found = nodes[node]
        return bytes.withUnsafeBufferPointer { bytes in
            guard found.kind == .escapedString else {
                return String(decoding: UnsafeBufferPointer(rebasing: bytes[found.range]), as: UTF8.self)
            }
            // Checked by the scanner when the tape was read: decoding it again cannot fail.
            return (try? JSONScanner(bytes).string(at: .init(range: found.range, escaped: true))) ?? ""
        }
    }

    /// Whether the string at `node` is `name`.
    func string(at node: Int, is name: inout String) -> Bool {
        let found = nodes[node]
        guard found.kind == .string else { return string(at: node) == name }
        return name.withUTF8 { name in
            name.count == found.range.count
                && (name.isEmpty
                    || bytes.withUnsafeBufferPointer {
                        memcmp($0.baseAddress! + found.range.lowerBound, name.baseAddress!, name.count) == 0
                    })
        }
    }

    /// The number at `node` as written: digits only (an optional minus), or with a fraction or exponent.
    func numberText(at node: Int) -> (text: ArraySlice<UInt8>, integral: Bool) {
        let text = bytes[nodes[node].range]
        return (text, !text.contains { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "e") })
    }
}

/// One value of a tape, read as a `Decoder`. Its `codingPath` is empty: a failure's path is
/// built as the error passes up through the containers, which costs nothing when nothing fails.
struct TapeDecoder: Decoder {
    let tape: JSONTape
    let node: Int
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard tape.nodes[node].kind == .object else { throw mismatch([String: Any].self) }
        return KeyedDecodingContainer(TapeObject<Key>(tape: tape, node: node))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard tape.nodes[node].kind == .array else { throw mismatch([Any].self) }
        return TapeArray(tape: tape, node: node)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    private var kind: JSONTape.Kind { tape.nodes[node].kind }

    private func mismatch(_ type: Any.Type) -> DecodingError {
        let found: String
        switch kind {
        case .object: found = "a dictionary"
        case .array: found = "an array"
        case .string, .escapedString: found = "a string"
        case .number: found = "a number"
        case .true, .false: found = "bool"
        case .null: found = "null"
        }
        let context = DecodingError.Context(codingPath: [], debugDescription: "Expected to decode \(type) but found \(found) instead.")
        return kind == .null ? .valueNotFound(type, context) : .typeMismatch(type, context)
    }

    private func corrupted(_ description: String) -> DecodingError {
        .dataCorrupted(DecodingError.Context(codingPath: [], debugDescription: description))
    }

    /// The value as `T`: strings and dates directly, anything else by its own `init(from:)`.
    func value<T: Decodable>(_ type: T.Type) throws -> T {
        if T.self == String.self { return try decode(String.self) as! T }
        if T.self == Date.self { return try date() as! T }
        return try T(from: self)
    }

    /// Apple's dates: milliseconds since 1970, as `JSONDecoder.DateDecodingStrategy.millisecondsSince1970` reads them.
    private func date() throws -> Date {
        Date(timeIntervalSince1970: try decode(Double.self) / 1000)
    }

    private func integer<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
        guard kind == .number else { throw mismatch(type) }
        let (text, integral) = tape.numberText(at: node)
        if integral {
            let negative = text.first == UInt8(ascii: "-")
            var value: I = 0
            for digit in text.dropFirst(negative ? 1 : 0) {
                let (times, overflow) = value.multipliedReportingOverflow(by: 10)
                let digit = I(digit - UInt8(ascii: "0"))
                let (sum, overflow2) = negative ? times.subtractingReportingOverflow(digit) : times.addingReportingOverflow(digit)
                guard !overflow, !overflow2 else {
                    throw corrupted("Number \(String(decoding: text, as: UTF8.self)) is not representable in Swift.")
                }
                value = sum
            }
            return value
        }
        // As `JSONDecoder`: a fraction or exponent is read if the number is a whole one in range.
        guard let double = Double(String(decoding: text, as: UTF8.self)), let value = I(exactly: double) else {
            throw corrupted("Number \(String(decoding: text, as: UTF8.self)) is not representable in Swift.")
        }
        return value
    }
}

extension TapeDecoder: SingleValueDecodingContainer {
    func decodeNil() -> Bool { kind == .null }

    func decode(_ type: Bool.Type) throws -> Bool {
        switch kind {
        case .true: return true
        case .false: return false
        default: throw mismatch(type)
        }
    }

    func decode(_ type: String.Type) throws -> String {
        guard kind == .string || kind == .escapedString else { throw mismatch(type) }
        return tape.string(at: node)
    }

    func decode(_ type: Double.Type) throws -> Double {
        guard kind == .number else { throw mismatch(type) }
        let (text, integral) = tape.numberText(at: node)
        // Apple's dates are whole milliseconds: read without a string, exactly, below 2^53.
        if integral, text.count <= 15 { return Double(try integer(Int64.self)) }
        guard let value = Double(String(decoding: text, as: UTF8.self)), value.isFinite else {
            throw corrupted("Number \(String(decoding: text, as: UTF8.self)) is not representable in Swift.")
        }
        return value
    }

    func decode(_ type: Float.Type) throws -> Float {
        let double = try decode(Double.self)
        guard abs(double) <= Double(Float.greatestFiniteMagnitude) else {
            throw corrupted("Number \(double) is not representable in Swift.")
        }
        return Float(double)
    }

    func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try value(type) }
}

extension DecodingError {
    /// The same error with `key` in front of its path: how a failure inside a member names the member.
    func within(_ key: any CodingKey) -> DecodingError {
        func moved(_ context: Context) -> Context {
            Context(
                codingPath: [key] + context.codingPath, debugDescription: context.debugDescription, underlyingError: context.underlyingError
            )
        }
        switch self {
        case .typeMismatch(let type, let context): return .typeMismatch(type, moved(context))
        case .valueNotFound(let type, let context): return .valueNotFound(type, moved(context))
        case .keyNotFound(let missing, let context): return .keyNotFound(missing, moved(context))
        case .dataCorrupted(let context): return .dataCorrupted(moved(context))
        @unknown default: return self
        }
    }
}

/// The index of an array member, as a coding key.
private struct MemberIndex: CodingKey {
    var intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}

/// An object of a tape, its members found by comparing their keys' bytes.
private struct TapeObject<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let tape: JSONTape
    let node: Int
    var codingPath: [any CodingKey] { [] }

    /// Calls `body` with each key's node; the value's is the next.
    private func forEachKey(_ body: (Int) throws -> Void) rethrows {
        var key = node + 1
        while key < tape.nodes[node].after {
            try body(key)
            key = tape.nodes[key + 1].after
        }
    }

    var allKeys: [Key] {
        var keys: [Key] = []
        forEachKey { node in
            if let key = Key(stringValue: tape.string(at: node)) { keys.append(key) }
        }
        return keys
    }

    /// The value's node for `key`; nil when the object has none. A key found twice is refused.
    private func member(_ key: Key) throws -> Int? {
        var name = key.stringValue
        var found: Int?
        try forEachKey { keyNode in
            guard tape.string(at: keyNode, is: &name) else { return }
            guard found == nil else {
                throw DecodingError.dataCorrupted(
                    DecodingError.Context(codingPath: [key], debugDescription: "The key appears twice in the object."))
            }
            found = keyNode + 1
        }
        return found
    }

    private func required(_ key: Key) throws -> TapeDecoder {
        guard let found = try member(key) else {
            throw DecodingError.keyNotFound(
                key, DecodingError.Context(codingPath: [], debugDescription: "No value associated with key \(key.stringValue)."))
        }
        return TapeDecoder(tape: tape, node: found)
    }

    /// `read` on the member's value, a failure named by `key`.
    private func read<T>(_ key: Key, _ read: (TapeDecoder) throws -> T) throws -> T {
        let member = try required(key)
        do { return try read(member) } catch let error as DecodingError { throw error.within(key) }
    }

    /// `read` on the member's value, nil when it is absent or null.
    private func readIfPresent<T>(_ key: Key, _ read: (TapeDecoder) throws -> T) throws -> T? {
        guard let found = try member(key), tape.nodes[found].kind != .null else { return nil }
        do { return try read(TapeDecoder(tape: tape, node: found)) } catch let error as DecodingError { throw error.within(key) }
    }

    func contains(_ key: Key) -> Bool { (try? member(key)) != nil }
    func decodeNil(forKey key: Key) throws -> Bool { try read(key) { $0.decodeNil() } }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try read(key) { try $0.decode(type) } }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try read(key) { try $0.decode(type) } }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try read(key) { try $0.decode(type) } }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try read(key) { try $0.decode(type) } }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try read(key) { try $0.decode(type) } }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try read(key) { try $0.decode(type) } }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try read(key) { try $0.decode(type) } }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try read(key) { try $0.decode(type) } }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try read(key) { try $0.decode(type) } }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try read(key) { try $0.decode(type) } }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try read(key) { try $0.decode(type) } }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try read(key) { try $0.decode(type) } }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try read(key) { try $0.decode(type) } }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try read(key) { try $0.decode(type) } }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try read(key) { try $0.value(type) } }

    // One lookup for an optional field, where the protocol's defaults make two.
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try readIfPresent(key) { try $0.decode(type) } }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try readIfPresent(key) { try $0.decode(type) } }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try readIfPresent(key) { try $0.decode(type) } }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try readIfPresent(key) { try $0.decode(type) } }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try readIfPresent(key) { try $0.decode(type) } }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        try readIfPresent(key) { try $0.value(type) }
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try read(key) { try $0.container(keyedBy: type) }
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try read(key) { try $0.unkeyedContainer() }
    }

    func superDecoder() throws -> any Decoder { TapeDecoder(tape: tape, node: node) }
    func superDecoder(forKey key: Key) throws -> any Decoder { try required(key) }
}

/// An array of a tape, read in order.
private struct TapeArray: UnkeyedDecodingContainer {
    let tape: JSONTape
    let node: Int
    var codingPath: [any CodingKey] { [] }
    private(set) var currentIndex = 0
    /// The next member's node.
    private var next: Int

    init(tape: JSONTape, node: Int) {
        self.tape = tape
        self.node = node
        next = node + 1
    }

    var count: Int? {
        var count = 0
        var member = node + 1
        while member < tape.nodes[node].after {
            count += 1
            member = tape.nodes[member].after
        }
        return count
    }

    var isAtEnd: Bool { next >= tape.nodes[node].after }

    /// `read` on the next member, which it then steps past.
    private mutating func read<T>(_ read: (TapeDecoder) throws -> T) throws -> T {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                T.self, DecodingError.Context(codingPath: [MemberIndex(currentIndex)], debugDescription: "Unkeyed container is at end."))
        }
        let value: T
        do { value = try read(TapeDecoder(tape: tape, node: next)) } catch let error as DecodingError {
            throw error.within(MemberIndex(currentIndex))
        }
        next = tape.nodes[next].after
        currentIndex += 1
        return value
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, tape.nodes[next].kind == .null else { return false }
        next = tape.nodes[next].after
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try read { try $0.decode(type) } }
    mutating func decode(_ type: String.Type) throws -> String { try read { try $0.decode(type) } }
    mutating func decode(_ type: Double.Type) throws -> Double { try read { try $0.decode(type) } }
    mutating func decode(_ type: Float.Type) throws -> Float { try read { try $0.decode(type) } }
    mutating func decode(_ type: Int.Type) throws -> Int { try read { try $0.decode(type) } }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try read { try $0.decode(type) } }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try read { try $0.decode(type) } }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try read { try $0.decode(type) } }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try read { try $0.decode(type) } }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try read { try $0.decode(type) } }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try read { try $0.decode(type) } }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try read { try $0.decode(type) } }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try read { try $0.decode(type) } }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try read { try $0.decode(type) } }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try read { try $0.value(type) } }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try read { try $0.container(keyedBy: type) }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try read { try $0.unkeyedContainer() } }
    mutating func superDecoder() throws -> any Decoder { try read { $0 } }
}
