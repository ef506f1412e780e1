import EventStore
import Foundation
import Hummingbird
import Metrics
import NIOCore
import Projector
import Schedule
import ServiceLifecycle
import Synchronization

/// The live event streams (`GET /channels/{channel}/events` as Server-Sent Events) of this instance, sharing what
/// can be shared so that subscribers cannot starve the playlists:
/// - at most ``ServerLimits/maxStreamsPerToken`` per token and ``ServerLimits/maxStreams`` in all (429/503 with
///   Retry-After beyond);
/// - one wake-up for all of them: `run()` looks at the follower every 100 ms and resumes the streams whose channel
///   moved, instead of each stream polling;
/// - the log is sent in pages of ``pageSize`` events, each read and encoded once for every subscriber (pages are
///   immutable once full, and a few are cached), by at most ``readers`` streams at a time, written with
///   back-pressure; a stream holds one page at a time;
/// - all streams together write at most ``bytesPerSecond``: a fast reader on loopback would otherwise keep the
///   event loops busy copying pages, and requests for playlists would wait behind the copies.
public final class EventStreams: Service, Sendable {
    /// Events per page.
    static let pageSize: Int64 = 100
    /// Streams reading or encoding a page at once.
    static let readers = 2
    /// What all streams together write per second, and the burst above it.
    static let bytesPerSecond = 32 * 1024 * 1024
    static let burstBytes = 1024 * 1024
    /// Full pages kept, by (channel, page number).
    static let cachedPages = 64
    /// A comment line this often keeps proxies from timing a quiet stream out and finds clients that went away.
    static let keepAlive: Duration = .seconds(5)
    /// A stream ends after this; EventSource clients reconnect by themselves with Last-Event-ID.
    static let lifetime: Duration = .seconds(600)
    /// A stream re-checks its caller's token this often (through the token cache, which reloads every second): a
    /// revoked token's streams end within 5 s.
    static let authorizationCheck: Duration = .seconds(2)

    /// Why a stream was not opened.
    enum Refusal: Error {
        case perToken(key: String, limit: Int)
        case total(limit: Int)

        /// 429 (per token) or 503 (in all), with `Retry-After`.
        var error: APIError {
            let error =
                switch self {
                case .perToken(let key, let limit):
                    APIError(
                        .tooManyRequests,
                        "\(key) already has \(limit) event streams open, the most one token may; close one or retry later"
                    )
                case .total(let limit):
                    APIError(
                        .unavailable,
                        "this instance already serves \(limit) event streams, its limit; retry later or use another instance"
                    )
                }
            return error.with(.retryAfter, "10")
        }
    }

    /// One admitted stream; gives its place back when released (or dropped, if the response is never written).
    final class Ticket: Sendable {
        let key: String
        let streams: EventStreams
        private let released = Mutex(false)

        init(key: String, streams: EventStreams) {
            self.key = key
            self.streams = streams
        }

        func release() {
            guard
                released.withLock({ done in
                    defer { done = true }; return !done
                })
            else { return }
            streams.state.withLock { state in
                state.total -= 1
                state.perKey[key, default: 1] -= 1
                if state.perKey[key] == 0 { state.perKey[key] = nil }
            }
            streams.open.record(streams.state.withLock { $0.total })
        }

        deinit { release() }
    }

    private struct Waiter {
        var channel: ChannelID
        var after: Int64
        var deadline: ContinuousClock.Instant
        var continuation: CheckedContinuation<Bool, Never>
        /// Registered since the last look: its channel may have moved before it was registered.
        var fresh = true
    }

    private struct PageKey: Hashable {
        var channel: ChannelID
        var number: Int64
    }

    private struct State {
        var perKey: [String: Int] = [:]
        var total = 0
        var nextWaiter: UInt64 = 0
        var waiters: [UInt64: Waiter] = [:]
        var closed = false
        var pages: [PageKey: ByteBuffer] = [:]
        var pageOrder: [PageKey] = []
        var freeReaders = EventStreams.readers
        /// The write budget, in bytes: negative when streams have reserved more than there was (they sleep it off).
        var budget = EventStreams.burstBytes
        var budgetAt = ContinuousClock.now
        var readerQueue: [CheckedContinuation<Void, Never>] = []
    }

