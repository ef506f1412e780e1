import HTTPTypes
import HummingbirdCore
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import Projector

/// Hummingbird's HTTP/1.1 child channel with the server's limits around it: the connection cap
/// (``ConnectionGate``), the header, body and idle timeouts (``ConnectionTimeouts``), and the header and body sizes.
/// Use it as `Application(router:server: GuardedHTTP1Channel.server(limits:))`.
package struct GuardedHTTP1Channel: ServerChildChannel {
    package typealias Value = HTTP1Channel.Value

    let http: HTTP1Channel
    let gate: ConnectionGate
    let limits: ServerLimits
    /// Answers plain media playlist GETs on the event loop (``PlaylistFastPath``); nil: the router answers them.
    let playlists: ChannelFollower?

    /// The server builder for `Application`.
    package static func server(limits: ServerLimits, gate: ConnectionGate, playlists: ChannelFollower? = nil)
        -> HTTPServerBuilder
    {
        HTTPServerBuilder { responder in
            var configuration = HTTP1Channel.Configuration(
                httpDecoderConfiguration: .init(
                    maxHeaderFieldSize: limits.maxHeaderBytes, maxHeaderListSize: limits.maxHeaderBytes,
                    maxHeaderFieldCount: 100))
            configuration.idleTimeout = nil  // ConnectionTimeouts does it, with a header timeout besides.
            return GuardedHTTP1Channel(
                http: HTTP1Channel(responder: responder, configuration: configuration), gate: gate, limits: limits,
                playlists: playlists)
        }
    }

    package func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let admission = gate.admit(channel)
        let id: UInt64
        switch admission {
        case .refused:
            // Every connection is busy: say so and close. The HTTP pipeline below never sees a byte.
            return channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(RefuseConnectionHandler())
            }.flatMap { http.setup(channel: channel, logger: logger) }
        case .admitted(let admitted), .admittedEvicting(let admitted, _):
            id = admitted
        }
        let gate = self.gate
        channel.closeFuture.whenComplete { _ in gate.remove(id) }
        let tracker = ConnectionTracker(
            id: id, gate: gate, limits: limits,
            timeouts: ConnectionTimeouts(
                header: .seconds(Int64(limits.headerTimeoutSeconds)), body: .seconds(Int64(limits.bodyTimeoutSeconds)),
                idle: .seconds(Int64(limits.idleTimeoutSeconds)), acceptedAt: .now()))
        // When the gate needs this connection's held reload's place: the holder answers it 503 and ends the connection
        // once that is written. Answered meanwhile, the connection goes on, unless the gate took its connection's place
        // (`close`): then it just ends.
        gate.setEviction(id) { [weak channel] close in
            guard let channel else { return }
            channel.eventLoop.execute {
                let eviction = EvictHeldReload()
                channel.pipeline.fireUserInboundEventTriggered(eviction)
                if close, !eviction.handled { channel.close(promise: nil) }
            }
        }
        var configuration = http.configuration
        let additional = configuration.additionalChannelHandlers
        let playlists = self.playlists
        configuration.additionalChannelHandlers = {
            [HTTPSideHandler(tracker: tracker)]
                + (playlists.map { [PlaylistFastPath(follower: $0, tracker: tracker)] } ?? []) + additional()
        }
        let guarded = HTTP1Channel(responder: http.responder, configuration: configuration)
        let sendBuffer = limits.sendBufferBytes
        return channel.eventLoop.makeCompletedFuture {
            try channel.syncOptions?.setOption(
                ChannelOptions.socketOption(.so_sndbuf), value: SocketOptionValue(sendBuffer))
            let byteSide = ByteSideHandler(tracker: tracker)
            try channel.pipeline.syncOperations.addHandler(byteSide, position: .first)
            // Players' requests answered on raw bytes until a request that is not theirs (``PlaylistRawPath``).
            if let playlists {
                try channel.pipeline.syncOperations.addHandler(
                    PlaylistRawPath(follower: playlists, tracker: tracker), position: .after(byteSide))
            }
        }.flatMap { guarded.setup(channel: channel, logger: logger) }.flatMapThrowing { value in
            // Where the request's HTTP version is still known: below the conversion to HTTP types.
            let pipeline = channel.pipeline.syncOperations
            let decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try pipeline.addHandler(RequestVersionHandler(), position: .after(decoder))
            return value
        }
    }

    package func handle(value: Value, logger: Logger) async {
        await http.handle(value: value, logger: logger)
    }
}
