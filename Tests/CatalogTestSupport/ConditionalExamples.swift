import CatalogKit
import HTTPSemantics
import Testing
import Time

/// The RFC 9110 conditional-request table, shared by the pure tests (HTTPSemanticsTests) and the
/// tests that send each row through real HTTP (CatalogServerTests).
///
/// The representation has ETag `"abc"` and was last modified on Friday 2026-11-20 10:00:00 GMT;
/// the server's clock says 2026-11-21 06:00:00.
public enum ConditionalExamples {
    public static let entityTag = "\"abc\""
    public static let lastModified = Timestamp(iso8601: "2026-11-20T10:00:00Z")!
    public static let now = Timestamp(iso8601: "2026-11-21T06:00:00Z")!

    public struct Case: CustomTestStringConvertible, Sendable {
        public var name: String
        public var ifNoneMatch: [String] = []
        public var ifModifiedSince: [String] = []
        public var isGetOrHead = true
        public var wouldSucceed = true
        public var entityTag = ConditionalExamples.entityTag
        public var lastModified = ConditionalExamples.lastModified
        public var expected: ConditionalRequest.Outcome
        public var testDescription: String { name }

        public init(
            name: String, ifNoneMatch: [String] = [], ifModifiedSince: [String] = [], isGetOrHead: Bool = true,
            wouldSucceed: Bool = true, entityTag: String = ConditionalExamples.entityTag,
            lastModified: Timestamp = ConditionalExamples.lastModified, expected: ConditionalRequest.Outcome
        ) {
            self.name = name
            self.ifNoneMatch = ifNoneMatch
            self.ifModifiedSince = ifModifiedSince
            self.isGetOrHead = isGetOrHead
            self.wouldSucceed = wouldSucceed
            self.entityTag = entityTag
            self.lastModified = lastModified
            self.expected = expected
        }
    }

    public static let cases: [Case] = [
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
}
