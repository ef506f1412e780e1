import HTTPTypes
import HummingbirdCore
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import Projector

/// First in the pipeline, on raw bytes: notes when request bytes arrive and when the client stops reading.
final class ByteSideHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    let tracker: ConnectionTracker

    init(tracker: ConnectionTracker) { self.tracker = tracker }

    func handlerAdded(context: ChannelHandlerContext) {
        tracker.rawContext = context
        tracker.changed()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        tracker.cancelTimer()
        tracker.rawContext = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        tracker.timeouts.bytesRead(at: .now())
        tracker.changed()
        context.fireChannelRead(data)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        tracker.timeouts.writabilityChanged(writable: context.channel.isWritable, at: .now())
        tracker.changed()
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        tracker.cancelTimer()
        context.fireChannelInactive()
    }
}
