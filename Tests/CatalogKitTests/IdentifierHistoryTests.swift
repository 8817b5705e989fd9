import Testing
import Time

@testable import CatalogKit

/// `identifiers.tsv`: what each revision keeps of every identifier ever published.
@Suite struct IdentifierHistoryTests {
    let first = Timestamp(iso8601: "2026-01-01T00:00:00Z")!
    let later = Timestamp(iso8601: "2026-02-01T00:00:00Z")!

    @Test func recordsFirstPublicationAndRetirementAndReadsBackWhatItWrites() throws {
        var history = IdentifierHistory()
        history.record("com.example.a", revision: 1, at: first, retired: false)
        history.record("com.example.b", revision: 1, at: first, retired: false)
        history.record("com.example.a", revision: 2, at: later, retired: true)
        history.record("com.example.c", revision: 2, at: later, retired: true)
        // A later retirement does not move the first one.
        history.record("com.example.c", revision: 3, at: later, retired: true)
        #expect(history.order == ["com.example.a", "com.example.b", "com.example.c"])
        #expect(history["com.example.a"] == .init(firstRevision: 1, firstPublishedAt: first, retiredRevision: 2))
        #expect(history["com.example.b"] == .init(firstRevision: 1, firstPublishedAt: first, retiredRevision: nil))
        #expect(history["com.example.c"] == .init(firstRevision: 2, firstPublishedAt: later, retiredRevision: 2))
        #expect(history["com.example.missing"] == nil)
        #expect(
            String(decoding: history.tsv, as: UTF8.self) == """
                # id\tfirstRevision\tfirstPublishedAt\tretiredRevision
                com.example.a\t1\t2026-01-01T00:00:00Z\t2
                com.example.b\t1\t2026-01-01T00:00:00Z\t-
                com.example.c\t2\t2026-02-01T00:00:00Z\t2

                """)
        #expect(try IdentifierHistory(tsv: history.tsv) == history)
    }

    @Test func anIdentifierListedTwiceIsACorruptHistory() {
        let tsv = "com.example.a\t1\t2026-01-01T00:00:00Z\t-\ncom.example.a\t2\t2026-02-01T00:00:00Z\t2\n"
        #expect(throws: CatalogError.self) { try IdentifierHistory(tsv: Array(tsv.utf8)) }
    }
}
