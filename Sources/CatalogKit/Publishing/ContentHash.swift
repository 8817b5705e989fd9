import Crypto
import Foundation

/// Strong validators from content: a SHA-256 of the bytes, never file times.
public enum ContentHash {
    /// The SHA-256 of `bytes`, in lower-case hexadecimal.
    public static func sha256Hex(_ bytes: some ContiguousBytes) -> String {
        hex(bytes.withUnsafeBytes { SHA256.hash(data: $0) })
    }

    /// The SHA-256 of bytes given piece by piece, and how many there were: a feed of many
    /// megabytes hashed without being held. Small pieces are gathered into chunks first, since
    /// each update of the hash has a cost of its own.
    public static func sha256Hex(of feed: (FeedPieces) -> Void) -> (sha256: String, count: Int) {
        sha256Hex(heads: [[]], body: feed)[0]
    }

    /// The SHA-256 of each of several byte strings that differ only in their heads, rendering
    /// the shared body once: a rich feed and its content without the revision stamp.
    static func sha256Hex(heads: [[UInt8]], body: (FeedPieces) -> Void) -> [(sha256: String, count: Int)] {
        var hashers = heads.map { head in
            var hasher = SHA256()
            head.withUnsafeBytes { hasher.update(bufferPointer: $0) }
            return hasher
        }
        var count = 0
        let chunkSize = 1 << 16
        var chunk: [UInt8] = []
        chunk.reserveCapacity(chunkSize)
        func update(_ bytes: UnsafeRawBufferPointer) {
            for index in hashers.indices { hashers[index].update(bufferPointer: bytes) }
        }
        body { piece in
            count += piece.count
            if chunk.count + piece.count > chunkSize {
                chunk.withUnsafeBytes(update)
                chunk.removeAll(keepingCapacity: true)
            }
            if piece.count >= chunkSize {
                update(UnsafeRawBufferPointer(piece))
            } else {
                chunk.append(contentsOf: piece)
            }
        }
        chunk.withUnsafeBytes(update)
        return zip(heads, hashers).map { head, hasher in (hex(hasher.finalize()), head.count + count) }
    }

    /// Lower-case hexadecimal digits of `bytes`.
    public static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let hex = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in bytes {
            text.append(hex[Int(byte >> 4)])
            text.append(hex[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The bytes that hexadecimal `text` spells (either case); nil for an odd length or a non-digit.
    public static func bytes(hex text: String) -> [UInt8]? {
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    /// The strong entity tag for content with this SHA-256: 128 bits of it, quoted.
    public static func entityTag(sha256: String) -> String {
        "\"\(sha256.prefix(32))\""
    }
}
