import CatalogKit
import HTTPSemantics
import HTTPTypes
import NIOCore
import NIOHTTP1
import Time

/// The lean path for reports: a plain `POST /v1/apps/{app}/invalid-identifiers` is answered here,
/// between the HTTP/1 decoder and Hummingbird, with the same checks (``ReportIntake``).
///
/// On Hummingbird's path a report crosses threads four times (the connection's task wakes for the
/// request, hands the report to the group committer, wakes again for its outcome, and hands the
/// response back to the event loop), and the request and response are converted twice; at the
/// thousands of reports a second one server must take, those hops were most of a report's cost.
/// Here the report goes from the event loop to the committer and its answer comes straight back.
///
/// Plain means: HTTP/1.1 with keep-alive, a `Content-Length` (a chunked body takes the general
/// path, which stops reading at the limit), no `Expect`, a path without escapes or a query, and
/// nothing forwarded to Hummingbird still unanswered on this connection (its answer must go
/// first). While a report commits, the requests behind it wait here, unread, so that answers
/// leave in request order.
final class ReportConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let intake: ReportIntake
    private let feeds: FeedStore
    /// Knows whether a request passed on to Hummingbird is still unanswered (its tracker counts
    /// every request behind the decoder, reports answered here included).
    private let connection: LeanConnectionHandler
    private let metrics: ServerMetrics
    private let clock: @Sendable () -> Timestamp
    private let accessLog: AccessLog

    private enum State {
        case idle
        /// Passing a request on to Hummingbird.
        case forwarding
        /// Reading a report's body.
        case collecting(app: String, client: ClientAddress?, body: ByteBuffer)
        /// A refusal decided by the head, sent once the (small, known-length) body has gone by.
        case discarding(ReportAnswer)
        /// Waiting for the report's commit.
        case committing
        /// Refused without reading the body, and closing: nothing more is read.
        case closed
    }

    private var state = State.idle
    /// What arrived while a report was committing, replayed once it is answered.
    private var held = CircularBuffer<HTTPServerRequestPart>()
    /// A read asked for while a report was committing, and held back with the requests.
    private var readPending = false
    /// Whether anything was passed on since the last end of a read batch: if not, Hummingbird's
    /// channel is not told a batch ended, which would only wake its task for nothing.
    private var forwardedSinceReadComplete = false
    /// The last client seen on this connection and its network's hash: behind no proxy every
    /// request of a connection has the same client, and hashing it per report was 4% of a report.
    private var lastNetwork: (client: IPAddress, network: String)?
    /// The report being answered, for the access log: its path, client and request id.
    private var logged: (path: String, client: ClientAddress?, requestID: String?)?
    /// When the head of the report being answered arrived, for the latency histogram and the log.
    private var started: ContinuousClock.Instant?
    private var dateSecond: Int64 = -1
    private var date = ""

    init(
        intake: ReportIntake, feeds: FeedStore, connection: LeanConnectionHandler, metrics: ServerMetrics,
        clock: @escaping @Sendable () -> Timestamp, accessLog: AccessLog
    ) {
        self.accessLog = accessLog
        self.intake = intake
        self.feeds = feeds
        self.connection = connection
        self.metrics = metrics
        self.clock = clock
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if case .committing = state {
            held.append(part)
            return
        }
        handle(part, context: context)
    }

    private func handle(_ part: HTTPServerRequestPart, context: ChannelHandlerContext) {
        switch (part, state) {
        case (_, .closed):
            break
        case (.head(let head), _):
            guard !connection.isAnsweringForwarded, let app = Self.reportApp(head) else {
                state = .forwarding
                forwardedSinceReadComplete = true
                context.fireChannelRead(wrapInboundOut(part))
                return
            }
            let length = head.headers.first(name: "content-length").flatMap(Int.init)
            let client = intake.client(peer: context.channel.remoteAddress?.ipAddress) { head.headers[$0] }
            started = .now
            if accessLog.enabled { logged = (head.uri, client, head.headers.first(name: "x-request-id")) }
            if let refusal = intake.checkHead(
                app: app, isPublished: feeds.index.apps[app] != nil, contentType: head.headers.first(name: "content-type"),
                contentLength: length, client: client)
            {
                // Too large or of unknown size: answer and close without reading the body.
                if refusal.closeConnection { return write(refusal, context: context) }
                state = .discarding(refusal)
                return
            }
            state = .collecting(app: app, client: client, body: context.channel.allocator.buffer(capacity: length ?? 0))
        case (.body(var bytes), .collecting(let app, let client, var body)):
            state = .idle  // drop the buffer's other reference, so that writing into it does not copy it
            body.writeBuffer(&bytes)
            state = .collecting(app: app, client: client, body: body)
        case (.end, .collecting(let app, let client, let body)):
            state = .committing
            let loop = context.eventLoop
            let bound = NIOLoopBound((handler: self, context: context), eventLoop: loop)
            let published = feeds.index.apps[app]?.history
            var network: String?
            if let client {
                if let last = lastNetwork, last.client == client.address {
                    network = last.network
                } else {
                    network = intake.network(of: client)
                    lastNetwork = network.map { (client.address, $0) }
                }
            }
            intake.receive(body.readableBytesView, app: app, published: published, network: network, now: clock()) { answer in
                loop.execute { bound.value.handler.write(answer, context: bound.value.context) }
            }
        case (.end, .discarding(let refusal)):
            write(refusal, context: context)
        case (.body, .discarding):
            break
        default:
            if case .end = part { state = .idle }
            forwardedSinceReadComplete = true
            context.fireChannelRead(wrapInboundOut(part))
        }
    }

    /// Writes `answer`, then lets the requests that waited behind it through.
    private func write(_ answer: ReportAnswer, context: ChannelHandlerContext) {
        let now = clock()
        if now.secondsSince1970 != dateSecond {
            dateSecond = now.secondsSince1970
            date = HTTPDate.format(now)
        }
        var headers = HTTPHeaders()
        for (name, value) in answer.headers { headers.add(name: name.rawName, value: value) }
        headers.add(name: "Content-Length", value: String(answer.json.count))
        headers.add(name: "Date", value: date)
        let head = HTTPResponseHead(
            version: .http1_1, status: HTTPResponseStatus(statusCode: answer.status.code), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: answer.json)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        metrics.recordRequest(.reports, status: answer.status.code, bodyBytes: answer.json.count)
        let started = self.started.take()
        if let started { metrics.recordReportLatency(.now - started) }
        if let logged = logged.take(), let started {
            accessLog.record(
                method: "POST", path: logged.path, status: answer.status.code, bytes: answer.json.count, started: started,
                client: logged.client, requestID: logged.requestID, reportID: answer.reportID)
        }
        if answer.closeConnection {
            state = .closed
            held.removeAll()
            context.close(promise: nil)
            return
        }
        state = .idle
        while let part = held.popFirst() {
            handle(part, context: context)
            if case .committing = state { return }
        }
        // Hummingbird's channel takes what it was given at the end of a read batch.
        channelReadComplete(context: context)
        if readPending {
            readPending = false
            context.read()
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if forwardedSinceReadComplete {
            forwardedSinceReadComplete = false
            context.fireChannelReadComplete()
        }
    }

    /// Holds reads back while a report commits: the requests behind it stay in the socket.
    func read(context: ChannelHandlerContext) {
        if case .committing = state {
            readPending = true
            return
        }
        context.read()
    }

    /// The app of a plain report request, or nil for anything the general path should judge.
    static func reportApp(_ head: HTTPRequestHead) -> String? {
        guard head.method == .POST, head.version == .http1_1, head.isKeepAlive,
            head.headers.contains(name: "content-length"), !head.headers.contains(name: "transfer-encoding"),
            !head.headers.contains(name: "expect")
        else { return nil }
        var path = Substring(head.uri)
        let prefix = "/v1/apps/", suffix = "/invalid-identifiers"
        guard path.hasPrefix(prefix), path.hasSuffix(suffix), !path.contains("%"), !path.contains("?") else { return nil }
        path = path.dropFirst(prefix.count).dropLast(suffix.count)
        let app = String(path)
        guard !app.contains("/"), AppName.problem(app) == nil else { return nil }
        return app
    }
}
