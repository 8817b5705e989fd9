import CatalogKit
import Foundation
import NIOCore
import NIOHTTP1
import Time

/// The lean path for feed requests, and each connection's deadlines and backpressure.
///
/// Sits in front of the HTTP/1 request decoder and reads requests from the received bytes with
/// ``FeedRequestParser``. A plain `GET` or `HEAD` of a current feed is answered here with
/// pre-serialized bytes: no decoding into HTTP types, no async hand-off, no header encoding, a
/// cached header block per feed and second, and the feed's body shared by every connection
/// (``FeedBodies``). The bytes of any other request go on to the decoder and the Hummingbird
/// application unchanged, and while one of those is unanswered, every later request on the
/// connection follows it, so that responses leave in request order.
///
/// Being first in the pipeline, it also keeps, for the whole connection:
/// - **Backpressure.** While the socket is not writable (the client does not read what was
///   sent), no request is answered here and nothing more is read, whichever path it would take;
///   both resume when the socket drains. A connection thus holds at most NIO's write buffer
///   high-water mark (64 KiB) of responses beyond the one that crossed it, plus one read's worth
///   of request bytes; bodies are shared, never copied per connection.
/// - **Deadlines by what the connection is doing**, never by counting: a request must be read
///   completely within `readDeadline` of its first byte, whatever its shape (a body the
///   application never reads or that arrives after the answer still belongs to its request);
///   a connection with no request in progress and nothing unanswered closes after
///   `idleTimeout`; a client that does not read its answers for `readDeadline` is closed. Only
///   the application's own time (a request read and not yet answered) is not the client's.
final class FeedConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let store: FeedStore
    private let metrics: ServerMetrics
    private let cacheControl: String
    private let clock: @Sendable () -> Timestamp
    private let readDeadline: TimeAmount
    private let idleTimeout: TimeAmount
    private let accessLog: AccessLog
    /// Feed answers since the last one logged (``AccessLog/feedSampling``).
    private var unlogged = 0
    private var context: ChannelHandlerContext?
    private var timer: Scheduled<Void>?
    /// When `timer` fires.
    private var timerDeadline: NIODeadline?

    /// When the first byte of the request being read arrived; nil between requests.
    private var requestStartedAt: NIODeadline?
    /// When the last exchange ended (or the connection opened): the idle clock's start.
    private var idleSince = NIODeadline.now()
    /// Since when the socket has not been writable; nil while it is.
    private var writeStalledSince: NIODeadline?
    /// When this read batch's first bytes arrived, for the feed answer-time histogram.
    private var batchStartedAt: NIODeadline?

    /// Requests this handler delimited and passed on, and the responses to passed-on requests
    /// written so far: the lean path answers only when the two agree, so nothing it writes can
    /// overtake an earlier request's response.
    private var forwardedRequests = 0
    private var forwardedResponses = 0
    /// Requests the decoder has read whole; more of them than responses is the application's time.
    private var decodedRequests = 0
    /// The decoder is inside a request (its head read, its end not yet).
    private var decoderInRequest = false
    /// Something was handed over that this handler cannot delimit (a body, an upgrade, bytes it
    /// does not read, a request the decoder refused): from then on the decoder reads every byte.
    private var handedOver = false

    /// Bytes received and not yet consumed: the start of a request whose header block has not all
    /// arrived, or requests waiting for the socket to drain.
    private var unread: ByteBuffer?
    /// Requests wait in `unread` until the socket is writable again.
    private var paused = false
    /// A read was asked for while the socket was not writable; issued when it drains.
    private var readHeld = false
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
        self.readDeadline = configuration.readDeadline
        self.idleTimeout = configuration.idleTimeout
        self.accessLog = configuration.accessLog
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { ensureTimer(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        timer?.cancel()
        timer = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        idleSince = .now()
        ensureTimer(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        let now = NIODeadline.now()
        if requestStartedAt == nil { requestStartedAt = now }
        if batchStartedAt == nil { batchStartedAt = now }
        if handedOver {
            forward(buffer, context: context)
        } else {
            if var unread = self.unread.take() {
                unread.writeBuffer(&buffer)
                buffer = unread
            }
            if paused {
                unread = buffer
            } else {
                consume(buffer, context: context, now: now)
            }
        }
        // A request still arriving: its deadline may come before the timer (set for the idle
        // timeout, say). Whole requests, the usual case, leave the timer alone.
        if requestStartedAt != nil { ensureTimer(context) }
    }

    /// Answers or passes on every complete request in `buffer`, keeping what is left in `unread`.
    private func consume(_ bytes: ByteBuffer, context: ChannelHandlerContext, now: NIODeadline) {
        var buffer = bytes
        while buffer.readableBytes > 0 {
            guard context.channel.isWritable else {
                // The client is not reading: answer nothing more until it does.
                paused = true
                unread = buffer
                return
            }
            switch buffer.withUnsafeReadableBytes(FeedRequestParser.parse) {
            case .needMore:
                unread = buffer
                return
            case .feed(let request, let length):
                // The reader never counts more bytes than it was given; should it, the decoder decides.
                guard let bytes = buffer.readSlice(length: length) else { return handOver(buffer, context: context) }
                if forwardedResponses != forwardedRequests || !answer(request, context: context) {
                    // Behind a passed-on request, or not a published feed after all (an unknown app, a
                    // bad parameter): the application answers, and explains.
                    forwardRequest(bytes, context: context)
                }
            case .other(let length):
                guard let bytes = buffer.readSlice(length: length) else { return handOver(buffer, context: context) }
                forwardRequest(bytes, context: context)
            case .handOver:
                return handOver(buffer, context: context)
            }
        }
        // Every byte received is consumed: no request is being read.
        requestStartedAt = nil
        idleSince = now
    }

    /// Sends what this batch answered, and tells the handlers behind that their batch ended if
    /// anything was passed on to them; whether it was.
    private func endBatch(_ context: ChannelHandlerContext) -> Bool {
        if wroteSinceFlush {
            wroteSinceFlush = false
            context.flush()
            // One observation per batch answered here (a batch is one request unless pipelined):
            // from its bytes' arrival to its answers' hand-off to the socket.
            if let started = batchStartedAt { metrics.recordFeedAnswer(nanoseconds: (NIODeadline.now() - started).nanoseconds) }
        }
        batchStartedAt = nil
        guard forwardedSinceReadComplete else { return false }
        forwardedSinceReadComplete = false
        context.fireChannelReadComplete()
        return true
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if !endBatch(context) && decodedRequests == forwardedResponses && !decoderInRequest && !handedOver {
            // The batch was answered here and nothing behind this handler has a request to
            // answer, so nothing there holds reads back (the application's channel and the
            // report handler only do so while they have requests). Asking for the next bytes
            // from here makes NIO skip its own read request, which would pass through every
            // handler behind this one to arrive at the same place: about 5% of a feed request.
            read(context: context)
        }
    }

    /// Reads stop while the socket is not writable, whichever handler asks: a client that
    /// sends requests and never reads the answers gets nothing more read from it.
    func read(context: ChannelHandlerContext) {
        guard context.channel.isWritable else {
            readHeld = true
            return
        }
        context.read()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            writeStalledSince = nil
            if paused {
                paused = false
                if let unread = unread.take() { consume(unread, context: context, now: .now()) }
                _ = endBatch(context)
            }
            if readHeld && context.channel.isWritable {
                readHeld = false
                context.read()
            }
        } else {
            writeStalledSince = .now()
            ensureTimer(context)
        }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The input ended, say: what arrived of a request is the decoder's to judge first.
        if let unread = unread.take() { handOver(unread, context: context) }
        context.fireUserInboundEventTriggered(event)
    }

    /// Passes `bytes` and everything after them on this connection to the decoder.
    private func handOver(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        handedOver = true
        paused = false
        forward(bytes, context: context)
    }

    /// Passes on one whole request, delimited here.
    private func forwardRequest(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        forwardedRequests += 1
        forward(bytes, context: context)
    }

    private func forward(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        forwardedSinceReadComplete = true
        context.fireChannelRead(wrapInboundOut(bytes))
    }

    // MARK: What the handlers behind the decoder see (``ForwardedRequestTracker``)

    /// Whether a request passed on is still unanswered: anything read after it must be answered
    /// after it.
    var isAnsweringForwarded: Bool { decodedRequests > forwardedResponses }

    func decodedRequestBegan() {
        decoderInRequest = true
        if requestStartedAt == nil, let context {
            requestStartedAt = .now()
            ensureTimer(context)
        }
    }

    /// A passed-on request was read whole: its time from now on is the application's, until answered.
    func decodedRequestEnded() {
        decoderInRequest = false
        decodedRequests += 1
        requestStartedAt = nil
    }

    /// The application's response to a passed-on request is written: the wait for the next request starts.
    func forwardedResponseWritten() {
        forwardedResponses += 1
        idleSince = .now()
        if let context { ensureTimer(context) }
    }

    /// The decoder refused what it was given: nothing after it is answered here.
    func decoderFailed() {
        handedOver = true
    }

    // MARK: Answering

    /// Writes the response to a feed request; false if the request is not for a published feed.
    private func answer(_ request: FeedRequest, context: ChannelHandlerContext) -> Bool {
        let target = request.target
        let now = clock()
        guard case .success(let feed) = target.lookup(in: store.index, at: now) else { return false }

        let choice = FeedResponse.choose(feed: feed, conditions: request.conditions, acceptEncoding: request.acceptEncoding, now: now)
        let response = cache.response(for: feed, choice, head: request.isHead, now: now) {
            // The same headers as the general path; written here, Date comes from the same
            // clock as Last-Modified, so nothing is held back (dateLag 0).
            var buffer = context.channel.allocator.buffer(capacity: 512)
            buffer.writeString(choice.status == 304 ? "HTTP/1.1 304 Not Modified\r\n" : "HTTP/1.1 200 OK\r\n")
            for (name, value) in FeedResponse.headers(feed: feed, choice: choice, now: now, cacheControl: cacheControl) {
                buffer.writeString("\(name): \(value)\r\n")
            }
            buffer.writeString("\r\n")
            let body = choice.status == 200 && !request.isHead ? store.bodies(of: feed).body(gzip: choice.gzip) : nil
            return (buffer, body)
        }
        context.write(wrapOutboundOut(response.head), promise: nil)
        if let body = response.body { context.write(wrapOutboundOut(body), promise: nil) }
        wroteSinceFlush = true
        let route = MetricsRoute(target.kind)
        if counters?.route != route || counters?.status != choice.status {
            counters = metrics.counters(route, status: choice.status)
        }
        counters?.record(bodyBytes: response.body?.readableBytes ?? 0)
        if accessLog.feedSampling > 0 {
            unlogged += 1
            if unlogged >= accessLog.feedSampling {
                unlogged = 0
                accessLog.record(
                    method: request.isHead ? "HEAD" : "GET", path: target.path, status: choice.status,
                    bytes: response.body?.readableBytes ?? 0, started: .now,
                    client: context.channel.remoteAddress?.ipAddress.flatMap { IPAddress($0) }.map(ClientAddress.init(peer:)))
            }
        }
        return true
    }

    // MARK: Deadlines

    /// When the connection must close if nothing changes; nil while only the application owes something.
    private var expiry: NIODeadline? {
        var expiry = writeStalledSince.map { $0 + readDeadline }
        let reading = requestStartedAt ?? (decoderInRequest ? idleSince : nil)
        if let reading {
            expiry = min(expiry ?? .distantFuture, reading + readDeadline)
        } else if !isAnsweringForwarded {
            expiry = min(expiry ?? .distantFuture, idleSince + idleTimeout)
        }
        return expiry
    }

    /// Makes sure a timer fires no later than the expiry. A timer set for an earlier moment is left
    /// alone: when it fires it looks at the expiry as it then is (rescheduling per request cost a
    /// tenth of the time).
    private func ensureTimer(_ context: ChannelHandlerContext) {
        guard let expiry else { return }
        if timer != nil, let timerDeadline, timerDeadline <= expiry { return }
        timer?.cancel()
        schedule(context, at: expiry)
    }

    private func schedule(_ context: ChannelHandlerContext, at moment: NIODeadline) {
        let channel = context.channel
        timerDeadline = moment
        // The task holds the handler strongly: a weak reference would give the handler a side
        // table for good, which makes NIO's reference counting of it slower on every request.
        // The timer is cancelled when the channel closes or the handler is removed. The task
        // runs on this event loop, as the handler does.
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: moment) {
            self.timer = nil
            self.timerDeadline = nil
            guard let expiry = self.expiry else { return }  // the application's time
            if expiry <= .now() {
                channel.close(promise: nil)
            } else {
                self.schedule(context, at: expiry)
            }
        }
    }
}

