import Foundation

/// What a `GET` of a content file answers, decided from its `Range` and `If-Range` fields alone
/// (RFC 9110 §14 and §13.1.5): the status, the fields that depend on the ranges, and which bytes of
/// the file go out in what order. Pure: the server turns it into a response, zero-copy, and never
/// reads more of the file than the plan names.
///
/// Every answer (200, 206, 416) also carries `Accept-Ranges: bytes`, the strong `ETag`
/// (``ContentDigest/entityTag``) and `Repr-Digest` (``ContentDigest/reprDigestFieldValue``).
public enum RangeResponsePlan: Sendable, Hashable {
    /// 200 with the whole representation: no `Range`, one to ignore, or an `If-Range` that does not
    /// match.
    case full
    /// 206 with one range: `Content-Range: bytes first-last/length`.
    case single(ByteRange)
    /// 206 `multipart/byteranges` with two or more ranges, none overlapping, in the order asked.
    case multipart(MultipartByteRanges)
    /// 416 with `Content-Range: bytes */length`: a valid `Range` none of whose ranges is satisfiable.
    case unsatisfiable

    /// The most parts a multipart answer has, after coalescing; a request that still needs more is
    /// answered with the whole representation (RFC 9110 §14.2 lets a server ignore `Range`).
    public static let maximumParts = 8
    /// Ranges closer than this are sent as one part: a part's own header costs about as much
    /// (RFC 9110 §14.2 allows coalescing "separated by a gap that is smaller than the overhead of
    /// sending multiple parts").
    public static let coalescingGap: Int64 = 80

    /// The plan for a `GET` of a representation of `length` bytes whose strong entity tag is
    /// `entityTag`, given the request's `Range` and `If-Range` field values (nil when absent).
    /// `boundary` names the multipart boundary, should one be needed (``MultipartByteRanges/makeBoundary()``);
    /// `contentType` is the file's media type, repeated in each part.
    ///
    /// The decisions, in order:
    /// 1. No `Range`, an unparsable one or one of another unit: 200 (``ByteRangeRequest``).
    /// 2. An `If-Range` that is not exactly the strong `entityTag`: 200. A weak tag never matches
    ///    (strong comparison, §13.1.5), and an HTTP-date never does either: content has no
    ///    `Last-Modified`, only its digest.
    /// 3. A representation of no bytes: 200 (an empty body), since no range of it can be sent.
    /// 4. None satisfiable (§14.1.1: a first byte at or past the end, a suffix of 0): 416.
    /// 5. The satisfiable ranges, clipped to the end and coalesced when they overlap or nearly
    ///    touch, whatever their order (§14.2): one left gives 206 single; two to ``maximumParts``
    ///    give 206 multipart, the parts in the order their first range was asked (RFC 9110 says a
    ///    server SHOULD keep the request's order, less what was coalesced); more give 200.
    ///    Overlapping or repeated ranges therefore never send a byte twice, and the body is never
    ///    longer than the file plus the parts' headers.
    public static func plan(
        range: String?, ifRange: String?, length: Int64, entityTag: String, contentType: String = "application/octet-stream",
        boundary: @autoclosure () -> String = MultipartByteRanges.makeBoundary()
    ) -> RangeResponsePlan {
        guard let range, let request = ByteRangeRequest(range) else { return .full }
        if let ifRange, !Self.ifRangeMatches(ifRange, entityTag: entityTag) { return .full }
        guard length > 0 else { return .full }

        // Each satisfiable range with the position it was asked at.
        var ranges: [(range: ByteRange, asked: Int)] = []
        for (asked, spec) in request.specs.enumerated() {
            switch spec {
            case .from(let first, let last):
                guard first < length else { continue }
                ranges.append((ByteRange(first: first, last: min(last ?? Int64.max, length - 1)), asked))
            case .suffix(let suffix):
                guard suffix > 0 else { continue }
                ranges.append((ByteRange(first: length - min(suffix, length), last: length - 1), asked))
            }
        }
        guard !ranges.isEmpty else { return .unsatisfiable }

        ranges.sort { ($0.range.first, $0.range.last) < ($1.range.first, $1.range.last) }
        var coalesced: [(range: ByteRange, asked: Int)] = []
        for next in ranges {
            // A difference rather than a sum: both are offsets inside the file, so it cannot overflow.
            if let previous = coalesced.last, next.range.first - previous.range.last <= 1 + coalescingGap {
                coalesced[coalesced.count - 1].range.last = max(previous.range.last, next.range.last)
                coalesced[coalesced.count - 1].asked = min(previous.asked, next.asked)
            } else {
                coalesced.append(next)
            }
        }
        if coalesced.count == 1 { return .single(coalesced[0].range) }
        guard coalesced.count <= maximumParts else { return .full }
        let parts = coalesced.sorted { $0.asked < $1.asked }.map(\.range)
        return .multipart(MultipartByteRanges(ranges: parts, length: length, contentType: contentType, boundary: boundary()))
    }

