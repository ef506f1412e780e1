import Foundation
import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Schedule
import Synchronization
import TestSupport
import Testing

@testable import API
@testable import Projector

/// Issue 32: one table of media playlist requests, each sent through the three paths that answer them (raw bytes,
/// ``PlaylistRawPath``; the event loop, ``PlaylistFastPath``; the router, `PlaylistController.media`), on a fixture of
/// its own per path. Every path gives the same answer (status, the headers a client or cache acts on, the body), the
/// one the row expects. A path before the router answers a row itself or hands it up unchanged (to the codec, or to
/// the router), as the row says; a handed-up request is answered by the next path, so its answer through that path is
/// the next one's.
@Suite("Media playlist answers: one table, three paths")
struct MediaPlaylistAnswerTableTests {
    /// The channel a row asks for.
    enum Channel: String, Sendable {
        /// `demo`: 6 s segments, no parts, at 60 s.
        case plain
        /// `ll`: 1 s segments of 0.25 s parts, at 60.6 s: segments up to 59 and parts 0 and 1 of segment 60 have ended.
        case lowLatency
        /// `rl`: a relay of an LL-HLS upstream at segment 80 with parts 0 and 1, at 80.6 s.
        case relay
        /// `later`: its first segment is an hour away.
        case notStarted
    }

    /// What happens once the request is held (a row without a step is answered at once).
    enum Step: Sendable {
        /// The ticker publishes the next part (the clock at 60.76 s).
        case nextPart
        /// Its 3 target durations pass without it (the clock at 64 s, the follower's expiry).
        case deadline
        /// 720p's upstream lists part 2 of segment 80.
        case upstreamPart
    }

