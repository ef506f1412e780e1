import API
import EventStore
import Foundation
import HLS
import HTTPTypes
import Hummingbird
import NIOCore
import Projector
import Schedule
import Synchronization
import TestSupport
import Testing

/// A clock the test moves by hand.
final class TestClock: Sendable {
    static let epoch = Timestamp(iso8601: "2026-03-01T12:00:00Z")!
    /// Starts a little before 12:01:00, so a channel created at once is in effect at `set(60)`.
    private let now = Mutex(Timestamp(iso8601: "2026-03-01T12:00:59.900Z")!)
    var read: @Sendable () -> Timestamp { { [self] in self.now.withLock { $0 } } }
    func set(_ seconds: Double) {
        now.withLock { $0 = Self.epoch.adding(milliseconds: Int64(seconds * 1000)) }
    }
}

/// Asset playlists served from memory: what `AssetPlaylists` reads when a break is placed and when a chunk is asked for.
final class FakeAssets: Sendable {
    let bodies = Mutex<[String: String]>([:])

    /// A VOD playlist of `segments` segments of 2 s.
    static func vod(segments: Int) -> String {
        (["#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:2", "#EXT-X-PLAYLIST-TYPE:VOD"]
            + (0..<segments).flatMap { ["#EXTINF:2.000,", "https://ads.example/seg\($0).ts"] } + ["#EXT-X-ENDLIST"])
            .joined(separator: "\n") + "\n"
    }

    var fetch: AssetPlaylists.Fetch {
        { [self] url in
            guard let body = bodies.withLock({ $0[url] }) else { throw CocoaError(.fileReadNoSuchFile) }
            return (body, url)
        }
    }
}

/// A token directory whose database is down.
struct UnreachableTokens: TokenDirectory {
    struct Down: Error {}
    func token(digest: String) async throws -> APIToken? { throw Down() }
    func activeTokens() async throws -> [String: APIToken] { throw Down() }
    func create(
        name: String, role: APIToken.Role, channels: [ChannelID], commands: [ScheduleCommand.Kind], createdBy: String
    ) async throws -> String { throw Down() }
    func list() async throws -> [APIToken] { throw Down() }
    func revoke(name: String) async throws { throw Down() }
}

/// The whole API in process over the in-memory event store: channel `demo` (6 s segments, renditions 720p and
/// 360p, started at the epoch), the clock at 60 s, and tokens `desk` (operator), `wall` (viewer), `auto`
/// (automation on demo, cancel_current_event only) and `news` (operator on channel news only).
/// The in-memory event log, with a switch that makes every append fail as a database outage would.
final class SwitchableStore: EventStore {
    let base = InMemoryEventStore()
    let down = Mutex(false)
    /// Awaited by every `readStream` while set: a test holds an audit read in progress with it.
    let beforeReadStream = Mutex<(@Sendable () async -> Void)?>(nil)
    /// The channel of every `readStream`, in the order they came in (before `beforeReadStream` holds them).
    let streamReads = Mutex<[ChannelID]>([])

    func append(_ request: AppendRequest) async throws -> AppendResult {
        if down.withLock({ $0 }) { throw StoreError.unavailable("connection refused") }
        return try base.append(request)
    }
    func previousResult(of request: AppendRequest) async throws -> AppendResult? {
        try base.previousResult(of: request)
    }
    func read(after position: Int64, through head: Int64, limit: Int) async throws -> [RecordedEvent] {
        base.read(after: position, through: head, limit: limit)
    }
    func readStream(_ channel: ChannelID, after version: Int64, limit: Int) async throws -> [RecordedEvent] {
        streamReads.withLock { $0.append(channel) }
        if let wait = beforeReadStream.withLock({ $0 }) { await wait() }
        return base.readStream(channel, after: version, limit: limit)
    }
    func version(of channel: ChannelID) async throws -> Int64 { base.version(of: channel) }
    func headPosition() async throws -> Int64 { base.headPosition() }
    func watermark() async throws -> Watermark { base.watermark() }
}

struct APIFixture {
    let store = SwitchableStore()
    let clock = TestClock()
    let assets = FakeAssets()
    let tokens = InMemoryTokenStore()
    let subscriptions = InMemorySubscriptionStore()
    let tokenCache: TokenCache
    let handler: CommandHandler
    let follower: ChannelFollower
    var secrets: [String: String] = [:]
    var limits = ServerLimits()
    var open = false
    var hooks = HookSet()
    var mediaDirectory: String?
    var tokenDirectory: (any TokenDirectory)?
    let hookSecret = "a-hook-secret-of-enough-bytes"