    /// Whether an `If-Range` value names the current representation: only a strong entity tag,
    /// compared byte for byte (RFC 9110 §13.1.5, §8.8.3.2).
    public static func ifRangeMatches(_ value: String, entityTag: String) -> Bool {
        let trimmed = value.trimmingCharacters(in: .init(charactersIn: " \t"))
        return trimmed.hasPrefix("\"") && trimmed == entityTag
    }

    /// The status code of the answer.
    public var status: Int {
        switch self {
        case .full: 200
        case .single, .multipart: 206
        case .unsatisfiable: 416
        }
    }

    /// The `Content-Range` field of the answer, for a representation of `length` bytes; nil for
    /// 200 and for multipart (whose parts carry their own).
    public func contentRange(length: Int64) -> String? {
        switch self {
        case .full, .multipart: nil
        case .single(let range): range.contentRange(of: length)
        case .unsatisfiable: "bytes */\(length)"
        }
    }
}

/// The body of a 206 `multipart/byteranges` answer (RFC 9110 §14.6): for each range, a part
/// header in memory, then that range of the file; a closing delimiter at the end. The layout is
/// nginx's, so that clients that read nginx's answers read ours.
public struct MultipartByteRanges: Sendable, Hashable {
    /// The ranges, apart, in the order they are sent.
    public var ranges: [ByteRange]
    /// The representation's length.
    public var length: Int64
    /// The media type of each part.
    public var contentType: String
    /// The boundary: 1 to 70 characters of RFC 2046's `bchars` that never end in a space.
    public var boundary: String

    /// A multipart body of `ranges` of a representation of `length` bytes.
    public init(ranges: [ByteRange], length: Int64, contentType: String, boundary: String) {
        self.ranges = ranges
        self.length = length
        self.contentType = contentType
        self.boundary = boundary
    }

    /// A fresh random boundary of 32 hexadecimal digits: a digit string that the content is
    /// vanishingly unlikely to contain.
    public static func makeBoundary() -> String {
        (0..<4).map { _ in String(UInt32.random(in: 0...UInt32.max), radix: 16).leftPadded(to: 8) }.joined()
    }

    /// The `Content-Type` field of the answer.
    public var responseContentType: String { "multipart/byteranges; boundary=\(boundary)" }

    /// The bytes written before range `index`'s bytes: the delimiter and the part's fields.
    public func partHeader(_ index: Int) -> [UInt8] {
        Array("\r\n--\(boundary)\r\nContent-Type: \(contentType)\r\nContent-Range: \(ranges[index].contentRange(of: length))\r\n\r\n".utf8)
    }

    /// The bytes written after the last range: the closing delimiter.
    public var trailer: [UInt8] { Array("\r\n--\(boundary)--\r\n".utf8) }

    /// The `Content-Length` of the whole body, known before a byte is sent.
    public var contentLength: Int64 {
        ranges.indices.reduce(Int64(trailer.count)) { $0 + Int64(partHeader($1).count) + ranges[$1].count }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
