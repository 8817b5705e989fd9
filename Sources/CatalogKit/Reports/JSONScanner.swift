/// A strict JSON reader (RFC 8259) over bytes, for report bodies: the caller walks the one
/// object it expects and reads each member as the type it wants, so that a body becomes a report
/// without an intermediate tree, and every mistake can be named by its member.
struct JSONScanner: ~Copyable {
    private let bytes: UnsafeBufferPointer<UInt8>
    private(set) var offset = 0
    /// Nesting allowed in skipped values (members this version does not know).
    static let maximumDepth = 32

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// What the next value is, from its first byte.
    enum Kind: Equatable {
        case object, array, string, number, boolean, null
    }

    struct SyntaxError: Error {
        let message: String
    }

    /// Skips whitespace; the kind of value that starts here, or a syntax error.
    mutating func peekKind() throws(SyntaxError) -> Kind {
        skipWhitespace()
        guard offset < bytes.count else { throw error("it ends where a value was expected") }
        switch bytes[offset] {
        case UInt8(ascii: "{"): return .object
        case UInt8(ascii: "["): return .array
        case UInt8(ascii: "\""): return .string
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return .boolean
        case UInt8(ascii: "n"): return .null
        default: throw unexpected()
        }
    }

    /// Reads `{`, then calls `member` with each key, positioned at its value, which `member`
    /// must read or skip; then `}`.
    mutating func readObject(_ member: (String, inout JSONScanner) throws -> Void) throws {
        try expect(UInt8(ascii: "{"))
        skipWhitespace()
        if consume(UInt8(ascii: "}")) { return }
        repeat {
            skipWhitespace()
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else { throw unexpected() }
            let key = try readString()
            skipWhitespace()
            try expect(UInt8(ascii: ":"))
            try member(key, &self)
            skipWhitespace()
        } while consume(UInt8(ascii: ","))
        try expect(UInt8(ascii: "}"))
    }

    /// Reads `[`, then calls `element` with each index, positioned at its value; then `]`.
    mutating func readArray(_ element: (Int, inout JSONScanner) throws -> Void) throws {
        try expect(UInt8(ascii: "["))
        skipWhitespace()
        if consume(UInt8(ascii: "]")) { return }
        var index = 0
        repeat {
            try element(index, &self)
            index += 1
            skipWhitespace()
        } while consume(UInt8(ascii: ","))
        try expect(UInt8(ascii: "]"))
    }

