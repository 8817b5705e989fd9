import CatalogKit
import Content
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Time

/// The lean path of one HTTP/1.1 connection: feeds and content files answered in front of the
/// decoder, every other request passed on in order, and the connection's deadlines and backpressure.
///
/// Sits in front of the HTTP/1 request decoder and reads requests from the received bytes with
/// ``LeanRequestParser``. A plain `GET` or `HEAD` of a current feed is answered here with
/// pre-serialized bytes: no decoding into HTTP types, no async hand-off, no header encoding, a
/// cached header block per feed and second, and the feed's body shared by every connection
/// (``FeedBodies``). A signed content URL is answered here too, its file sent without copying
/// (``ContentResponse``). The bytes of any other request go on to the decoder and the Hummingbird
/// application unchanged, and while one of those is unanswered, every later request on the
/// connection follows it, so that responses leave in request order.
///
/// Being first in the pipeline, it also keeps, for the whole connection:
/// - **Backpressure.** While the socket is not writable (the client does not read what was
///   sent), no request is answered here and nothing more is read, whichever path it would take;
///   both resume when the socket drains. A connection thus holds at most NIO's write buffer
///   high-water mark (64 KiB) of responses beyond the one that crossed it, plus one read's worth
///   of request bytes. Bodies are shared by every connection, except for at most 16 KiB of small
///   ones copied behind their header blocks for the current second (``ResponseCache``).
/// - **Deadlines by what the connection is doing**, never by counting: a request must be read
///   completely within `readDeadline` of its first byte, whatever its shape (a body the
///   application never reads or that arrives after the answer still belongs to its request);
///   a connection with no request in progress and nothing unanswered closes after
///   `idleTimeout`; a client that does not read its answers for `readDeadline` is closed. Only
///   the application's own time (a request read and not yet answered) is not the client's.
///
/// Those rules are decided by ``LeanConnectionStateMachine``, which this handler tells every event
/// and whose actions it carries out; time is read from the event loop, so that tests can move it.
final class LeanConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let store: FeedStore
    private let content: ContentFiles
    /// Behind a TLS handler: a file cannot go zero-copy (the bytes must be encrypted), so it is
    /// read in bounded chunks instead (``LeanHTTP1Channel`` sets it).
    var isSecure = false
    /// The file being sent, if any, and the pieces of it still to write: the I/O behind the state
    /// machine's download phase, which may outlive it (a chunk being read when the connection ends
    /// keeps its file until the read returns).
    private var download: Download?
    /// The inbound event held during a download: the state machine says when to pass it on; the
    /// event itself, which it never looks into, stays here.
    private var heldEvent: Any?
    /// Inside ``pump(_:)``: this handler's own loop, not the connection's state.
    private var pumping = false
    /// Inside ``handleReceived(_:now:)``'s loop, which goes on by itself after a download that ends at once.
    private var handlingReceived = false
    private let metrics: ServerMetrics
    private let cacheControl: String
    private let clock: @Sendable () -> Timestamp
    private let accessLog: AccessLog
    /// Feed answers since the last one logged (``AccessLog/feedSampling``).
    private var unlogged = 0
    private var context: ChannelHandlerContext?
    /// Every rule of the connection; this handler only carries out what it decides.
    private var state: LeanConnectionStateMachine
    private var timer: Scheduled<Void>?
    private var cache = ResponseCache()
    /// The counters of the last feed answered: a connection usually asks for the same feed
    /// with the same outcome, and then counts it without looking the counters up.
    private var counters: RequestCounters?
    /// The feed answered last, what it was asked as, and when: the same target in the same
    /// second of the same index generation is the same feed (timestamps are whole seconds, so a
    /// scheduled switch falls between two), found again without the index's lock, the app's
    /// table or the variant's.
    private var lastFeed: (target: FeedTarget, generation: Int, second: Int64, feed: ServedFeed)?

    init(store: FeedStore, metrics: ServerMetrics, configuration: ServeConfiguration, content: ContentFiles? = nil) {
        self.store = store
        self.content = content ?? ContentFiles(keyRing: configuration.content.keyRing, tree: store.tree)
        self.metrics = metrics
        self.cacheControl = configuration.cacheControl
        self.clock = configuration.clock
        self.accessLog = configuration.accessLog
        // The idle clock starts again when the handler joins its channel, on its loop's clock.
        self.state = LeanConnectionStateMachine(
            readDeadline: configuration.readDeadline, idleTimeout: configuration.idleTimeout, now: .now())
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { apply(state.connectionActive(now: context.eventLoop.now), context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        end()
    }

    func channelActive(context: ChannelHandlerContext) {
        apply(state.connectionActive(now: context.eventLoop.now), context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        end()
        context.fireChannelInactive()
    }

    private func end() {
        // A chunk being read keeps the file until the read returns (``readChunk``); a final write
        // issued closes it when done.
        if let download, !download.finalWriteIssued, !download.reading {
            try? download.file.close()
            self.download = nil
        }
        state.connectionEnded()
        timer?.cancel()
        timer = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let now = context.eventLoop.now
        state.bytesReceived(unwrapInboundIn(data), now: now)
        handleReceived(context, now: now)
    }

    /// Answers or passes on every complete request received, as far as the state allows.
    private func handleReceived(_ context: ChannelHandlerContext, now: NIODeadline) {
        handlingReceived = true
        defer { handlingReceived = false }
        while true {
            switch state.nextAction(isWritable: context.channel.isWritable, now: now) {
            case .answer(let request, let bytes):
                if answer(request, context: context) {
                    state.answeredHere()
                } else {
                    state.passedOn()
                    context.fireChannelRead(wrapInboundOut(bytes))
                }
            case .content(let request, _):
                answerContent(request, context: context)
                state.answeredHere()
                if download != nil {
                    state.downloadStarted()
                    pump(context)
                }
            case .forward(let bytes):
                context.fireChannelRead(wrapInboundOut(bytes))
            case .done(let timer):
                return apply(timer, context)
            }
        }
    }

    /// Sends what the batch answered, and tells the handlers behind that their batch ended.
    private func perform(_ end: LeanConnectionStateMachine.BatchEnd, _ context: ChannelHandlerContext) {
        if end.flush {
            context.flush()
            if let started = end.batchStartedAt {
                metrics.recordFeedAnswer(nanoseconds: (context.eventLoop.now - started).nanoseconds)
            }
        }
        if end.fireReadComplete { context.fireChannelReadComplete() }
        if end.read { read(context: context) }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        perform(state.readComplete(), context)
    }

    func read(context: ChannelHandlerContext) {
        if state.readRequested(isWritable: context.channel.isWritable) { context.read() }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        let now = context.eventLoop.now
        switch state.writabilityChanged(isWritable: context.channel.isWritable, now: now) {
        case .drained(let resume):
            if download != nil { pump(context) }
            if resume {
                handleReceived(context, now: now)
                perform(state.writableAgain(), context)
            }
            if state.releaseHeldRead(isWritable: context.channel.isWritable) { context.read() }
        case .stalled(let timer):
            apply(timer, context)
        }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if state.holdsInputEvent() {
            heldEvent = event
            return
        }
        if let bytes = state.inputEvent() { context.fireChannelRead(wrapInboundOut(bytes)) }
        context.fireUserInboundEventTriggered(event)
    }

    // MARK: What the handlers behind the decoder see (``ForwardedRequestTracker``)

    /// Whether a request passed on is still unanswered: anything read after it must be answered
    /// after it.
    var isAnsweringForwarded: Bool { state.isAnsweringForwarded }

    func decodedRequestBegan() {
        let action = state.decodedRequestBegan(now: context?.eventLoop.now ?? .now())
        if let context { apply(action, context) }
    }

    /// A passed-on request was read whole: its time from now on is the application's, until answered.
    func decodedRequestEnded() {
        state.decodedRequestEnded()
    }

    /// The application's response to a passed-on request is written: the wait for the next request starts.
    func forwardedResponseWritten() {
        let action = state.forwardedResponseWritten(now: context?.eventLoop.now ?? .now())
        if let context { apply(action, context) }
    }

    /// The decoder refused what it was given: nothing after it is answered here.
    func decoderFailed() {
        state.decoderFailed()
    }

    // MARK: Answering

    /// Writes the response to a feed request; false if the request is not for a published feed.
    private func answer(_ request: FeedRequest, context: ChannelHandlerContext) -> Bool {
        let target = request.target
        let now = clock()
        let generation = store.indexGeneration
        let feed: ServedFeed
        if let last = lastFeed, last.generation == generation, last.second == now.secondsSince1970, last.target == target {
            feed = last.feed
        } else {
            guard case .success(let found) = target.lookup(in: store.index, at: now) else { return false }
            feed = found
            lastFeed = (target, generation, now.secondsSince1970, found)
        }

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
        let route = MetricsRoute(target.kind)
        if counters?.route != route || counters?.status != choice.status {
            counters = metrics.counters(route, status: choice.status)
        }
        counters?.record(bodyBytes: response.bodyBytes)
        if accessLog.feedSampling > 0 {
            unlogged += 1
            if unlogged >= accessLog.feedSampling {
                unlogged = 0
                accessLog.record(
                    method: request.isHead ? "HEAD" : "GET", path: target.path, status: choice.status,
                    bytes: response.bodyBytes, started: .now,
                    client: context.channel.remoteAddress?.ipAddress.flatMap { IPAddress($0) }.map(ClientAddress.init(peer:)))
            }
        }
        return true
    }

    // MARK: Content files

    /// A file being sent: the body's pieces still to write, and where the current one is.
    private struct Download {
        let file: NIOFileHandle
        var segments: ArraySlice<ContentResponse.Segment>
        /// A chunk is being read for TLS; nothing more is written until it arrives.
        var reading = false
        /// The last piece is written: the file is closed once that write completes.
        var finalWriteIssued = false
    }

    /// Bytes of the file per `FileRegion`: NIO counts them against the write buffer's high-water
    /// mark, so one region fills it and the next waits for the socket to drain. Memory: none.
    static let regionBytes: Int64 = 1 << 20
    /// Bytes read per chunk over TLS, where the file must pass through memory to be encrypted.
    static let tlsChunkBytes: Int64 = 64 * 1024

    private static let fileIO = NonBlockingFileIO(threadPool: .singleton)

    /// Answers a request for a content file: the URL verified before the disk is touched, then the
    /// file opened, the answer planned (``ContentResponse``) and its head written. A body from the
    /// file is left in ``download`` for ``pump(_:)``.
    private func answerContent(_ request: ContentRequest, context: ChannelHandlerContext) {
        let now = clock()
        let response: ContentResponse
        var opened: ContentFiles.OpenFile?
        switch content.admit(path: request.path, query: request.query, now: now) {
        case .refuse(let refusal):
            response = refusal.response(now: now)
        case .serve(let token):
            if let file = content.openBlob(token.digest) {
                opened = file
                response = ContentResponse.file(token, length: file.length, request: request, now: now)
            } else {
                response = ContentRefusal(status: 404, code: "not-found", message: "no content has this digest on this server")
                    .response(now: now)
            }
        }
        metrics.counters(.content, status: response.status).record(bodyBytes: Int(clamping: response.contentLength))
        if accessLog.enabled {
            // The path only: the query is a bearer token for the file until it expires.
            accessLog.record(
                method: request.isHead ? "HEAD" : "GET", path: request.path, status: response.status,
                bytes: Int(clamping: response.contentLength), started: .now,
                client: context.channel.remoteAddress?.ipAddress.flatMap { IPAddress($0) }.map(ClientAddress.init(peer:)))
        }
        var head = context.channel.allocator.buffer(capacity: 512)
        head.writeBytes(response.head)
        context.write(wrapOutboundOut(head), promise: nil)
        guard let opened else {
            for case .bytes(let bytes) in response.body { context.write(wrapOutboundOut(ByteBuffer(bytes: bytes)), promise: nil) }
            return
        }
        let file = NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: opened.descriptor)
        guard !response.body.isEmpty else {
            try? file.close()
            return
        }
        download = Download(file: file, segments: response.body[...])
    }

    /// Writes the next pieces of the download while the socket is writable: a `FileRegion` per
    /// ``regionBytes`` on plain HTTP (sendfile: no byte passes through this process), chunks of
    /// ``tlsChunkBytes`` read off the event loop over TLS. Called again when the socket drains and
    /// when a chunk has been read; the state machine is told when the last piece is written.
    private func pump(_ context: ChannelHandlerContext) {
        // A flush can drain the socket at once and announce it writable again, which calls back
        // here: the loop below goes on by itself, and a second one would write from a stale state.
        guard !pumping else { return }
        pumping = true
        defer { pumping = false }
        while var current = download, !current.reading, !current.finalWriteIssued, context.channel.isWritable {
            guard let segment = current.segments.first else { return }
            switch segment {
            case .bytes(let bytes):
                current.segments.removeFirst()
                current.finalWriteIssued = current.segments.isEmpty
                download = current
                write(wrapOutboundOut(ByteBuffer(bytes: bytes)), isLast: current.finalWriteIssued, file: current.file, context: context)
            case .file(let offset, let count):
                let piece = min(count, isSecure ? Self.tlsChunkBytes : Self.regionBytes)
                if piece == count {
                    current.segments.removeFirst()
                } else {
                    current.segments[current.segments.startIndex] = .file(offset: offset + piece, count: count - piece)
                }
                let isLast = current.segments.isEmpty
                if isSecure {
                    current.reading = true
                    download = current
                    readChunk(offset: offset, count: piece, isLast: isLast, file: current.file, context: context)
                    return
                }
                current.finalWriteIssued = isLast
                download = current
                let region = FileRegion(fileHandle: current.file, readerIndex: Int(offset), endIndex: Int(offset + piece))
                write(NIOAny(IOData.fileRegion(region)), isLast: isLast, file: current.file, context: context)
            }
            if current.finalWriteIssued {
                pumping = false  // what waited may be another download, which pumps in turn
                return finishDownload(context)
            }
        }
    }

    /// Reads a chunk of the file for TLS, then writes it and goes on.
    private func readChunk(offset: Int64, count: Int64, isLast: Bool, file: NIOFileHandle, context: ChannelHandlerContext) {
        let read = Self.fileIO.read(
            fileHandle: file, fromOffset: offset, byteCount: Int(count), allocator: context.channel.allocator, eventLoop: context.eventLoop)
        read.assumeIsolated().whenComplete { result in
            guard var current = self.download, current.file === file, !self.state.hasEnded else {
                // The connection ended while the chunk was read: the file is closed now, not
                // while the read could still use its descriptor.
                try? file.close()
                self.download = nil
                return
            }
            switch result {
            case .success(let chunk) where chunk.readableBytes == Int(count):
                current.reading = false
                current.finalWriteIssued = isLast
                self.download = current  // before the write, whose flush may call back into pump
                self.write(self.wrapOutboundOut(chunk), isLast: isLast, file: file, context: context)
                if isLast { return self.finishDownload(context) }
                self.pump(context)
            default:
                // The file shrank or could not be read: the promised length cannot be kept.
                try? file.close()
                self.download = nil
                context.close(promise: nil)
            }
        }
    }

    private func write(_ any: NIOAny, isLast: Bool, file: NIOFileHandle, context: ChannelHandlerContext) {
        guard isLast else {
            context.writeAndFlush(any, promise: nil)
            return
        }
        // The file is closed once its last piece is written (or failed with the connection): never
        // before, so that no pending sendfile finds its descriptor reused.
        let promise = context.eventLoop.makePromise(of: Void.self)
        promise.futureResult.whenComplete { _ in try? file.close() }
        context.writeAndFlush(any, promise: promise)
    }

    /// The last piece is written: what waited is answered, a held event and read released.
    private func finishDownload(_ context: ChannelHandlerContext) {
        download = nil
        apply(state.downloadFinished(now: context.eventLoop.now), context)
        // A download that ended within the loop of received requests: the loop goes on with them.
        guard !handlingReceived else { return }
        handleReceived(context, now: context.eventLoop.now)
        perform(state.writableAgain(), context)
        if state.releaseHeldEvent(), let event = heldEvent {
            heldEvent = nil
            if let bytes = state.inputEvent() { context.fireChannelRead(wrapInboundOut(bytes)) }
            context.fireUserInboundEventTriggered(event)
        }
        if state.releaseHeldRead(isWritable: context.channel.isWritable) { context.read() }
    }

    // MARK: The timer

    private func apply(_ action: LeanConnectionStateMachine.TimerAction, _ context: ChannelHandlerContext) {
        guard case .schedule(let moment) = action else { return }
        timer?.cancel()
        schedule(context, at: moment)
    }

    private func schedule(_ context: ChannelHandlerContext, at moment: NIODeadline) {
        let channel = context.channel
        // The task holds the handler strongly: a weak reference would give the handler a side
        // table for good, which makes NIO's reference counting of it slower on every request.
        // The timer is cancelled when the channel closes or the handler is removed. The task
        // runs on this event loop, as the handler does.
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: moment) {
            self.timer = nil
            switch self.state.timerFired(now: channel.eventLoop.now) {
            case .untimed: break
            case .close: channel.close(promise: nil)
            case .schedule(let moment): self.schedule(context, at: moment)
            }
        }
    }
}

