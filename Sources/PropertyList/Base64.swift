/// Strict base64 as plist `<data>` holds it: whitespace between groups is allowed,
/// anything else outside the alphabet, or misplaced padding, is an error.
enum Base64 {
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
