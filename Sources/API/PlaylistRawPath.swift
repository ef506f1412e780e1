import Foundation
import HTTPTypes
import Metrics
import NIOCore
import Projector
import Schedule

/// A player's connection answered on raw bytes, under the HTTP codec: a media playlist `GET` or `HEAD` (plain, or an
/// LL-HLS blocking reload) is read from the bytes, answered with the follower's window and a head written straight
/// into a buffer, and never decoded into HTTP types, converted, routed or encoded. Half of the server's time under a
/// thousand blocked players was the HTTP/1.1 decoder and encoder of requests that are all alike; this path skips both.
///
/// It takes only the forms it reads completely and strictly, the same ones ``PlaylistFastPath`` answers:
/// `GET|HEAD /channels/{channel}/{rendition}.m3u8[?directives] HTTP/1.1`, header lines of a token, a colon and
/// visible ASCII, no body (`Content-Length`, `Transfer-Encoding`, `Expect` or `Upgrade`), no `Connection` other than
/// `keep-alive`, at most 100 fields in `ServerLimits.maxHeaderBytes`. At the first request it does not take (a command,
/// the multivariant playlist, an unknown channel, a directive to refuse, anything malformed), it hands that request and
/// every byte after it to the HTTP codec and leaves the pipeline: the connection is the codec's from then on, and
/// ``PlaylistFastPath`` and the router answer with the same rules, bytes and headers. So nothing it does not
/// understand is ever answered here, and no byte is both answered here and decoded there.
///
/// Order: requests are taken one at a time from the front of what was read; a held request (blocking reload) holds
/// every byte behind it until it is answered, as on the HTTP path, and so does a client that does not read its answers
/// (no request is taken while the connection is not writable). A client that sends more than 4 × `maxHeaderBytes`
/// ahead of what it reads is closed. Timeouts and the connection cap see these requests as they see the codec's
/// (`ConnectionTracker`).
final class PlaylistRawPath: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    let follower: ChannelFollower
    let tracker: ConnectionTracker
    /// Bytes read and not taken yet (the rest of a request, or requests queued behind a held one).
    private var pending: ByteBuffer?
    /// The blocking reload being held, and its registration with the follower.
    private var held: PlaylistFastPath.Held?
    private var registration: (channel: ChannelID, rendition: Identifier?, id: UInt64)?
    /// Events (a half-close) that came while a request was held: they follow its answer.
    private var events: [Any] = []
    /// Handed to the codec: everything passes.
    private var passing = false
    /// The last media playlist path asked for on this connection, with its channel and rendition.
    private var lastPath: (plain: String, channel: ChannelID, rendition: Identifier)?
    /// This connection's event loop's wake-ups and kept answers (looked up once, not per answer).
    private var loopShared: HeldWakeups?
    /// The held request has one of the gate's places for held reloads.
    private var counted = false

    /// This connection's event loop's shared state, found on the first use.
    private func loopState(_ context: ChannelHandlerContext) -> HeldWakeups {
        if let loopShared { return loopShared }
        let found = HeldWakeups.on(context.eventLoop)
        loopShared = found
        return found
    }

    /// Answers written here (they count in `cueline_playlist_fast_requests_total` too).
    static let requests = Counter(label: "cueline_playlist_raw_requests_total")

    init(follower: ChannelFollower, tracker: ConnectionTracker) {
        self.follower = follower
        self.tracker = tracker
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !passing else { return context.fireChannelRead(data) }
        var bytes = unwrapInboundIn(data)
        if var before = pending {
            pending = nil
            before.writeBuffer(&bytes)
            pending = before
        } else {
            pending = bytes
        }
        // A client pipelining far ahead of what it reads (behind a held request, or not reading) is not a player: not
        // buffered without end.
        if (pending?.readableBytes ?? 0) > 4 * tracker.limits.maxHeaderBytes {
            pending = nil
            return context.close(promise: nil)
        }
        process(context: context, inRead: true)
    }

    /// Goes up only once the connection is the codec's (the handlers above have nothing to deliver before: bytes go up
    /// only in `passThrough`, which then leaves the pipeline, and a player's every request would walk them all).
    func channelReadComplete(context: ChannelHandlerContext) {
        guard passing else { return }
        context.fireChannelReadComplete()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        context.fireChannelWritabilityChanged()
        // The client read what was waiting: take the requests it sent meanwhile.
        if !passing, held == nil, context.channel.isWritable, pending != nil {
            process(context: context, inRead: false)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard !passing else { return context.fireUserInboundEventTriggered(event) }
        if let eviction = event as? EvictHeldReload {
            // The gate needs this connection's place: the held request is answered 503, then the connection ends.
            guard held != nil else { return }
            eviction.handled = true
            answerHeld(context: context, ready: false, instead: PlaylistFastPath.notHeld(evicted: true))
            tracker.closeAfterWrites()
            return
        }
        if held != nil {
            guard event is ChannelShouldQuiesceEvent else {
                // A half-close and the like take their turn after the held answer.
                events.append(event)
                return
            }
            // Shutting down: the held request is answered now (503, retry); what follows goes to the codec, and then
            // the event, so that the codec closes the connection once it has answered what it was given.
            answerHeld(context: context, ready: false)
            return passThrough(context: context, inRead: false, then: event)
        }
        // Bytes of a request not complete yet go to the codec before the event (which answers a request cut short
        // by a half-close as it does for any other).
        if pending != nil { return passThrough(context: context, inRead: false, then: event) }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let registration {
            follower.cancelWindow(registration.channel, rendition: registration.rendition, id: registration.id)
        }
        registration = nil
        if counted {
            counted = false
            tracker.gate.endHold(tracker.id)
        }
        held = nil
        pending = nil
        events = []
        context.fireChannelInactive()
    }

    /// Takes the requests at the front of `pending` while they are ours, until one is held, the bytes run out, or one
    /// is not ours (then the connection goes to the codec).
    private func process(context: ChannelHandlerContext, inRead: Bool) {
        var wrote = false
        defer { if wrote { context.flush() } }
        while held == nil, !passing, context.channel.isWritable, var buffer = pending, buffer.readableBytes > 0 {
            let request: Request
            switch Self.parse(buffer, maxHeadBytes: tracker.limits.maxHeaderBytes) {
            case .incomplete: return
            case .other: return passThrough(context: context, inRead: inRead)
            case .request(let parsed): request = parsed
            }
            let started = DispatchTime.now().uptimeNanoseconds
            // A player asks for the same playlist on its connection: the path's channel and rendition are kept.
            let (plain, query) = PlaylistFastPath.split(request.target)
            if lastPath?.plain != plain {
                lastPath = PlaylistFastPath.mediaPlaylistPath(plain).map { (plain, $0.channel, $0.rendition) }
            }
            guard let path = lastPath,
                let decision = PlaylistFastPath.decide(
                    follower: follower, channel: path.channel, rendition: path.rendition, query: query,
                    origin: request.origin,
                    head: request.head, started: started)
            else { return passThrough(context: context, inRead: inRead) }
            buffer.moveReaderIndex(forwardBy: request.length)
            pending = buffer.readableBytes > 0 ? buffer : nil
            tracker.timeouts.headRead(at: .now())
            tracker.timeouts.requestEnded(at: .now())
            tracker.changed()
            switch decision {
            case .answer(let served, let maxAge):
                respond(context: context, served: served, maxAge: maxAge, origin: request.origin, head: request.head)
                PlaylistFastPath.served(head: request.head).record(since: started)
                wrote = true
            case .hold(let toHold):
                // Answered at once (503) when the follower takes no more waiters.
                if !hold(context: context, toHold) { wrote = true }
            }
        }
    }

    /// The connection is the codec's from here: what this path wrote is flushed, what is pending (starting at a
    /// request's first byte), the events queued and `event` go up, and this handler leaves (after which its context
    /// reaches nothing: everything is sent on before).
    private func passThrough(context: ChannelHandlerContext, inRead: Bool, then event: Any? = nil) {
        passing = true
        context.flush()
        let rest = pending, queued = events
        pending = nil
        events = []
        if let rest {
            context.fireChannelRead(wrapInboundOut(rest))
            // Outside a read from the socket, the codec is told the read ended (it delivers what it decoded then).
            if !inRead { context.fireChannelReadComplete() }
        }
        for queuedEvent in queued { context.fireUserInboundEventTriggered(queuedEvent) }
        if let event { context.fireUserInboundEventTriggered(event) }
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    /// Registers a held request with the follower; false: refused (the follower is closing, or the gate keeps no
    /// place for it) and answered 503 at once, unflushed.
    private func hold(context: ChannelHandlerContext, _ toHold: PlaylistFastPath.Held) -> Bool {
        held = toHold
        if !counted {
            guard tracker.gate.beginHold(tracker.id) else {
                // Refused, and the connection ends with the answer: a client past its share would otherwise come back
                // on it at once, and its idle connections churn the cap's places that new players need.
                answerHeld(context: context, ready: false, instead: PlaylistFastPath.notHeld(evicted: false))
                pending = nil
                tracker.closeAfterWrites()
                return false
            }
            counted = true
        }
        let id = PlaylistFastPath.register(
            follower: follower, toHold, handler: self, context: context, wakeups: loopState(context)
        ) {
            $0.release(context: $1, ready: $2)
        }
        if let id {
            registration = (toHold.channel, toHold.waitOn, id)
            return true
        }
        answerHeld(context: context, ready: false)
        return false
    }

    /// The follower's word on the held request: answer it, then take what queued behind it.
    private func release(context: ChannelHandlerContext, ready: Bool) {
        guard held != nil, !passing else { return }
        registration = nil
        guard context.channel.isActive else {
            held = nil
            pending = nil
            events = []
            return
        }
        guard answerHeld(context: context, ready: ready) else { return }
        context.flush()
        process(context: context, inRead: false)
        if held == nil, !passing, !events.isEmpty {
            // Events that came behind the held request (a half-close): the rest of an unfinished request goes to the
            // codec before them.
            if pending != nil { return passThrough(context: context, inRead: false) }
            let queued = events
            events = []
            for event in queued { context.fireUserInboundEventTriggered(event) }
        }
    }

    /// Writes the held request's answer (its window, or 503 past its deadline; `instead`: that error), unflushed.
    /// False: held again (a relay's upstream went back after the wake-up), nothing written.
    @discardableResult
    private func answerHeld(context: ChannelHandlerContext, ready: Bool, instead: APIError? = nil) -> Bool {
        guard let toAnswer = held else { return true }
        held = nil
        if let registration {
            follower.cancelWindow(registration.channel, rendition: registration.rendition, id: registration.id)
        }
        registration = nil
        let release =
            instead.map { PlaylistFastPath.Release.failed($0) }
            ?? PlaylistFastPath.released(follower: follower, toAnswer, ready: ready, memo: loopState(context).responses)
        var heldAgain = false
        if case .wait = release { heldAgain = true }
        if counted, !heldAgain {
            counted = false
            tracker.gate.endHold(tracker.id)
        }
        switch release {
        case .answer(let served):
            respond(
                context: context, served: served, maxAge: 6 * served.targetDuration, origin: toAnswer.origin,
                head: toAnswer.head)
            PlaylistFastPath.served(head: toAnswer.head).record(since: toAnswer.started)
        case .wait:
            if hold(context: context, toAnswer) { return false }
            context.flush()  // refused: answered 503 at once
        case .timedOut, .failed:
            let (status, fields, body) = PlaylistFastPath.errorAnswer(
                release.error(toAnswer)!, origin: toAnswer.origin, date: loopState(context).responses.dateNow())
            var out = context.channel.allocator.buffer(capacity: 256 + body.readableBytes)
            Self.writeHead("\(status.code) \(status.reasonPhrase)", into: &out) { write in
                for field in fields { write(field.name, field.value) }
            }
            if !toAnswer.head { out.writeImmutableBuffer(body) }
            context.write(NIOAny(IOData.byteBuffer(out)), promise: nil)
            ended()
        }
        return true
    }

    private func respond(
        context: ChannelHandlerContext, served: ChannelFollower.ServedMedia, maxAge: Int, origin: Bool, head: Bool
    ) {
        PlaylistFastPath.requests.increment()
        Self.requests.increment()
        let date = loopState(context).responses.dateNow()
        // The whole answer, head and body, in one buffer made once per window, variant and second on this event loop:
        // the clients blocked on a channel's part, and players polling the same playlist, are answered with its bytes.
        let response = loopState(context).responses.response(
            for: served.body, maxAge: maxAge, origin: origin, head: head, date: date
        ) {
            var out = context.channel.allocator.buffer(capacity: 320 + (head ? 0 : served.body.readableBytes))
            Self.writeHead("200 OK", into: &out) { write in
                PlaylistFastPath.playlistFields(served, maxAge: maxAge, origin: origin, date: date, write)
            }
            if !head { out.writeImmutableBuffer(served.body) }
            return out
        }
        context.write(NIOAny(IOData.byteBuffer(response)), promise: nil)
        ended()
    }

    private func ended() {
        tracker.timeouts.responseEnded(at: .now())
        tracker.changed()
    }

    /// `HTTP/1.1 <status>`, the fields, and the blank line: what the HTTP/1.1 encoder writes for the same head.
    static func writeHead(
        _ status: String, into out: inout ByteBuffer, _ fields: ((HTTPField.Name, String) -> Void) -> Void
    ) {
        out.writeStaticString("HTTP/1.1 ")
        out.writeString(status)
        out.writeStaticString("\r\n")
        fields { name, value in
            out.writeString(name.rawName)
            out.writeStaticString(": ")
            out.writeString(value)
            out.writeStaticString("\r\n")
        }
        out.writeStaticString("\r\n")
    }

    // MARK: Reading a request

    /// A request read from the bytes.
    struct Request: Equatable {
        var head: Bool
        /// The request target as sent (path and query).
        var target: String
        var origin: Bool
        /// Its bytes, to the end of the blank line.
        var length: Int
    }

    enum Parsed: Equatable {
        /// Nothing that rules it out yet, and not all of the head.
        case incomplete
        /// Not a request taken here: the codec reads it.
        case other
        case request(Request)
    }

    /// Reads the request at the front of `buffer`, strictly: anything this path would not answer exactly as the
    /// codec and the router would is `.other`.
    static func parse(_ buffer: ByteBuffer, maxHeadBytes: Int) -> Parsed {
        buffer.withUnsafeReadableBytes { parse($0, maxHeadBytes: maxHeadBytes) }
    }

    private static let getPrefix = Array("GET /channels/".utf8)
    private static let headPrefix = Array("HEAD /channels/".utf8)
    private static let version = Array(" HTTP/1.1\r\n".utf8)

    static func parse(_ bytes: UnsafeRawBufferPointer, maxHeadBytes: Int) -> Parsed {
        let count = bytes.count
        // The method and the start of the path, ruled out from the first bytes (a command goes up at once).
        let head: Bool
        if startsWith(bytes, getPrefix) {
            head = false
        } else if startsWith(bytes, headPrefix) {
            head = true
        } else {
            let could = couldStart(bytes, getPrefix) || couldStart(bytes, headPrefix)
            return could ? .incomplete : .other
        }
        // The whole head must be there (up to the blank line), within the limit; else the codec decides (431).
        let limit = min(count, maxHeadBytes)
        let end: Int
        switch headEnd(bytes, upTo: limit) {
        case .at(let offset): end = offset
        case .bareLineBreak: return .other
        case .notYet: return count >= maxHeadBytes ? .other : .incomplete
        }
        // Request line: the target is visible ASCII up to a single space, then exactly HTTP/1.1.
        let targetStart = head ? 5 : 4
        var index = targetStart
        while index < end, bytes[index] > 0x20, bytes[index] < 0x7F { index += 1 }
        guard index + version.count <= end + 2, matches(bytes, at: index, version) else { return .other }
        let target = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[targetStart..<index]), as: UTF8.self)
        index += version.count
        // Header lines: `name: value` CRLF, a token name, visible ASCII, spaces and tabs in the value; no folding.
        var origin = false
        var fields = 0
        while index < end {
            fields += 1
            guard fields <= 100 else { return .other }
            let lineStart = index
            while index < end, isToken(bytes[index]) { index += 1 }
            guard index > lineStart, index < end, bytes[index] == UInt8(ascii: ":") else { return .other }
            let nameEnd = index
            index += 1
            while index < end, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 }
            let valueStart = index
            while index < end, bytes[index] == 0x09 || (bytes[index] >= 0x20 && bytes[index] < 0x7F) { index += 1 }
            guard bytes[index] == 0x0D, bytes[index + 1] == 0x0A else { return .other }
            var valueEnd = index
            while valueEnd > valueStart, bytes[valueEnd - 1] == 0x20 || bytes[valueEnd - 1] == 0x09 { valueEnd -= 1 }
            let name = UnsafeRawBufferPointer(rebasing: bytes[lineStart..<nameEnd])
            if equalsLowercased(name, "origin") {
                origin = true
            } else if equalsLowercased(name, "connection") {
                // `keep-alive` only: `close` and `upgrade` are the codec's to honour.
                guard equalsLowercased(UnsafeRawBufferPointer(rebasing: bytes[valueStart..<valueEnd]), "keep-alive")
                else { return .other }
            } else if equalsLowercased(name, "content-length") || equalsLowercased(name, "transfer-encoding")
                || equalsLowercased(name, "expect") || equalsLowercased(name, "upgrade")
                || equalsLowercased(name, "proxy-connection")
            {
                // A body, or what llhttp reads as connection handling (it takes Proxy-Connection as Connection).
                return .other
            }
            index += 2
        }
        return .request(Request(head: head, target: target, origin: origin, length: end + 4))
    }

    enum HeadEnd: Equatable {
        /// The blank line (`\r\n\r\n`) that ends the head starts at this offset.
        case at(Int)
        case notYet
        /// A CR or LF that is not part of a CRLF: the codec reads such a head, not this path.
        case bareLineBreak
    }

    /// Where the head ends, reading at most `limit` bytes.
    static func headEnd(_ bytes: UnsafeRawBufferPointer, upTo limit: Int) -> HeadEnd {
        var index = 0
        while index < limit {
            switch bytes[index] {
            case 0x0A:
                return .bareLineBreak  // a CR's LF is stepped over below
            case 0x0D:
                guard index + 1 < limit else { return .notYet }
                guard bytes[index + 1] == 0x0A else { return .bareLineBreak }
                if index + 3 < limit, bytes[index + 2] == 0x0D, bytes[index + 3] == 0x0A { return .at(index) }
                index += 2
            default:
                index += 1
            }
        }
        return .notYet
    }

    private static func startsWith(_ bytes: UnsafeRawBufferPointer, _ prefix: [UInt8]) -> Bool {
        bytes.count >= prefix.count && matches(bytes, at: 0, prefix)
    }

    /// Whether the bytes so far are the beginning of `prefix`.
    private static func couldStart(_ bytes: UnsafeRawBufferPointer, _ prefix: [UInt8]) -> Bool {
        bytes.count < prefix.count && zip(bytes, prefix).allSatisfy { $0 == $1 }
    }

    private static func matches(_ bytes: UnsafeRawBufferPointer, at offset: Int, _ expected: [UInt8]) -> Bool {
        guard offset + expected.count <= bytes.count else { return false }
        for (index, byte) in expected.enumerated() where bytes[offset + index] != byte { return false }
        return true
    }

    private static func equalsLowercased(_ bytes: UnsafeRawBufferPointer, _ lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        let expected = UnsafeRawBufferPointer(start: lowercase.utf8Start, count: lowercase.utf8CodeUnitCount)
        for index in 0..<bytes.count {
            var byte = bytes[index]
            if byte >= 0x41, byte <= 0x5A { byte |= 0x20 }
            if byte != expected[index] { return false }
        }
        return true
    }

    /// RFC 9110 tchar.
    private static func isToken(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"),
            UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"),
            UInt8(ascii: "_"),
            UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            true
        default: false
        }
    }
}
