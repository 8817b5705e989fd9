import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1

/// Hummingbird's HTTP/1 child channel with ``FeedConnectionHandler`` right after the request
/// decoder, where feed requests are cheapest to answer, and ``ReportConnectionHandler`` after it
/// for reports.
struct FeedHTTP1Channel: HTTPChannelHandler {
    typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    let responder: HTTPChannelHandler.Responder
    let connectionHandler: @Sendable () -> FeedConnectionHandler
    /// nil when the server stores no reports.
    let reportHandler: @Sendable () -> ReportConnectionHandler?

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            var limits = NIOHTTPDecoderLimitConfiguration()
            // Feed requests carry a handful of short headers.
            limits.maxHeaderFieldSize = 8 * 1024
            limits.maxHeaderListSize = 16 * 1024
            limits.maxHeaderFieldCount = 100
            // Not `configureHTTPServerPipeline`: it pairs the encoder with the decoder, which hands
            // it each request's method so that HEAD responses lose their bodies. Responses written
            // by the connection handler skip the encoder, so the pairing would go out of step (a
            // lean HEAD would strip the body of the next forwarded GET's response); the connection
            // handler leaves out forwarded HEAD responses' bodies itself.
            try channel.pipeline.syncOperations.addHandler(HTTPResponseEncoder(configuration: .init()))
            try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(HTTPRequestDecoder(limitConfiguration: limits)))
            try channel.pipeline.syncOperations.addHandler(connectionHandler())
            if let reportHandler = reportHandler() { try channel.pipeline.syncOperations.addHandler(reportHandler) }
            try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
            // No idle timeout behind this point: requests answered by the connection handler never
            // reach it, so the connection handler keeps time for the whole connection.
            try channel.pipeline.syncOperations.addHandler(HTTPConnectionStateHandler(idleTimeout: nil, logger: logger))
            return try NIOAsyncChannel(wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
        }
    }

    func handle(value asyncChannel: Value, logger: Logger) async {
        await handleHTTP(asyncChannel: asyncChannel, logger: logger)
    }
}
