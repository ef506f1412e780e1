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
    /// Renders every rendition of a channel from one snapshot. Pure; also used by replay.
    public static func render(
        config: ChannelConfig, state: ChannelState, tick: Timestamp, upstreams: [Identifier: MediaPlaylist] = [:]
    ) throws -> Rendered {
        var playlists: [Identifier: String] = [:]
        var deltas: [Identifier: DeltaBodies] = [:]
        var relayParts: [Identifier: RelayDecorator.PartsPosition] = [:]
        var relayTargetDurations: [Identifier: Int] = [:]
        for rendition in config.renditions {
            switch config.source {
            case .clock:
                if let playlist = PlaylistBuilder.mediaPlaylist(
                    config: config, state: state, rendition: rendition, at: tick)
                {
                    playlists[rendition.name] = try PlaylistRenderer.render(playlist)
                    if let yes = PlaylistBuilder.deltaPlaylist(
                        playlist, config: config, state: state, at: tick, update: .segments),
                        let v2 = PlaylistBuilder.deltaPlaylist(
                            playlist, config: config, state: state, at: tick, update: .segmentsAndDateRanges)
                    {
                        deltas[rendition.name] = DeltaBodies(
                            segments: ByteBuffer(string: try PlaylistRenderer.render(yes)),
                            segmentsAndDateRanges: ByteBuffer(string: try PlaylistRenderer.render(v2)))
                    }
                }
            case .relay(let template):
                if let upstream = upstreams[rendition.name] {
                    if relayParts.isEmpty {
                        // Where every rendition's copy stands, for each one's rendition reports (one snapshot for all).
                        relayParts = upstreams.compactMapValues { RelayDecorator.partsPosition($0) }
                    }
                    let url = RelayDecorator.upstreamURL(template: template, rendition: rendition.name)
                    playlists[rendition.name] = try PlaylistRenderer.render(
                        try RelayDecorator.decorate(
                            upstream, upstreamURL: url, config: config, state: state, positions: relayParts))
                    relayTargetDurations[rendition.name] = upstream.targetDuration
                }
            }
        }
        var rendered = Rendered(
            completedTicks: Timeline(config).completedTicks(at: tick), version: state.version, tick: tick,
            targetDuration: config.targetDuration, playlists: playlists,
            multivariant: try PlaylistRenderer.render(PlaylistBuilder.multivariant(config: config)))
        rendered.deltaBodies = deltas
        rendered.rendererVersion = state.rendererVersion
        rendered.relayParts = relayParts
        rendered.relayTargetDurations = relayTargetDurations
        rendered.partsPerSegment = config.source == .clock ? config.partsPerSegment : nil
        rendered.partMilliseconds = config.source == .clock ? config.partDurationMilliseconds : nil
        if config.source == .clock { rendered.tickBoundary = Timeline(config).tickStart(rendered.completedTicks) }
        return rendered
    }
}
