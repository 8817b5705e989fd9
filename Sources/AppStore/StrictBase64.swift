import Ledger

/// Standard base64 (RFC 4648 §4) read strictly: only its 64 characters, a length that is a multiple
/// of 4, `=` only as the last one or two characters, and the bits that padding leaves over set to
/// zero. Every byte string then has exactly one spelling.
///
/// Foundation's `Data(base64Encoded:)` also reads extra padding (`…====`) and other values in the
/// left-over bits, so one certificate in `x5c` had many spellings, and the verified-chain cache, keyed
/// by the text, took each as another chain (issue 35).
enum StrictBase64 {
    /// The bytes `text` spells, or nil when it is not canonical standard base64.
    static func decode(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { decode(bytes: $0) }
    }

    static func decode(bytes: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard !bytes.isEmpty, bytes.count % 4 == 0 else { return nil }
        let padding = bytes[bytes.count - 1] != UInt8(ascii: "=") ? 0 : bytes[bytes.count - 2] != UInt8(ascii: "=") ? 1 : 2
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count / 4 * 3 - padding)
        var index = 0
        while index < bytes.count {
            let last = index + 4 == bytes.count
            let present = last ? 4 - padding : 4
            var group: UInt32 = 0
            for offset in 0..<4 {
                let value: UInt8
                if offset < present {
                    value = table[Int(bytes[index + offset])]
                    guard value < 64 else { return nil }
                } else {
                    value = 0
                }
                group = group << 6 | UInt32(value)
            }
            output.append(UInt8(truncatingIfNeeded: group >> 16))
            if present > 2 { output.append(UInt8(truncatingIfNeeded: group >> 8)) }
            if present > 3 { output.append(UInt8(truncatingIfNeeded: group)) }
            // The bits the padding leaves over must be zero: otherwise the same bytes have other spellings.
            if present == 3, group & 0xFF != 0 { return nil }
            if present == 2, group & 0xFFFF != 0 { return nil }
            index += 4
        }
        return output
    }

    /// Each byte's value in the alphabet, 255 for a byte outside it (`=` included: padding is read apart).
    private static let table: [UInt8] = {
        var table = [UInt8](repeating: 255, count: 256)
        for (value, character) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8.enumerated() {
            table[Int(character)] = UInt8(value)
        }
        return table
    }()
}
