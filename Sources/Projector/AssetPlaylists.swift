import Foundation
import HLS
import Schedule
import Synchronization

/// Reads interstitial assets' playlists over HTTP: to measure a break's media when it is placed, and to serve a
/// measured asset as chunks. Asset playlists are VOD, so what was read is kept (a bounded number of them, for a
/// bounded time) and concurrent requests for one URL share one fetch.
public actor AssetPlaylists {
    public struct Failure: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// What a fetch does: GET a URL and return its body and the URL it was finally read from (a seam for tests).
    public typealias Fetch = @Sendable (String) async throws -> (body: String, url: String)

    private let fetch: Fetch
    private let timeToLive: Duration
    private let capacity: Int
    private let clock = ContinuousClock()
    private var cache: [String: (playlist: VODPlaylist, readAt: ContinuousClock.Instant, bytes: Int)] = [:]
    /// The size of the playlist texts behind the cached entries: held under `byteBudget`.
    private var cachedBytes = 0
    private let byteBudget = 16 << 20
    /// URLs being fetched, and the callers waiting for that fetch: the first caller fetches in its own task and
    /// hands the outcome to the others (no task of its own, so nothing outlives its callers).
    private var inFlight: [String: [CheckedContinuation<VODPlaylist, any Error>]] = [:]
    /// Recent failures, answered again for 5 s: players asking for chunks of an asset whose server is down do not
    /// each start a fetch.
    private var failures: [String: (failure: Failure, at: ContinuousClock.Instant)] = [:]

    public init(fetch: Fetch? = nil, timeToLive: Duration = .seconds(600), capacity: Int = 256) {
        self.fetch = fetch ?? { try await AssetPlaylists.get($0) }
        self.timeToLive = timeToLive
        self.capacity = capacity
    }

    /// The playlist at `url`, parsed (`fresh`: read again even if a recent copy is kept).
    public func playlist(_ url: String, fresh: Bool = false) async throws(Failure) -> VODPlaylist {
        if !fresh, let hit = cache[url], clock.now - hit.readAt < timeToLive { return hit.playlist }
        if let failed = failures[url] {
            if clock.now - failed.at < .seconds(5) { throw failed.failure }
            failures[url] = nil
        }
        if inFlight[url] != nil {
            do {
                return try await withCheckedThrowingContinuation { inFlight[url, default: []].append($0) }
            } catch let failure as Failure {
                throw failure
            } catch {
                // The caller that fetched was cancelled (its player went away): fetch again for this one.
                if Task.isCancelled { throw Failure(description: "\(url) could not be read: cancelled") }
                return try await playlist(url, fresh: fresh)
            }
        }
        inFlight[url] = []
        let fetch = self.fetch
        do {
            let (text, finalURL) = try await fetch(url)
            let playlist: VODPlaylist
            do {
                // Relative URIs resolve against where the playlist was really found (after redirects).
                playlist = try VODPlaylist.parse(text, url: finalURL)
            } catch {
                throw Failure(description: "\(url) cannot be used as an interstitial asset: \(error)")
            }
            let bytes = text.utf8.count
            for waiter in inFlight.removeValue(forKey: url) ?? [] { waiter.resume(returning: playlist) }
            if let old = cache.removeValue(forKey: url) { cachedBytes -= old.bytes }
            while !cache.isEmpty && (cache.count >= capacity || cachedBytes + bytes > byteBudget),
                let oldest = cache.min(by: { $0.value.readAt < $1.value.readAt })?.key
            {
                cachedBytes -= cache.removeValue(forKey: oldest)?.bytes ?? 0
            }
            cache[url] = (playlist, clock.now, bytes)
            cachedBytes += bytes
            return playlist
        } catch {
            if error is CancellationError || Task.isCancelled {
                // Not the asset's fault: nothing is remembered, and the waiters fetch again themselves.
                for waiter in inFlight.removeValue(forKey: url) ?? [] { waiter.resume(throwing: CancellationError()) }
                throw Failure(description: "\(url) could not be read: cancelled")
            }
            let failure = error as? Failure ?? Failure(description: "\(url) could not be read: \(Self.reason(error))")
            for waiter in inFlight.removeValue(forKey: url) ?? [] { waiter.resume(throwing: failure) }
            if failures.count >= capacity { failures.removeAll() }
            failures[url] = (failure, clock.now)
            throw failure
        }
    }

    /// The media playlist of an asset: itself, or its first variant's.
    public func media(_ url: String, fresh: Bool = false) async throws(Failure) -> (
        url: String, media: VODPlaylist.Media, multivariant: VODPlaylist.Multivariant?
    ) {
        switch try await playlist(url, fresh: fresh) {
        case .media(let media): return (url, media, nil)
        case .multivariant(let multivariant):
            let first = multivariant.variants[0].uri
            guard case .media(let media) = try await playlist(first, fresh: fresh) else {
                throw Failure(description: "\(first), the first variant of \(url), is not a media playlist")
            }
            return (first, media, multivariant)
        }
    }

    /// Measures an asset as it is now (not from a kept copy: an operator who just fixed an ad is measured against the
    /// fix): its length and, when it can be served in chunks, the chunks' lengths.
    public func measure(_ url: String) async throws(Failure) -> MeasuredAsset {
        let (_, media, multivariant) = try await media(url, fresh: true)
        let chunkable = media.unchunkable == nil && multivariant?.unchunkable == nil && media.segments.count > 1
        return MeasuredAsset(
            durationMilliseconds: media.durationMilliseconds,
            chunkMilliseconds: chunkable ? media.chunkMilliseconds() : nil)
    }

    /// The length of an external asset list (the HLS Interstitials `X-ASSET-LIST` JSON, `{"ASSETS": [{"URI": …,
    /// "DURATION": seconds}, …]}`), in milliseconds: nil when an asset gives no `DURATION`. Read fresh.
    public func listDuration(_ url: String) async -> Result<Int64?, Failure> {
        struct List: Decodable {
            struct Asset: Decodable {
                var DURATION: Double?
            }
            var ASSETS: [Asset]
        }
        do {
            let (text, _) = try await fetch(url)
            guard let list = try? JSONDecoder().decode(List.self, from: Data(text.utf8)) else {
                return .failure(Failure(description: "\(url) is not an asset list (JSON with ASSETS)"))
            }
            var total: Int64 = 0
            for asset in list.ASSETS {
                guard let seconds = asset.DURATION, seconds.isFinite, seconds >= 0, seconds < 86_400 else {
                    return .success(nil)
                }
                total += Int64((seconds * 1000).rounded())
            }
            return .success(total)
        } catch {
            return .failure(
                error as? Failure ?? Failure(description: "\(url) could not be read: \(Self.reason(error))"))
        }
    }

    /// The length of the asset at `url` as last read (its first variant's for a multivariant playlist), or nil when
    /// no recent copy is kept. Never reads.
    public func cachedDuration(_ url: String) -> Int64? {
        func kept(_ url: String) -> VODPlaylist? {
            guard let hit = cache[url], clock.now - hit.readAt < timeToLive else { return nil }
            return hit.playlist
        }
        switch kept(url) {
        case .media(let media)?: return media.durationMilliseconds
        case .multivariant(let multivariant)?:
            guard case .media(let media)? = kept(multivariant.variants[0].uri) else { return nil }
            return media.durationMilliseconds
        case nil: return nil
        }
    }

    /// Reads the asset at `url` (and its first variant) unless a recent copy is kept, for `cachedDuration`.
    public func prefetch(_ url: String) async {
        _ = try? await media(url)
    }

    /// `measure(_:)` as a value, for task groups.
    public func measureResult(_ url: String) async -> Result<MeasuredAsset, Failure> {
        do {
            return .success(try await measure(url))
        } catch {
            return .failure(error)
        }
    }

    /// A network error in words an operator can act on.
    static func reason(_ error: any Error) -> String {
        (error as? UpstreamGet.Failure)?.description ?? "\(error)"
    }

    /// GET over http(s): the whole answer within 3 s, 2 MiB at most, 200 only. A server that drips its answer or
    /// sends an endless one is cut off at the deadline or the size, never waited for or buffered (`UpstreamGet`).
    static func get(_ url: String) async throws -> (body: String, url: String) {
        let answer: UpstreamGet.Answer
        do {
            answer = try await UpstreamGet.assets.get(url, limit: 2 << 20, deadline: .seconds(3))
        } catch UpstreamGet.Failure.tooLarge {
            throw Failure(description: "\(url) is larger than 2 MiB")
        } catch UpstreamGet.Failure.deadline {
            throw Failure(description: "\(url) could not be read: no whole answer within 3 s")
        } catch UpstreamGet.Failure.notHTTP {
            throw Failure(description: "\(url) is not an http(s) URL")
        }
        if answer.status != 200 { throw Failure(description: "GET \(url) answered \(answer.status)") }
        return (answer.text, answer.finalURL)
    }
}
