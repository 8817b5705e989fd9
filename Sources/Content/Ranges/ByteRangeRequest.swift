import Foundation

/// One `range-spec` of a `Range: bytes=…` field (RFC 9110 §14.1.1), as the client wrote it.
public enum ByteRangeSpec: Sendable, Hashable {
    /// `first-last`, or `first-` when `last` is nil. Numbers too big for 63 bits are kept as
    /// `Int64.max`: a first byte that far is unsatisfiable, a last byte that far means the end.
    case from(first: Int64, last: Int64?)
    /// `-length`: the last `length` bytes.
    case suffix(length: Int64)
}

/// A satisfiable range of a representation: bytes `first` through `last`, both included.
public struct ByteRange: Sendable, Hashable {
    /// The first byte's offset.
    public var first: Int64
    /// The last byte's offset (included).
    public var last: Int64

    /// Bytes `first` through `last`.
    public init(first: Int64, last: Int64) {
        self.first = first
        self.last = last
    }

    /// How many bytes.
    public var count: Int64 { last - first + 1 }

    /// The `Content-Range` value of this range of a representation of `length` bytes (RFC 9110 §14.4).
    public func contentRange(of length: Int64) -> String { "bytes \(first)-\(last)/\(length)" }
}

/// The `Range` field of a request, parsed (RFC 9110 §14.1, §14.2).
public struct ByteRangeRequest: Sendable, Hashable {
    /// The range-specs, in the order sent.
    public var specs: [ByteRangeSpec]

    /// A request of `specs`.
    public init(specs: [ByteRangeSpec]) { self.specs = specs }

    /// The most bytes of field value read: a longer one is not parsed (and so ignored).
    public static let maximumFieldLength = 1024
    /// The most range-specs read: more is a sign of abuse (RFC 9110 §14.2), and the field is ignored.
    public static let maximumSpecs = 32

    /// The parsed field, or nil when it is to be ignored: another unit than `bytes` (§14.2: "MUST
    /// ignore a Range header field that contains a range unit it does not understand"), any
    /// syntax error or a `last-pos` below its `first-pos` (§14.1.1: an invalid ranges-specifier,
    /// which a server may ignore), an empty range set, or more than the bounds above.
    public init?(_ field: some StringProtocol) {
        let utf8 = Array(field.utf8)
        guard utf8.count <= Self.maximumFieldLength else { return nil }
        var text = utf8[...]
        while let first = text.first, first == 0x20 || first == 0x09 { text.removeFirst() }
        while let last = text.last, last == 0x20 || last == 0x09 { text.removeLast() }
        guard let equals = text.firstIndex(of: UInt8(ascii: "=")) else { return nil }
        // The unit is case-insensitive (§14.1); no whitespace around "=".
        guard String(decoding: text[..<equals], as: UTF8.self).lowercased() == "bytes" else { return nil }

        var specs: [ByteRangeSpec] = []
        // `1#range-spec`: elements split by commas with optional whitespace; empty elements are
        // allowed and skipped (RFC 9110 §5.6.1), but at least one must be there.
        for element in text[text.index(after: equals)...].split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
            var spec = element[...]
            while let first = spec.first, first == 0x20 || first == 0x09 { spec.removeFirst() }
            while let last = spec.last, last == 0x20 || last == 0x09 { spec.removeLast() }
            if spec.isEmpty { continue }
            guard specs.count < Self.maximumSpecs, let parsed = Self.spec(spec) else { return nil }
            specs.append(parsed)
        }
        guard !specs.isEmpty else { return nil }
        self.specs = specs
    }

    /// `first-pos "-" [ last-pos ]` or `"-" suffix-length`, digits only.
    private static func spec(_ bytes: ArraySlice<UInt8>) -> ByteRangeSpec? {
        guard let dash = bytes.firstIndex(of: UInt8(ascii: "-")) else { return nil }
        let before = bytes[..<dash]
        let after = bytes[bytes.index(after: dash)...]
        if before.isEmpty {
            guard let length = number(after) else { return nil }
            return .suffix(length: length)
        }
        guard let first = number(before) else { return nil }
        if after.isEmpty { return .from(first: first, last: nil) }
        guard let last = number(after), last >= first else { return nil }
        return .from(first: first, last: last)
    }

    /// `1*DIGIT`, saturating at `Int64.max` rather than failing: the RFC sets no bound, and a
    /// huge number has an answer (unsatisfiable as a first byte, the end as a last one).
    private static func number(_ digits: ArraySlice<UInt8>) -> Int64? {
        guard !digits.isEmpty else { return nil }
        var value: Int64 = 0
        for digit in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else { return nil }
            let (times, overflowA) = value.multipliedReportingOverflow(by: 10)
            let (plus, overflowB) = times.addingReportingOverflow(Int64(digit - UInt8(ascii: "0")))
            value = overflowA || overflowB ? Int64.max : plus
        }
        return value
    }
}
