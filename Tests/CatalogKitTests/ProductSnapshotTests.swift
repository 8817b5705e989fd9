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
        func leadingID(_ line: String) -> String? { Array(line.utf8).withUnsafeBytes(PublicTree.leadingID) }
        #expect(leadingID(#"{"id":"com.example.a","type":"consumable"}"#) == "com.example.a")
        // Any other form is left to the JSON parser.
        #expect(leadingID(#"{"type":"consumable","id":"com.example.a"}"#) == nil)
        #expect(leadingID(#"{"id":"com.ex\u0061mple"}"#) == nil)
        #expect(leadingID(#"{"id":""}"#) == nil)
        #expect(leadingID(#"{"id":"unterminated"#) == nil)
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

    /// A snapshot's lines read from its gzip member a piece at a time are its lines, however small
    /// the buffer (lines longer than it included), and damaged or cut bytes are refused.
    @Test func aMemberIsReadLineByLine() throws {
        var random = SplitMix64(seed: 37)
        let lines = (0..<3_000).map { index in
            let length = index % 500 == 0 ? 70_000 : Int.random(in: 0..<300, using: &random)
            return (0..<length).map { _ in UInt8.random(in: 0x20...0x7E, using: &random) }
        }
        let text = Array(lines.joined(separator: [0x0A]))
        let nonEmpty = lines.filter { !$0.isEmpty }
        func read(_ member: [UInt8], bufferBytes: Int = Gzip.Lines.bufferBytes) throws -> [[UInt8]] {
            let reader = Gzip.Lines(member, bufferBytes: bufferBytes)
            var read: [[UInt8]] = []
            while let line = try reader.withNextLine({ Array($0) }) { read.append(line) }
            return read
        }
        for member in [try Gzip.compress(text), try Gzip.compress(text, effort: .fastest), try Gzip.compress(text + [0x0A])] {
            for bufferBytes in [1, 7, 4096, Gzip.Lines.bufferBytes] {
                #expect(try read(member, bufferBytes: bufferBytes) == nonEmpty, "buffer of \(bufferBytes) bytes")
            }
        }
        #expect(try read(try Gzip.compress([UInt8]())) == [])

        let member = try Gzip.compress(text)
        var damaged = member
        damaged[damaged.count / 2] ^= 0x10
        var wrongChecksum = member
        wrongChecksum[wrongChecksum.count - 8] ^= 1
        var wrongLength = member
        wrongLength[wrongLength.count - 1] ^= 1
        for (name, bytes) in [
            ("damaged", damaged), ("checksum", wrongChecksum), ("length", wrongLength), ("cut", Array(member.dropLast(9))),
            ("trailing bytes", member + [0]), ("two members", member + member), ("not gzip", text), ("empty", []),
        ] {
            #expect(throws: Gzip.Invalid.self, "\(name)") { try read(bytes) }
        }
    }

    /// The diff reads the old lines again in step with the new ones: whatever order either
    /// snapshot has, it finds what a comparison of the two whole snapshots finds.
    @Test func theDiffIsTheSameInAnyOrder() throws {
        var random = SplitMix64(seed: 38)
        for round in 0..<40 {
            let count = Int.random(in: 0..<200, using: &random)
            let old = (0..<count).map { ("id\($0)", Array(#"{"id":"id\#($0)","qty":\#($0)}"#.utf8)) }
            var new = old.filter { _ in Int.random(in: 0..<10, using: &random) > 0 }.map { id, json in
                Int.random(in: 0..<8, using: &random) == 0 ? (id, Array(#"{"id":"\#(id)","qty":-1}"#.utf8)) : (id, json)
            }
            new += (0..<Int.random(in: 0..<5, using: &random)).map { ("new\(round)-\($0)", Array(#"{"id":"x"}"#.utf8)) }
            // Mostly in order, as revisions are; some rounds shuffled, and some moved a little.
            switch round % 4 {
            case 0: new.shuffle(using: &random)
            case 1:
                for _ in 0..<min(new.count, 5) {
                    new.swapAt(Int.random(in: new.indices, using: &random), Int.random(in: new.indices, using: &random))
                }
            default: break
            }
            let diff = try ProductDiff(old: old, new: new)
            let oldLines = Dictionary(uniqueKeysWithValues: old)
            let newIDs = Set(new.map(\.0))
            #expect(diff.added == new.map(\.0).filter { oldLines[$0] == nil }, "round \(round)")
            #expect(diff.removed == old.map(\.0).filter { !newIDs.contains($0) }, "round \(round)")
            let changed = new.filter { id, json in oldLines[id].map { $0 != json } ?? false }.map(\.0)
            #expect(diff.changed.map(\.id) == changed, "round \(round)")
        }
    }

    /// A build compares with the previous snapshot read from its records, again in step: the
    /// rebuild's diff when products moved and changed.
    @Test func aRebuildDiffsAgainstTheRecordedSnapshotInAnyOrder() throws {
        try withCatalog { catalog in
            let product = { (id: String, fields: String) in
                "<dict><key>id</key><string>com.example.app.\(id)</string>\(fields)</dict>"
            }
            let name = { (name: String) in "<key>referenceName</key><string>\(name)</string>" }
            let write = { (products: [String]) in
                let head = #"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict><key>products</key><array>"#
                try catalog.write("com.example.app.plist", head + products.joined() + "</array></dict></plist>")
            }
            try write((0..<6).map { product("p\($0)", name("P \($0)")) })
            try catalog.publish(at: buildMoment)
            try write([
                product("p4", name("P 4")), product("p0", name("P 0")), product("p2", name("renamed")), product("p9", name("new")),
                product("p1", name("P 1")), product("p5", name("P 5")),
                product("p3", name("P 3") + "<key>status</key><string>retired</string>"),
            ])
            let build = try catalog.workflow.build(at: buildMoment.adding(60), dryRun: true)
            #expect(build.diagnostics.isEmpty)
            let plan = try #require(build.plans.first)
            #expect(plan.diff.added == ["com.example.app.p9"])
            #expect(plan.diff.removed == [])
            #expect(plan.diff.changed.map(\.id) == ["com.example.app.p2", "com.example.app.p3"])
            #expect(plan.diff.changed.first?.details == ["referenceName P 2 → renamed"])
        }
    }
}
