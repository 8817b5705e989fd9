import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import NIOTLS
import Testing

@testable import CatalogServer

/// The TLS listener's deadlines, each rule on an `EmbeddedChannel` with its clock moved by hand:
/// no sockets and no waiting.
@Suite struct TLSDeadlineTests {
    /// An active embedded channel holding `handler`.
    private static func channel(_ handlers: [any ChannelHandler]) async throws -> EmbeddedChannel {
        let channel = EmbeddedChannel(handlers: handlers)
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).get()
        return channel
    }

    /// Counts the user events that reach it.
    private final class EventCounter: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        var events = 0
        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            events += 1
        }
    }

    @Test func aHandshakeNotCompletedInTimeIsClosed() async throws {
        let channel = try await Self.channel([TLSHandshakeDeadline(timeout: .seconds(10))])
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(!channel.isActive, "a connection without a handshake was still open at the deadline")
    }

    @Test func aCompletedHandshakeEndsTheDeadlineAndIsPassedOn() async throws {
        let counter = EventCounter()
        let channel = try await Self.channel([TLSHandshakeDeadline(timeout: .seconds(10)), counter])
        channel.embeddedEventLoop.advanceTime(by: .seconds(5))
        channel.pipeline.fireUserInboundEventTriggered(TLSUserEvent.handshakeCompleted(negotiatedProtocol: "h2"))
        channel.embeddedEventLoop.advanceTime(by: .seconds(3600))
        #expect(channel.isActive)
        #expect(counter.events == 1)
        // Its work done, it leaves the pipeline: nothing more to pay per read.
        #expect((try? channel.pipeline.syncOperations.handler(type: TLSHandshakeDeadline.self)) == nil)
        _ = try channel.finish()
    }

    /// Other events (a half closure, say) do not stop the clock.
    @Test func otherEventsDoNotEndTheDeadline() async throws {
        let channel = try await Self.channel([TLSHandshakeDeadline(timeout: .seconds(10))])
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        channel.embeddedEventLoop.advanceTime(by: .seconds(10))
        #expect(!channel.isActive)
    }

    @Test func anHTTP2ConnectionWithNoStreamClosesAfterTheIdleTimeoutAndTheReadDeadline() async throws {
        let deadline = HTTP2ConnectionDeadline(readDeadline: .seconds(10), idleTimeout: .seconds(30))
        let channel = try await Self.channel([deadline])
        // Hummingbird sends its GOAWAY at 30 s; a client that does not answer it is closed at 40.
        channel.embeddedEventLoop.advanceTime(by: .seconds(39))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(!channel.isActive)
    }

    @Test func anOpenStreamStopsTheIdleClockUntilItCloses() async throws {
        let deadline = HTTP2ConnectionDeadline(readDeadline: .seconds(10), idleTimeout: .seconds(30))
        let channel = try await Self.channel([deadline])
        channel.embeddedEventLoop.advanceTime(by: .seconds(20))
        deadline.streamOpened()
        deadline.streamOpened()
        channel.embeddedEventLoop.advanceTime(by: .seconds(3600))
        #expect(channel.isActive, "a connection with open streams is not idle")
        deadline.streamClosed()
        channel.embeddedEventLoop.advanceTime(by: .seconds(3600))
        #expect(channel.isActive, "one stream is still open")
        deadline.streamClosed()
        channel.embeddedEventLoop.advanceTime(by: .seconds(39))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(!channel.isActive)
    }

    @Test func anHTTP2ClientThatDoesNotReadIsClosedAtTheReadDeadline() async throws {
        let deadline = HTTP2ConnectionDeadline(readDeadline: .seconds(10), idleTimeout: .seconds(30))
        let channel = try await Self.channel([deadline])
        deadline.streamOpened()
        channel.isWritable = false
        channel.pipeline.fireChannelWritabilityChanged()
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        #expect(channel.isActive)
        // Writable again in time: the clock stops.
        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(channel.isActive)
        channel.isWritable = false
        channel.pipeline.fireChannelWritabilityChanged()
        channel.embeddedEventLoop.advanceTime(by: .seconds(10))
        #expect(!channel.isActive, "a client that read nothing for the read deadline was still connected")
    }

    @Test func anHTTP2StreamMustBeReadWholeWithinTheReadDeadline() async throws {
        let channel = try await Self.channel([HTTP2StreamDeadline(readDeadline: .seconds(10))])
        channel.embeddedEventLoop.advanceTime(by: .seconds(10))
        #expect(!channel.isActive, "a stream whose request never ended was still open")

        let answered = try await Self.channel([HTTP2StreamDeadline(readDeadline: .seconds(10))])
        try answered.writeInbound(HTTPRequestPart.head(.init(method: .get, scheme: "https", authority: "x", path: "/")))
        try answered.writeInbound(HTTPRequestPart.end(nil))
        answered.embeddedEventLoop.advanceTime(by: .seconds(3600))
        #expect(answered.isActive, "a stream read whole is the application's time")
    }
}
