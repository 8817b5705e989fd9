import CatalogKit
import Content
import Foundation
import HTTPSemantics
import Logging
import NIOCore
import Synchronization
import Time

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// What a `GET` or `HEAD` of a signed content URL needs, read from the request.
struct ContentRequest: Sendable, Equatable {
    var isHead: Bool
    /// The path, `/v1/content/{sha256}`.
    var path: String
    /// The query, without its `?` (empty when there is none).
    var query: String
    /// The `Range` field, if one was sent (the first, should there be several).
    var range: String?
    /// The `If-Range` field, if one was sent.
    var ifRange: String?
}

/// The content files `catalog serve` delivers, and the one place that decides what a request for
/// one answers (docs/content.md, "Serving a file"): the token is verified in memory first, and the
/// disk is touched only for a URL this server signed that has not expired.
///
/// Both paths use it: the lean path in front of the decoder (HTTP/1.1, zero-copy), and the
/// general path for what reaches the application (HTTP/2, HTTP/1.0, a request pipelined behind
/// a passed-on one).
final class ContentFiles: Sendable {
    /// The keys, read again from their file when it changes (``ContentKeySource``).
    let keys: ContentKeySource
    let blobs: BlobStore
    /// Blobs this server tried to open so far: the tests prove with it that a refused URL opens none.
    let opened = Atomic<Int>(0)

    init(keyRing: ContentKeyRing?, keyFile: String? = nil, tree: PublicTree, logger: Logger? = nil) {
        keys = ContentKeySource(ring: keyRing, file: keyFile, logger: logger)
        blobs = BlobStore(root: tree.content)
    }

    /// The key ring in effect now.
    var keyRing: ContentKeyRing? { keys.current(at: .now()) }

    /// What a request for content is answered before any file is opened.
    enum Admission {
        /// The URL is good: serve the file of this token.
        case serve(ContentURLToken)
        /// A refusal: status, a stable code, and why.
        case refuse(ContentRefusal)
    }

    /// Checks the URL with the clock and memory only (``ContentKeyRing/verify(path:query:now:)``).
    func admit(path: String, query: String, now: Timestamp) -> Admission {
        guard let keyRing else {
            return .refuse(
                ContentRefusal(
                    status: 503, code: "not-configured", message: "this server delivers no content: it was started without --content-keys"))
        }
        let instant = Date(timeIntervalSince1970: TimeInterval(now.secondsSince1970))
        switch keyRing.verify(path: path, query: query, now: instant) {
        case .success(let token): return .serve(token)
        case .failure(let refusal): return .refuse(ContentRefusal(status: 403, code: refusal.code.rawValue, message: refusal.reason))
        }
    }

    /// An open blob: its descriptor (the caller's to close) and its length.
    struct OpenFile {
        var descriptor: CInt
        var length: Int64
    }

    /// Opens the blob of `digest` for reading; nil when it is not stored (404). Blocking, but an
    /// `open` and an `fstat` of a local file, as nginx does on its event loop.
    func openBlob(_ digest: ContentDigest) -> OpenFile? {
        opened.add(1, ordering: .relaxed)
        let descriptor = open(blobs.url(of: digest).path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            close(descriptor)
            return nil
        }
        return OpenFile(descriptor: descriptor, length: Int64(status.st_size))
    }
}

/// The content key ring of `--content-keys`, read again when its file changes, so that keys
/// rotate without a restart (docs/operations.md, "Content keys"): the file is looked at (a `stat`)
/// at most once a second, and read when its size, modification time or inode changed. A file that
/// does not read as a key ring is logged and ignored: the last good ring stays in effect.
final class ContentKeySource: Sendable {
    private let file: String?
    private let logger: Logger?
    private struct State {
        var ring: ContentKeyRing?
        /// The file's stamp when last read (or last refused), and when it was last looked at.
        var stamp: [Int64]?
        var checked: NIODeadline?
    }
    private let state: Mutex<State>

    init(ring: ContentKeyRing?, file: String?, logger: Logger?) {
        self.file = file
        self.logger = logger
        state = Mutex(State(ring: ring, stamp: file.map(Self.stamp), checked: nil))
    }

    /// The ring in effect at `now` (the event loop's clock; tests move it).
    func current(at now: NIODeadline) -> ContentKeyRing? {
        guard let file else { return state.withLock { $0.ring } }
        return state.withLock { (state: inout State) -> ContentKeyRing? in
            if let checked = state.checked, now - checked < .seconds(1) { return state.ring }
            state.checked = now
            let stamp = Self.stamp(file)
            guard stamp != state.stamp else { return state.ring }
            state.stamp = stamp
            do {
                state.ring = try ContentConfiguration.keyRing(file: file)
                logger?.notice("content.keys.reloaded", metadata: ["current": "\(state.ring?.currentKeyId ?? "-")"])
            } catch {
                logger?.error("content.keys.refused", metadata: ["reason": "\(error)", "kept": "the previous key ring"])
            }
            return state.ring
        }
    }

