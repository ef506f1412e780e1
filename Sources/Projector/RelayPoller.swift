import Foundation
import HLS
import Logging
import Schedule
import ServiceLifecycle

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Fetches the upstream playlists of relay channels (HTTP or file) and hands them to the follower.
public final class RelayPoller: Service, Sendable {
    let follower: ChannelFollower
    let interval: Duration
    let logger: Logger

    public init(follower: ChannelFollower, interval: Duration = .milliseconds(500), logger: Logger = Logger(label: "cueline.relay")) {
        self.follower = follower
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        var failing: Set<String> = []
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            for state in follower.channels() {
                guard let config = state.config, case .relay(let template) = config.source else { continue }
                for rendition in config.renditions {
                    let url = RelayDecorator.upstreamURL(template: template, rendition: rendition.name)
                    let key = "\(config.id)/\(rendition.name)"
                    do {
                        let parsed = try PlaylistParser.parseMedia(try await Self.fetch(url))
                        follower.updateUpstream(config.id, rendition: rendition.name, playlist: parsed.playlist)
                        if failing.remove(key) != nil {
                            logger.notice("upstream playlist is back", metadata: ["channel": "\(config.id)", "rendition": "\(rendition.name)"])
                        }
                    } catch {
                        if failing.insert(key).inserted {
                            logger.error("cannot read the upstream playlist; serving the last one", metadata: [
                                "channel": "\(config.id)", "rendition": "\(rendition.name)", "upstream": "\(url)", "error": "\(error)",
                            ])
                        }
                    }
                }
            }
            try? await Task.sleep(for: interval)
        }
    }

    public struct FetchError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Reads a playlist from an http(s) URL or a file path.
    public static func fetch(_ source: String) async throws -> String {
        if source.hasPrefix("http://") || source.hasPrefix("https://") {
            guard let url = URL(string: source) else { throw FetchError(description: "\(source) is not a valid URL") }
            var request = URLRequest(url: url)
            request.timeoutInterval = 5
            request.cachePolicy = .reloadIgnoringLocalCacheData
            let (data, response) = try await URLSession.shared.data(for: request)
            if let http = response as? HTTPURLResponse, http.statusCode != 200 {
                throw FetchError(description: "GET \(source) answered \(http.statusCode)")
            }
            return String(decoding: data, as: UTF8.self)
        }
        guard let data = FileManager.default.contents(atPath: source) else {
            throw FetchError(description: "cannot read \(source)")
        }
        return String(decoding: data, as: UTF8.self)
    }
}
