import Crypto
import Foundation

/// Strong validators from content: a SHA-256 of the bytes, never file times.
public enum ContentHash {
    public static func sha256Hex(_ bytes: some ContiguousBytes) -> String {
        let digest = bytes.withUnsafeBytes { SHA256.hash(data: $0) }
        let hex = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in digest {
            text.append(hex[Int(byte >> 4)])
            text.append(hex[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The strong entity tag for content with this SHA-256: 128 bits of it, quoted.
    public static func entityTag(sha256: String) -> String {
        "\"\(sha256.prefix(32))\""
    }
}