    let follower: ChannelFollower
    let store: any EventStore
    let limits: ServerLimits
    private let state = Mutex(State())
    private let open = Gauge(label: "cueline_event_streams")
    private let refused = Counter(label: "cueline_event_streams_refused_total")

    public init(follower: ChannelFollower, store: any EventStore, limits: ServerLimits) {
        self.follower = follower
        self.store = store
        self.limits = limits
    }

    /// The shared wake-up: resumes the streams whose channel has new events, or whose keep-alive is due.
    public func run() async throws {
        var generation = follower.generation
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            try? await Task.sleep(for: .milliseconds(100))
            let now = ContinuousClock.now
            // One reading: a change between two readings would be taken as seen and never woken for.
            let current = follower.generation
            let moved = current != generation
            generation = current
            var versions: [ChannelID: Int64] = [:]
            let due = state.withLock { state -> [(CheckedContinuation<Bool, Never>, Bool)] in
                var due: [(CheckedContinuation<Bool, Never>, Bool)] = []
                for (id, waiter) in state.waiters {
                    var news = false
                    if moved || waiter.fresh {
                        state.waiters[id]!.fresh = false
                        if versions[waiter.channel] == nil {
                            versions[waiter.channel] = follower.followedState(of: waiter.channel)?.version ?? 0
                        }
                        news = versions[waiter.channel]! > waiter.after
                    }
                    if news || waiter.deadline <= now {
                        due.append((waiter.continuation, news))
                        state.waiters[id] = nil
                    }
                }
                return due
            }
            for (continuation, news) in due { continuation.resume(returning: news) }
        }
        let left = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.closed = true
            defer { state.waiters = [:] }
            return state.waiters.values.map(\.continuation)
        }
        for continuation in left { continuation.resume(returning: false) }
    }

    /// Takes a place for a stream of `key` (a token's name).
    ///
    /// - Throws: the ``Refusal`` as its answer when there is no place.
    func admit(key: String) throws(APIError) -> Ticket {
        let outcome = state.withLock { state -> Result<Int, Refusal> in
            if state.perKey[key, default: 0] >= limits.maxStreamsPerToken {
                return .failure(.perToken(key: key, limit: limits.maxStreamsPerToken))
            }
            if state.total >= limits.maxStreams { return .failure(.total(limit: limits.maxStreams)) }
            state.perKey[key, default: 0] += 1
            state.total += 1
            return .success(state.total)
        }
        switch outcome {
        case .success(let total):
            open.record(total)
            return Ticket(key: key, streams: self)
        case .failure(let refusal):
            refused.increment()
            throw refusal.error
        }
    }

    /// Streams the events of `channel` after version `after`, then each new one, until the lifetime ends, the
    /// client goes away, the server shuts down or `stillAuthorized` (asked every ``authorizationCheck``) says no.
    func stream(
        _ channel: ChannelID, after: Int64, ticket: Ticket, stillAuthorized: (@Sendable () async -> Bool)? = nil,
        to writer: inout any ResponseBodyWriter
    ) async throws {
        defer { ticket.release() }
        var sent = after
        let started = ContinuousClock.now
        var lastWrite = started
        var lastCheck = started
        try await writer.write(ByteBuffer(string: "retry: 1000\n\n"))
        // A client ahead of the log (its Last-Event-ID from before a restore, or another channel's) would otherwise
        // wait in silence: say what it waits for (a comment, which EventSource skips).
        let head = follower.followedState(of: channel)?.version ?? 0
        if after > head {
            // No arithmetic on `after`: a client may send Int64.max.
            try await writer.write(
                ByteBuffer(
                    string:
                        ": \(after) is past the channel's version \(head): the events after version \(after) will follow\n\n"
                ))
        }
        while !Task.isCancelled && !Task.isShuttingDownGracefully && !isClosed
            && ContinuousClock.now - started < Self.lifetime
        {
            if let stillAuthorized, ContinuousClock.now - lastCheck >= Self.authorizationCheck {
                guard await stillAuthorized() else {
                    // EventSource reconnects, and its next request is refused (401 or 403), which ends it.
                    try await writer.write(
                        ByteBuffer(string: ": the token was revoked or no longer reaches this channel\n\n"))
                    break
                }
                lastCheck = .now
            }
            if (follower.followedState(of: channel)?.version ?? 0) > sent {
                let page = try await self.page(channel, after: sent)
                guard let last = page.last else { break }
                try await spend(page.text.readableBytes)
                try await writer.write(page.text)
                sent = last
                lastWrite = .now
                continue
            }
            let wakeUp =
                stillAuthorized == nil
                ? lastWrite + Self.keepAlive : min(lastWrite + Self.keepAlive, lastCheck + Self.authorizationCheck)
            let news = await wait(channel, after: sent, until: wakeUp)
            if !news && ContinuousClock.now - lastWrite >= Self.keepAlive {
                try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
                lastWrite = .now
            }
        }
        try await writer.finish(nil)
    }

    /// Takes `bytes` from the shared write budget, sleeping until the budget covers them.
    private func spend(_ bytes: Int) async throws {
        let wait = state.withLock { state -> Duration in
            let now = ContinuousClock.now
            let refill = (now - state.budgetAt) / .seconds(1) * Double(Self.bytesPerSecond)
            state.budget = min(Self.burstBytes, state.budget + Int(refill))
            state.budgetAt = now
            state.budget -= bytes
            return state.budget >= 0 ? .zero : .seconds(Double(-state.budget) / Double(Self.bytesPerSecond))
        }
        if wait > .zero { try await Task.sleep(for: wait) } else { await Task.yield() }
    }

    private var isClosed: Bool { state.withLock { $0.closed } }

    /// Resumes with true when `channel` has an event after `after`, false at `deadline`, at shutdown or when the
    /// task is cancelled.
    private func wait(_ channel: ChannelID, after: Int64, until deadline: ContinuousClock.Instant) async -> Bool {
        let id = state.withLock { state -> UInt64 in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if state.closed || Task.isCancelled { return true }
                    state.waiters[id] = Waiter(
                        channel: channel, after: after, deadline: deadline, continuation: continuation)
                    return false
                }
                if resumeNow { continuation.resume(returning: false) }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume(returning: false)
        }
    }

    /// The events after `after` up to the end of its page, as Server-Sent Events text, and the last version in it.
    private func page(_ channel: ChannelID, after: Int64) async throws -> (text: ByteBuffer, last: Int64?) {
        let size = Self.pageSize
        let key = PageKey(channel: channel, number: after / size)
        let aligned = after % size == 0
        if aligned, let cached = cachedPage(key) { return (cached, (key.number + 1) * size) }
        await acquireReader()
        defer { releaseReader() }
        // Another stream may have read this page while this one waited.
        if aligned, let cached = cachedPage(key) { return (cached, (key.number + 1) * size) }
        let events = try await store.readStream(channel, after: after, limit: Int(size - after % size))
        var text = ByteBuffer()
        for event in events {
            text.writeString("id: \(event.version)\nevent: \(event.type)\ndata: ")
            text.writeBytes(encodeJSON(event))
            text.writeString("\n\n")
        }
        if aligned, events.count == Int(size), events.last?.version == (key.number + 1) * size {
            state.withLock { state in
                if state.pages[key] == nil {
                    state.pages[key] = text
                    state.pageOrder.append(key)
                    if state.pageOrder.count > Self.cachedPages { state.pages[state.pageOrder.removeFirst()] = nil }
                }
            }
        }
        return (text, events.last?.version)
    }

    private func cachedPage(_ key: PageKey) -> ByteBuffer? {
        state.withLock { $0.pages[key] }
    }

    private func acquireReader() async {
        await withCheckedContinuation { continuation in
            let granted = state.withLock { state -> Bool in
                if state.freeReaders > 0 {
                    state.freeReaders -= 1
                    return true
                }
                state.readerQueue.append(continuation)
                return false
            }
            if granted { continuation.resume() }
        }
    }

    private func releaseReader() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.readerQueue.isEmpty {
                state.freeReaders += 1
                return nil
            }
            return state.readerQueue.removeFirst()
        }
        next?.resume()
    }
}
