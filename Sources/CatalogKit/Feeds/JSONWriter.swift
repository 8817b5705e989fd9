/// Writes compact JSON bytes directly, with keys in the order they are written.
///
/// Feeds are byte-for-byte reproducible artefacts (their ETag is a hash of their bytes),
/// so their encoding is spelled out here rather than left to an encoder's choices (Foundation's
/// `JSONEncoder` on Linux, for one, writes an object's keys in no fixed order). The server's other
/// JSON answers are `Codable` values, encoded with sorted keys (`ServiceJSON` in CatalogServer), except
/// on the report path, where `JSONEncoder` measured slower (docs/benchmarks.md, "JSON on the report path").
/// Commas are inserted automatically between values and between key/value pairs.
public struct JSONWriter: Sendable {
    /// The JSON written so far.
    public private(set) var bytes: [UInt8] = []
    private var needsComma = false

    /// An empty writer with room for `capacity` bytes.
    public init(capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    /// A writer that goes on after `bytes`, taken without a copy (``takeBytes()`` hands them
    /// back): many values written into one buffer, with no buffer of their own each.
    public init(continuing bytes: inout [UInt8]) {
        swap(&self.bytes, &bytes)
    }

    /// The bytes written, taken without a copy; the writer is left empty.
    public mutating func takeBytes() -> [UInt8] {
        var taken: [UInt8] = []
        swap(&taken, &bytes)
        needsComma = false
        return taken
    }

    /// Ends a line (JSON Lines): the next value starts the next line, with no comma before it.
    public mutating func newline() {
        bytes.append(0x0A)
        needsComma = false
    }

    /// The bytes in an array of their own size, for values kept for long: `bytes` keeps the
    /// writer's spare capacity, which over every product of a big catalog is tens of megabytes.
    public var compactBytes: [UInt8] {
        bytes.withUnsafeBufferPointer { Array($0) }
    }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        needsComma = true
    }

    /// Writes `{`; members follow as ``key(_:)`` and value pairs.
    public mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
    }

    /// Writes `}`.
    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    /// Writes `[`; elements follow.
    public mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
    }

    /// Writes `]`.
    public mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// Writes an object key; the next call writes its value.
    public mutating func key(_ key: String) {
        Self.withUTF8(key) { self.key(utf8: $0) }
    }

    /// Writes `value` as a JSON string, escaping quotes, backslashes and control characters.
    public mutating func string(_ value: String) {
        Self.withUTF8(value) { string(utf8: $0) }
    }

    /// The string's UTF-8 bytes in place, where it keeps them contiguous (native strings do):
    /// `withUTF8` needs a copy of its own, a retain and a release for every string of every product
    /// that a build encodes (docs/benchmarks.md, "The rebuild's memory").
    private static func withUTF8(_ text: String, _ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        if text.utf8.withContiguousStorageIfAvailable(body) == nil {
            var text = text
            text.withUTF8(body)
        }
    }

    /// ``key(_:)`` for text already in UTF-8 bytes.
    public mutating func key(utf8 key: UnsafeBufferPointer<UInt8>) {
        separate()
        appendQuoted(key)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    /// ``string(_:)`` for text already in UTF-8 bytes.
    public mutating func string(utf8 value: UnsafeBufferPointer<UInt8>) {
        separate()
        appendQuoted(value)
    }

    /// Writes `value` as a JSON integer.
    public mutating func integer(_ value: Int64) {
        separate()
        bytes.append(contentsOf: String(value).utf8)
    }

    /// A finite number in Swift's shortest round-tripping form, which is valid JSON.
    public mutating func real(_ value: Double) {
        separate()
        bytes.append(contentsOf: value.description.utf8)
    }

    /// Writes `true` or `false`.
    public mutating func boolean(_ value: Bool) {
        separate()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    /// Writes `null`.
    public mutating func null() {
        raw("null".utf8)
    }

    /// Inserts bytes that already are one complete JSON value.
    public mutating func raw(_ json: some Collection<UInt8>) {
        separate()
        bytes.append(contentsOf: json)
    }

    private mutating func appendQuoted(_ text: UnsafeBufferPointer<UInt8>) {
        bytes.append(UInt8(ascii: "\""))
        // Most strings (identifiers, enum values, dates) need no escape: then one copy, not
        // one append per byte, which was a fair part of encoding every product of a big catalog.
        // Scanned as a plain buffer: the String view's iterator cost more than the scan.
        let needsEscape = text.contains { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }
        if !needsEscape {
            bytes.append(contentsOf: text)
            bytes.append(UInt8(ascii: "\""))
            return
        }
        for byte in text {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            // JSON's two other short escapes, as Foundation writes them (purchase records keep its bytes).
            case 0x08: bytes.append(contentsOf: [0x5C, UInt8(ascii: "b")])
            case 0x0C: bytes.append(contentsOf: [0x5C, UInt8(ascii: "f")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 15)]])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
