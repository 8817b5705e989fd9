import NIOCore
import NIOHTTPTypes

/// Closes a connection whose next request is not read completely within `deadline`, counted
/// from when the connection opened or the previous response was sent.
///
/// Hummingbird's idle timeout only fires when nothing at all arrives; a client that sends one
/// header byte every few seconds would hold its connection forever, and a few hundred such
/// clients would hold them all. This handler sits after HTTP decoding, so it sees a request
/// only once its head is complete: a request still arriving when the deadline passes is closed.
final class RequestDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let deadline: TimeAmount
    private var timer: Scheduled<Void>?
    /// Requests read completely whose responses are not yet sent.
    private var requestsAwaitingResponse = 0

    init(deadline: TimeAmount) {
        self.deadline = deadline
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .end = unwrapInboundIn(data) {
            // The request is in: the deadline is for reading, not for answering.
            requestsAwaitingResponse += 1
            timer?.cancel()
            timer = nil
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            requestsAwaitingResponse -= 1
            if requestsAwaitingResponse == 0 { arm(context) }
        }
        context.write(data, promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    private func arm(_ context: ChannelHandlerContext) {
        timer?.cancel()
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: deadline) {
            channel.close(promise: nil)
        }
    }
}
