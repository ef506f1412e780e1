import Foundation
import NIOCore
import HLS
import NIOEmbedded
import Schedule
import TestSupport
import Synchronization
import Testing

@testable import API
@testable import Projector

/// Issue 14: players' requests read from raw bytes (`RawPlaylistRequest.parse`). Only the forms read completely and
/// strictly are taken; everything else is the HTTP codec's, and no input traps.
@Suite("Playlist requests read on raw bytes")
struct PlaylistRawPathTests {
    typealias Request = RawPlaylistRequest

    func parse(_ text: String, max: Int = 16_384) -> RawPlaylistRequest.Parsed {
        RawPlaylistRequest.parse(ByteBuffer(string: text), maxHeadBytes: max)
    }

    @Test("a player's GET or HEAD, plain or with directives, with the headers browsers send")
    func taken() {
        let plain = "GET /channels/one/720p.m3u8 HTTP/1.1\r\nHost: x\r\n\r\n"
        #expect(
            parse(plain)
                == .request(
                    Request(head: false, target: "/channels/one/720p.m3u8", origin: false, length: plain.utf8.count)))
        // What a browser sends, Origin among it, and the next request already behind it: only this one's length.
        let browser =
            "GET /channels/one/720p.m3u8?_HLS_msn=12&_HLS_part=3 HTTP/1.1\r\nHost: cdn.example:8080\r\n"
            + "Connection: keep-alive\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64)\r\nAccept: */*\r\n"
            + "Origin: https://player.example\r\nSec-Fetch-Mode: cors\r\nAccept-Encoding: gzip, deflate\r\n"
            + "Accept-Language: en-GB,en;q=0.9\r\nX-Tab:\tvalue \t\r\n\r\n"
        #expect(
            parse(browser + plain)
                == .request(
                    Request(
                        head: false, target: "/channels/one/720p.m3u8?_HLS_msn=12&_HLS_part=3", origin: true,
                        length: browser.utf8.count)))
        let head = "HEAD /channels/one/720p.m3u8 HTTP/1.1\r\nhost: x\r\nORIGIN: y\r\nCONNECTION: Keep-Alive\r\n\r\n"
        #expect(
            parse(head)
                == .request(
                    Request(head: true, target: "/channels/one/720p.m3u8", origin: true, length: head.utf8.count)))
        // No header at all is still HTTP/1.1 the codec accepts.
        #expect(
            parse("GET /channels/a/b.m3u8 HTTP/1.1\r\n\r\n")
                == .request(Request(head: false, target: "/channels/a/b.m3u8", origin: false, length: 35)))
    }

    @Test("a head not all there yet waits, unless its first bytes already rule it out")
    func incomplete() {
        let full = Array("GET /channels/one/720p.m3u8 HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        for cut in 1..<full.count {
            #expect(
                RawPlaylistRequest.parse(ByteBuffer(bytes: full.prefix(cut)), maxHeadBytes: 16_384) == .incomplete,
                "\(cut)")
        }
        for start in ["P", "POST /", "GET /h", "GET /healthz", "HEAD /x", "\r\n", "get /channels/"] {
            #expect(parse(start) == .other, "\(start)")
        }
        // Past the head limit without its end: the codec answers it (431).
        #expect(
            parse("GET /channels/one/720p.m3u8 HTTP/1.1\r\nX-Big: " + String(repeating: "a", count: 200), max: 128)
                == .other)
    }

    @Test(
        "anything not read completely and strictly is the codec's",
        arguments: [
            "GET /channels/one/720p.m3u8 HTTP/1.0\r\nHost: x\r\n\r\n",  // HTTP/1.0: its own keep-alive rules
            "GET /channels/one/720p.m3u8 HTTP/1.1 \r\nHost: x\r\n\r\n",
            "GET  /channels/one/720p.m3u8 HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /channels/one/720p.m3u8\tHTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /channels/one/7\u{7F}20p.m3u8 HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nConnection: keep-alive, Upgrade\r\n\r\n",
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nexpect: 100-continue\r\n\r\n",
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nUpgrade: h2c\r\n\r\n",
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nProxy-Connection: keep-alive\r\n\r\n",
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n",  // obsolete line folding
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nHost : x\r\n\r\n",  // space before the colon
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\n: x\r\n\r\n",
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nHost x\r\n\r\n",
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nHost: x\ry\r\n\r\n",  // a bare CR
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nHost: x\ny: z\r\n\r\n",  // a bare LF
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nHost: x\0\r\n\r\n",
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nHost: caf\u{E9}\r\n\r\n",  // not ASCII
            "GET /channels/one/720p.m3u8 HTTP/1.1\nHost: x\n\n",  // bare LFs: ruled out at once, not waited on
            "GET /channels/one/720p.m3u8 HTTP/1.1\nHost: x",
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nHost: x\rz",
        ])
    func other(_ text: String) {
        #expect(parse(text) == .other)
    }

    @Test("more than 100 header fields are the codec's to refuse")
    func fieldCount() {
        let fields = (0..<101).map { "X-\($0): y\r\n" }.joined()
        #expect(parse("GET /channels/a/b.m3u8 HTTP/1.1\r\n" + fields + "\r\n") == .other)
        let hundred = (0..<100).map { "X-\($0): y\r\n" }.joined()
        guard case .request = parse("GET /channels/a/b.m3u8 HTTP/1.1\r\n" + hundred + "\r\n") else {
            Issue.record("100 fields are taken")
            return
        }
    }

    @Test("random and mutated bytes never trap, and a request taken never extends past what was read")
    func hostileBytes() {
        var generator = SplitMix64(seed: 14)
        let base = Array("GET /channels/one/720p.m3u8?_HLS_msn=1 HTTP/1.1\r\nHost: x\r\nOrigin: y\r\n\r\n".utf8)
        let alphabet = Array("\r\n :GET/HEADchannels.m3u8?\t\0\u{7F}".utf8) + [0xFF, 0x80]
        var taken = 0
        for round in 0..<20_000 {
            var bytes =
                round % 2 == 0
                ? base : (0..<Int(generator.next() % 90)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            for _ in 0..<Int(generator.next() % 4) where !bytes.isEmpty {
                let at = Int(generator.next() % UInt64(bytes.count))
                switch generator.next() % 3 {
                case 0: bytes[at] = alphabet[Int(generator.next() % UInt64(alphabet.count))]
                case 1: bytes.remove(at: at)
                default: bytes.insert(alphabet[Int(generator.next() % UInt64(alphabet.count))], at: at)
                }
            }
            // Limits from none at all to more than the request.
            let parsed = RawPlaylistRequest.parse(
                ByteBuffer(bytes: bytes), maxHeadBytes: Int(generator.next() % 128) - 8)
            if case .request(let request) = parsed {
                taken += 1
                #expect(
                    request.length <= bytes.count
                        && Array(bytes[request.length - 4..<request.length]) == Array("\r\n\r\n".utf8))
                #expect(request.target.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F })
            }
        }
        #expect(taken > 1_000, "the mutations leave many requests intact: \(taken)")
    }
}

