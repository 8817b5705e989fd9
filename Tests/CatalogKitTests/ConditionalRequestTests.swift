import CatalogKit
import PropertyList
import Testing

/// RFC 9110 conditional requests, case by case. The representation has ETag `"abc"` and was
/// last modified on Friday 2026-11-20 10:00:00 GMT; the server's clock says 2026-11-21 06:00:00.
@Suite struct ConditionalRequestTests {
    static let entityTag = "\"abc\""
    static let lastModified = Timestamp(iso8601: "2026-11-20T10:00:00Z")!
    static let now = Timestamp(iso8601: "2026-11-21T06:00:00Z")!

    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var ifNoneMatch: [String] = []
        var ifModifiedSince: [String] = []
        var isGetOrHead = true
        var wouldSucceed = true
        var entityTag = ConditionalRequestTests.entityTag
        var lastModified = ConditionalRequestTests.lastModified
        var expected: ConditionalRequest.Outcome
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "no conditions", expected: .send),
        // If-None-Match (§13.1.2), weak comparison (§8.8.3.2)
        Case(name: "INM exact match", ifNoneMatch: [#""abc""#], expected: .notModified),
        Case(name: "INM other tag", ifNoneMatch: [#""xyz""#], expected: .send),
        Case(name: "INM weak tag matches weakly", ifNoneMatch: [#"W/"abc""#], expected: .notModified),
        Case(name: "INM weak other tag", ifNoneMatch: [#"W/"xyz""#], expected: .send),
        Case(name: "INM list, match last", ifNoneMatch: [#""x", "abc""#], expected: .notModified),
        Case(name: "INM list, match first", ifNoneMatch: [#""abc", "x""#], expected: .notModified),
        Case(name: "INM list with odd spacing", ifNoneMatch: ["  \"x\" ,\t \"abc\"  "], expected: .notModified),
        Case(name: "INM list without spaces", ifNoneMatch: [#""x","y","abc""#], expected: .notModified),
        Case(name: "INM list, no match", ifNoneMatch: [#""x", "y""#], expected: .send),
        Case(name: "INM over two field lines", ifNoneMatch: [#""x""#, #""abc""#], expected: .notModified),
        Case(name: "INM over two field lines, no match", ifNoneMatch: [#""x""#, #""y""#], expected: .send),
        Case(name: "INM star", ifNoneMatch: ["*"], expected: .notModified),
        Case(name: "INM star with spaces", ifNoneMatch: [" * "], expected: .notModified),
        Case(name: "INM comma inside an opaque tag", ifNoneMatch: [#""a,bc", "abc""#], expected: .notModified),
        Case(name: "INM comma-inside tag is not split", ifNoneMatch: [#""x,abc""#], expected: .send),
        Case(name: "INM is case-sensitive", ifNoneMatch: [#""ABC""#], expected: .send),
        Case(name: "INM unquoted tag is not a tag", ifNoneMatch: ["abc"], expected: .send),
        Case(name: "INM empty field still present", ifNoneMatch: [""], ifModifiedSince: ["Fri, 20 Nov 2026 10:00:00 GMT"], expected: .send),
        Case(name: "INM matches a weak current tag", ifNoneMatch: [#""abc""#], entityTag: #"W/"abc""#, expected: .notModified),
        // Precedence (§13.2.2): If-None-Match present means If-Modified-Since is ignored
        Case(
            name: "INM no match beats IMS match", ifNoneMatch: [#""x""#], ifModifiedSince: ["Fri, 20 Nov 2026 10:00:00 GMT"],
            expected: .send),
        Case(
            name: "INM match beats IMS mismatch", ifNoneMatch: [#""abc""#], ifModifiedSince: ["Thu, 01 Jan 2026 00:00:00 GMT"],
            expected: .notModified),
        // Methods and status (§13.1.2, §13.2.1)
        Case(name: "INM match on an unsafe method", ifNoneMatch: [#""abc""#], isGetOrHead: false, expected: .preconditionFailed),
        Case(name: "INM star on an unsafe method", ifNoneMatch: ["*"], isGetOrHead: false, expected: .preconditionFailed),
        Case(name: "INM no match on an unsafe method", ifNoneMatch: [#""x""#], isGetOrHead: false, expected: .send),
        Case(name: "INM ignored when the answer is not 2xx", ifNoneMatch: [#""abc""#], wouldSucceed: false, expected: .send),
        Case(
            name: "IMS ignored when the answer is not 2xx", ifModifiedSince: ["Fri, 20 Nov 2026 10:00:00 GMT"], wouldSucceed: false,
            expected: .send),
        Case(name: "IMS ignored on other methods", ifModifiedSince: ["Fri, 20 Nov 2026 10:00:00 GMT"], isGetOrHead: false, expected: .send),
        // If-Modified-Since (§13.1.3) in the three date forms (§5.6.7)
        Case(name: "IMS equal, IMF-fixdate", ifModifiedSince: ["Fri, 20 Nov 2026 10:00:00 GMT"], expected: .notModified),
        Case(name: "IMS later, not in the future", ifModifiedSince: ["Sat, 21 Nov 2026 05:00:00 GMT"], expected: .notModified),
        Case(name: "IMS one second earlier", ifModifiedSince: ["Fri, 20 Nov 2026 09:59:59 GMT"], expected: .send),
        Case(name: "IMS equal, RFC 850", ifModifiedSince: ["Friday, 20-Nov-26 10:00:00 GMT"], expected: .notModified),
        Case(
            name: "IMS earlier, RFC 850 two-digit year of last century", ifModifiedSince: ["Sunday, 06-Nov-94 08:49:37 GMT"],
            expected: .send),
        Case(name: "IMS equal, asctime", ifModifiedSince: ["Fri Nov 20 10:00:00 2026"], expected: .notModified),
        Case(name: "IMS with surrounding whitespace", ifModifiedSince: ["  Fri, 20 Nov 2026 10:00:00 GMT\t"], expected: .notModified),
        Case(name: "IMS in the future is ignored", ifModifiedSince: ["Sun, 22 Nov 2026 10:00:00 GMT"], expected: .send),
        Case(name: "IMS invalid text is ignored", ifModifiedSince: ["yesterday"], expected: .send),
        Case(name: "IMS with a numeric zone is invalid", ifModifiedSince: ["Fri, 20 Nov 2026 10:00:00 +0000"], expected: .send),
        Case(name: "IMS lower-case gmt is invalid", ifModifiedSince: ["Fri, 20 Nov 2026 10:00:00 gmt"], expected: .send),
        Case(name: "IMS impossible date is invalid", ifModifiedSince: ["Mon, 31 Nov 2026 10:00:00 GMT"], expected: .send),
        Case(name: "IMS double space is not IMF-fixdate", ifModifiedSince: ["Fri,  20 Nov 2026 10:00:00 GMT"], expected: .send),
        Case(
            name: "IMS two field lines are ignored",
            ifModifiedSince: ["Fri, 20 Nov 2026 10:00:00 GMT", "Fri, 20 Nov 2026 10:00:00 GMT"], expected: .send),
        Case(
            name: "IMS with two members is ignored",
            ifModifiedSince: ["Fri, 20 Nov 2026 10:00:00 GMT, Sat, 21 Nov 2026 01:00:00 GMT"], expected: .send),
        // A representation stamped a moment ahead of the clock is newer than any date a client sent.
        Case(
            name: "Last-Modified ahead of the clock is sent in full", ifModifiedSince: ["Sat, 21 Nov 2026 06:00:00 GMT"],
            lastModified: Timestamp(iso8601: "2026-11-21T06:00:05Z")!, expected: .send),
    ]

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