    init(open: Bool = false) async throws {
        self.open = open
        let follower = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read)
        self.follower = follower
        handler = CommandHandler(
            store: store, refusals: InMemoryRefusalStore(), clock: clock.read,
            knownState: { follower.followedState(of: $0) },
            assets: AssetPlaylists(fetch: assets.fetch, timeToLive: .zero), applied: { await follower.applied($0) })
        tokenCache = TokenCache(directory: tokens, refreshInterval: .milliseconds(50), missReloadInterval: .zero)
        _ = try await handler.handle(.createChannel(Self.config("demo")), channel: "demo", context: Self.context())
        try await follower.catchUp()
        clock.set(60)
        secrets["desk"] = try await tokens.create(
            name: "desk", role: .operator, channels: [], commands: [], createdBy: "test")
        secrets["wall"] = try await tokens.create(
            name: "wall", role: .viewer, channels: [], commands: [], createdBy: "test")
        secrets["auto"] = try await tokens.create(
            name: "auto", role: .automation, channels: ["demo"], commands: [.cancelCurrentEvent], createdBy: "test")
        secrets["news"] = try await tokens.create(
            name: "news", role: .operator, channels: ["news"], commands: [], createdBy: "test")
        hooks = try HookSet(
            json: Data(
                """
                {"hooks": [{"name": "scores", "secret": "\(hookSecret)", "rules": [
                  {"when": {"event": "goal"}, "channel": "demo", "command": {"command": "cancel_current_event"}},
                  {"when": {"event": "timeout"}, "channel": "demo",
                   "command": {"command": "place_break", "id": "$.break", "in": 30, "duration": "$.seconds", "asset_list": "https://ads.example/list"}}]}]}
                """.utf8), environment: [:])
    }

    /// The fixture with channel `ll` besides: 1 s segments of 0.25 s parts, at 60.6 s (segments up to 59 and parts 0 and
    /// 1 of segment 60 have ended).
    static func lowLatency() async throws -> APIFixture {
        let fixture = try await APIFixture()
        let config = config("ll").lowLatencyForTests
        _ = try await fixture.handler.handle(.createChannel(config), channel: "ll", context: context())
        try await fixture.follower.catchUp()
        fixture.clock.set(60.6)
        return fixture
    }

    static func config(_ id: String, epoch: Timestamp = TestClock.epoch) -> ChannelConfig {
        ChannelConfig(
            id: ChannelID(id)!, segmentDurationMilliseconds: 6000, windowSegments: 5, epoch: epoch,
            renditions: ["720p", "360p"].map {
                RenditionConfig(name: $0, bandwidth: 1_000_000, uriTemplate: "https://cdn.example/\($0)/seg{n}.ts")
            },
            source: .clock, publicBaseURL: "http://127.0.0.1:8080")
    }

    static func context(_ id: String = UUID().uuidString) -> CommandContext {
        CommandContext(commandID: id, actor: "op", source: "test")
    }

    /// Runs `body` against the router in process (no socket), the event streams and the token cache running as
    /// the application's services.
    func test<Value: Sendable>(
        metrics: (@Sendable () -> String)? = nil, auditReads: AuditReads = AuditReads(),
        _ body: @Sendable (RouterClient) async throws -> Value
    ) async throws -> Value {
        let streams = EventStreams(follower: follower, store: store, limits: limits)
        let cache = tokenDirectory.map { TokenCache(directory: $0, refreshInterval: .milliseconds(50)) } ?? tokenCache
        let router = Routes.router(
            follower: follower, handler: handler, mediaDirectory: mediaDirectory, metrics: metrics, hooks: hooks,
            access: open ? .open : .tokens(cache), eventStreams: streams, auditReads: auditReads,
            subscriptions: subscriptions)
        return try await withRouterClient(router, services: [streams, cache], body)
    }

    /// `Authorization: Bearer <secret of name>`, plus `extra`.
    func auth(_ name: String?, _ extra: HTTPFields = [:]) -> HTTPFields {
        var headers = extra
        if let name { headers[.authorization] = "Bearer \(secrets[name]!)" }
        return headers
    }

    /// A hook delivery signed with the fixture's hook secret at the clock's time (or `at`).
    func signed(_ body: String, at seconds: Int64? = nil, secret: String? = nil) -> HTTPFields {
        let timestamp = String(seconds ?? clock.read().milliseconds / 1000)
        let mac = hmacSHA256(
            key: Array((secret ?? hookSecret).utf8),
            message: Array(timestamp.utf8) + [UInt8(ascii: ".")] + Array(body.utf8))
        var headers = HTTPFields()
        headers[HTTPField.Name("X-Cueline-Timestamp")!] = timestamp
        headers[HTTPField.Name("X-Cueline-Signature")!] = "sha256=" + mac.map { String(format: "%02x", $0) }.joined()
        return headers
    }
}

extension TestResponse {
    var text: String { String(buffer: body) }

    /// The JSON body as a dictionary (empty when it is not one).
    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any]) ?? [:]
    }

    /// The `error` and `field` of an error answer.
    var error: (message: String, field: String?)? {
        guard let message = json["error"] as? String else { return nil }
        return (message, json["field"] as? String)
    }
}

extension RouterClient {
    func get(_ uri: String, _ headers: HTTPFields = [:]) async throws -> TestResponse {
        try await execute(uri: uri, method: .get, headers: headers)
    }

    func post(_ uri: String, _ body: String, _ headers: HTTPFields = [:]) async throws -> TestResponse {
        var headers = headers
        headers[.contentType] = "application/json"
        return try await execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(string: body))
    }
}
