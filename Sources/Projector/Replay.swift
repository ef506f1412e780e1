import EventStore
import HLS
import Schedule

/// Replay: the playlist exactly as it was served at an instant, from the events in effect then and the same
/// renderer the server uses.
public enum Replay {
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        case channelDidNotExist(channel: String, at: Timestamp)
        case relayNotReplayable(channel: String)
        case unknownRendition(channel: String, rendition: String, at: Timestamp, known: [String])
        case windowNotFull(channel: String, at: Timestamp)

        public var description: String {
            switch self {
            case .channelDidNotExist(let channel, let at): return "channel \(channel) did not exist at \(at)"
            case .relayNotReplayable(let channel):
                return "channel \(channel) relays an upstream encoder; its upstream playlists are not recorded, so it cannot be replayed"
            case .unknownRendition(let channel, let rendition, let at, let known):
                return "channel \(channel) had no rendition \(rendition) at \(at); it had \(known.joined(separator: ", "))"
            case .windowNotFull(let channel, let at): return "channel \(channel) served no playlist at \(at): its window was not full yet"
            }
        }
    }

    /// - Parameters:
    ///   - rendition: nil for the first rendition.
    public static func playlist(
        _ channel: String, _ events: [RecordedScheduleEvent], at tick: Timestamp, rendition: String?, multivariant: Bool
    ) throws -> String {
        let state = fold(channel, events, asOf: tick, retention: .window)
        guard let config = state.config else { throw Failure.channelDidNotExist(channel: channel, at: tick) }
        guard config.source == .clock else { throw Failure.relayNotReplayable(channel: channel) }
        let rendered = try ChannelFollower.render(config: config, state: state, tick: tick)
        if multivariant { return rendered.multivariant }
        let name = rendition ?? config.renditions[0].name
        guard config.renditions.contains(where: { $0.name == name }) else {
            throw Failure.unknownRendition(channel: channel, rendition: name, at: tick, known: config.renditions.map(\.name))
        }
        guard let text = rendered.playlists[name] else { throw Failure.windowNotFull(channel: channel, at: tick) }
        return text
    }

    /// Every event of a channel, decoded, in version order.
    /// Events this build cannot read are left out, as the follower leaves them out of what it serves.
    public static func events(_ channel: String, from store: any EventStore) async throws -> [RecordedScheduleEvent] {
        var events: [RecordedScheduleEvent] = []
        var version: Int64 = 0
        while true {
            let batch = try await store.readStream(channel, after: version, limit: 1000)
            events += ChannelLoader.decodeReadable(batch).readable
            version = batch.last?.version ?? version
            if batch.count < 1000 { return events }
        }
    }
}
