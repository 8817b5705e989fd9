/// Base64url without padding (RFC 7515 §2), decoded byte by byte.
///
/// A JWS is decoded on every purchase and notification, so this avoids Foundation's string
/// replacing and re-encoding, which cost more than the ES256 check itself (measured with
/// `scripts/bench-purchases`). It is strict: only the 64 characters, no padding, and no stray bits in
/// the last character, so that one value has one spelling.
enum Base64URLBytes {
    /// Each byte's 6-bit value, or 0xFF when it is not a base64url character.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, character) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8.enumerated() {
            table[Int(character)] = UInt8(index)
        }
        return table
    }()

    /// The bytes `text` encodes, or nil when it is not canonical unpadded base64url.
    static func decode<Bytes: Collection<UInt8>>(_ text: Bytes) -> [UInt8]? {
        let remainder = text.count % 4
        guard remainder != 1 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(text.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits: UInt32 = 0
        var last: UInt8 = 0
        // One table lookup per character, without bounds checks: the index is a byte, the table 256 long.
        let valid = values.withUnsafeBufferPointer { table in
            for character in text {
                let value = table[Int(character)]
                guard value != 0xFF else { return false }
                accumulator = (accumulator << 6) | UInt32(value)
                bits += 6
                if bits >= 8 {
                    bits -= 8
                    output.append(UInt8(truncatingIfNeeded: accumulator >> bits))
                }
                last = value
            }
            return true
        }
        guard valid else { return nil }
        // Bits left over must be zero: "AB" and "AC" must not both decode to the same byte.
        if remainder == 2, last & 0x0F != 0 { return nil }
        if remainder == 3, last & 0x03 != 0 { return nil }
        return output
    }
}

/// ASCII whitespace trimmed from both ends of a byte string, without going through Foundation.
func trimmingASCIIWhitespace<Bytes: BidirectionalCollection<UInt8>>(_ bytes: Bytes) -> Bytes.SubSequence {
    let isSpace = { (byte: UInt8) in byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 }
    guard let start = bytes.firstIndex(where: { !isSpace($0) }), let end = bytes.lastIndex(where: { !isSpace($0) }) else {
        return bytes[bytes.endIndex..<bytes.endIndex]
    }
    return bytes[start...end]
}