    /// A string value, escapes resolved; invalid UTF-8, raw control characters and lone
    /// surrogates are syntax errors.
    mutating func readString() throws(SyntaxError) -> String {
        try expect(UInt8(ascii: "\""))
        let start = offset
        // Most strings have no escapes: one pass to find the end, then one copy.
        while offset < bytes.count, bytes[offset] != UInt8(ascii: "\""), bytes[offset] != UInt8(ascii: "\\"), bytes[offset] >= 0x20 {
            offset += 1
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") {
            offset += 1
            guard let text = String(validating: UnsafeBufferPointer(rebasing: bytes[start..<offset - 1]), as: UTF8.self) else {
                throw error("invalid UTF-8 in a string at byte \(start)")
            }
            return text
        }
        var decoded = Array(bytes[start..<offset])
        while true {
            guard offset < bytes.count else { throw error("it ends inside a string") }
            let byte = bytes[offset]
            offset += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard let text = String(validating: decoded, as: UTF8.self) else {
                    throw error("invalid UTF-8 in a string at byte \(start)")
                }
                return text
            case UInt8(ascii: "\\"):
                try readEscape(into: &decoded)
            case 0..<0x20:
                offset -= 1
                throw error("a control character inside a string at byte \(offset)")
            default:
                decoded.append(byte)
            }
        }
    }

    /// A number value's text, checked against JSON's grammar.
    mutating func readNumber() throws(SyntaxError) -> Substring {
        let start = offset
        _ = consume(UInt8(ascii: "-"))
        if consume(UInt8(ascii: "0")) {
            // No leading zeros: `01` is not JSON.
            if consumeDigits() > 0 { throw error("a number with a leading zero at byte \(start)") }
        } else {
            guard consumeDigits() > 0 else { throw unexpected() }
        }
        if consume(UInt8(ascii: ".")) { guard consumeDigits() > 0 else { throw unexpected() } }
        if consume(UInt8(ascii: "e")) || consume(UInt8(ascii: "E")) {
            _ = consume(UInt8(ascii: "+")) || consume(UInt8(ascii: "-"))
            guard consumeDigits() > 0 else { throw unexpected() }
        }
        return Substring(decoding: UnsafeBufferPointer(rebasing: bytes[start..<offset]), as: UTF8.self)
    }

    /// Reads and drops any value, nested at most `maximumDepth` deep.
    mutating func skipValue(depth: Int = 0) throws {
        guard depth < Self.maximumDepth else { throw error("values nested more than \(Self.maximumDepth) deep") }
        switch try peekKind() {
        case .object: try readObject { _, scanner in try scanner.skipValue(depth: depth + 1) }
        case .array: try readArray { _, scanner in try scanner.skipValue(depth: depth + 1) }
        case .string: _ = try readString()
        case .number: _ = try readNumber()
        case .boolean: _ = try readBoolean()
        case .null: try readNull()
        }
    }

    mutating func readBoolean() throws(SyntaxError) -> Bool {
        let value = offset < bytes.count && bytes[offset] == UInt8(ascii: "t")
        try expectWord(value ? "true" : "false")
        return value
    }

    mutating func readNull() throws(SyntaxError) {
        try expectWord("null")
    }

    /// After the value: only whitespace may follow.
    mutating func expectEnd() throws(SyntaxError) {
        skipWhitespace()
        guard offset == bytes.count else { throw unexpected() }
    }

    // MARK: - Bytes

    private mutating func readEscape(into decoded: inout [UInt8]) throws(SyntaxError) {
        let backslash = offset - 1
        guard offset < bytes.count else { throw error("it ends inside a string") }
        let byte = bytes[offset]
        offset += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(byte)
        case UInt8(ascii: "b"): decoded.append(0x08)
        case UInt8(ascii: "f"): decoded.append(0x0C)
        case UInt8(ascii: "n"): decoded.append(0x0A)
        case UInt8(ascii: "r"): decoded.append(0x0D)
        case UInt8(ascii: "t"): decoded.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try readHex4()
            if (0xD800..<0xDC00).contains(scalar) {
                // A high surrogate must be followed by an escaped low one.
                guard consume(UInt8(ascii: "\\")), consume(UInt8(ascii: "u")) else {
                    throw error("a lone surrogate in a string at byte \(backslash)")
                }
                let low = try readHex4()
                guard (0xDC00..<0xE000).contains(low) else { throw error("a lone surrogate in a string at byte \(backslash)") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00..<0xE000).contains(scalar) {
                throw error("a lone surrogate in a string at byte \(backslash)")
            }
            decoded.append(contentsOf: String(Character(Unicode.Scalar(scalar)!)).utf8)
        default:
            offset -= 1
            throw unexpected()
        }
    }

    private mutating func readHex4() throws(SyntaxError) -> UInt32 {
        guard offset + 4 <= bytes.count else { throw error("it ends inside a string") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[offset]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw unexpected()
            }
            value = value << 4 | UInt32(digit)
            offset += 1
        }
        return value
    }

    private mutating func consumeDigits() -> Int {
        let start = offset
        while offset < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[offset]) { offset += 1 }
        return offset - start
    }

    private mutating func expectWord(_ word: StaticString) throws(SyntaxError) {
        for byte in UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount) {
            guard offset < bytes.count, bytes[offset] == byte else { throw unexpected() }
            offset += 1
        }
    }

    private mutating func expect(_ byte: UInt8) throws(SyntaxError) {
        guard consume(byte) else { throw unexpected() }
    }

    private mutating func consume(_ byte: UInt8) -> Bool {
        guard offset < bytes.count, bytes[offset] == byte else { return false }
        offset += 1
        return true
    }

    private mutating func skipWhitespace() {
        while offset < bytes.count {
            switch bytes[offset] {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): offset += 1
            default: return
            }
        }
    }

    private func unexpected() -> SyntaxError {
        guard offset < bytes.count else { return error("it ends too early") }
        let byte = bytes[offset]
        let shown = (0x21..<0x7F).contains(byte) ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
        return error("unexpected \(shown) at byte \(offset)")
    }

    private func error(_ message: String) -> SyntaxError {
        SyntaxError(message: message)
    }
}
