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

    /// The reader is read in place, field by field: it must take what `Int` and
    /// `Timestamp(iso8601:)` take, and refuse a line they refuse, as the reader of strings did.
    @Test func linesAreReadAsTheirFieldsSay() throws {
        let tsv = """
            # a comment, then an empty line

            com.example.a\t+7\t2026-01-01T00:00:00Z\t-
            com.example.b\t12\t2026-01-01T00:00:00Z\t13
            com.example.c\t3\t2026-02-01T00:00:00Z\tnot a number
            com.example.d\t0004\t2026-01-01T00:00:00Z\t
            """
        let history = try IdentifierHistory(tsv: Array(tsv.utf8))
        #expect(history.order == ["com.example.a", "com.example.b", "com.example.c", "com.example.d"])
        #expect(history["com.example.a"] == .init(firstRevision: 7, firstPublishedAt: first, retiredRevision: nil))
        #expect(history["com.example.b"] == .init(firstRevision: 12, firstPublishedAt: first, retiredRevision: 13))
        #expect(history["com.example.c"] == .init(firstRevision: 3, firstPublishedAt: later, retiredRevision: nil))
        #expect(history["com.example.d"] == .init(firstRevision: 4, firstPublishedAt: first, retiredRevision: nil))
        for bad in [
            "com.example.a\t1\t2026-01-01T00:00:00Z", "com.example.a\t1\t2026-01-01T00:00:00Z\t-\textra",
            "com.example.a\tone\t2026-01-01T00:00:00Z\t-", "com.example.a\t1\t2026-02-30T00:00:00Z\t-",
            "com.example.a\t\t2026-01-01T00:00:00Z\t-", "com.example.a\t99999999999999999999\t2026-01-01T00:00:00Z\t-",
        ] {
            #expect(throws: CatalogError.self, "\(bad)") { try IdentifierHistory(tsv: Array(bad.utf8)) }
        }
    }
}
