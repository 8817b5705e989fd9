import Crypto
import Foundation

/// Strong validators from content: a SHA-256 of the bytes, never file times.
public enum ContentHash {
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

    private static func hex(_ digest: SHA256.Digest) -> String {
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
