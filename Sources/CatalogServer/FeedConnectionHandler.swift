import CatalogKit
import Foundation
import NIOCore
import NIOHTTP1
import PropertyList

/// The lean path for feed requests, and each connection's read deadline.
///
/// Sits right after the HTTP/1 request decoder. A plain `GET` or `HEAD` of a current feed is
/// answered here with pre-serialized bytes written past the response encoder: no conversion to
/// HTTP types, no async hand-off, no header encoding, a cached buffer per feed and second. Any
/// other request goes on to the Hummingbird application unchanged, and while one of those is
/// being answered, every later request on the connection follows it, so that responses leave
/// in request order.
///
/// Because requests answered here never reach the handlers behind it, this handler also keeps
/// the read deadline: a request must be read completely within `deadline` of the connection
/// opening or the previous response, however slowly its bytes arrive; an idle connection is
/// closed after the same time.
final class FeedConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let store: FeedStore
    private let metrics: ServerMetrics
    private let cacheControl: String
    private let clock: @Sendable () -> Timestamp
    private let deadline: TimeAmount
    private var timer: Scheduled<Void>?
    /// When the wait for the next complete request began; nil while the application is
    /// answering (its time is not the client's). Updated per request, while the timer is
    /// rescheduled at most once per deadline: rescheduling per request cost a tenth of the time.
    private var waitingSince: NIODeadline?
    /// The response encoder's context: raw bytes written there skip it.
    private var encoder: ChannelHandlerContext?
    /// Requests handed to the application and not yet answered.
    private var forwardedInFlight = 0
    /// What the request being read is: answered here, or forwarded.
    private var current: Current = .none
    private var wroteSinceFlush = false
    /// Whether anything was passed on in this read batch: if not, the application's async channel
    /// is not told that a batch ended, which would only wake its task for nothing.
    private var forwardedSinceReadComplete = false
    private var cache = ResponseCache()
    /// A forwarded response said `Connection: close`: close once it is written.
    private var closeAfterResponse = false
    /// Whether each forwarded request not yet answered is a HEAD, oldest first: the response
    /// encoder does not know (see ``FeedHTTP1Channel``), so bodies of HEAD responses stop here.
    private var forwardedHeads = CircularBuffer<Bool>(initialCapacity: 2)
    private var answeringHead = false

    private enum Current {
        case none
        case fast(HTTPRequestHead, FeedTarget)
        case forwarded
    }

    init(store: FeedStore, metrics: ServerMetrics, configuration: ServeConfiguration) {
        self.store = store
        self.metrics = metrics
        self.cacheControl = configuration.cacheControl
        self.clock = configuration.clock
        self.deadline = configuration.requestReadDeadline
    }

    func handlerAdded(context: ChannelHandlerContext) {
        encoder = try? context.pipeline.syncOperations.context(handlerType: HTTPResponseEncoder.self)
        if context.channel.isActive { arm(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch (part, current) {
        case (.head(let head), _):
            if forwardedInFlight == 0, encoder != nil, let target = Self.feedTarget(head) {
                current = .fast(head, target)
            } else {
                current = .forwarded
                forwardedSinceReadComplete = true
                forwardedHeads.append(head.method == .HEAD)
                context.fireChannelRead(data)
            }
        case (.body, .fast):
            break  // GET and HEAD bodies mean nothing to a feed
        case (.end, .fast(let head, let target)):
            current = .none
            if !answer(head, target, context: context) {
                waitingSince = nil
                // Not a feed after all (an unknown app, a bad parameter): the application explains.
                forwardedInFlight += 1
                forwardedSinceReadComplete = true
                forwardedHeads.append(head.method == .HEAD)
                context.fireChannelRead(wrapInboundOut(.head(head)))
                context.fireChannelRead(wrapInboundOut(.end(nil)))
            }
        case (.end, _):
            current = .none
            forwardedInFlight += 1
            forwardedSinceReadComplete = true
            waitingSince = nil
            context.fireChannelRead(data)
        default:
            forwardedSinceReadComplete = true
            context.fireChannelRead(data)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if wroteSinceFlush {
            wroteSinceFlush = false
            encoder?.flush()
        }
        if forwardedSinceReadComplete {
            forwardedSinceReadComplete = false
            context.fireChannelReadComplete()
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head):
            // The application refused a request without reading its body (too large, say):
            // closing is the only way not to read the rest, and Hummingbird would drain it.
            if head.headers[canonicalForm: "connection"].contains(where: { $0.lowercased() == "close" }) { closeAfterResponse = true }
            answeringHead = forwardedHeads.popFirst() ?? false
        case .body where answeringHead:
            promise?.succeed()
            return
        case .end where closeAfterResponse:
            context.writeAndFlush(data, promise: promise)
            context.close(promise: nil)
            return
        case .end:
            forwardedInFlight -= 1
            if forwardedInFlight == 0 { arm(context) }
        case .body:
            break
        }
        context.write(data, promise: promise)
    }

    /// `GET` or `HEAD` of `/v1/apps/<app>/products.json` or `catalog.json` over HTTP/1.1 with keep-alive,
    /// no body and no escapes in the URI: everything else takes the general path.
    static func feedTarget(_ head: HTTPRequestHead) -> FeedTarget? {
        guard head.method == .GET || head.method == .HEAD, head.version == .http1_1, head.isKeepAlive,
            head.headers.first(name: "content-length").map({ $0 == "0" }) ?? true,
            !head.headers.contains(name: "transfer-encoding")
        else { return nil }
        return FeedTarget(head.uri)
    }

    /// Writes the response to a feed request; false if the request is not for a published feed.
    private func answer(_ head: HTTPRequestHead, _ target: FeedTarget, context: ChannelHandlerContext) -> Bool {
        let (app, kind, platform, appVersion) = (target.app, target.kind, target.platform, target.appVersion)
        let now = clock()
        guard case .success(let feed) = store.index.feed(app: app, kind: kind, platform: platform, appVersion: appVersion, at: now)
        else { return false }

        let choice = FeedResponse.choose(
            feed: feed,
            conditions: ConditionalRequest(ifNoneMatch: head.headers["if-none-match"], ifModifiedSince: head.headers["if-modified-since"]),
            acceptEncoding: head.headers["accept-encoding"], now: now)
        let representation = choice.gzip ? feed.gzip : feed.identity
        let isHead = head.method == .HEAD
        let key = ResponseCache.Key(
            entityTag: representation.entityTag, lastModified: feed.lastModified.secondsSince1970, status: choice.status, head: isHead)
        let response = cache.response(for: key, now: now, allocator: context.channel.allocator) { buffer in
            // The same headers as the general path; written here, Date comes from the same
            // clock as Last-Modified, so nothing is held back (dateLag 0).
            buffer.writeString(choice.status == 304 ? "HTTP/1.1 304 Not Modified\r\n" : "HTTP/1.1 200 OK\r\n")
            for (name, value) in FeedResponse.headers(feed: feed, choice: choice, now: now, cacheControl: cacheControl) {
                buffer.writeString("\(name): \(value)\r\n")
            }
            buffer.writeString("\r\n")
            if choice.status == 200 && !isHead { buffer.writeBytes(representation.bytes) }
        }
        encoder?.write(NIOAny(IOData.byteBuffer(response)), promise: nil)
        wroteSinceFlush = true
        metrics.recordRequest(
            MetricsRoute(kind), status: choice.status, bodyBytes: choice.status == 200 && !isHead ? representation.bytes.count : 0)
        waitingSince = .now()
        if timer == nil { arm(context) }
        return true
    }

    /// Starts the wait for the next request now, with a timer at its deadline.
    private func arm(_ context: ChannelHandlerContext) {
        waitingSince = .now()
        schedule(context, at: waitingSince! + deadline)
    }

    private func schedule(_ context: ChannelHandlerContext, at moment: NIODeadline) {
        timer?.cancel()
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(deadline: moment) { [weak self] in
            guard let self else { return }
            self.timer = nil
            // Answering a forwarded request: the deadline starts again when it is answered.
            guard let waitingSince = self.waitingSince else { return }
            let expiry = waitingSince + self.deadline
            if expiry <= .now() {
                channel.close(promise: nil)
            } else {
                self.schedule(context, at: expiry)
            }
        }
    }
}

/// Serialized responses of this connection for the current second (the Date header's resolution).
struct ResponseCache {
    struct Key: Hashable {
        var entityTag: String
        var lastModified: Int64
        var status: Int
        var head: Bool
    }

    private var second: Int64 = -1
    private var responses: [Key: ByteBuffer] = [:]

    mutating func response(
        for key: Key, now: Timestamp, allocator: ByteBufferAllocator, build: (inout ByteBuffer) -> Void
    ) -> ByteBuffer {
        if now.secondsSince1970 != second {
            second = now.secondsSince1970
            responses.removeAll(keepingCapacity: true)
        }
        if let cached = responses[key] { return cached }
        var buffer = allocator.buffer(capacity: 512)
        build(&buffer)
        responses[key] = buffer
        return buffer
    }
}

/// A feed URI read byte by byte: `/v1/apps/<app>/<products|catalog>.json[?platform=…&appVersion=…]`.
/// This runs for nearly every request, so it avoids Foundation and splitting into arrays.
struct FeedTarget {
    var app: String
    var kind: FeedKind
    var platform: String?
    var appVersion: String?

    init?(_ uri: String) {
        var utf8 = Substring(uri).utf8
        let prefix = "/v1/apps/".utf8
        guard utf8.starts(with: prefix), !utf8.contains(UInt8(ascii: "%")) else { return nil }
        utf8 = utf8.dropFirst(prefix.count)
        let query = utf8.firstIndex(of: UInt8(ascii: "?"))
        let path = utf8[..<(query ?? utf8.endIndex)]
        guard let slash = path.firstIndex(of: UInt8(ascii: "/")) else { return nil }
        let name = Substring(path[path.index(after: slash)...])
        switch name {
        case "products.json": kind = .products
        case "catalog.json": kind = .catalog
        default: return nil
        }
        app = String(Substring(path[..<slash]))
        guard AppName.problem(app) == nil else { return nil }
        if let query {
            for pair in Substring(utf8[utf8.index(after: query)...]).split(separator: "&") {
                guard let equals = pair.firstIndex(of: "=") else { continue }
                let value = String(pair[pair.index(after: equals)...])
                switch pair[..<equals] {
                case "platform": platform = value
                case "appVersion": appVersion = value
                default: break
                }
            }
        }
    }
}
