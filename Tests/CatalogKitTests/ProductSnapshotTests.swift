import CatalogTestSupport
import Foundation
import Testing

@testable import CatalogKit

/// A revision's product snapshot (`products.jsonl.gz`): gzipped as it is encoded, and read back
/// by the id each line starts with, or by parsing a line in any other form.
@Suite struct ProductSnapshotTests {
    @Test func piecesCompressToOneMemberOfTheirBytes() throws {
        let pieces = (0..<40).map { piece in (0..<(piece * 997)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ piece) } }
        let compress = {
            try Gzip.compressPieces { compress in
                for piece in pieces { try piece.withUnsafeBytes(compress) }
            }
        }
        let member = try compress()
        #expect(Gzip.decompress(member) == pieces.flatMap { $0 })
        #expect(try compress() == member)
        #expect(Gzip.decompress(try Gzip.compressPieces { _ in }) == [])
    }

    /// A first publication's snapshot, gzipped as it is encoded about a mebibyte at a time, holds the
    /// lines a rebuild encodes.
    @Test func theSnapshotGzippedAsItIsEncodedHoldsEveryLine() throws {
        try withCatalog { catalog in
            // About 1.3 MB of lines: more than one piece.
            let name = { (index: Int) in "Item \(index) – \"quoted\" " + String(repeating: "x", count: 40) }
            let products = (0..<10_000).map {
                "<dict><key>id</key><string>com.example.app.item\($0)</string>"
                    + "<key>referenceName</key><string>\(name($0))</string></dict>"
            }
            let head = #"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict><key>products</key><array>"#
            try catalog.write("com.example.app.plist", head + products.joined() + "</array></dict></plist>")
            let checked = try #require(catalog.workflow.validate().catalogs.first).products
            #expect(checked.count == 10_000)
            let member = try Publisher.compressedSnapshot(checked)
            #expect(Gzip.decompress(member) == Publisher.snapshot(checked))
            // Encoded on another thread, the pieces give the same member, and every line comes
            // to `eachLine` once, in order, without its newline.
            var lines: [(Int, [UInt8])] = []
            let aside = try Publisher.compressedSnapshot(checked, encodingAside: true) { lines.append(($0, Array($1))) }
            #expect(aside == member)
            #expect(lines.map(\.0) == Array(checked.indices))
            #expect(lines.map(\.1) == checked.map { FeedRenderer.encode($0, for: .snapshot) })
        }
    }

    @Test func aLineIsReadByTheIDItStartsWith() {
        #expect(PublicTree.leadingID(of: Array(#"{"id":"com.example.a","type":"consumable"}"#.utf8)[...]) == "com.example.a")
        // Any other form is left to the JSON parser.
        #expect(PublicTree.leadingID(of: Array(#"{"type":"consumable","id":"com.example.a"}"#.utf8)[...]) == nil)
        #expect(PublicTree.leadingID(of: Array(#"{"id":"com.ex\u0061mple"}"#.utf8)[...]) == nil)
        #expect(PublicTree.leadingID(of: Array(#"{"id":""}"#.utf8)[...]) == nil)
        #expect(PublicTree.leadingID(of: Array(#"{"id":"unterminated"#.utf8)[...]) == nil)
    }

    @Test func aSnapshotInAnotherFormIsStillRead() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.app.plist", seedCatalog)
            try catalog.publish(at: buildMoment)
            let lines = [#"{"type":"consumable","id":"com.example.b"}"#, #"{"id":"com.ex\u0061mple.c"}"#, #"{"id":"com.example.d"}"#]
            let url = catalog.tree.recordsDirectory("com.example.app", 1).appendingPathComponent(PublicTree.snapshotName)
            try Data(try Gzip.compress(Array(lines.joined(separator: "\n").utf8) + [0x0A])).write(to: url)
            let snapshot = try catalog.tree.productSnapshot("com.example.app", revision: 1)
            #expect(snapshot.map(\.id) == ["com.example.b", "com.example.c", "com.example.d"])
            #expect(snapshot.map { String(decoding: $0.json, as: UTF8.self) } == lines)
            // Empty lines are skipped, and the last line needs no newline.
            try Data(try Gzip.compress(Array(("\n\n" + lines.joined(separator: "\n\n")).utf8))).write(to: url)
            #expect(try catalog.tree.productSnapshot("com.example.app", revision: 1).map(\.id) == snapshot.map(\.id))
            // A line that is not a JSON object is refused, as before.
            try Data(try Gzip.compress(Array("not json\n".utf8))).write(to: url)
            #expect(throws: CatalogError.self) { try catalog.tree.productSnapshot("com.example.app", revision: 1) }
        }
    }
}
