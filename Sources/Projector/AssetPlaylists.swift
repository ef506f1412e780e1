import Foundation
import HLS
import Schedule

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Reads interstitial assets' playlists over HTTP: to measure a break's media when it is placed, and to serve a
/// measured asset as chunks. Asset playlists are VOD, so what was read is kept (a bounded number of them, for a
/// bounded time) and concurrent requests for one URL share one fetch.
public actor AssetPlaylists {
    public struct Failure: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// What a fetch does: GET a URL and return its body (a seam for tests).
    public typealias Fetch = @Sendable (String) async throws -> String

    private let fetch: Fetch
    private let timeToLive: Duration
    private let capacity: Int
    private let clock = ContinuousClock()
    private var cache: [String: (playlist: VODPlaylist, readAt: ContinuousClock.Instant)] = [:]
    private var inFlight: [String: Task<VODPlaylist, any Error>] = [:]

    public init(fetch: Fetch? = nil, timeToLive: Duration = .seconds(600), capacity: Int = 512) {
        self.fetch = fetch ?? { try await AssetPlaylists.get($0) }
        self.timeToLive = timeToLive
        self.capacity = capacity
    }

    /// The playlist at `url`, parsed.
    public func playlist(_ url: String) async throws(Failure) -> VODPlaylist {
        if let hit = cache[url], clock.now - hit.readAt < timeToLive { return hit.playlist }
        let task: Task<VODPlaylist, any Error>
        if let running = inFlight[url] {
            task = running
        } else {
            let fetch = self.fetch
            task = Task {
                let text = try await fetch(url)
                do {
                    return try VODPlaylist.parse(text, url: url)
                } catch {
                    throw Failure(description: "\(url) cannot be used as an interstitial asset: \(error)")
                }
            }
            inFlight[url] = task
        }
        do {
            let playlist = try await task.value
            inFlight[url] = nil
            if cache.count >= capacity, let oldest = cache.min(by: { $0.value.readAt < $1.value.readAt })?.key { cache[oldest] = nil }
            cache[url] = (playlist, clock.now)
            return playlist
        } catch let failure as Failure {
            inFlight[url] = nil
            throw failure
        } catch {
            inFlight[url] = nil
            throw Failure(description: "\(url) could not be read: \(Self.reason(error))")
        }
    }

    /// The media playlist of an asset: itself, or its first variant's.
    public func media(_ url: String) async throws(Failure) -> (url: String, media: VODPlaylist.Media, multivariant: VODPlaylist.Multivariant?) {
        switch try await playlist(url) {
        case .media(let media): return (url, media, nil)
        case .multivariant(let multivariant):
            let first = multivariant.variants[0].uri
            guard case .media(let media) = try await playlist(first) else {
                throw Failure(description: "\(first), the first variant of \(url), is not a media playlist")
            }
            return (first, media, multivariant)
        }
    }

    /// Measures an asset: its length and, when it can be served in chunks, the chunks' lengths.
    public func measure(_ url: String) async throws(Failure) -> MeasuredAsset {
        let (_, media, multivariant) = try await media(url)
        let chunkable = media.unchunkable == nil && multivariant?.unchunkable == nil && media.segments.count > 1
        return MeasuredAsset(durationMilliseconds: media.durationMilliseconds, chunkMilliseconds: chunkable ? media.chunkMilliseconds() : nil)
    }

    /// A network error in words an operator can act on.
    static func reason(_ error: any Error) -> String {
        guard let error = error as? URLError else { return "\(error)" }
        switch error.code {
        case .cannotFindHost, .dnsLookupFailed: return "its host name does not resolve"
        case .cannotConnectToHost: return "the connection was refused"
        case .timedOut: return "no answer within 3 s"
        case .networkConnectionLost: return "the connection was lost"
        case .unsupportedURL, .badURL: return "the URL is not supported"
        default: return "network error \(error.code.rawValue)"
        }
    }

    /// GET over http(s): 3 s to answer, 2 MiB at most, 200 only.
    static func get(_ url: String) async throws -> String {
        guard url.hasPrefix("http://") || url.hasPrefix("https://"), let parsed = URL(string: url) else {
            throw Failure(description: "\(url) is not an http(s) URL")
        }
        var request = URLRequest(url: parsed)
        request.timeoutInterval = 3
        request.cachePolicy = .reloadIgnoringLocalCacheData
        let (data, response) = try await URLSession.shared.data(for: request)
        if let http = response as? HTTPURLResponse, http.statusCode != 200 {
            throw Failure(description: "GET \(url) answered \(http.statusCode)")
        }
        guard data.count <= 2 << 20 else { throw Failure(description: "\(url) is larger than 2 MiB") }
        return String(decoding: data, as: UTF8.self)
    }
}