/// Behind the request decoder: tells ``FeedConnectionHandler`` where the requests it passed on
/// begin and end, and when their responses are written, which only decoded parts show.
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
        switch unwrapInboundIn(data) {
        case .head: connection.decodedRequestBegan()
        case .end: connection.decodedRequestEnded()
        case .body: break
        }
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        connection.decoderFailed()
        context.fireErrorCaught(error)
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

/// Serialized header blocks of this connection for the current second (the Date header's resolution).
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
    private var entries: [(key: Key, feed: ServedFeed, response: Response)] = []

    /// A response's header block, and its body when it has one (shared with every connection).
    struct Response {
        var head: ByteBuffer
        var body: ByteBuffer?
    }

    mutating func response(
        for feed: ServedFeed, _ choice: FeedResponse.Choice, head: Bool, now: Timestamp, build: () -> (ByteBuffer, ByteBuffer?)
    ) -> Response {
        if now.secondsSince1970 != second {
            second = now.secondsSince1970
            entries.removeAll(keepingCapacity: true)
        }
        let key = Key(feed: ObjectIdentifier(feed), gzip: choice.gzip, status: choice.status, head: head)
        // By index: taking the entry out would count references to its feed and buffer.
        if let index = entries.lastIndex(where: { $0.key == key }) { return entries[index].response }
        let (head, body) = build()
        let response = Response(head: head, body: body)
        if entries.count == Self.capacity { entries.removeFirst() }
        entries.append((key, feed, response))
        return response
    }
}
