import Content
import Foundation
import Testing

/// Range requests (docs/content.md, "Ranges"): RFC 9110's own examples, then the bounds a hostile
/// client tests.
@Suite struct RangeResponsePlanTests {
    static let digest = ContentDigest.of(Data("a 10000-byte issue".utf8))
    static let tag = digest.entityTag

    static func plan(_ range: String?, ifRange: String? = nil, length: Int64 = 10_000) -> RangeResponsePlan {
        RangeResponsePlan.plan(range: range, ifRange: ifRange, length: length, entityTag: tag, boundary: "B")
    }

    static func single(_ first: Int64, _ last: Int64) -> RangeResponsePlan { .single(ByteRange(first: first, last: last)) }

    static func multipart(_ ranges: [(Int64, Int64)], length: Int64 = 10_000) -> RangeResponsePlan {
        .multipart(
            MultipartByteRanges(
                ranges: ranges.map { ByteRange(first: $0.0, last: $0.1) }, length: length, contentType: "application/octet-stream",
                boundary: "B"))
    }

    /// RFC 9110 §14.1.2, on a representation of 10000 bytes, each example as the RFC gives it.
    static let rfcExamples: [(String, RangeResponsePlan)] = [
        ("bytes=0-499", single(0, 499)),  // the first 500 bytes
        ("bytes=500-999", single(500, 999)),  // the second 500 bytes
        ("bytes=-500", single(9500, 9999)),  // the final 500 bytes
        ("bytes=9500-", single(9500, 9999)),  // the final 500 bytes, again
        ("bytes=0-0,-1", multipart([(0, 0), (9999, 9999)])),  // the first and last bytes only
        ("bytes=500-600,601-999", single(500, 999)),  // other valid forms of the second 500 bytes
        ("bytes=500-700,601-999", single(500, 999)),
    ]

    @Test(arguments: rfcExamples) func rfc9110Examples(range: String, expected: RangeResponsePlan) {
        #expect(Self.plan(range) == expected)
    }

    /// Everything else a Range field can be, and what it gets.
    static let table: [(String?, RangeResponsePlan)] = [
        (nil, .full),
        ("Bytes=0-9", single(0, 9)),  // the unit is case-insensitive
        ("  bytes=0-9  ", single(0, 9)),
        ("bytes=0-9999", single(0, 9999)),
        ("bytes=0-20000", single(0, 9999)),  // a last byte past the end means the end
        ("bytes=-20000", single(0, 9999)),  // a suffix longer than the file is the file
        ("bytes=0-", single(0, 9999)),
        ("bytes=9999-", single(9999, 9999)),
        ("bytes=00010-00019", single(10, 19)),  // leading zeros are digits
        ("bytes=0-1, ,4-5", single(0, 5)),  // an empty list element is skipped; near ranges coalesce
        ("bytes=0-1,\t200-201", multipart([(0, 1), (200, 201)])),
        ("bytes=200-201,0-1", multipart([(200, 201), (0, 1)])),  // parts go out in the order asked
        ("bytes=9000-9001,0-1,9002-9003", multipart([(9000, 9003), (0, 1)])),  // a coalesced part where its first range was
        // Unsatisfiable: 416.
        ("bytes=10000-", .unsatisfiable),
        ("bytes=10000-10005,20000-", .unsatisfiable),
        ("bytes=-0", .unsatisfiable),
        ("bytes=99999999999999999999999-", .unsatisfiable),  // saturates, and is past the end
        // Partly satisfiable: the satisfiable part.
        ("bytes=20000-,0-9", single(0, 9)),
        // Huge numbers saturate instead of overflowing.
        ("bytes=0-99999999999999999999999", single(0, 9999)),
        ("bytes=-99999999999999999999999", single(0, 9999)),
        ("bytes=9223372036854775807-9223372036854775807", .unsatisfiable),
        // Not a valid bytes range set: ignored, 200.
        ("items=0-9", .full),
        ("bytes =0-9", .full),
        ("bytes=", .full),
        ("bytes=,", .full),
        ("bytes=-", .full),
        ("bytes=5-4", .full),  // last below first: invalid
        ("bytes=a-9", .full),
        ("bytes=0-9;", .full),
        ("bytes=+1-9", .full),
        ("bytes=1 - 9", .full),
        ("bytes=0-1-2", .full),
        ("bytes=0--1", .full),
    ]

    @Test(arguments: table) func rangeField(range: String?, expected: RangeResponsePlan) {
        #expect(Self.plan(range) == expected)
    }

    @Test func unsatisfiableAnswers416WithTheLength() {
        let plan = Self.plan("bytes=10000-")
        #expect(plan.status == 416)
        #expect(plan.contentRange(length: 10_000) == "bytes */10000")
        #expect(Self.single(42, 1233).contentRange(length: 1234) == "bytes 42-1233/1234")  // RFC 9110 §14.4's example
        #expect(Self.single(42, 1233).status == 206)
        #expect(RangeResponsePlan.full.status == 200)
        #expect(RangeResponsePlan.full.contentRange(length: 10) == nil)
    }

