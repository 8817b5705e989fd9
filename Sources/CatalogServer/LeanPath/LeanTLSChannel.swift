import HummingbirdCore
import HummingbirdHTTP2
import Logging
import NIOCore
import NIOHTTP2
import NIOHTTPTypes
import NIOSSL
import NIOTLS

/// The HTTPS listener: TLS in front of the same channels and protections as plain HTTP.
///
/// Composed as Hummingbird's `HTTP2UpgradeChannel` is (TLS, then HTTP/2 or HTTP/1.1 by ALPN),
/// with our own parts where its defaults leave a connection unguarded:
/// - the connection is counted by the listener's one ``ConnectionLimit`` before anything is set
///   up for it, and refused past it, as on plain HTTP;
/// - its handshake must complete within `readDeadline` of its accept (``TLSHandshakeDeadline``);
/// - HTTP/1.1 goes to ``LeanHTTP1Channel``'s own pipeline behind the TLS handler: the lean feed,
///   content and report paths, and ``LeanConnectionHandler``'s read deadline, idle timeout and
///   backpressure, the very same code as plain HTTP;
/// - HTTP/2 goes to Hummingbird's `HTTP2Channel`, its streams and connection kept to the same
///   rules by ``HTTP2StreamDeadline`` and ``HTTP2ConnectionDeadline``.
struct LeanTLSChannel: HTTPChannelHandler {
    struct Value: ServerChildChannelValue {
        let negotiated: EventLoopFuture<NIONegotiatedHTTPVersion<LeanHTTP1Channel.Value, HTTP2Channel.Value>>
        let channel: any Channel
    }

    private let context: NIOSSLContext
    private let http1: LeanHTTP1Channel
    private let http2: HTTP2Channel
    private let readDeadline: TimeAmount
    private let idleTimeout: TimeAmount

    var responder: Responder { http1.responder }

    /// `http1` serves HTTP/1.1 (its connection limit counts every connection, whichever protocol);
    /// `configuration` gives the deadlines.
    init(certificate: ReloadingCertificate, http1: LeanHTTP1Channel, configuration: ServeConfiguration) throws {
        var tls = certificate.tlsConfiguration()
        tls.applicationProtocols = NIOHTTP2SupportedALPNProtocols
        context = try NIOSSLContext(configuration: tls)
        self.http1 = http1
        readDeadline = configuration.readDeadline
        idleTimeout = configuration.idleTimeout
        let streamDeadline = configuration.readDeadline
        http2 = HTTP2Channel(
            responder: http1.responder,
            configuration: HTTP2ChannelConfiguration(
                // Hummingbird's own: at the idle timeout a GOAWAY, and a connection closed once the
                // client acknowledges it; ``HTTP2ConnectionDeadline`` closes those that do not.
                idleTimeout: .nanoseconds(configuration.idleTimeout.nanoseconds),
                gracefulCloseTimeout: .nanoseconds(configuration.readDeadline.nanoseconds),
                // A handler of its own for each stream.
                streamConfiguration: HTTP1Channel.Configuration(
                    additionalChannelHandlers: [HTTP2StreamDeadline(readDeadline: streamDeadline)])))
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        guard http1.connectionLimit.admit(channel) else {
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(ChannelError.inputClosed)
        }
        do {
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
            // Behind the TLS handler, where its handshake-completed event arrives; in front of the
            // ALPN handler, which takes that event and does not pass it on.
            try channel.pipeline.syncOperations.addHandler(TLSHandshakeDeadline(timeout: readDeadline))
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        let http1 = self.http1, http2 = self.http2, readDeadline = self.readDeadline, idleTimeout = self.idleTimeout
        return channel.configureHTTP2AsyncSecureUpgrade { channel in
            channel.eventLoop.makeCompletedFuture { try http1.configure(channel, secure: true, logger: logger) }
        } http2ConnectionInitializer: { channel in
            do {
                // In front of the HTTP/2 handler that `HTTP2Channel` appends: it sees the connection's bytes.
                try channel.pipeline.syncOperations.addHandler(
                    HTTP2ConnectionDeadline(readDeadline: readDeadline, idleTimeout: idleTimeout))
            } catch {
                return channel.eventLoop.makeFailedFuture(error)
            }
            return http2.setup(channel: channel, logger: logger)
        }
        .map { Value(negotiated: $0, channel: channel) }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.negotiated.get() {
            case .http1_1(let http1): await self.http1.handle(value: http1, logger: logger)
            case .http2(let http2): await self.http2.handle(value: http2, logger: logger)
            }
        } catch {
            // The handshake failed or timed out, or the connection closed before it ended.
            logger.debug("tls.negotiation.failed", metadata: ["error": "\(error)"])
        }
    }
}

