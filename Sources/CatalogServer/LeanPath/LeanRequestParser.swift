import CatalogKit
import Content
import HTTPSemantics
import Time

/// What the lean path needs of a feed request, read straight from the bytes the client sent.
struct FeedRequest {
    var isHead: Bool
    var target: FeedTarget
    var conditions: ConditionalRequest
    var acceptEncoding: [String]
}

/// A minimal HTTP/1.1 request reader for the lean path, in front of NIO's request decoder.
///
/// It reads the request line and only the header fields a feed or content answer depends on, straight from
/// the received bytes, without building `HTTPRequestHead`, `HTTPHeaders` or a string per field.
/// It accepts a strict subset of HTTP/1.1 and says, for everything else, how to hand the bytes
/// over to the decoder, which then sees exactly what the client sent. Whatever it is unsure
/// about (another method, a body, an upgrade, obs-fold, bare LF, control or non-ASCII bytes,
/// an unusual version, a long header block) is handed over for good, so the general pipeline
/// decides it as it would without this reader.
enum LeanRequestParser {
    /// The longest header block read here, far below the decoder's own limits: feed and content
    /// requests are a few hundred bytes, and anything longer is left to the decoder and its limits.
    static let maxHeaderBlock = 4096
    /// No more fields than the decoder allows, so a request answered here is one it would accept.
    static let maxFieldCount = 100

    enum Outcome {
        /// The header block is not complete yet.
        case needMore
        /// A complete `GET` or `HEAD` of a feed, `length` bytes long, with no body.
        case feed(FeedRequest, length: Int)
        /// A complete `GET` or `HEAD` of a signed content URL (`/v1/content/…`), with no body.
        case content(ContentRequest, length: Int)
        /// A complete, well-formed `GET` or `HEAD` without a body that is not for the lean path
        /// (another path, HTTP/1.0, `Connection: close`): hand over its `length` bytes, after
        /// which the decoder is between requests again.
        case other(length: Int)
        /// Anything else: hand over these bytes and all that follow on this connection.
        case handOver
    }

    static func parse(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        // The request line: method, one space, target, one space, version, CRLF.
        let lineEnd: Int
        switch line(in: bytes, from: 0) {
        case .end(let end): lineEnd = end
        case .incomplete: return .needMore
        case .malformed: return .handOver
        }
        let isHead: Bool
        var position: Int
        if bytes.hasPrefix("GET ") {
            (isHead, position) = (false, 4)
        } else if bytes.hasPrefix("HEAD ") {
            (isHead, position) = (true, 5)
        } else {
            return .handOver
        }
        let targetStart = position
        while position < lineEnd, bytes[position] != UInt8(ascii: " ") {
            // Visible ASCII only: anything else is for the decoder to judge.
            guard (0x21...0x7E).contains(bytes[position]) else { return .handOver }
            position += 1
        }
        let target = UnsafeRawBufferPointer(rebasing: bytes[targetStart..<position])
        let version = UnsafeRawBufferPointer(rebasing: bytes[min(position + 1, lineEnd)..<lineEnd])
        guard !target.isEmpty, position < lineEnd else { return .handOver }
        var isLean = true
        if version.equals("HTTP/1.0") {
            isLean = false  // keep-alive rules of its own: the general path applies them
        } else if !version.equals("HTTP/1.1") {
            return .handOver
        }

        var fields = Fields()
        var fieldCount = 0
        position = lineEnd + 2
        while true {
            let end: Int
            switch line(in: bytes, from: position) {
            case .end(let found): end = found
            case .incomplete: return .needMore
            case .malformed: return .handOver
            }
            if end == position { break }  // the empty line: end of the header block
            fieldCount += 1
            guard fieldCount <= maxFieldCount,
                fields.read(UnsafeRawBufferPointer(rebasing: bytes[position..<end]))
            else { return .handOver }
            position = end + 2
        }
        let length = position + 2
        guard !fields.hasBody else { return .handOver }
        if isLean, fields.keepsAlive, target.hasPrefix("/v1/content/") {
            let text = String(decoding: target, as: UTF8.self)
            let query = text.firstIndex(of: "?")
            return .content(
                ContentRequest(
                    isHead: isHead, path: String(text[..<(query ?? text.endIndex)]),
                    query: query.map { String(text[text.index(after: $0)...]) } ?? "", range: fields.range, ifRange: fields.ifRange),
                length: length)
        }
        guard isLean, fields.keepsAlive, let feed = FeedTarget(target) else { return .other(length: length) }
        return .feed(
            FeedRequest(
                isHead: isHead, target: feed,
                conditions: ConditionalRequest(ifNoneMatch: fields.ifNoneMatch, ifModifiedSince: fields.ifModifiedSince),
                acceptEncoding: fields.acceptEncoding),
            length: length)
    }

