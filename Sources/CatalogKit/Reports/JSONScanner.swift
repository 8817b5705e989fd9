import Foundation

/// A strict JSON reader (RFC 8259) over bytes, for report bodies, editors' JSON and the App Store's
/// payloads (``AppStore/PayloadDecoder``): the caller walks the one object it expects and reads each
/// member as the type it wants, so that a body becomes a value without an intermediate tree, and
/// every mistake can be named by its member. The one place this package reads JSON's grammar.
package struct JSONScanner: ~Copyable {
    private let bytes: UnsafeBufferPointer<UInt8>
    package private(set) var offset: Int
    /// Nesting allowed in skipped values (members this version does not know).
    package static let maximumDepth = 32

    /// A reader of `bytes` from `offset`.
    package init(_ bytes: UnsafeBufferPointer<UInt8>, at offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    /// What the next value is, from its first byte.
    package enum Kind: Equatable {
        case object, array, string, number, boolean, null
    }

    /// What is wrong with the JSON, and where.
    package struct SyntaxError: Error {
        package let message: String

        package init(message: String) { self.message = message }
    }

    /// Skips whitespace; the kind of value that starts here, or a syntax error.
    package mutating func peekKind() throws(SyntaxError) -> Kind {
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
    package mutating func readObject(_ member: (String, inout JSONScanner) throws -> Void) throws {
        try readObjectKeys { key, scanner in try member(try scanner.string(at: key), &scanner) }
    }

    /// ``readObject(_:)`` with each key as where it is (``readStringBytes()``), no string made.
    package mutating func readObjectKeys(_ member: (_ key: StringBytes, inout JSONScanner) throws -> Void) throws {
        try expect(UInt8(ascii: "{"))
        skipWhitespace()
        if consume(UInt8(ascii: "}")) { return }
        repeat {
            skipWhitespace()
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else { throw unexpected() }
            let key = try readStringBytes()
            skipWhitespace()
            try expect(UInt8(ascii: ":"))
            try member(key, &self)
            skipWhitespace()
        } while consume(UInt8(ascii: ","))
        try expect(UInt8(ascii: "}"))
    }

    /// Reads `[`, then calls `element` with each index, positioned at its value; then `]`.
    package mutating func readArray(_ element: (Int, inout JSONScanner) throws -> Void) throws {
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
    package mutating func readString() throws(SyntaxError) -> String {
        try string(at: readStringBytes())
    }

    /// Where a string's characters are (its quotes left out), and whether any is escaped.
    package struct StringBytes: Sendable {
        package var range: Range<Int>
        package var escaped: Bool

        package init(range: Range<Int>, escaped: Bool) {
            self.range = range
            self.escaped = escaped
        }
    }

    /// A string value's characters, checked (escapes, surrogates, control characters) but not
    /// decoded, nor checked as UTF-8. The closing quote is found by `memchr`; without a backslash
    /// before it, the characters are only checked for control characters, by a minimum that the
    /// compiler vectorises: the App Store's notifications carry 9 KiB strings.
    package mutating func readStringBytes() throws(SyntaxError) -> StringBytes {
        try expect(UInt8(ascii: "\""))
        let start = offset
        let base = bytes.baseAddress!
        guard let quote = memchr(base + offset, Int32(UInt8(ascii: "\"")), bytes.count - offset) else {
            throw error("it ends inside a string")
        }
        let end = UnsafeRawPointer(quote) - UnsafeRawPointer(base)
        if memchr(base + offset, Int32(UInt8(ascii: "\\")), end - offset) == nil {
            guard UnsafeBufferPointer(rebasing: bytes[offset..<end]).reduce(UInt8.max, min) >= 0x20 else {
                while bytes[offset] >= 0x20 { offset += 1 }
                throw error("a control character inside a string at byte \(offset)")
            }
            offset = end + 1
            return StringBytes(range: start..<end, escaped: false)
        }
        var ignored: [UInt8] = []
        while true {
            guard offset < bytes.count else { throw error("it ends inside a string") }
            let byte = bytes[offset]
            offset += 1
            switch byte {
            case UInt8(ascii: "\""):
                return StringBytes(range: start..<offset - 1, escaped: true)
            case UInt8(ascii: "\\"):
                try readEscape(into: &ignored)
                ignored.removeAll(keepingCapacity: true)
            case 0..<0x20:
                offset -= 1
                throw error("a control character inside a string at byte \(offset)")
            default:
                break
            }
        }
    }

    /// The string whose characters are `characters` (read by ``readStringBytes()``), escapes
    /// resolved; invalid UTF-8 is a syntax error.
    package func string(at characters: StringBytes) throws(SyntaxError) -> String {
        let text: String?
        if characters.escaped {
            var decoded: [UInt8] = []
            decoded.reserveCapacity(characters.range.count)
            var scanner = JSONScanner(bytes, at: characters.range.lowerBound)
            while scanner.offset < characters.range.upperBound {
                let byte = bytes[scanner.offset]
                scanner.offset += 1
                if byte == UInt8(ascii: "\\") { try scanner.readEscape(into: &decoded) } else { decoded.append(byte) }
            }
            text = String(validating: decoded, as: UTF8.self)
        } else {
            text = String(validating: UnsafeBufferPointer(rebasing: bytes[characters.range]), as: UTF8.self)
        }
        guard let text else { throw error("invalid UTF-8 in a string at byte \(characters.range.lowerBound)") }
        return text
    }

    /// A number value's text, checked against JSON's grammar.
    package mutating func readNumber() throws(SyntaxError) -> Substring {
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
    package mutating func skipValue(depth: Int = 0) throws {
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

    package mutating func readBoolean() throws(SyntaxError) -> Bool {
        let value = offset < bytes.count && bytes[offset] == UInt8(ascii: "t")
        try expectWord(value ? "true" : "false")
        return value
    }

    package mutating func readNull() throws(SyntaxError) {
        try expectWord("null")
    }

    /// After the value: only whitespace may follow.
    package mutating func expectEnd() throws(SyntaxError) {
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
