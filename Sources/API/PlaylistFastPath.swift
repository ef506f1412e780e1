import Foundation
import HTTPTypes
import Metrics
import NIOCore
import NIOHTTPTypes
import Projector
import Schedule

/// The public media playlist GET answered on the connection's event loop, before the router: a lookup of the bytes
/// the follower already rendered (`ChannelFollower.servedMedia`) and four writes, with no task, no middleware and
/// no per-request formatting. It is the request a live channel serves most (every player, every target duration,
/// every rendition), and the one a CDN forwards at each expiry.
///
/// Only the plain form is answered here: `GET` or `HEAD` of `/channels/{channel}/{rendition}.m3u8` with no query,
/// no percent-encoding and no `Connection: close`, for a channel and rendition that have a window. Everything else
/// (unknown channels, not started yet, `master.m3u8`, errors, queries such as LL-HLS's `_HLS_msn`) goes up to the
/// router and is answered there as before, with the same bytes and headers for the same request.
///
/// Order: HTTP/1.1 answers must follow the order of requests on a connection. While a request passed up to the
/// router has not been answered, later requests go up too (the router answers them in turn), so a pipelined playlist
/// GET never overtakes an earlier command.
final class PlaylistFastPath: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private enum State {
        case idle
        /// This request went up to the router: its parts follow it.
        case forwarding
        /// Answered here once the request has been read to its end (a GET's body, if any, is dropped).
        case answering(ChannelFollower.ServedMedia, origin: Bool, head: Bool, started: UInt64)
    }

    let follower: ChannelFollower
    private var state = State.idle
    /// Requests passed up to the router whose answer has not ended yet.
    private var upstream = 0
    private var date = HTTPDateText()

    static let requests = Counter(label: "cueline_playlist_fast_requests_total")

    /// The series Hummingbird's MetricsMiddleware keeps for the same route, method and status, so that a dashboard's
    /// request rate and duration by route count the playlists answered here with those the router answered.
    struct RouteMetrics {
        let counter: Counter
        let timer: Timer

        init(method: String) {
            let dimensions = [
                ("http.route", "/channels/{channel}/{playlist}"), ("http.request.method", method),
                ("http.response.status_code", "200"),
            ]
            counter = Counter(label: "hb.requests", dimensions: dimensions)
            timer = Timer(label: "http.server.request.duration", dimensions: dimensions, preferredDisplayUnit: .seconds)
        }

        func record(since started: UInt64) {
            counter.increment()
            timer.recordNanoseconds(Int64(clamping: DispatchTime.now().uptimeNanoseconds &- started))
        }
    }

    static let servedGET = RouteMetrics(method: "GET")
    static let servedHEAD = RouteMetrics(method: "HEAD")
    static func served(head: Bool) -> RouteMetrics { head ? servedHEAD : servedGET }

    init(follower: ChannelFollower) { self.follower = follower }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch (state, part) {
        case (.idle, .head(let request)):
            if upstream == 0, let answer = answer(request) {
                state = answer
            } else {
                state = .forwarding
                upstream += 1
                context.fireChannelRead(data)
            }
        case (.answering(let served, let origin, let head, let started), .end):
            state = .idle
            respond(context: context, served: served, origin: origin, head: head)
            Self.served(head: head).record(since: started)
        case (.answering, _):
            break
        case (.forwarding, .end):
            state = .idle
            context.fireChannelRead(data)
        default:
            context.fireChannelRead(data)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // The router's answers pass here on their way out; their end frees the path for the next request.
        if case .end = unwrapOutboundIn(data) { upstream = max(0, upstream - 1) }
        context.write(data, promise: promise)
    }

    /// What to answer here for this request head, or nil to pass it to the router.
    private func answer(_ request: HTTPRequest) -> State? {
        guard request.method == .get || request.method == .head, let path = request.path else { return nil }
        guard let (channel, rendition) = Self.mediaPlaylistPath(path) else { return nil }
        if let connection = request.headerFields[.connection], connection.lowercased().contains("close") { return nil }
        guard let served = try? follower.servedMedia(channel, rendition: rendition) else { return nil }
        return .answering(
            served, origin: request.headerFields[.origin] != nil, head: request.method == .head,
            started: DispatchTime.now().uptimeNanoseconds)
    }

    /// `/channels/{channel}/{rendition}.m3u8` split, when the path is exactly that plain form (no query, no `%`,
    /// nothing empty, not the multivariant playlist).
    static func mediaPlaylistPath(_ path: String) -> (channel: ChannelID, rendition: Identifier)? {
        let prefix = "/channels/"
        guard path.hasPrefix(prefix), path.hasSuffix(".m3u8"), path.utf8.count <= 200 else { return nil }
        let rest = path.utf8.dropFirst(prefix.utf8.count)
        guard !rest.contains(UInt8(ascii: "?")), !rest.contains(UInt8(ascii: "%")),
            let slash = rest.firstIndex(of: UInt8(ascii: "/"))
        else { return nil }
        let channel = Substring(rest[rest.startIndex..<slash])
        let file = Substring(rest[rest.index(after: slash)...])
        guard !channel.isEmpty, !file.contains("/"), file != "master.m3u8" else { return nil }
        let rendition = file.dropLast(5)
        // A segment that is no id names no channel: the router answers it (404).
        guard let id = ChannelID(stored: channel), let name = Identifier(stored: rendition) else { return nil }
        return (id, name)
    }

    private func respond(context: ChannelHandlerContext, served: ChannelFollower.ServedMedia, origin: Bool, head: Bool) {
        Self.requests.increment()
        let fields = headers(for: served, origin: origin)
        context.write(wrapOutboundOut(.head(HTTPResponse(status: .ok, headerFields: fields))), promise: nil)
        if !head { context.write(wrapOutboundOut(.body(served.body)), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    /// The headers the router's answer carries (`Responses.playlist`, CORS for a request with an Origin, and the
    /// Date and Server headers Hummingbird adds), in the same order. A player polls the same playlist on its
    /// connection: the last answer's headers are kept and reused while the window and the second are the same.
    private func headers(for served: ChannelFollower.ServedMedia, origin: Bool) -> HTTPFields {
        let date = date.now()
        let key = KeptHeaders.Key(tick: served.tickText, length: served.body.readableBytes, targetDuration: served.targetDuration, origin: origin)
        if let kept, kept.key == key, kept.date == date { return kept.fields }
        var fields = HTTPFields()
        fields.reserveCapacity(7)
        fields[.contentType] = Responses.playlistContentType
        fields[.cacheControl] = Responses.maxAge(max(1, served.targetDuration / 2))
        fields[.cuelineTick] = served.tickText
        fields[.contentLength] = String(served.body.readableBytes)
        if origin { fields[.accessControlAllowOrigin] = "*" }
        fields[.date] = date
        fields[.server] = "cueline"
        kept = KeptHeaders(key: key, date: date, fields: fields)
        return fields
    }

    private struct KeptHeaders {
        struct Key: Equatable {
            var tick: String
            var length: Int
            var targetDuration: Int
            var origin: Bool
        }
        var key: Key
        var date: String
        var fields: HTTPFields
    }

    private var kept: KeptHeaders?
}

/// The `Date` header's text (RFC 9110 IMF-fixdate), formatted once per second per connection.
struct HTTPDateText {
    private var second = -1
    private var text = ""

    mutating func now() -> String {
        var now = time(nil)
        guard now != second else { return text }
        second = now
        var parts = tm()
        gmtime_r(&now, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        text = "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
        return text
    }
}