    private enum Line {
        /// The line ends with the CRLF at this index.
        case end(Int)
        /// Its end has not arrived yet.
        case incomplete
        /// A bare LF, or no line end within a header block's length.
        case malformed
    }

    private static func line(in bytes: UnsafeRawBufferPointer, from start: Int) -> Line {
        var newline = start
        while newline < bytes.count, newline < maxHeaderBlock, bytes[newline] != UInt8(ascii: "\n") { newline += 1 }
        guard newline < bytes.count, newline < maxHeaderBlock else { return bytes.count >= maxHeaderBlock ? .malformed : .incomplete }
        return newline > start && bytes[newline - 1] == UInt8(ascii: "\r") ? .end(newline - 1) : .malformed
    }

    /// The header fields that matter to a feed answer, and whether any field rules the lean path out.
    private struct Fields {
        var ifNoneMatch: [String] = []
        var ifModifiedSince: [String] = []
        var acceptEncoding: [String] = []
        /// `Range` and `If-Range`, for content: the first of each (RFC 9110 §14.2 defines one).
        var range: String?
        var ifRange: String?
        var keepsAlive = true
        var hasBody = false
        var hasContentLength = false

        /// Reads one field line (without its CRLF); false if it is not plainly well-formed.
        mutating func read(_ line: UnsafeRawBufferPointer) -> Bool {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > 0 else { return false }
            let name = UnsafeRawBufferPointer(rebasing: line[..<colon])
            guard name.allSatisfy(isTokenByte) else { return false }  // also refuses obs-fold
            let value = line[(colon + 1)...].trimmingSpaces
            // Printable ASCII, spaces and tabs: a control byte or obs-text is the decoder's to judge.
            guard value.allSatisfy({ (0x20...0x7E).contains($0) || $0 == UInt8(ascii: "\t") }) else { return false }
            let text = { String(decoding: UnsafeRawBufferPointer(rebasing: value), as: UTF8.self) }
            if name.equalsIgnoringCase("if-none-match") {
                ifNoneMatch.append(text())
            } else if name.equalsIgnoringCase("if-modified-since") {
                ifModifiedSince.append(text())
            } else if name.equalsIgnoringCase("accept-encoding") {
                acceptEncoding.append(text())
            } else if name.equalsIgnoringCase("range") {
                if range == nil { range = text() }
            } else if name.equalsIgnoringCase("if-range") {
                if ifRange == nil { ifRange = text() }
            } else if name.equalsIgnoringCase("connection") {
                // Only keep-alive is plain: close, upgrade and the rest are the general path's.
                keepsAlive =
                    keepsAlive
                    && value.split(separator: UInt8(ascii: ",")).allSatisfy {
                        UnsafeRawBufferPointer(rebasing: $0.trimmingSpaces).equalsIgnoringCase("keep-alive")
                    }
            } else if name.equalsIgnoringCase("content-length") {
                // A repeated Content-Length is for the decoder to refuse, before anything behind it is answered.
                guard !hasContentLength else { return false }
                hasContentLength = true
                hasBody = hasBody || !UnsafeRawBufferPointer(rebasing: value).equals("0")
            } else if name.equalsIgnoringCase("transfer-encoding") || name.equalsIgnoringCase("expect")
                || name.equalsIgnoringCase("upgrade")
            {
                hasBody = true  // or something else the decoder and the application must see
            }
            return true
        }
    }

    /// RFC 9110 §5.6.2 tchar.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
            UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            true
        default: false
        }
    }
}

extension UnsafeRawBufferPointer {
    /// Whether these bytes start with the ASCII `text`.
    fileprivate func hasPrefix(_ text: StaticString) -> Bool {
        count >= text.utf8CodeUnitCount && UnsafeRawBufferPointer(rebasing: self[..<text.utf8CodeUnitCount]).equals(text)
    }

    /// Whether these bytes are exactly the ASCII `text`.
    fileprivate func equals(_ text: StaticString) -> Bool {
        guard count == text.utf8CodeUnitCount else { return false }
        for index in 0..<count where self[index] != text.utf8Start[index] { return false }
        return true
    }

