import EventStore
import Foundation
import HLS
import Logging
import Metrics
import NIOCore
import Schedule
import ServiceLifecycle
import Synchronization

extension ChannelFollower {
    // MARK: - Reads

    /// The channels known, sorted by id.
    public func channels() -> [ChannelState] {
        shared.withLock {
            $0.channels.values.map(\.state).filter { $0.config != nil }.sorted { $0.channel < $1.channel }
        }
    }

    public func state(of channel: ChannelID) -> ChannelState? {
        shared.withLock { $0.channels[channel]?.state }.flatMap { $0.config == nil ? nil : $0 }
    }

    /// The folded state of a channel as far as this follower has read, configured or not (for command handling).
    public func followedState(of channel: ChannelID) -> ChannelState? {
        shared.withLock { $0.channels[channel]?.state }
    }

    /// The channel's playlists at the current tick, rendered once per window and schedule version.
    ///
    /// The lock is held only to pick the tick and take a snapshot of the schedule; rendering happens outside it, so
    /// one channel's render never holds up another channel's requests.
    public func rendered(_ channel: ChannelID) throws(LookupError) -> Rendered {
        try withWindow(channel) { $0 }
    }

    /// Runs `body` on the channel's window at the current tick: under the lock, in place, when it is rendered already
    /// (a request then copies only what it takes from it, not the window), else on the window rendered now (outside the
    /// lock: one channel's render never holds up another channel's requests).
    func withWindow<T: Sendable>(_ channel: ChannelID, _ body: (borrowing Rendered) -> T) throws(LookupError)
        -> T
    {
        let now = clock()
        var retired: Rendered?
        let step: Result<T, Entry.Step>? = shared.withLock { shared in
            // In place: `channels[channel]?` (or any read of the entry through the dictionary's getter) copies the whole entry.
            guard let index = shared.channels.index(forKey: channel) else { return nil }
            let serving = Self.servingTime(now: now, shared, silenceLimit: silenceLimit)
            return shared.channels.values[index].prepare(servingTime: serving, retired: &retired, body)
        }
        _ = consume retired  // the window replaced, freed here rather than under the lock
        switch step {
        case nil:
            throw .unknownChannel(channel)
        case .success(let value)?:
            return value
        case .failure(.render(let config, let inEffect, let tick, let completed, let effect, let upstreams))?:
            var rendered: Rendered
            do {
                rendered = try Self.render(config: config, state: inEffect, tick: tick, upstreams: upstreams)
            } catch {
                throw .renderFailed("\(error)")
            }
            rendered.completedTicks = completed
            rendered.effect = effect
            rendered.readyAt = clock()
            shared.withLock { shared in
                // Another request may have rendered a later tick (or a later upstream) meanwhile: keep the newest.
                guard let index = shared.channels.index(forKey: channel) else { return }
                if let current = shared.channels.values[index].rendered,
                    current.tick > rendered.tick || current.completedTicks > rendered.completedTicks
                {
                    return
                }
                shared.channels.values[index].rendered = rendered
            }
            return body(rendered)
        }
    }

    /// One rendition's media playlist now.
    public func mediaPlaylist(_ channel: ChannelID, rendition: Identifier) throws(LookupError) -> (
        text: String, targetDuration: Int, tick: Timestamp
    ) {
        let rendered = try rendered(channel)
        guard let config = state(of: channel)?.config, config.renditions.contains(where: { $0.name == rendition })
        else {
            throw .unknownRendition(channel: channel, rendition: rendition)
        }
        guard let text = rendered.bodies[rendition].map({ String(buffer: $0) }) else {
            if case .relay = config.source { throw .upstreamMissing(channel: channel, rendition: rendition) }
            throw .notStarted(
                channel: channel,
                firstSegmentEnds: Timeline(config).segmentStart(
                    Int64(
                        (3 * config.targetDuration * 1000 + Int(config.segmentDurationMilliseconds) - 1)
                            / Int(config.segmentDurationMilliseconds))))
        }
        return (text, rendered.targetDuration, rendered.tick)
    }

    /// One rendition's media playlist now, pre-encoded: the public GET's path. When the window is already rendered
    /// this is one lock take and no copy of the bytes (the channel's state is looked at only to explain a miss).
    ///
    /// - Parameter skip: a delta update asked for (`_HLS_skip`); the full playlist for a channel without parts.
    public func servedMedia(_ channel: ChannelID, rendition: Identifier, skip: PlaylistBuilder.DeltaUpdate? = nil)
        throws(LookupError) -> ServedMedia
    {
        let served = try withWindow(channel) { rendered -> ServedMedia? in
            guard let body = skip.flatMap({ rendered.deltaBodies[rendition]?[$0] }) ?? rendered.bodies[rendition] else {
                return nil
            }
            return ServedMedia(
                body: body, targetDuration: rendered.relayTargetDurations[rendition] ?? rendered.targetDuration,
                tick: rendered.tick,
                tickText: rendered.tickText,
                completedTicks: rendered.completedTicks, partsPerSegment: rendered.partsPerSegment,
                partMilliseconds: rendered.partMilliseconds,
                tickBoundary: rendered.tickBoundary, relayParts: rendered.relayParts[rendition])
        }
        if let served { return served }
        // A miss: unknown rendition, not started, or a relay's upstream not read yet (the same answers as `mediaPlaylist`).
        // If a request rendered the rendition meanwhile, that window is served.
        let (text, targetDuration, tick) = try mediaPlaylist(channel, rendition: rendition)
        return ServedMedia(
            body: ByteBuffer(string: text), targetDuration: targetDuration, tick: tick, tickText: tick.iso8601)
    }

    /// Relay channels: the upstream playlist of one rendition changed. For an upstream with parts the window is
    /// rendered now and the requests blocked on that rendition's next parts are released (one wake-up per upstream
    /// part, like a clock channel's per part boundary).
    ///
    /// - Parameter url: the upstream URL it was read from: dropped unless the channel's source still gives that URL for
    ///   that rendition (a read that began before the source or the renditions changed is not kept).
    public func updateUpstream(
        _ channel: ChannelID, rendition: Identifier, playlist: MediaPlaylist, from url: String? = nil
    ) {
        let changed = shared.withLock { shared -> Bool in
            guard var entry = shared.channels[channel], entry.upstreams[rendition] != playlist,
                let config = entry.state.config, case .relay(let template) = config.source,
                config.renditions.contains(where: { $0.name == rendition }),
                url == nil || url == RelayDecorator.upstreamURL(template: template, rendition: rendition)
            else { return false }
            // Renditions no longer configured are not kept.
            entry.upstreams = entry.upstreams.filter { name, _ in config.renditions.contains { $0.name == name } }
            entry.upstreams[rendition] = playlist
            entry.upstreamGeneration += 1
            entry.rendered = nil
            shared.channels[channel] = entry
            return true
        }
        guard changed else { return }
        _ = try? rendered(channel)
        // Upstream without parts now: nothing to wait for (the held requests are answered with what there is).
        releaseBlocked(
            channel, rendition: rendition, completedTicks: RelayDecorator.partsPosition(playlist)?.ordinal ?? .max)
    }
}
