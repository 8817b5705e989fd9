import CatalogKit
import HTTPTypes
import Hummingbird
import NIOCore
import PropertyList
import ReportStorage

/// How the report endpoint protects the store, and how long raw reports are kept.
public struct ReportsConfiguration: Sendable {
    /// Raw reports older than this are pruned (aggregates are computed from raw reports).
    public var retention: Duration = .seconds(90 * 86_400)
    /// How often the pruning runs.
    public var pruneInterval: Duration = .seconds(3600)
    /// Per client address; nil for none (a benchmark from one address, a trusted proxy in front).
    public var perAddress: RateLimit? = RateLimit(perMinute: 600, burst: 120)
    /// Per `installId`: one device has little reason to report more than now and then.
    public var perInstall: RateLimit? = RateLimit(perMinute: 30, burst: 10)
    /// The deliberately broken mode `scripts/crash-test` must catch; see `GroupCommitter`.
    public var acknowledgeBeforeCommit = false

    public init() {}
}

/// `POST /v1/apps/{app}/invalid-identifiers`: checks, limits, then a durable commit before 202.
///
/// The order of the checks is the order of their cost: what the head alone decides (app,
/// media type, size, the address's rate) comes before reading the body, and the body is read
/// only up to the limit.
struct ReportIntake: Sendable {
    let store: any ReportStore
    let committer: GroupCommitter
    let byAddress: RateLimiter?
    let byInstall: RateLimiter?

    init(store: any ReportStore, configuration: ReportsConfiguration) {
        self.store = store
        committer = GroupCommitter(store: store, acknowledgeBeforeCommit: configuration.acknowledgeBeforeCommit)
        byAddress = configuration.perAddress.map { RateLimiter($0) }
        byInstall = configuration.perInstall.map { RateLimiter($0) }
    }

    func respond(to request: Request, app: String, isPublished: Bool, clientAddress: String, now: Timestamp) async -> Response {
        let limit = ReportDecoder.maximumBodyBytes
        let length = request.headers[.contentLength].flatMap(Int.init)
        // Refusing before the body is read: Hummingbird would read and discard the body to keep
        // the connection, which is cheap for a small body of known length; anything else closes.
        func refuse(_ status: HTTPResponse.Status, _ message: String) -> Response {
            var response = JSONError.response(status, message)
            if !(length.map { $0 <= limit } ?? false) { response.headers[.connection] = "close" }
            return response
        }
        guard isPublished else { return refuse(.notFound, "no published app '\(app)'") }
        guard Self.isJSON(request.headers[.contentType]) else {
            return refuse(.unsupportedMediaType, "a report must be sent as Content-Type: application/json")
        }
        if let length, length > limit {
            return refuse(.contentTooLarge, "the body is \(length) bytes; the limit is \(limit)")
        }
        if let wait = byAddress?.take(clientAddress) {
            var response = refuse(.tooManyRequests, "too many reports from this address; retry after \(wait) s")
            response.headers[.retryAfter] = String(wait)
            return response
        }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            return refuse(.contentTooLarge, "the body is larger than \(limit) bytes")
        } catch {
            return refuse(.badRequest, "the body could not be read")
        }
        let report: InvalidIdentifierReport
        switch ReportDecoder.decode(body.readableBytesView, app: app, receivedAt: now) {
        case .failure(let rejection): return JSONError.response(.badRequest, rejection.description)
        case .success(let decoded): report = decoded
        }
        if let install = report.installID, let wait = byInstall?.take(install) {
            var response = JSONError.response(.tooManyRequests, "too many reports from this install; retry after \(wait) s")
            response.headers[.retryAfter] = String(wait)
            return response
        }
        do {
            let outcome = try await committer.submit(report)
            var json = JSONWriter()
            json.beginObject()
            json.key("accepted")
            json.integer(Int64(report.invalid.count))
            if outcome == .duplicate {
                json.key("duplicate")
                json.boolean(true)
            }
            json.endObject()
            return Response(
                status: .accepted, headers: [.contentType: "application/json", .cacheControl: "no-store"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: json.bytes)))
        } catch {
            var response = JSONError.response(.serviceUnavailable, "the report could not be stored; send it again later")
            response.headers[.retryAfter] = "5"
            return response
        }
    }

    /// `application/json`, with or without parameters such as `charset=utf-8`, in any case.
    /// Compared byte by byte: Foundation's trimming and lowercasing cost more than the rest of
    /// the head's checks together.
    static func isJSON(_ contentType: String?) -> Bool {
        guard var bytes = contentType?.utf8[...] else { return false }
        if let semicolon = bytes.firstIndex(of: UInt8(ascii: ";")) { bytes = bytes[..<semicolon] }
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        while let first = bytes.first, isSpace(first) { bytes = bytes.dropFirst() }
        while let last = bytes.last, isSpace(last) { bytes = bytes.dropLast() }
        let expected = "application/json".utf8
        // ASCII letters only: setting bit 5 lower-cases them and leaves '/' alone.
        return bytes.count == expected.count && zip(bytes, expected).allSatisfy { $0 | 0x20 == $1 | 0x20 }
    }
}