/// Behind the request decoder: tells ``LeanConnectionHandler`` where the requests it passed on
/// begin and end, and when their responses are written, which only decoded parts show.
final class ForwardedRequestTracker: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let connection: LeanConnectionHandler
    /// A forwarded response said `Connection: close`: close once it is written.
    private var closeAfterResponse = false

    init(connection: LeanConnectionHandler) {
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

    /// The bytes of a response: its header block, with a small body in the same buffer, and a
    /// bigger body apart (shared with every connection).
    struct Response {
        var head: ByteBuffer
        var body: ByteBuffer?
        /// The body's size, wherever it is.
        var bodyBytes: Int
        /// The body bytes copied into `head`.
        var inlinedBytes: Int { body == nil ? bodyBytes : 0 }
    }

    /// The most body bytes this cache copies behind header blocks, all its entries together, so
    /// that a small feed's response is one buffer and one write instead of a vector of two
    /// (docs/benchmarks.md, "A feed in one write"): a copy a connection and a second, against a
    /// vector write on every request. Any other body is sent from the buffer every connection
    /// shares; a connection asking for many feeds holds no more than this in copies.
    let inlineBodyBudget: Int
    /// Body bytes copied into this second's entries.
    private var inlined = 0

    init(inlineBodyBudget: Int = 16 * 1024) {
        self.inlineBodyBudget = inlineBodyBudget
    }

    mutating func response(
        for feed: ServedFeed, _ choice: FeedResponse.Choice, head: Bool, now: Timestamp, build: () -> (ByteBuffer, ByteBuffer?)
    ) -> Response {
        if now.secondsSince1970 != second {
            second = now.secondsSince1970
            entries.removeAll(keepingCapacity: true)
            inlined = 0
        }
        let key = Key(feed: ObjectIdentifier(feed), gzip: choice.gzip, status: choice.status, head: head)
        // By index: taking the entry out would count references to its feed and buffer.
        if let index = entries.lastIndex(where: { $0.key == key }) { return entries[index].response }
        var (head, body) = build()
        let bodyBytes = body?.readableBytes ?? 0
        if entries.count == Self.capacity { inlined -= entries.removeFirst().response.inlinedBytes }
        if let small = body, inlined + bodyBytes <= inlineBodyBudget {
            head.writeImmutableBuffer(small)
            body = nil
            inlined += bodyBytes
        }
        let response = Response(head: head, body: body, bodyBytes: bodyBytes)
        entries.append((key, feed, response))
        return response
    }
}