    /// What tells one version of the file from another: inode, size, modification time.
    private static func stamp(_ path: String) -> [Int64] {
        var status = stat()
        guard stat(path, &status) == 0 else { return [] }
        return [
            Int64(status.st_ino), Int64(status.st_size), Int64(status.st_mtim.tv_sec), Int64(status.st_mtim.tv_nsec),
        ]
    }
}

/// A content URL refused: the status (403 for a URL that does not verify, 404 for a file not
/// stored, 405 for another method, 503 with no keys), a stable code and why.
struct ContentRefusal: Sendable, Equatable {
    var status: Int
    var code: String
    var message: String

    /// The whole response: never cached (a cache must not keep a refusal under a URL that may yet be good elsewhere).
    func response(now: Timestamp) -> ContentResponse {
        let body = JSONError.body(message, appending: [("code", ServiceJSON.encode(code))])
        var headers: [(name: String, value: String)] = [
            ("Date", HTTPDate.format(now)), ("Cache-Control", "no-store"), ("Content-Type", "application/json"),
            ("Content-Length", String(body.count)),
        ]
        if status == 405 { headers.append(("Allow", "GET, HEAD")) }
        return ContentResponse(status: status, headers: headers, body: [.bytes(body)])
    }
}

/// A content response decided: status, headers in order, and the body as pieces, each either bytes
/// in memory (multipart part headers, an error) or a range of the file, sent from the disk.
struct ContentResponse: Sendable {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: [Segment]

    /// A piece of the body.
    enum Segment: Sendable, Equatable {
        /// Bytes in memory.
        case bytes([UInt8])
        /// `count` bytes of the file from `offset`.
        case file(offset: Int64, count: Int64)
    }

    /// The body's length in bytes.
    var contentLength: Int64 {
        body.reduce(0) { total, segment in
            switch segment {
            case .bytes(let bytes): total + Int64(bytes.count)
            case .file(_, let count): total + count
            }
        }
    }

    /// The reason phrase of `status`.
    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 206: "Partial Content"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 416: "Range Not Satisfiable"
        case 503: "Service Unavailable"
        default: "Status"
        }
    }

    /// The status line and header block, as bytes.
    var head: [UInt8] {
        var text = "HTTP/1.1 \(status) \(Self.reason(status))\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        text += "\r\n"
        return Array(text.utf8)
    }

    /// The answer to `request` for the file of `token`, `length` bytes long, at `now` (RFC 9110
    /// §14 through ``RangeResponsePlan``): 200, 206 with one range or `multipart/byteranges`, or
    /// 416; every one with `Accept-Ranges`, the strong `ETag` and `Repr-Digest`, and, for 200 and
    /// 206, `Cache-Control: public, max-age=<until the URL expires>, immutable`, so that a cache in
    /// front keeps it by URL for exactly as long as the URL is good. A HEAD has the same headers
    /// and no body.
    static func file(
        _ token: ContentURLToken, length: Int64, request: ContentRequest, now: Timestamp,
        boundary: @autoclosure () -> String = MultipartByteRanges.makeBoundary()
    ) -> ContentResponse {
        let digest = token.digest
        let contentType = "application/octet-stream"
        let plan = RangeResponsePlan.plan(
            range: request.range, ifRange: request.ifRange, length: length, entityTag: digest.entityTag, contentType: contentType,
            boundary: boundary())
        let maxAge = max(0, token.expires - now.secondsSince1970)
        var headers: [(name: String, value: String)] = [("Date", HTTPDate.format(now))]
        var body: [Segment]
        switch plan {
        case .full:
            body = length > 0 ? [.file(offset: 0, count: length)] : []
            headers.append(("Content-Type", contentType))
        case .single(let range):
            body = [.file(offset: range.first, count: range.count)]
            headers.append(("Content-Type", contentType))
        case .multipart(let parts):
            body = []
            for index in parts.ranges.indices {
                body.append(.bytes(parts.partHeader(index)))
                body.append(.file(offset: parts.ranges[index].first, count: parts.ranges[index].count))
            }
            body.append(.bytes(parts.trailer))
            headers.append(("Content-Type", parts.responseContentType))
        case .unsatisfiable:
            body = []
        }
        if let contentRange = plan.contentRange(length: length) { headers.append(("Content-Range", contentRange)) }
        headers += [
            ("Accept-Ranges", "bytes"), ("ETag", digest.entityTag), ("Repr-Digest", digest.reprDigestFieldValue),
            ("Cache-Control", plan == .unsatisfiable ? "no-store" : "public, max-age=\(maxAge), immutable"),
        ]
        var response = ContentResponse(status: plan.status, headers: headers, body: body)
        headers.append(("Content-Length", String(response.contentLength)))
        response.headers = headers
        if request.isHead { response.body = [] }
        return response
    }
}
