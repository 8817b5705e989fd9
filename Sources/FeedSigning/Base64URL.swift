import Foundation

/// Base64url without padding (RFC 7515 §2, RFC 4648 §5): how JWS encodes every part. The one
/// base64url of the project: feed and root signatures, content URL tokens, editor tokens and every
/// App Store JWS (`Purchases`) go through it.
///
/// It works on the bytes: a JWS is decoded on every purchase and notification, and Foundation's string
/// replacing and re-encoding cost more than the ES256 check itself (measured with `scripts/bench-purchases`).
/// Decoding is strict: only the 64 characters, no padding, and no stray bits in the last character, so
/// that one value has one spelling (a signature cannot be respelled into another accepted token).
///
/// Plist `<data>` keeps its own decoder (`PropertyList`'s `Base64`): it is standard base64, `+` and `/`
/// with `=` padding, and whitespace between groups is allowed there; `PropertyList` depends on nothing,
/// and a mode here would put those leniencies one flag away from every signature check.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Each byte's 6-bit value, or 0xFF when it is not a base64url character.
    @usableFromInline static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, character) in alphabet.enumerated() { table[Int(character)] = UInt8(index) }
        return table
    }()

    /// `bytes` in base64url, without padding.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.underestimatedCount * 4 / 3 + 3)
        var buffer: UInt32 = 0
        var bits: UInt32 = 0
        for byte in bytes {
            buffer = (buffer << 8) | UInt32(byte)
            bits += 8
            while bits >= 6 {
                bits -= 6
                output.append(alphabet[Int((buffer >> bits) & 63)])
            }
            buffer &= (1 << bits) - 1
        }
        if bits > 0 { output.append(alphabet[Int((buffer << (6 - bits)) & 63)]) }
        return String(decoding: output, as: UTF8.self)
    }

    /// The bytes `text` encodes, or nil when it is not canonical base64url: other characters,
    /// padding, or stray bits in the last character.
    public static func decode(_ text: some StringProtocol) -> Data? {
        decode(bytes: text.utf8).map { Data($0) }
    }

    /// The bytes `text` (UTF-8) encodes, or nil when it is not canonical unpadded base64url.
    ///
    /// Inlinable so that a caller in another module (Purchases decodes every JWS with it) gets it
    /// specialized for its collection: called through the generic witness tables, one lookup per
    /// character made App Store verification three times slower (`scripts/bench-purchases`: 2,013
    /// tokens a second against 5,999).
    @inlinable
    public static func decode<Bytes: Collection<UInt8>>(bytes text: Bytes) -> [UInt8]? {
        if let decoded = text.withContiguousStorageIfAvailable({ decode(contiguous: $0) }) { return decoded }
        return Array(text).withUnsafeBufferPointer { decode(contiguous: $0) }
    }

    /// ``decode(bytes:)`` over contiguous bytes, four characters to three bytes at a time into an
    /// output sized once: byte by byte, with an append each, it was 2.8% of a stored notification's
    /// CPU (`perf`; a notification's three JWS carry about 20 KiB of base64url).
    @usableFromInline
    static func decode(contiguous text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        let remainder = text.count % 4
        guard remainder != 1 else { return nil }
        let whole = text.count - remainder
        let outputCount = whole / 4 * 3 + (remainder == 0 ? 0 : remainder - 1)
        var valid = true
        let output = values.withUnsafeBufferPointer { table in
            [UInt8](unsafeUninitializedCapacity: outputCount) { buffer, initialized in
                var out = 0
                var index = 0
                // Every value is under 64: any 0xFF among four shows in their OR.
                while index < whole {
                    let a = table[Int(text[index])], b = table[Int(text[index + 1])]
                    let c = table[Int(text[index + 2])], d = table[Int(text[index + 3])]
                    guard (a | b | c | d) & 0xC0 == 0 else {
                        valid = false
                        break
                    }
                    buffer[out] = a << 2 | b >> 4
                    buffer[out + 1] = b << 4 | c >> 2
                    buffer[out + 2] = c << 6 | d
                    out += 3
                    index += 4
                }
                if valid, remainder > 0 {
                    let a = table[Int(text[whole])], b = table[Int(text[whole + 1])]
                    let c = remainder == 3 ? table[Int(text[whole + 2])] : 0
                    // Bits left over must be zero: "AB" and "AC" must not both decode to the same byte.
                    if (a | b | c) & 0xC0 != 0 || (remainder == 2 && b & 0x0F != 0) || (remainder == 3 && c & 0x03 != 0) {
                        valid = false
                    } else {
                        buffer[out] = a << 2 | b >> 4
                        if remainder == 3 { buffer[out + 1] = b << 4 | c >> 2 }
                        out += remainder - 1
                    }
                }
                initialized = valid ? out : 0
            }
        }
        return valid ? output : nil
    }

    /// Whether `byte` is one of base64url's 64 characters.
    public static func isAlphabet(_ byte: UInt8) -> Bool { values[Int(byte)] != 0xFF }
}