    @Test(arguments: [
        (Optional(tag), single(0, 9)),  // the strong tag of this file: the range
        (" \(tag) ", single(0, 9)),
        ("\"\(String(repeating: "0", count: 64))\"", .full),  // another version: the whole new one
        ("W/\(tag)", .full),  // weak: never matches (strong comparison)
        ("Wed, 21 Oct 2015 07:28:00 GMT", .full),  // a date: content has no Last-Modified
        ("*", .full),
        ("", .full),
    ])
    func ifRange(value: String?, expected: RangeResponsePlan) {
        #expect(Self.plan("bytes=0-9", ifRange: value) == expected)
    }

    @Test func ifRangeWithoutRangeIsIgnored() {
        #expect(Self.plan(nil, ifRange: "W/\"x\"") == .full)
        #expect(Self.plan(nil, ifRange: Self.tag) == .full)
    }

    @Test func anEmptyFileIsSentWhole() {
        #expect(Self.plan("bytes=0-0", length: 0) == .full)
        #expect(Self.plan("bytes=-5", length: 0) == .full)
    }

    @Test func overlappingAndRepeatedRangesNeverSendAByteTwice() {
        #expect(Self.plan("bytes=0-999,0-999,0-999") == Self.single(0, 999))
        #expect(Self.plan("bytes=0-5000,1000-2000,4000-9999") == Self.single(0, 9999))
        #expect(Self.plan("bytes=-100,9900-,9950-9960") == Self.single(9900, 9999))
        // Thirty-two copies of the whole file are one copy of it.
        let many = "bytes=" + Array(repeating: "0-", count: 32).joined(separator: ",")
        #expect(Self.plan(many) == Self.single(0, 9999))
    }

    @Test func tooManyRangesAreIgnored() {
        // More specs than are read: the field is ignored.
        let specs = (0..<33).map { "\($0 * 200)-\($0 * 200)" }.joined(separator: ",")
        #expect(Self.plan("bytes=" + specs) == .full)
        // Within the specs read, more parts than are sent after coalescing: the whole file.
        let apart = (0..<9).map { "\($0 * 1000)-\($0 * 1000)" }.joined(separator: ",")
        #expect(Self.plan("bytes=" + apart) == .full)
        let eight = (0..<8).map { "\($0 * 1000)-\($0 * 1000)" }.joined(separator: ",")
        guard case .multipart(let body) = Self.plan("bytes=" + eight) else {
            Issue.record("eight parts are sent as multipart")
            return
        }
        #expect(body.ranges.count == 8)
        // A field longer than is read is ignored too.
        #expect(Self.plan("bytes=0-1" + String(repeating: ",", count: 1100)) == .full)
    }

    /// RFC 9110 §14.6's example: two ranges of an 8000-byte representation.
    @Test func multipartBodyIsLaidOutAsRFC9110Shows() throws {
        let plan = RangeResponsePlan.plan(
            range: "bytes=500-999,7000-7999", ifRange: nil, length: 8000, entityTag: Self.tag, contentType: "application/pdf",
            boundary: "THIS_STRING_SEPARATES")
        guard case .multipart(let body) = plan else {
            Issue.record("expected multipart, got \(plan)")
            return
        }
        #expect(plan.status == 206)
        #expect(plan.contentRange(length: 8000) == nil)
        #expect(body.responseContentType == "multipart/byteranges; boundary=THIS_STRING_SEPARATES")
        let file = (0..<8000).map { UInt8(truncatingIfNeeded: $0) }
        var assembled: [UInt8] = []
        for (index, range) in body.ranges.enumerated() {
            assembled += body.partHeader(index)
            assembled += file[Int(range.first)...Int(range.last)]
        }
        assembled += body.trailer
        let expected =
            Array("\r\n--THIS_STRING_SEPARATES\r\nContent-Type: application/pdf\r\nContent-Range: bytes 500-999/8000\r\n\r\n".utf8)
            + file[500...999]
            + Array("\r\n--THIS_STRING_SEPARATES\r\nContent-Type: application/pdf\r\nContent-Range: bytes 7000-7999/8000\r\n\r\n".utf8)
            + file[7000...7999] + Array("\r\n--THIS_STRING_SEPARATES--\r\n".utf8)
        #expect(assembled == expected)
        #expect(body.contentLength == Int64(expected.count))
    }

    @Test func boundariesAreFreshAndPlain() {
        let a = MultipartByteRanges.makeBoundary()
        let b = MultipartByteRanges.makeBoundary()
        #expect(a.count == 32 && b.count == 32)
        #expect(a != b)
        #expect(a.allSatisfy { $0.isHexDigit })
    }

    @Test func validatorsComeFromTheDigest() throws {
        // {"hello": "world"} with no newline; the base64 as `openssl dgst -sha256 -binary | base64` gives it.
        let digest = ContentDigest.of(Data(#"{"hello": "world"}"#.utf8))
        #expect(digest.reprDigestFieldValue == "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:")
        #expect(digest.entityTag == "\"\(digest.hex)\"")
        #expect(digest.hex == "5f8f04f6a3a892aaabbddb6cf273894493773960d4a325b105fee46eef4304f1")
        #expect(ContentDigest(hex: digest.hex) == digest)
        #expect(ContentDigest(hex: digest.hex.uppercased()) == nil)
        #expect(ContentDigest(hex: String(digest.hex.dropLast())) == nil)
    }
}
