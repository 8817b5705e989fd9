import CatalogKit
import Foundation
import HTTPSemantics
import HTTPTypes
import HummingbirdCore
import NIOCore
import NIOHTTP1
import Synchronization
import Time

/// The lean path for the two POSTs a server takes by the thousand: reports
/// (`POST /v1/apps/{app}/invalid-identifiers`) and App Store notifications
/// (`POST /v1/apps/{app}/notifications/app-store`) are answered here, between the HTTP/1 decoder and
/// Hummingbird, with the same checks and the same code as there (``ReportIntake``, and
/// ``PurchaseEndpoints/notification(_:app:revision:now:)``).
///
/// On Hummingbird's path a request crosses threads four times (the connection's task wakes for the
/// request, again for its body, hands it on and wakes for its outcome, and hands the response back
/// to the event loop), and the request and response are converted twice. At the thousands of
/// reports a second one server must take, those hops were most of a report's cost; a notification
/// of 12.5 KB refused there cost 42 to 44 µs of CPU, a report of that size read and refused here
/// 19 µs (docs/benchmarks.md, "Notifications on the lean path, and pairs run at once"). Here the
/// body is gathered on the event loop; a report goes from there to the group committer, a
/// notification to a task that verifies it and waits for its commit, and the answer comes straight
/// back.
///
/// Plain means: HTTP/1.1 with keep-alive, a `Content-Length` (a chunked body takes the general
/// path, which stops reading at the limit), no `Expect`, a path without escapes or a query, and
/// nothing forwarded to Hummingbird still unanswered on this connection (its answer must go
/// first). While a request is answered, the requests behind it wait here, unread, so that answers
/// leave in request order.
final class LeanPostHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// Nil when the server stores no reports: they take the general path, which says so.
    private let intake: ReportIntake?
    /// Nil when the server keeps no purchases: notifications take the general path, which says so.
    private let purchases: PurchaseEndpoints?
    private let feeds: FeedStore
    /// Knows whether a request passed on to Hummingbird is still unanswered (its tracker counts
    /// every request behind the decoder, those answered here included).
    private let connection: LeanConnectionHandler
    private let metrics: ServerMetrics
    private let clock: @Sendable () -> Timestamp
    private let instant: @Sendable () -> Date
    private let accessLog: AccessLog

    /// A request this handler answers, as its head names it.
    enum Post: Equatable {
        case report(app: String)
        case notification(app: String)
    }

    /// What a request's body goes to once read.
    private enum Receiver {
        case report(ReportIntake, app: String, client: ClientAddress?)
        case notification(PurchaseEndpoints, app: String, revision: Int)
    }

    /// What a head decides: its body is read for `Receiver`, or it is refused.
    private enum HeadDecision {
        case read(Receiver)
        case refuse(LeanAnswer)
    }

    private enum State {
        case idle
        /// Passing a request on to Hummingbird.
        case forwarding
        /// Reading a request's body.
        case collecting(Receiver, body: ByteBuffer)
        /// A refusal decided by the head, sent once the (small, known-length) body has gone by.
        case discarding(LeanAnswer)
        /// Waiting for the request's answer: a report's commit, a notification's check and commit.
        case answering
        /// Refused without reading the body, and closing: nothing more is read.
        case closed
    }

    private var state = State.idle
    /// What arrived while a request was answered, replayed once it is.
    private var held = CircularBuffer<HTTPServerRequestPart>()
    /// A read asked for while a request was answered, and held back with the requests.
    private var readPending = false
    /// Whether anything was passed on since the last end of a read batch: if not, Hummingbird's
    /// channel is not told a batch ended, which would only wake its task for nothing.
    private var forwardedSinceReadComplete = false
    /// The last client seen on this connection and its network's hash: behind no proxy every
    /// request of a connection has the same client, and hashing it per report was 4% of a report.
    private var lastNetwork: (client: IPAddress, network: String)?
    /// The request being answered, for the access log: its path, client and request id.
    private var logged: (path: String, client: ClientAddress?, requestID: String?)?
    /// When the head of the request being answered arrived, for the latency histogram and the log.
    private var started: ContinuousClock.Instant?
    private var dateSecond: Int64 = -1
    private var date = ""

    init(
        intake: ReportIntake?, purchases: PurchaseEndpoints?, feeds: FeedStore, connection: LeanConnectionHandler,
        metrics: ServerMetrics, clock: @escaping @Sendable () -> Timestamp, instant: @escaping @Sendable () -> Date,
        accessLog: AccessLog
    ) {
        self.accessLog = accessLog
        self.intake = intake
        self.purchases = purchases
        self.feeds = feeds
        self.connection = connection
        self.metrics = metrics
        self.clock = clock
        self.instant = instant
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if case .answering = state {
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
            guard !connection.isAnsweringForwarded, let post = Self.post(head), let decision = begin(post, head, context: context)
            else {
                state = .forwarding
                forwardedSinceReadComplete = true
                context.fireChannelRead(wrapInboundOut(part))
                return
            }
            switch decision {
            case .read(let receiver):
                let length = head.headers.first(name: "content-length").flatMap(Int.init) ?? 0
                state = .collecting(receiver, body: context.channel.allocator.buffer(capacity: length))
            case .refuse(let refusal):
                // Too large or of unknown size: answer and close without reading the body.
                if refusal.closeConnection { return write(refusal, context: context) }
                state = .discarding(refusal)
            }
        case (.body(var bytes), .collecting(let receiver, var body)):
            state = .idle  // drop the buffer's other reference, so that writing into it does not copy it
            body.writeBuffer(&bytes)
            state = .collecting(receiver, body: body)
        case (.end, .collecting(let receiver, let body)):
            state = .answering
            let loop = context.eventLoop
            let bound = NIOLoopBound((handler: self, context: context), eventLoop: loop)
            let answered: @Sendable (LeanAnswer) -> Void = { answer in
                loop.execute { bound.value.handler.write(answer, context: bound.value.context) }
            }
            switch receiver {
            case .report(let intake, let app, let client):
                receiveReport(body, intake: intake, app: app, client: client, answered: answered)
            case .notification(let purchases, let app, let revision):
                // The signatures are checked off the event loop, in a task of their own, as
                // Hummingbird's path checks them in the connection's.
                let now = instant()
                Task {
                    let response = await purchases.notification(
                        String(decoding: body.readableBytesView, as: UTF8.self), app: app, revision: revision, now: now)
                    answered(await LeanAnswer(response, route: .notifications))
                }
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

    /// What the head of `post` decides: where its body goes, or its refusal; nil to pass it on
    /// (to the general path, which answers what this server does not take).
    private func begin(_ post: Post, _ head: HTTPRequestHead, context: ChannelHandlerContext) -> HeadDecision? {
        let length = head.headers.first(name: "content-length").flatMap(Int.init)
        let contentType = head.headers.first(name: "content-type")
        switch post {
        case .report(let app):
            guard let intake else { return nil }
            let client = intake.client(peer: context.channel.remoteAddress?.ipAddress) { head.headers[$0] }
            started = .now
            if accessLog.enabled { logged = (head.uri, client, head.headers.first(name: "x-request-id")) }
            if let refusal = intake.checkHead(
                app: app, isPublished: feeds.index.apps[app] != nil, contentType: contentType, contentLength: length, client: client)
            {
                return .refuse(LeanAnswer(report: refusal))
            }
            return .read(.report(intake, app: app, client: client))
        case .notification(let app):
            guard let purchases else { return nil }
            started = .now
            if accessLog.enabled {
                let client = ReportIntake.loggedClient(intake, peer: context.channel.remoteAddress?.ipAddress) { head.headers[$0] }
                logged = (head.uri, client, head.headers.first(name: "x-request-id"))
            }
            let limit = PurchaseEndpoints.maximumNotificationBytes
            switch PurchaseEndpoints.checkHead(
                app: app, revision: feeds.index.apps[app]?.manifest.revision, contentType: contentType, contentLength: length, limit: limit)
            {
            case .success(let revision):
                return .read(.notification(purchases, app: app, revision: revision))
            case .failure(let refusal):
                let close = ReportIntake.refusalCloses(contentLength: length, limit: limit)
                return .refuse(LeanAnswer(error: refusal.status, refusal.message, route: .notifications, closeConnection: close))
            }
        }
    }

    private func receiveReport(
        _ body: ByteBuffer, intake: ReportIntake, app: String, client: ClientAddress?, answered: @escaping @Sendable (LeanAnswer) -> Void
    ) {
        var network: String?
        if let client {
            if let last = lastNetwork, last.client == client.address {
                network = last.network
            } else {
                network = intake.network(of: client)
                lastNetwork = network.map { (client.address, $0) }
            }
        }
        let published = feeds.index.apps[app]?.history
        intake.receive(body.readableBytesView, app: app, published: published, network: network, now: clock()) { answer in
            answered(LeanAnswer(report: answer))
        }
    }

    /// Writes `answer`, then lets the requests that waited behind it through.
    private func write(_ answer: LeanAnswer, context: ChannelHandlerContext) {
        let now = clock()
        if now.secondsSince1970 != dateSecond {
            dateSecond = now.secondsSince1970
            date = HTTPDate.format(now)
        }
        var headers = HTTPHeaders()
        for (name, value) in answer.headers { headers.add(name: name.rawName, value: value) }
        headers.add(name: "Content-Length", value: String(answer.body.count))
        headers.add(name: "Date", value: date)
        let head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: answer.status.code), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: answer.body)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        metrics.recordRequest(answer.route, status: answer.status.code, bodyBytes: answer.body.count)
        let started = self.started.take()
        if let started, answer.route == .reports { metrics.recordReportLatency(.now - started) }
        if let logged = logged.take(), let started {
            accessLog.record(
                method: "POST", path: logged.path, status: answer.status.code, bytes: answer.body.count, started: started,
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
            if case .answering = state { return }
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

    /// Holds reads back while a request is answered: the requests behind it stay in the socket.
    func read(context: ChannelHandlerContext) {
        if case .answering = state {
            readPending = true
            return
        }
        context.read()
    }

    /// The request of a plain head that this handler answers, or nil for anything the general path
    /// should judge.
    static func post(_ head: HTTPRequestHead) -> Post? {
        guard head.method == .POST, head.version == .http1_1, head.isKeepAlive,
            head.headers.contains(name: "content-length"), !head.headers.contains(name: "transfer-encoding"),
            !head.headers.contains(name: "expect")
        else { return nil }
        var path = Substring(head.uri)
        let prefix = "/v1/apps/"
        guard path.hasPrefix(prefix), !path.contains("%"), !path.contains("?") else { return nil }
        path = path.dropFirst(prefix.count)
        let post: (String) -> Post
        if path.hasSuffix(Self.reportSuffix) {
            path = path.dropLast(Self.reportSuffix.count)
            post = Post.report
        } else if path.hasSuffix(Self.notificationSuffix) {
            path = path.dropLast(Self.notificationSuffix.count)
            post = Post.notification
        } else {
            return nil
        }
        let app = String(path)
        guard !app.contains("/"), AppName.problem(app) == nil else { return nil }
        return post(app)
    }

    private static let reportSuffix = "/invalid-identifiers"
    private static let notificationSuffix = "/notifications/app-store"
}

/// An answer the lean path writes, in the shape it writes it.
struct LeanAnswer: Sendable {
    var status: HTTPResponse.Status
    /// Besides the framing ones (Content-Length, Date), in the order they are sent.
    var headers: [(HTTPField.Name, String)]
    var body: [UInt8]
    var closeConnection: Bool
    /// The `reportId` a 202 stored a report under, for the access log.
    var reportID: String?
    /// The label it is counted under: the route it stands in for.
    var route: MetricsRoute

    init(report answer: ReportAnswer) {
        status = answer.status
        headers = answer.headers
        body = answer.json
        closeConnection = answer.closeConnection
        reportID = answer.reportID
        route = .reports
    }

    /// `JSONError`'s answer, closing the connection after it when `closeConnection`.
    init(error status: HTTPResponse.Status, _ message: String, route: MetricsRoute, closeConnection: Bool) {
        self.status = status
        headers = [(.contentType, "application/json")]
        if closeConnection { headers.append((.connection, "close")) }
        body = JSONError.body(message)
        self.closeConnection = closeConnection
        reportID = nil
        self.route = route
    }

    /// `response` as written here: its fields, and its body gathered (a few hundred bytes of JSON).
    init(_ response: Response, route: MetricsRoute) async {
        status = response.status
        headers = response.headers.compactMap { field in
            field.name == .contentLength || field.name == .date ? nil : (field.name, field.value)
        }
        let gathered = GatheredBody()
        do {
            try await response.body.write(gathered)
            body = gathered.bytes.withLock { $0 }
        } catch {
            // Not one of these endpoints' answers: none writes anything but a buffer it has.
            status = .internalServerError
            body = JSONError.body("the answer could not be written")
        }
        closeConnection = false
        reportID = nil
        self.route = route
    }
}

/// A response body's bytes, as Hummingbird's writer would send them.
private final class GatheredBody: ResponseBodyWriter, Sendable {
    let bytes = Mutex<[UInt8]>([])

    func write(_ buffer: ByteBuffer) async throws {
        bytes.withLock { $0.append(contentsOf: buffer.readableBytesView) }
    }

    func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