/// Closes a connection whose TLS handshake has not completed within `timeout` of its accept:
/// a socket that sends nothing, or half a ClientHello, would otherwise hold its descriptor for
/// good. Removes itself once the handshake is done; from then on the HTTP channels keep time.
///
/// Sits behind the TLS handler, which announces a completed handshake with
/// `TLSUserEvent.handshakeCompleted`.
final class TLSHandshakeDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private let timeout: TimeAmount
    private var timer: Scheduled<Void>?

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        // From the accept: the handler is added as the connection is set up.
        let channel = context.channel
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { channel.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard let tlsEvent = event as? TLSUserEvent, case .handshakeCompleted = tlsEvent else {
            return context.fireUserInboundEventTriggered(event)
        }
        timer?.cancel()
        timer = nil
        context.fireUserInboundEventTriggered(event)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}

/// One HTTP/2 stream's deadlines, as ``LeanConnectionHandler`` keeps them for an HTTP/1.1
/// connection: the request must be read whole within `readDeadline` of the stream's opening,
/// however its body trickles in, and a stream whose answer the client does not take (it grants
/// no flow-control window) for `readDeadline` is closed. It also tells the connection's
/// ``HTTP2ConnectionDeadline`` that a stream is open, which stops its idle clock.
final class HTTP2StreamDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    private let readDeadline: TimeAmount
    private var readTimer: Scheduled<Void>?
    private var writeTimer: Scheduled<Void>?
    private var connection: HTTP2ConnectionDeadline?

    init(readDeadline: TimeAmount) {
        self.readDeadline = readDeadline
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        readTimer = context.eventLoop.assumeIsolated().scheduleTask(in: readDeadline) { channel.close(promise: nil) }
        // A stream channel runs on its connection's event loop.
        connection = try? channel.parent?.pipeline.syncOperations.handler(type: HTTP2ConnectionDeadline.self)
        connection?.streamOpened()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        readTimer?.cancel()
        writeTimer?.cancel()
        readTimer = nil
        writeTimer = nil
        connection?.streamClosed()
        connection = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .end = unwrapInboundIn(data) {
            // Read whole: from here on the time is the application's.
            readTimer?.cancel()
            readTimer = nil
        }
        context.fireChannelRead(data)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        writeTimer?.cancel()
        writeTimer = nil
        if !context.channel.isWritable {
            let channel = context.channel
            writeTimer = context.eventLoop.assumeIsolated().scheduleTask(in: readDeadline) { channel.close(promise: nil) }
        }
        context.fireChannelWritabilityChanged()
    }
}

/// An HTTP/2 connection's deadlines, in front of its HTTP/2 handler.
///
/// - A connection with no open stream for the idle timeout is sent a GOAWAY by Hummingbird,
///   which closes it once the client acknowledges; one still open `readDeadline` later (a client
///   that never answers) is closed here.
/// - A client that does not read what is sent to it for `readDeadline` is closed, as on HTTP/1.1.
final class HTTP2ConnectionDeadline: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let readDeadline: TimeAmount
    private let idleTimeout: TimeAmount
    private var context: ChannelHandlerContext?
    private var openStreams = 0
    /// Since when no stream has been open; nil while one is.
    private var idleSince: NIODeadline?
    /// Since when the socket has not been writable; nil while it is.
    private var writeStalledSince: NIODeadline?
    private var timer: Scheduled<Void>?

    init(readDeadline: TimeAmount, idleTimeout: TimeAmount) {
        self.readDeadline = readDeadline
        self.idleTimeout = idleTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        // The event loop's clock, not the wall's: the tests move it.
        idleSince = context.eventLoop.now
        reschedule()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        self.context = nil
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        writeStalledSince = context.channel.isWritable ? nil : context.eventLoop.now
        reschedule()
        context.fireChannelWritabilityChanged()
    }

    /// A stream of this connection opened (called by its ``HTTP2StreamDeadline``).
    func streamOpened() {
        openStreams += 1
        idleSince = nil
        reschedule()
    }

    /// A stream of this connection closed.
    func streamClosed() {
        openStreams -= 1
        if openStreams == 0 { idleSince = context?.eventLoop.now }
        reschedule()
    }

    /// When the connection must close if nothing changes.
    private var expiry: NIODeadline? {
        let idle = idleSince.map { $0 + idleTimeout + readDeadline }
        let stalled = writeStalledSince.map { $0 + readDeadline }
        return [idle, stalled].compactMap { $0 }.min()
    }

    /// Not a hot path (a stream is a request): one timer, set again at every change.
    private func reschedule() {
        timer?.cancel()
        timer = nil
        guard let context, let expiry else { return }
        let channel = context.channel
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: expiry) { channel.close(promise: nil) }
    }
}