/// The handler on an `EmbeddedChannel`: what it writes and flushes, what it hands to the codec (recorded by the
/// handler after it), in which order.
@Suite("Playlist requests on raw bytes: handover, shutdown, half-close, a client that does not read")
struct PlaylistRawPathHandlerTests {
    /// Stands for the HTTP codec: records the bytes and events handed up.
    final class Codec: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        var log: [String] = []
        /// Ends of reads that reached it.
        var readCompletes = 0
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            log.append("bytes " + String(buffer: unwrapInboundIn(data)))
        }
        func channelReadComplete(context: ChannelHandlerContext) {
            readCompletes += 1
        }
        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            log.append("event \(type(of: event))")
        }
    }

    struct Setup {
        let fixture: APIFixture
        let channel: EmbeddedChannel
        let codec: Codec
        let tracker: ConnectionTracker

        /// Everything flushed so far, as text.
        func written() throws -> String {
            var text = ""
            while let data = try channel.readOutbound(as: IOData.self) {
                guard case .byteBuffer(let buffer) = data else { continue }
                text += String(buffer: buffer)
            }
            return text
        }

        var rawPathPresent: Bool { (try? channel.pipeline.syncOperations.handler(type: PlaylistRawPath.self)) != nil }
    }

    /// Channel `ll`: 1 s segments of 0.25 s parts; at 60.6 s parts 0 and 1 of segment 60 have ended.
    func setUp() async throws -> Setup {
        try await connection(APIFixture.lowLatency())
    }

    /// A connection to `fixture`'s follower: the raw path, then the stand-in for the codec.
    func connection(_ fixture: APIFixture) async throws -> Setup {
        let tracker = try ConnectionTracker.admitted()
        let codec = Codec()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(PlaylistRawPath(follower: fixture.follower, tracker: tracker))
        try channel.pipeline.syncOperations.addHandler(codec)
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).get()
        return Setup(fixture: fixture, channel: channel, codec: codec, tracker: tracker)
    }

    static let plain = "GET /channels/ll/720p.m3u8 HTTP/1.1\r\nHost: x\r\n\r\n"
    /// Part 3 of segment 60: not there yet at 60.6 s.
    static let held = "GET /channels/ll/720p.m3u8?_HLS_msn=60&_HLS_part=3 HTTP/1.1\r\nHost: x\r\n\r\n"

    @Test(
        "an answer written just before the connection goes to the codec is flushed, and the codec gets the rest from its first byte"
    )
    func flushedBeforeHandover() async throws {
        let setup = try await setUp()
        try setup.channel.writeInbound(ByteBuffer(string: Self.plain + "GET /hea"))
        let written = try setup.written()
        #expect(written.hasPrefix("HTTP/1.1 200 OK\r\n") && written.contains("#EXTM3U"), "\(written)")
        #expect(setup.codec.log == ["bytes GET /hea"])
        #expect(!setup.rawPathPresent)
        // From then on everything is the codec's.
        try setup.channel.writeInbound(ByteBuffer(string: "lthz HTTP/1.1\r\n\r\n" + Self.plain))
        #expect(setup.codec.log == ["bytes GET /hea", "bytes lthz HTTP/1.1\r\n\r\n" + Self.plain])
        #expect(try setup.written().isEmpty)
    }

    @Test("the end of a read goes up only after bytes went up: requests answered here do not walk the codec's handlers")
    func readCompleteOnlyAfterBytes() async throws {
        let setup = try await setUp()
        try setup.channel.writeInbound(ByteBuffer(string: Self.plain))
        try setup.channel.writeInbound(ByteBuffer(string: Self.plain + Self.plain))
        #expect(try setup.written().components(separatedBy: "HTTP/1.1 200 OK").count == 4)
        #expect(setup.codec.readCompletes == 0)
        // A request that is not ours: its bytes and the end of that read go up, and everything after.
        try setup.channel.writeInbound(ByteBuffer(string: "GET /channels/ll/master.m3u8 HTTP/1.1\r\n\r\n"))
        #expect(
            setup.codec.log == ["bytes GET /channels/ll/master.m3u8 HTTP/1.1\r\n\r\n"] && setup.codec.readCompletes == 1
        )
        try setup.channel.writeInbound(ByteBuffer(string: Self.plain))
        #expect(setup.codec.readCompletes == 2)
    }

    @Test(
        "a window kept during a loop's wake-up answers the requests it satisfies; one asking for a later part is looked up again"
    )
    func wakeupMemo() async throws {
        let setup = try await setUp()
        let follower = setup.fixture.follower
        let memo = LoopResponses()
        let first = try follower.servedMedia("ll", rendition: "720p")
        #expect(first.completedTicks == 242)
        func held(_ target: Int64) -> HeldReload {
            var directives = DeliveryDirectives()
            (directives.msn, directives.part) = (target / 4, target % 4)
            return HeldReload(
                answer: MediaPlaylistAnswer(channel: "ll", rendition: "720p", directives: directives),
                wait: MediaPlaylistAnswer.Wait(target: target, timeoutMilliseconds: 3000, waitOn: nil),
                origin: false, head: false, started: DispatchTime.now().uptimeNanoseconds)
        }
        // Outside a wake-up nothing is kept.
        memo.keepInWakeup(first, for: held(242))
        #expect(memo.servedInWakeup(held(242)) == nil)
        memo.beginWakeup()
        // A window kept answers the requests it satisfies without a lookup (a marked copy tells it from the follower's).
        var marked = first
        marked.body = ByteBuffer(string: "kept")
        memo.keepInWakeup(marked, for: held(242))
        guard
            case .playlist(let kept, _, _) = PlaylistLookup.released(
                follower: follower, held(242), ready: true, memo: memo)
        else {
            Issue.record("not answered")
            return
        }
        #expect(String(buffer: kept.body) == "kept")
        // Another delta form is another window.
        var delta = held(242)
        delta.answer.directives.skip = .segments
        guard
            case .playlist(let other, _, _) = PlaylistLookup.released(
                follower: follower, delta, ready: true, memo: memo)
        else {
            Issue.record("not answered")
            return
        }
        #expect(String(buffer: other.body).contains("#EXT-X-SKIP"))
        // The next part ends: a request for it is not answered with the kept window (nor refused as timed out).
        setup.fixture.clock.set(60.76)
        guard
            case .playlist(let served, _, _) = PlaylistLookup.released(
                follower: follower, held(243), ready: true, memo: memo)
        else {
            Issue.record("not answered")
            return
        }
        #expect(served.completedTicks == 243)
        #expect(memo.servedInWakeup(held(243))?.completedTicks == 243, "the newer window is kept in its place")
        memo.endWakeup()
        #expect(memo.servedInWakeup(held(243)) == nil)
    }

    @Test(
        "a loop's wake-up also runs what gathers while it runs (the ticker releases a boundary channel by channel), before other work on the loop"
    )
    func wakeupTakesWhatGathers() {
        let loop = EmbeddedEventLoop()
        let wakeups = HeldWakeups.on(loop)
        let ran = Mutex<[String]>([])
        wakeups.add {
            ran.withLock { $0.append("first channel") }
            // Other work for the loop (a read), then the next channel's players, released while this wake-up runs.
            loop.execute { ran.withLock { $0.append("other work") } }
            wakeups.add { ran.withLock { $0.append("next channel") } }
            wakeups.wake()
        }
        wakeups.wake()
        wakeups.wake()  // a second wake before the task runs queues nothing more
        loop.run()
        #expect(ran.withLock { $0 } == ["first channel", "next channel", "other work"])
        // Done: a later release wakes the loop again, once.
        wakeups.add { ran.withLock { $0.append("later") } }
        wakeups.wake()
        loop.run()
        #expect(ran.withLock { $0 } == ["first channel", "next channel", "other work", "later"])
    }

    @Test("a wake-up that keeps finding more gives the loop's other work its turn after 1,024 answers, then goes on")
    func wakeupYieldsToOtherWork() {
        let loop = EmbeddedEventLoop()
        let wakeups = HeldWakeups.on(loop)
        let ran = Mutex<[String]>([])
        let many = HeldWakeups.perTask
        wakeups.add {
            ran.withLock { $0.append("first") }
            loop.execute { ran.withLock { $0.append("other work") } }
            // Released while this wake-up runs: `many` more, the last of which releases one more again.
            for index in 0..<many {
                wakeups.add {
                    if index == many - 1 {
                        wakeups.add { ran.withLock { $0.append("after the turn") } }
                        wakeups.wake()
                    }
                }
            }
            wakeups.wake()
        }
        wakeups.wake()
        loop.run()
        #expect(ran.withLock { $0 } == ["first", "other work", "after the turn"])
    }

    @Test(
        "shutting down while a request is held: 503 at once, then what queued behind it, then the event, all reach the codec"
    )
    func quiesceWhileHeld() async throws {
        let setup = try await setUp()
        try setup.channel.writeInbound(ByteBuffer(string: Self.held + "GET /channels/ll/master.m3u8 HTTP/1.1\r\n\r\n"))
        #expect(setup.fixture.follower.blockedRequests == 1)
        #expect(try setup.written().isEmpty && setup.codec.log.isEmpty)
        setup.channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        let written = try setup.written()
        #expect(
            written.hasPrefix("HTTP/1.1 503 Service Unavailable\r\n") && written.contains("did not appear"),
            "\(written)")
        #expect(
            setup.codec.log == [
                "bytes GET /channels/ll/master.m3u8 HTTP/1.1\r\n\r\n", "event ChannelShouldQuiesceEvent",
            ])
        #expect(setup.fixture.follower.blockedRequests == 0, "the registration is dropped")
        #expect(!setup.rawPathPresent)
    }

    @Test("a half-close with a request cut short: the codec gets its bytes, then the event")
    func halfCloseMidRequest() async throws {
        let setup = try await setUp()
        try setup.channel.writeInbound(ByteBuffer(string: Self.plain + "GET /channels/ll/720p.m3u8 HTTP/1.1\r\nHo"))
        #expect(try setup.written().hasPrefix("HTTP/1.1 200 OK"))
        setup.channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(setup.codec.log == ["bytes GET /channels/ll/720p.m3u8 HTTP/1.1\r\nHo", "event ChannelEvent"])
        // With nothing pending, an event just passes and the path stays.
        let other = try await setUp()
        other.channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(other.codec.log == ["event ChannelEvent"] && other.rawPathPresent)
    }

    @Test("a half-close behind a held request waits for its answer")
    func halfCloseBehindHeld() async throws {
        let setup = try await setUp()
        try setup.channel.writeInbound(ByteBuffer(string: Self.held))
        setup.channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(setup.codec.log.isEmpty, "queued behind the held request")
        // Its deadline: 3 target durations; the follower's expiry answers it (503), then the event goes up.
        setup.fixture.clock.set(64)
        setup.fixture.follower.expireBlocked(now: setup.fixture.clock.read())
        setup.channel.embeddedEventLoop.run()
        #expect(try setup.written().hasPrefix("HTTP/1.1 503"))
        #expect(setup.codec.log == ["event ChannelEvent"])
    }

    @Test("no request is taken while the client does not read its answers; too much sent ahead closes the connection")
    func backpressure() async throws {
        let setup = try await setUp()
        setup.channel.isWritable = false
        try setup.channel.writeInbound(ByteBuffer(string: Self.plain + Self.plain))
        #expect(try setup.written().isEmpty)
        setup.channel.isWritable = true
        setup.channel.pipeline.fireChannelWritabilityChanged()
        #expect(
            try setup.written().components(separatedBy: "HTTP/1.1 200 OK").count == 3, "both answered once it reads")

        setup.channel.isWritable = false
        let limit = setup.tracker.limits.maxHeaderBytes
        for _ in 0...(4 * limit / Self.plain.utf8.count) where setup.channel.isActive {
            try setup.channel.writeInbound(ByteBuffer(string: Self.plain))
        }
        #expect(!setup.channel.isActive, "closed: \(4 * limit) bytes sent ahead of what it read")
    }

    @Test(
        "a relay rendition's request is held on its own upstream; an upstream gone back after the wake-up holds it again"
    )
    func relayHeld() async throws {
        let fixture = try await PlaylistRouteTests.relayFixture()
        let setup = try await connection(fixture)
        let (channel, codec) = (setup.channel, setup.codec)

        // Part 2 of segment 80: not upstream yet. Held here (not handed to the codec), on 720p's own upstream.
        try channel.writeInbound(
            ByteBuffer(string: "GET /channels/rl/720p.m3u8?_HLS_msn=80&_HLS_part=2 HTTP/1.1\r\nHost: x\r\n\r\n"))
        #expect(fixture.follower.blockedRequests == 1 && codec.log.isEmpty && setup.rawPathPresent)
        fixture.follower.updateUpstream(
            "rl", rendition: "360p", playlist: try PlaylistRouteTests.upstream("360p", complete: 79, partial: 3))
        channel.embeddedEventLoop.run()
        #expect(try setup.written().isEmpty, "another rendition's part releases nothing")
        // 720p lists the part (the wake-up is queued on the event loop), then its packager restarts before the answer is
        // written: the request waits again instead of being answered with a playlist without its part.
        fixture.follower.updateUpstream(
            "rl", rendition: "720p", playlist: try PlaylistRouteTests.upstream("720p", complete: 79, partial: 3))
        #expect(fixture.follower.blockedRequests == 0, "woken (the answer is queued on the event loop)")
        fixture.follower.updateUpstream(
            "rl", rendition: "720p", playlist: try PlaylistRouteTests.upstream("720p", complete: 40, partial: 1))
        channel.embeddedEventLoop.run()
        #expect(try setup.written().isEmpty)
        #expect(fixture.follower.blockedRequests == 1, "held again")
        fixture.follower.updateUpstream(
            "rl", rendition: "720p", playlist: try PlaylistRouteTests.upstream("720p", complete: 79, partial: 3))
        channel.embeddedEventLoop.run()
        let answer = try setup.written()
        #expect(
            answer.hasPrefix("HTTP/1.1 200 OK\r\n")
                && answer.contains(#"URI="http://encoder.example/720p/seg80.2.m4s""#), "\(answer)")
        #expect(answer.contains("Cache-Control: max-age=6\r\n"), "6 target durations of the upstream")
        #expect(fixture.follower.blockedRequests == 0)
    }

    @Test(
        "a held request whose window can no longer be rendered gets the router's answer for it (500 naming why), not a time-out"
    )
    func heldThenUnrenderable() async throws {
        let fixture = try await PlaylistRouteTests.relayFixture()
        let setup = try await connection(fixture)
        try setup.channel.writeInbound(
            ByteBuffer(string: "GET /channels/rl/720p.m3u8?_HLS_msn=80&_HLS_part=2 HTTP/1.1\r\nHost: x\r\n\r\n"))
        #expect(fixture.follower.blockedRequests == 1)
        // The next part comes from an upstream that dropped its dates: accepted, but the relay cannot place its
        // breaks on it.
        var lines = [
            "#EXTM3U", "#EXT-X-VERSION:6", "#EXT-X-TARGETDURATION:1",
            "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=0.75",
            "#EXT-X-PART-INF:PART-TARGET=0.25", "#EXT-X-MEDIA-SEQUENCE:74",
        ]
        for n in 74...79 { lines += ["#EXTINF:1.0,", "seg\(n).m4s"] }
        lines +=
            (0..<3).map { #"#EXT-X-PART:DURATION=0.25,URI="seg80.\#($0).m4s""# } + [
                #"#EXT-X-PRELOAD-HINT:TYPE=PART,URI="seg80.3.m4s""#
            ]
        fixture.follower.updateUpstream(
            "rl", rendition: "720p",
            playlist: try PlaylistParser.parseMedia(lines.joined(separator: "\n") + "\n").playlist)
        setup.channel.embeddedEventLoop.run()
        let answer = try setup.written()
        #expect(
            answer.hasPrefix("HTTP/1.1 500 Internal Server Error\r\n") && answer.contains("could not be rendered"),
            "\(answer)")
    }
}

extension ConnectionTracker {
    /// A connection admitted by a gate of 8 places, with the default limits and timeouts, as the transport makes one.
    static func admitted() throws -> ConnectionTracker {
        let gate = ConnectionGate(maximum: 8)
        guard case .admitted(let id) = gate.admit(nil) else { throw CancellationError() }
        return ConnectionTracker(
            id: id, gate: gate, limits: ServerLimits(),
            timeouts: ConnectionTimeouts(
                header: .seconds(10), body: .seconds(5), idle: .seconds(60), acceptedAt: .now()))
    }
}
