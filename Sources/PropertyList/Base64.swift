/// Base64 as plist `<data>` holds it. Decoding is strict: whitespace between groups is
/// allowed, anything else outside the alphabet, or misplaced padding, is an error.
public enum Base64 {
    /// Standard base64 with padding and no line breaks.
    public static func encode(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            let b0 = UInt32(chunk[chunk.startIndex])
            let b1 = chunk.count > 1 ? UInt32(chunk[chunk.startIndex + 1]) : 0
            let b2 = chunk.count > 2 ? UInt32(chunk[chunk.startIndex + 2]) : 0
            let triple = b0 << 16 | b1 << 8 | b2
            output.append(alphabet[Int(triple >> 18 & 63)])
            output.append(alphabet[Int(triple >> 12 & 63)])
            output.append(chunk.count > 1 ? alphabet[Int(triple >> 6 & 63)] : UInt8(ascii: "="))
            output.append(chunk.count > 2 ? alphabet[Int(triple & 63)] : UInt8(ascii: "="))
            index += 3
        }
        return String(decoding: output, as: UTF8.self)
    }

    static func decode(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var output: [UInt8] = []
        output.reserveCapacity(text.count * 3 / 4)
        var quad: UInt32 = 0
        var count = 0
        var padding = 0
        for byte in text {
            let value: UInt32
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(byte - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(byte - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(byte - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "+"): value = 62
            case UInt8(ascii: "/"): value = 63
            case UInt8(ascii: "="):
                padding += 1
                guard padding <= 2, count >= 2 else { return nil }
                value = 0
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                continue
            default:
                return nil
            }
            // No data may follow padding.
            if padding > 0 && byte != UInt8(ascii: "=") { return nil }
            quad = quad << 6 | value
            count += 1
            if count == 4 {
                output.append(UInt8(quad >> 16 & 0xFF))
                if padding < 2 { output.append(UInt8(quad >> 8 & 0xFF)) }
                if padding < 1 { output.append(UInt8(quad & 0xFF)) }
                quad = 0
                count = 0
                if padding > 0 { padding = 3 }  // a complete padded group ends the data
            }
        }
        guard count == 0 else { return nil }
        return output
    }
}
