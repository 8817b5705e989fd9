import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1

/// Hummingbird's HTTP/1 child channel with ``LeanConnectionHandler`` in front of the request
/// decoder, where feed and content requests are cheapest to answer and each connection's deadlines
/// and backpressure are kept, and ``LeanPostHandler`` behind it for reports and App Store notifications.
struct LeanHTTP1Channel: HTTPChannelHandler {
    typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    let responder: HTTPChannelHandler.Responder
    let connectionLimit: ConnectionLimit
    let connectionHandler: @Sendable () -> LeanConnectionHandler
    /// nil when the server stores neither reports nor purchases.
    let postHandler: @Sendable (LeanConnectionHandler) -> LeanPostHandler?

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        guard connectionLimit.admit(channel) else {
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(ChannelError.inputClosed)
        }
        return channel.eventLoop.makeCompletedFuture { try configure(channel, secure: false, logger: logger) }
    }

    /// Sets up HTTP/1.1 on `channel`, already admitted by the connection limit: on the socket's own
    /// bytes, or (`secure`) on those that a TLS handler in front of this pipeline decrypts.
    func configure(_ channel: any Channel, secure: Bool, logger: Logger) throws -> Value {
        let connection = connectionHandler()
        connection.isSecure = secure
        // The connection handler must see every byte before the decoder. Over TLS it goes behind
        // the TLS and ALPN handlers, appended before the decoder: bytes the ALPN handler held
        // back during the negotiation are passed on from where it stands, so through it too.
        if secure { try channel.pipeline.syncOperations.addHandler(connection) }
        try channel.pipeline.syncOperations.configureHTTPServerPipeline(
            withPipeliningAssistance: false, withErrorHandling: false, withOutboundHeaderValidation: false,
            withEncoderConfiguration: .init(), withDecoderLimitConfiguration: Self.decoderLimits)
        if !secure { try channel.pipeline.syncOperations.addHandler(connection, position: .first) }
        try channel.pipeline.syncOperations.addHandler(ForwardedRequestTracker(connection: connection))
        // Behind the tracker: to the lean path, a report or a notification is a forwarded request like any other.
        if let postHandler = postHandler(connection) { try channel.pipeline.syncOperations.addHandler(postHandler) }
        try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: secure))
        // No idle timeout behind this point: requests answered by the connection handler never
        // reach it, so the connection handler keeps time for the whole connection.
        try channel.pipeline.syncOperations.addHandler(HTTPConnectionStateHandler(idleTimeout: nil, logger: logger))
        return try NIOAsyncChannel(wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
    }

    /// The request decoder's limits: feed requests carry a handful of short headers.
    static var decoderLimits: NIOHTTPDecoderLimitConfiguration {
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderFieldSize = 8 * 1024
        limits.maxHeaderListSize = 16 * 1024
        limits.maxHeaderFieldCount = 100
        return limits
    }

    func handle(value asyncChannel: Value, logger: Logger) async {
        await handleHTTP(asyncChannel: asyncChannel, logger: logger)
    }
}
