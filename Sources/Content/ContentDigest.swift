import Crypto
import Foundation

/// The SHA-256 of a file's bytes: the name of its blob, the digest a signed URL carries, its ETag and
/// its `Repr-Digest`.
///
/// Written as 64 lower-case hexadecimal digits everywhere a person or a path sees it; only the hex
/// form is accepted when parsing, so that one digest has exactly one spelling (a URL, a path and a
/// cache key never disagree on case).
public struct ContentDigest: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// The 32 bytes.
    public let bytes: [UInt8]

    /// The digest of `bytes`, as computed elsewhere; nil unless it is exactly 32 bytes.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        self.bytes = bytes
    }

    /// The digest written as 64 lower-case hexadecimal digits; nil for anything else (upper case
    /// included).
    public init?(hex: some StringProtocol) {
        let utf8 = Array(hex.utf8)
        guard utf8.count == 64 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        var index = 0
        while index < 64 {
            guard let high = Self.nibble(utf8[index]), let low = Self.nibble(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        self.bytes = bytes
    }

    /// The SHA-256 of `data`.
    public static func of(_ data: some DataProtocol) -> ContentDigest {
        ContentDigest(SHA256.hash(data: data))
    }

    /// The digest a finished SHA-256 computation gave.
    public init(_ digest: SHA256.Digest) {
        self.bytes = Array(digest)
    }

    /// 64 lower-case hexadecimal digits.
    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The strong entity tag of the content: the whole digest, quoted (RFC 9110 §8.8.3). A file's
    /// bytes are its only validator, so two servers (or a CDN and an origin) always agree on it.
    public var entityTag: String { "\"\(hex)\"" }

    /// The `Repr-Digest` field value (RFC 9530 §3): `sha-256=:` base64 of the 32 bytes `:`, a
    /// structured-field dictionary with one byte-sequence member. It is the digest of the whole
    /// representation, so it is the same on a 206 as on a 200.
    public var reprDigestFieldValue: String { "sha-256=:\(Data(bytes).base64EncodedString()):" }

    /// The hex form.
    public var description: String { hex }

    /// Orders digests by their bytes, so that listings are stable.
    public static func < (lhs: ContentDigest, rhs: ContentDigest) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }

    /// Decodes the hex form.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let digest = ContentDigest(hex: text) else {
            throw DecodingError.dataCorruptedError(
                in: container,
                debugDescription: "a SHA-256 must be 64 lower-case hexadecimal digits, not \(text.prefix(80).debugDescription)")
        }
        self = digest
    }

    /// Encodes the hex form.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(hex)
    }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}
