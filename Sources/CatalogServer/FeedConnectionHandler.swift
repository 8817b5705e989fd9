import CatalogKit
import Foundation
import NIOCore
import NIOHTTP1
import PropertyList

/// The lean path for feed requests, and each connection's read deadline.
///
/// Sits in front of the HTTP/1 request decoder and reads requests from the received bytes with
/// ``FeedRequestParser``. A plain `GET` or `HEAD` of a current feed is answered here with
/// pre-serialized bytes: no decoding into HTTP types, no async hand-off, no header encoding, a
/// cached buffer per feed and second. The bytes of any other request go on to the decoder and
/// the Hummingbird application unchanged, and while one of those is being answered, every later
/// request on the connection follows it, so that responses leave in request order.
///
/// Because requests answered here never reach the handlers behind it, this handler also keeps
/// the read deadline: a request must be read completely within `deadline` of the connection
/// opening or the previous response, however slowly its bytes arrive; an idle connection is
/// closed after the same time.
final class FeedConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let store: FeedStore
    private let metrics: ServerMetrics
    private let cacheControl: String
    private let clock: @Sendable () -> Timestamp
    private let deadline: TimeAmount
    private var context: ChannelHandlerContext?
    private var timer: Scheduled<Void>?
    /// When the wait for the next complete request began; nil while the application is
    /// answering (its time is not the client's). Updated per request, while the timer is
    /// rescheduled at most once per deadline: rescheduling per request cost a tenth of the time.
    private var waitingSince: NIODeadline?
    /// Requests handed to the application and not yet answered (counted behind the decoder by
    /// ``ForwardedRequestTracker``, which sees where they end).
    private var forwardedInFlight = 0
    /// Something was handed over that this handler cannot delimit (a body, an upgrade, bytes it
    /// does not read): from then on the decoder reads every byte of the connection.
    private var handedOver = false
    /// The start of a request whose header block has not all arrived.
    private var partial: ByteBuffer?
    private var wroteSinceFlush = false
    /// Whether anything was passed on in this read batch: if not, the decoder and the
    /// application's async channel are not told that a batch ended, which would only wake its
    /// task for nothing.
    private var forwardedSinceReadComplete = false
    private var cache = ResponseCache()
    /// The counters of the last feed answered: a connection usually asks for the same feed
    /// with the same outcome, and then counts it without looking the counters up.
    private var counters: RequestCounters?

    init(store: FeedStore, metrics: ServerMetrics, configuration: ServeConfiguration) {
        self.store = store
        self.metrics = metrics
        self.cacheControl = configuration.cacheControl
        self.clock = configuration.clock
        self.deadline = configuration.requestReadDeadline
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { arm(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        timer?.cancel()
        timer = nil
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
        var buffer = unwrapInboundIn(data)
        if handedOver { return forward(buffer, context: context) }
        if var partial = self.partial.take() {
            partial.writeBuffer(&buffer)
            buffer = partial
        }
        while buffer.readableBytes > 0 {
            switch buffer.withUnsafeReadableBytes(FeedRequestParser.parse) {
            case .needMore:
                partial = buffer
                return
            case .feed(let request, let length):
                // The reader never counts more bytes than it was given; should it, the decoder decides.
                guard let bytes = buffer.readSlice(length: length) else { return handOver(buffer, context: context) }
                if forwardedInFlight > 0 || !answer(request, context: context) {
                    // Behind a forwarded request, or not a published feed after all (an unknown app, a
                    // bad parameter): the application answers, and explains.
                    forward(bytes, context: context)
                }
            case .other(let length):
                guard let bytes = buffer.readSlice(length: length) else { return handOver(buffer, context: context) }
                forward(bytes, context: context)
            case .handOver:
                return handOver(buffer, context: context)
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if wroteSinceFlush {
            wroteSinceFlush = false
            context.flush()
        }
        if forwardedSinceReadComplete {
            forwardedSinceReadComplete = false
            context.fireChannelReadComplete()
        } else if forwardedInFlight == 0 && !handedOver {
            // The batch was answered here and nothing behind this handler has a request to
            // answer, so nothing there holds reads back (the application's channel and the
            // report handler only do so while they have requests). Asking for the next bytes
            // from here makes NIO skip its own read request, which would pass through every
            // handler behind this one to arrive at the same place: about 5% of a feed request.
            context.read()
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The input ended, say: what arrived of a request is the decoder's to judge first.
        if let partial = partial.take() { handOver(partial, context: context) }
        context.fireUserInboundEventTriggered(event)
    }

    /// Passes `bytes` and everything after them on this connection to the decoder.
    private func handOver(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        handedOver = true
        forward(bytes, context: context)
    }

    private func forward(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        forwardedSinceReadComplete = true
        context.fireChannelRead(wrapInboundOut(bytes))
    }

    /// Whether a request handed to the application is still unanswered: anything read after it
    /// must be answered after it.
    var isAnsweringForwarded: Bool { forwardedInFlight > 0 }

    /// A request was handed to the application: its time is not the client's.
    func forwardedRequestRead() {
        forwardedInFlight += 1
        waitingSince = nil
    }

    /// The application's response to a forwarded request is written: the wait for the next
    /// request starts.
    func forwardedResponseWritten() {
        forwardedInFlight -= 1
        if forwardedInFlight == 0, let context { arm(context) }
    }

    /// Writes the response to a feed request; false if the request is not for a published feed.
    private func answer(_ request: FeedRequest, context: ChannelHandlerContext) -> Bool {
        let target = request.target
        let now = clock()
        guard
            case .success(let feed) = store.index.feed(
                app: target.app, kind: target.kind, platform: target.platform, appVersion: target.appVersion, at: now)
        else { return false }

        let choice = FeedResponse.choose(feed: feed, conditions: request.conditions, acceptEncoding: request.acceptEncoding, now: now)
        let representation = choice.gzip ? feed.gzip : feed.identity
        let response = cache.response(for: feed, choice, head: request.isHead, now: now) {
            // The same headers as the general path; written here, Date comes from the same
            // clock as Last-Modified, so nothing is held back (dateLag 0).
            var buffer = context.channel.allocator.buffer(capacity: 512)
            buffer.writeString(choice.status == 304 ? "HTTP/1.1 304 Not Modified\r\n" : "HTTP/1.1 200 OK\r\n")
            for (name, value) in FeedResponse.headers(feed: feed, choice: choice, now: now, cacheControl: cacheControl) {
                buffer.writeString("\(name): \(value)\r\n")
            }
            buffer.writeString("\r\n")
            if choice.status == 200 && !request.isHead { buffer.writeBytes(representation.bytes) }
            return buffer
        }
        context.write(wrapOutboundOut(response), promise: nil)
        wroteSinceFlush = true
        let route = MetricsRoute(target.kind)
        if counters?.route != route || counters?.status != choice.status {
            counters = metrics.counters(route, status: choice.status)
        }
        counters?.record(bodyBytes: choice.status == 200 && !request.isHead ? representation.bytes.count : 0)
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
        // The task holds the handler strongly: a weak reference would give the handler a side
        // table for good, which makes NIO's reference counting of it slower on every request.
        // The timer is cancelled when the channel closes or the handler is removed. The task
        // runs on this event loop, as the handler does.
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: moment) {
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

/// Behind the request decoder: tells ``FeedConnectionHandler`` where the requests it handed
/// over begin and end being answered, which only decoded requests and responses show.
final class ForwardedRequestTracker: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let connection: FeedConnectionHandler
    /// A forwarded response said `Connection: close`: close once it is written.
    private var closeAfterResponse = false

    init(connection: FeedConnectionHandler) {
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .end = unwrapInboundIn(data) { connection.forwardedRequestRead() }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head):
            // The application refused a request without reading its body (too large, say):
            // closing is the only way not to read the rest, and Hummingbird would drain it.
            if head.headers[canonicalForm: "connection"].contains(where: { $0.lowercased() == "close" }) { closeAfterResponse = true }
        case .end where closeAfterResponse:
            context.writeAndFlush(data, promise: promise)
            context.close(promise: nil)
            return
        case .end:
            connection.forwardedResponseWritten()
        case .body:
            break
        }
        context.write(data, promise: promise)
    }
}

/// Serialized responses of this connection for the current second (the Date header's resolution).
///
/// Keyed by the feed object, which is immutable (bytes and validators never change once loaded):
/// cheaper to compare than its entity tag. The cache holds each feed it keys, so no other feed
/// can be allocated at the same address while its entry exists. A connection asks for one or two
/// responses as a rule, so a short list searched from its newest entry costs less than hashing a
/// key per request; it is bounded, as a client may ask for any number of feeds in a second.
struct ResponseCache {
    struct Key: Equatable {
        var feed: ObjectIdentifier
        var gzip: Bool
        var status: Int
        var head: Bool
    }

    static let capacity = 8

    private var second: Int64 = -1
    private var entries: [(key: Key, feed: ServedFeed, response: ByteBuffer)] = []

    mutating func response(
        for feed: ServedFeed, _ choice: FeedResponse.Choice, head: Bool, now: Timestamp, build: () -> ByteBuffer
    ) -> ByteBuffer {
        if now.secondsSince1970 != second {
            second = now.secondsSince1970
            entries.removeAll(keepingCapacity: true)
        }
        let key = Key(feed: ObjectIdentifier(feed), gzip: choice.gzip, status: choice.status, head: head)
        // By index: taking the entry out would count references to its feed and buffer.
        if let index = entries.lastIndex(where: { $0.key == key }) { return entries[index].response }
        let buffer = build()
        if entries.count == Self.capacity { entries.removeFirst() }
        entries.append((key, feed, buffer))
        return buffer
    }
}