    struct Expected: Sendable {
        var status: Int
        var cacheControl: String?
        /// Text the body holds (nil: no body, a HEAD).
        var body: String?
        /// A 400's `field`.
        var field: String? = nil
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var channel: Channel
        var method: HTTPRequest.Method = .get
        var target: String
        var origin = false
        var step: Step? = nil
        /// Answered by the paths before the router themselves (else handed up to the router).
        var beforeRouter: Bool
        var expected: Expected
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(
            name: "plain GET", channel: .plain, target: "/channels/demo/720p.m3u8", beforeRouter: true,
            expected: Expected(status: 200, cacheControl: "max-age=3", body: "#EXT-X-TARGETDURATION:6")),
        Row(
            name: "plain GET with an Origin (CORS)", channel: .plain, target: "/channels/demo/360p.m3u8", origin: true,
            beforeRouter: true, expected: Expected(status: 200, cacheControl: "max-age=3", body: "#EXTM3U")),
        Row(
            name: "HEAD", channel: .plain, method: .head, target: "/channels/demo/720p.m3u8", beforeRouter: true,
            expected: Expected(status: 200, cacheControl: "max-age=3", body: nil)),
        Row(
            name: "plain GET of an LL channel", channel: .lowLatency, target: "/channels/ll/720p.m3u8",
            beforeRouter: true,
            expected: Expected(
                status: 200, cacheControl: "max-age=1",
                body: #"#EXT-X-PRELOAD-HINT:TYPE=PART,URI="https://cdn.example/720p/seg60.2.m4s""#)),
        Row(
            name: "blocking reload, part there already", channel: .lowLatency,
            target: "/channels/ll/720p.m3u8?_HLS_msn=60&_HLS_part=1", beforeRouter: true,
            expected: Expected(status: 200, cacheControl: "max-age=1", body: "seg60.1.m4s")),
        Row(
            name: "blocking reload, whole segment there already", channel: .lowLatency,
            target: "/channels/ll/720p.m3u8?_HLS_msn=59", beforeRouter: true,
            expected: Expected(status: 200, cacheControl: "max-age=1", body: "seg59.ts")),
        Row(
            name: "blocking reload, held then satisfied", channel: .lowLatency,
            target: "/channels/ll/720p.m3u8?_HLS_msn=60&_HLS_part=2", step: .nextPart, beforeRouter: true,
            expected: Expected(status: 200, cacheControl: "max-age=6", body: "seg60.2.m4s")),
        Row(
            name: "blocking reload HEAD, held then satisfied", channel: .lowLatency, method: .head,
            target: "/channels/ll/360p.m3u8?_HLS_msn=60&_HLS_part=2", origin: true, step: .nextPart,
            beforeRouter: true, expected: Expected(status: 200, cacheControl: "max-age=6", body: nil)),
        Row(
            name: "blocking reload, held past its deadline: 503", channel: .lowLatency,
            target: "/channels/ll/720p.m3u8?_HLS_msn=60&_HLS_part=3", step: .deadline, beforeRouter: true,
            expected: Expected(
                status: 503, cacheControl: "no-cache",
                body: "segment 60 part 3 of channel ll did not appear within 3 target durations")),
        Row(
            name: "delta update, _HLS_skip=YES", channel: .lowLatency, target: "/channels/ll/720p.m3u8?_HLS_skip=YES",
            beforeRouter: true,
            expected: Expected(status: 200, cacheControl: "max-age=1", body: "#EXT-X-SKIP:SKIPPED-SEGMENTS=4\n")),
        Row(
            name: "delta update, _HLS_skip=v2", channel: .lowLatency, target: "/channels/ll/720p.m3u8?_HLS_skip=v2",
            beforeRouter: true,
            expected: Expected(
                status: 200, cacheControl: "max-age=1",
                body: #"#EXT-X-SKIP:SKIPPED-SEGMENTS=4,RECENTLY-REMOVED-DATERANGES="""#)),
        Row(
            name: "delta update with a part there already", channel: .lowLatency,
            target: "/channels/ll/720p.m3u8?_HLS_skip=YES&_HLS_msn=60&_HLS_part=0", beforeRouter: true,
            expected: Expected(status: 200, cacheControl: "max-age=1", body: "#EXT-X-SKIP:SKIPPED-SEGMENTS=4\n")),
        Row(
            name: "delta update v2, held then satisfied", channel: .lowLatency,
            target: "/channels/ll/720p.m3u8?_HLS_msn=60&_HLS_part=2&_HLS_skip=v2", step: .nextPart,
            beforeRouter: true,
            expected: Expected(status: 200, cacheControl: "max-age=6", body: "RECENTLY-REMOVED-DATERANGES")),
        Row(
            name: "_HLS_msn more than two segments ahead: 400", channel: .lowLatency,
            target: "/channels/ll/720p.m3u8?_HLS_msn=62", beforeRouter: false,
            expected: Expected(
                status: 400, cacheControl: "no-cache", body: "more than two segments after", field: "_HLS_msn")),
        Row(
            name: "part beyond the Advance Part Limit: 400", channel: .lowLatency,
            target: "/channels/ll/720p.m3u8?_HLS_msn=60&_HLS_part=99", beforeRouter: false,
            expected: Expected(status: 400, cacheControl: "no-cache", body: "_HLS_part 99", field: "_HLS_part")),
        Row(
            name: "part of the next segment beyond the limit: 400", channel: .lowLatency,
            target: "/channels/ll/720p.m3u8?_HLS_msn=61&_HLS_part=10", beforeRouter: false,
            expected: Expected(status: 400, cacheControl: "no-cache", body: "_HLS_part 10", field: "_HLS_part")),
        Row(
            name: "malformed _HLS_msn: 400", channel: .lowLatency, target: "/channels/ll/720p.m3u8?_HLS_msn=x",
            beforeRouter: false,
            expected: Expected(status: 400, cacheControl: "no-cache", body: "_HLS_msn must be", field: "_HLS_msn")),
        Row(
            name: "_HLS_part without _HLS_msn: 400", channel: .lowLatency, target: "/channels/ll/720p.m3u8?_HLS_part=1",
            beforeRouter: false,
            expected: Expected(
                status: 400, cacheControl: "no-cache", body: "_HLS_part needs _HLS_msn", field: "_HLS_part")),
        Row(
            name: "malformed _HLS_skip: 400", channel: .lowLatency, target: "/channels/ll/720p.m3u8?_HLS_skip=yes",
            beforeRouter: false,
            expected: Expected(status: 400, cacheControl: "no-cache", body: "YES or v2", field: "_HLS_skip")),
        Row(
            name: "another query parameter: the router's, the same playlist", channel: .lowLatency,
            target: "/channels/ll/720p.m3u8?_HLS_msn=60&_HLS_part=1&via=cdn", beforeRouter: false,
            expected: Expected(status: 200, cacheControl: "max-age=1", body: "seg60.1.m4s")),
        Row(
            name: "directives on a channel without parts: the full playlist at once", channel: .plain,
            target: "/channels/demo/720p.m3u8?_HLS_msn=99&_HLS_skip=v2", beforeRouter: false,
            expected: Expected(status: 200, cacheControl: "max-age=3", body: "#EXT-X-TARGETDURATION:6")),
        Row(
            name: "unknown channel: 404", channel: .plain, target: "/channels/nope/720p.m3u8", beforeRouter: false,
            expected: Expected(status: 404, cacheControl: "no-cache", body: "channel nope does not exist")),
        Row(
            name: "unknown rendition: 404", channel: .plain, target: "/channels/demo/1080p.m3u8", beforeRouter: false,
            expected: Expected(status: 404, cacheControl: "no-cache", body: "channel demo has no rendition 1080p")),
        Row(
            name: "unknown rendition with directives: 404", channel: .lowLatency,
            target: "/channels/ll/1080p.m3u8?_HLS_msn=60", beforeRouter: false,
            expected: Expected(status: 404, cacheControl: "no-cache", body: "channel ll has no rendition 1080p")),
        Row(
            name: "not a playlist: 404", channel: .plain, target: "/channels/demo/720p.ts", beforeRouter: false,
            expected: Expected(status: 404, cacheControl: "no-cache", body: "no such resource: 720p.ts")),
        Row(
            name: "channel not started: 503", channel: .notStarted, target: "/channels/later/720p.m3u8",
            beforeRouter: false,
            expected: Expected(status: 503, cacheControl: "no-cache", body: "channel later has not started")),
        Row(
            name: "relay, part there already", channel: .relay,
            target: "/channels/rl/720p.m3u8?_HLS_msn=80&_HLS_part=1",
            beforeRouter: true, expected: Expected(status: 200, cacheControl: "max-age=1", body: "seg80.1.m4s")),
        Row(
            name: "relay, held until its own upstream lists the part", channel: .relay,
            target: "/channels/rl/720p.m3u8?_HLS_msn=80&_HLS_part=2", step: .upstreamPart, beforeRouter: true,
            expected: Expected(
                status: 200, cacheControl: "max-age=6", body: #"URI="http://encoder.example/720p/seg80.2.m4s""#)),
        Row(
            name: "relay, too far ahead: 400", channel: .relay, target: "/channels/rl/720p.m3u8?_HLS_msn=82",
            beforeRouter: false,
            expected: Expected(status: 400, cacheControl: "no-cache", body: "_HLS_msn 82", field: "_HLS_msn")),
    ]

    /// An answer as a client and a cache see it.
    struct Answer: Equatable, CustomStringConvertible {
        var status: Int
        /// Content-Type, Cache-Control, X-Cueline-Tick, Retry-After, Access-Control-Allow-Origin, by lowercased name.
        var fields: [String: String]
        var body: String

        static let compared = [
            "content-type", "cache-control", "x-cueline-tick", "retry-after", "access-control-allow-origin",
        ]

        init(status: Int, fields: [(String, String)], body: String) {
            self.status = status
            self.body = body
            self.fields = [:]
            for (name, value) in fields where Self.compared.contains(name.lowercased()) {
                self.fields[name.lowercased()] = value
            }
        }

        var description: String { "\(status) \(fields) \(body.prefix(300))" }
    }

    /// What a path did with a request: answered it, or handed it up unchanged.
    enum Outcome {
        case answered(Answer, contentLength: Int?)
        case handedUp
    }

    // MARK: The fixtures

    static func fixture(_ channel: Channel) async throws -> APIFixture {
        switch channel {
        case .plain:
            return try await APIFixture()
        case .lowLatency:
            return try await APIFixture.lowLatency()
        case .relay:
            return try await PlaylistRouteTests.relayFixture()
        case .notStarted:
            let fixture = try await APIFixture()
            let later = TestClock.epoch.adding(milliseconds: 3_600_000)
            _ = try await fixture.handler.handle(
                .createChannel(APIFixture.config("later", epoch: later)), channel: "later",
                context: APIFixture.context())
            try await fixture.follower.catchUp()
            fixture.clock.set(61)
            return fixture
        }
    }

    /// Runs `step` once `fixture`'s follower holds the request, then waits for `answer`.
    static func afterStep<Value: Sendable>(
        _ step: Step?, _ fixture: APIFixture, _ answer: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        guard let step else { return try await within(answer) }
        let waiting = Task { try await within(answer) }
        let follower = fixture.follower
        if try await !eventually({ follower.blockedRequests == 1 }) {
            Issue.record("the request was not held")
        }
        switch step {
        case .nextPart:
            fixture.clock.set(60.76)
            let ticker = Task { try await follower.tickAtSegmentBoundaries() }
            defer { ticker.cancel() }
            return try await waiting.value
        case .deadline:
            fixture.clock.set(64)
            follower.expireBlocked(now: fixture.clock.read())
            return try await waiting.value
        case .upstreamPart:
            follower.updateUpstream(
                "rl", rendition: "720p", playlist: try PlaylistRouteTests.upstream("720p", complete: 79, partial: 3))
            return try await waiting.value
        }
    }

    struct TimedOut: Error {}

    /// `answer`, or a failure after 10 s instead of a test that hangs.
    static func within<Value: Sendable>(_ answer: @escaping @Sendable () async throws -> Value) async throws -> Value {
        try await withThrowingTaskGroup(of: Value.self) { group in
            group.addTask { try await answer() }
            group.addTask {
                try await Task.sleep(for: .seconds(10))
                throw TimedOut()
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
    }

    // MARK: The three paths

    func request(_ row: Row) -> HTTPRequest {
        var headers = HTTPFields()
        if row.origin { headers[.origin] = "https://player.example" }
        return HTTPRequest(
            method: row.method, scheme: "http", authority: "cdn.example", path: row.target, headerFields: headers)
    }

    /// The next write on `channel`, once its loop has run what the follower's wake-up queued on it (a testing loop runs
    /// its tasks when told to).
    static func nextWrite<Part: Sendable>(_ channel: NIOAsyncTestingChannel, as: Part.Type) async throws -> Part {
        while true {
            await channel.testingEventLoop.run()
            if let part = try await channel.readOutbound(as: Part.self) { return part }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// The router, in process.
    func router(_ row: Row) async throws -> Answer {
        let fixture = try await Self.fixture(row.channel)
        let request = request(row)
        return try await fixture.test { client in
            let response = try await Self.afterStep(row.step, fixture) {
                try await client.execute(uri: row.target, method: row.method, headers: request.headerFields)
            }
            return Answer(
                status: response.status.code, fields: response.headers.map { ($0.name.rawName, $0.value) },
                body: String(buffer: response.body))
        }
    }

    /// The event-loop path, on a channel of its own: the request's parts in, its answer's parts out (or the request
    /// passed on up).
    func eventLoop(_ row: Row) async throws -> Outcome {
        let fixture = try await Self.fixture(row.channel)
        let follower = fixture.follower
        let channel = try await NIOAsyncTestingChannel { channel in
            try channel.pipeline.syncOperations.addHandler(PlaylistFastPath(follower: follower))
        }
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9))
        try await channel.writeInbound(HTTPRequestPart.head(request(row)))
        try await channel.writeInbound(HTTPRequestPart.end(nil))
        if let passed = try await channel.readInbound(as: HTTPRequestPart.self) {
            guard case .head(let head) = passed, head.path == row.target else {
                Issue.record("passed up as something else: \(passed)")
                return .handedUp
            }
            return .handedUp
        }
        let parts = try await Self.afterStep(row.step, fixture) {
            var parts: [HTTPResponsePart] = []
            while true {
                let part = try await Self.nextWrite(channel, as: HTTPResponsePart.self)
                parts.append(part)
                if case .end = part { return parts }
            }
        }
        guard case .head(let head) = parts.first else { throw CancellationError() }
        var body = ByteBuffer()
        for case .body(var chunk) in parts { body.writeBuffer(&chunk) }
        return .answered(
            Answer(
                status: head.status.code, fields: head.headerFields.map { ($0.name.rawName, $0.value) },
                body: String(buffer: body)), contentLength: head.headerFields[.contentLength].flatMap { Int($0) })
    }

    /// The raw path, on a channel of its own: the request's bytes in, the answer's bytes out (or the bytes handed to
    /// the codec).
    func raw(_ row: Row) async throws -> Outcome {
        let fixture = try await Self.fixture(row.channel)
        let follower = fixture.follower
        let tracker = try ConnectionTracker.admitted()
        let channel = try await NIOAsyncTestingChannel { channel in
            try channel.pipeline.syncOperations.addHandler(PlaylistRawPath(follower: follower, tracker: tracker))
        }
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9))
        var text = "\(row.method.rawValue) \(row.target) HTTP/1.1\r\nHost: cdn.example\r\n"
        if row.origin { text += "Origin: https://player.example\r\n" }
        try await channel.writeInbound(ByteBuffer(string: text + "\r\n"))
        if let passed = try await channel.readInbound(as: ByteBuffer.self) {
            #expect(String(buffer: passed) == text + "\r\n", "handed to the codec from its first byte")
            return .handedUp
        }
        let bytes = try await Self.afterStep(row.step, fixture) {
            guard case .byteBuffer(let buffer) = try await Self.nextWrite(channel, as: IOData.self) else {
                throw CancellationError()
            }
            return String(buffer: buffer)
        }
        guard let end = bytes.range(of: "\r\n\r\n") else {
            Issue.record("no head: \(bytes)")
            throw CancellationError()
        }
        let lines = bytes[..<end.lowerBound].components(separatedBy: "\r\n")
        let status = Int(lines[0].split(separator: " ")[1]) ?? 0
        let fields = lines.dropFirst().map { line -> (String, String) in
            let colon = line.firstIndex(of: ":")!
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        let length = fields.first { $0.0.lowercased() == "content-length" }.flatMap { Int($0.1) }
        return .answered(
            Answer(status: status, fields: fields, body: String(bytes[end.upperBound...])), contentLength: length)
    }

    @Test("every path answers the row alike, as it expects", arguments: rows)
    func answeredAlike(_ row: Row) async throws {
        let routed = try await router(row)
        // What each path before the router answers: its own answer, or the router's for what it hands up.
        let eventLoop = try await eventLoop(row)
        let raw = try await raw(row)
        for (path, outcome) in [("event loop", eventLoop), ("raw", raw)] {
            switch outcome {
            case .handedUp:
                #expect(!row.beforeRouter, "\(path): handed up")
            case .answered(let answer, let contentLength):
                #expect(row.beforeRouter, "\(path): answered before the router")
                #expect(answer == routed, "\(path): \(answer)\nrouter: \(routed)")
                // The length of what a GET gets, for a HEAD too.
                #expect(contentLength != nil && (row.method == .head || contentLength == answer.body.utf8.count))
            }
        }
        // The router's answer, as the row expects.
        let expected = row.expected
        #expect(routed.status == expected.status, "\(routed)")
        #expect(routed.fields["cache-control"] == expected.cacheControl, "\(routed)")
        #expect((routed.fields["access-control-allow-origin"] == "*") == row.origin)
        if expected.status == 200 {
            #expect(routed.fields["content-type"] == "application/vnd.apple.mpegurl")
            #expect(routed.fields["x-cueline-tick"] != nil)
        } else {
            #expect(routed.fields["content-type"] == "application/json" && routed.fields["x-cueline-tick"] == nil)
            let error = try JSONSerialization.jsonObject(with: Data(routed.body.utf8)) as? [String: Any]
            #expect(error?["field"] as? String == expected.field, "\(routed)")
        }
        if let body = expected.body {
            #expect(routed.body.contains(body), "\(routed)")
        } else {
            #expect(routed.body.isEmpty)
        }
    }
}
