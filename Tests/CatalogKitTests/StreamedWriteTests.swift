import CatalogTestSupport
import Foundation
import Testing

@testable import CatalogKit

/// Big files written as they are made, a mebibyte at a time (``AtomicFile``), and the feeds
/// compressed on the way (``Publisher/writeFeed(_:to:)``).
@Suite struct StreamedWriteTests {
    /// Bytes handed over in pieces of any size are written whole, and every chunk is seen on the
    /// way, in order: what a big feed's gzip copy is made from.
    @Test func piecesAreWrittenAndSeenChunkByChunk() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("durable-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let mebibyte = 1 << 20
        for (size, pieceSize) in [(0, 1), (mebibyte - 1, 4096), (mebibyte, 7), (3 * mebibyte + 17, 65_537), (2 * mebibyte, 3 * mebibyte)] {
            let bytes = (0..<size).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 16) }
            let produce = { (append: (UnsafeRawBufferPointer) -> Void) in
                bytes.withUnsafeBytes { all in
                    for start in stride(from: 0, to: size, by: pieceSize) {
                        append(UnsafeRawBufferPointer(rebasing: all[start..<min(start + pieceSize, size)]))
                    }
                }
            }
            let url = directory.appendingPathComponent("file-\(size)")
            var seen: [[UInt8]] = []
            try AtomicFile.writeDurably(to: url, expectedBytes: size, produce, eachChunk: { seen.append(Array($0)) })
            #expect(FileManager.default.contents(atPath: url.path).map { [UInt8]($0) } == bytes, "size \(size)")
            #expect(seen.flatMap { $0 } == bytes, "size \(size)")
            #expect(seen.dropLast().allSatisfy { $0.count == mebibyte }, "size \(size)")
            // Nothing reading the chunks: a small file is written piece by piece as it comes, a big
            // one still gathered for the direct path.
            let plain = directory.appendingPathComponent("plain-\(size)")
            try AtomicFile.writeDurably(to: plain, expectedBytes: size, produce)
            #expect(FileManager.default.contents(atPath: plain.path).map { [UInt8]($0) } == bytes, "size \(size), not read")
        }
    }

    /// A feed of more than a mebibyte is compressed as it is written, never held whole: its gzip
    /// copy still holds its bytes, and the same feed gives the same copy.
    @Test func aBigFeedIsWrittenAndCompressedAsItIsRendered() throws {
        try withCatalog { catalog in
            let products = (0..<15_000).map {
                "<dict><key>id</key><string>com.example.app.item\($0)</string>"
                    + "<key>metadata</key><dict><key>note</key><string>Item \($0) \(String(repeating: "x", count: 60))</string></dict></dict>"
            }
            let head = #"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict><key>products</key><array>"#
            try catalog.write("com.example.app.plist", head + products.joined() + "</array></dict></plist>")
            try catalog.publish(at: buildMoment)
            let manifest = try catalog.expectComplete("com.example.app", revision: 1)
            #expect(try #require(manifest.variants.first).catalog.bytes > 1 << 20)
        }
        // The same bytes in pieces of other sizes: the same file, and the same gzip copy.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("feed-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let bytes = (0..<(3 << 20) + 5).map { UInt8(ascii: "a") + UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 28) & 15 }
        let copies = try [7, 65_537, bytes.count].map { pieceSize in
            let url = directory.appendingPathComponent("feed-\(pieceSize)")
            let copy = try Publisher.writeFeed(
                { pieces in
                    bytes.withUnsafeBufferPointer { all in
                        for start in stride(from: 0, to: all.count, by: pieceSize) {
                            pieces(UnsafeBufferPointer(rebasing: all[start..<min(start + pieceSize, all.count)]))
                        }
                    }
                }, to: url)
            #expect(FileManager.default.contents(atPath: url.path).map { [UInt8]($0) } == bytes)
            return copy
        }
        #expect(Gzip.decompress(copies[0]) == bytes)
        #expect(copies[1] == copies[0] && copies[2] == copies[0])
        // And the same copy as the whole feed compressed at once, as publishing did before: a
        // feed published again keeps its gzip copy's entity tag.
        #expect(copies[0] == (try Gzip.compress(bytes, effort: .fastest)))
    }
}
