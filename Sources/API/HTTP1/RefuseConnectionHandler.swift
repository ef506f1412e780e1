import HTTPTypes
import HummingbirdCore
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import Projector

/// The whole pipeline of a connection refused at the cap: a 503 with Retry-After, then close.
final class RefuseConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    private var answered = false

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { answer(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        answer(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    private func answer(_ context: ChannelHandlerContext) {
        guard !answered else { return }
        answered = true
        RawAnswer.writeThenClose(
            RawAnswer.bytes(.serviceUnavailable, "the server is at its connection limit; retry shortly", retryAfter: 1),
            on: context)
    }
}
