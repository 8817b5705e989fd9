import CatalogTestSupport
import HTTPSemantics
import Testing
import Time

/// RFC 9110 conditional requests, case by case (the table is in ``ConditionalExamples``).
@Suite struct ConditionalRequestTests {
    typealias Case = ConditionalExamples.Case
    static let cases = ConditionalExamples.cases
    static let now = ConditionalExamples.now

    @Test(arguments: cases)
    func evaluates(_ test: Case) {
        let request = ConditionalRequest(
            ifNoneMatch: test.ifNoneMatch, ifModifiedSince: test.ifModifiedSince, isGetOrHead: test.isGetOrHead)
        let outcome = request.evaluate(
            entityTag: test.entityTag, lastModified: test.lastModified, now: Self.now, wouldSucceed: test.wouldSucceed)
        #expect(outcome == test.expected)
    }

    @Test func tableHasAtLeastFortyCases() {
        #expect(Self.cases.count >= 40)
    }
}

@Suite struct HTTPDateTests {
    static let now = Timestamp(iso8601: "2026-11-21T06:00:00Z")!

    @Test(arguments: [
        ("Sun, 06 Nov 1994 08:49:37 GMT", "1994-11-06T08:49:37Z"),
        ("Sunday, 06-Nov-94 08:49:37 GMT", "1994-11-06T08:49:37Z"),
        ("Sun Nov  6 08:49:37 1994", "1994-11-06T08:49:37Z"),
        ("Sun Nov 16 08:49:37 1994", "1994-11-16T08:49:37Z"),
        // Two-digit years: up to 50 years ahead of 2026 stay in this century, beyond go back one.
        ("Thursday, 01-Jan-76 00:00:00 GMT", "2076-01-01T00:00:00Z"),
        ("Friday, 01-Jan-77 00:00:00 GMT", "1977-01-01T00:00:00Z"),
        ("Monday, 29-Feb-88 12:00:00 GMT", "1988-02-29T12:00:00Z"),
        ("Wed, 31 Dec 2025 23:59:60 GMT", "2026-01-01T00:00:00Z"),
    ])
    func parsesEveryForm(text: String, iso: String) {
        #expect(HTTPDate.parse(text, now: Self.now)?.iso8601 == iso)
    }

    @Test(arguments: [
        "", "GMT", "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 94 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 8:49:37 GMT", "Sun, 06 Nov 1994 08:49 GMT", "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 29 Feb 2026 00:00:00 GMT", "Sunday, 06-Nov-1994 08:49:37 GMT", "Sun Nov 6 08:49:37 94", "Xyz, 06 Nov 1994 08:49:37 GMT",
    ])
    func rejectsMalformedDates(text: String) {
        #expect(HTTPDate.parse(text, now: Self.now) == nil)
    }

    @Test func formatsIMFFixdate() {
        #expect(HTTPDate.format(Timestamp(iso8601: "1994-11-06T08:49:37Z")!) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(Timestamp(iso8601: "2026-11-20T10:00:00Z")!) == "Fri, 20 Nov 2026 10:00:00 GMT")
        #expect(HTTPDate.format(Timestamp(secondsSince1970: 0)) == "Thu, 01 Jan 1970 00:00:00 GMT")
        let moment = Timestamp(iso8601: "2024-02-29T23:59:59Z")!
        #expect(HTTPDate.parse(HTTPDate.format(moment), now: Self.now) == moment)
    }
}