    /// Whether these bytes are `lowercased` (ASCII lowercase letters and `-`) in any case.
    fileprivate func equalsIgnoringCase(_ lowercased: StaticString) -> Bool {
        guard count == lowercased.utf8CodeUnitCount else { return false }
        // Setting 0x20 lowercases ASCII letters and leaves `-` as it is.
        for index in 0..<count where self[index] | 0x20 != lowercased.utf8Start[index] { return false }
        return true
    }
}

extension Slice<UnsafeRawBufferPointer> {
    /// Without the spaces and tabs (optional whitespace, RFC 9110 §5.6.3) at either end.
    fileprivate var trimmingSpaces: Slice<UnsafeRawBufferPointer> {
        var slice = self
        while let first = slice.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") { slice = slice.dropFirst() }
        while let last = slice.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") { slice = slice.dropLast() }
        return slice
    }
}

/// A feed URI read byte by byte: `/v1/apps/<app>/<products|catalog>.json[?platform=…&appVersion=…]`,
/// or a variant's own path, `/v1/apps/<app>/variants/<platform>/<band>/<products|catalog>.json`.
///
/// Only the plain form is read: a target with `%` or `+` (which the general path decodes) or a
/// query member without `=` is left to the general path. The app name is not checked here: it
/// is only looked up in memory, and a name that is not published (a bad one included) goes to
/// the general path, which says why.
struct FeedTarget: Equatable {
    var app: String
    var kind: FeedKind
    var platform: String?
    var appVersion: String?
    /// The platform and band a variant path names; nil for the query form.
    var variant: VariantPath?

    /// `variants/<platform>/<band>/` in a feed's path.
    struct VariantPath: Equatable {
        var platform: String
        var band: String
    }

    /// The path as the access log writes it.
    var path: String {
        "/v1/apps/\(app)/" + (variant.map { "variants/\($0.platform)/\($0.band)/" } ?? "") + kind.rawValue
    }

    /// The feed this request asks for, as in effect at `moment`.
    func lookup(in index: FeedIndex, at moment: Timestamp) -> Result<ServedFeed, FeedIndex.LookupError> {
        if let variant {
            return index.feed(app: app, kind: kind, platformKey: variant.platform, bandKey: variant.band, at: moment)
        }
        return index.feed(app: app, kind: kind, platform: platform, appVersion: appVersion, at: moment)
    }

    init?(_ uri: UnsafeRawBufferPointer) {
        let prefix: StaticString = "/v1/apps/"
        guard uri.hasPrefix(prefix), !uri.contains(where: { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") }) else { return nil }
        let rest = uri[prefix.utf8CodeUnitCount...]
        let query = rest.firstIndex(of: UInt8(ascii: "?"))
        let path = rest[..<(query ?? rest.endIndex)]
        guard let slash = path.firstIndex(of: UInt8(ascii: "/")) else { return nil }
        var name = UnsafeRawBufferPointer(rebasing: path[(slash + 1)...])
        // `variants/<platform>/<band>/<feed>`: a variant at a path of its own (any query ignored,
        // as a static host ignores it). Split only then: the common form allocates nothing here.
        let parts = name.hasPrefix("variants/") ? name.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) : []
        if parts.count == 4, !parts[1].isEmpty, !parts[2].isEmpty {
            variant = VariantPath(
                platform: String(decoding: UnsafeRawBufferPointer(rebasing: parts[1]), as: UTF8.self),
                band: String(decoding: UnsafeRawBufferPointer(rebasing: parts[2]), as: UTF8.self))
            name = UnsafeRawBufferPointer(rebasing: parts[3])
        }
        if name.equals("products.json") {
            kind = .products
        } else if name.equals("catalog.json") {
            kind = .catalog
        } else {
            return nil
        }
        app = String(decoding: UnsafeRawBufferPointer(rebasing: path[..<slash]), as: UTF8.self)
        guard let query, variant == nil else { return }
        for pair in rest[(query + 1)...].split(separator: UInt8(ascii: "&")) {
            guard let equals = pair.firstIndex(of: UInt8(ascii: "=")) else { return nil }
            let key = UnsafeRawBufferPointer(rebasing: pair[..<equals])
            let value = { String(decoding: UnsafeRawBufferPointer(rebasing: pair[(equals + 1)...]), as: UTF8.self) }
            // The first of a repeated parameter counts, as on the general path.
            if key.equals("platform") {
                if platform == nil { platform = value() }
            } else if key.equals("appVersion") {
                if appVersion == nil { appVersion = value() }
            }
        }
    }
}
