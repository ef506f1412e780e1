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
    public struct Rendered: Sendable {
        /// Ticks completed at the tick rendered (identifies the window): segments, or parts for a channel with parts
        /// (`Timeline.completedTicks`); for relay channels, the upstream generation.
        public var completedTicks: Int64
        /// The channel version the schedule was folded to.
        public var version: Int64
        public var tick: Timestamp
        public var targetDuration: Int
        /// The renderer version these bytes were written with (`ChannelConfig.rendererVersion`), for render samples.
        public var rendererVersion = 1
        /// Media playlists by rendition name, as response bodies encoded once per render (a request copies a reference,
        /// not bytes); no entry before the channel's first segment has ended. Only the bytes are kept (not a String too).
        public var bodies: [Identifier: ByteBuffer]
        /// Channels with parts: each rendition's delta updates (`_HLS_skip=YES` and `v2`), encoded with the full one.
        public var deltaBodies: [Identifier: DeltaBodies] = [:]
        /// Channels with parts: parts per segment (`completedTicks` counts parts) and their duration; nil without parts.
        public var partsPerSegment: Int64?
        public var partMilliseconds: Int64?
        /// When the last completed tick ended (`Timeline.tickStart(completedTicks)`, clock channels).
        public var tickBoundary = Timestamp(milliseconds: 0)
        /// Relay channels whose upstream has parts: where each rendition's upstream stood (what blocking reloads wait for).
        public var relayParts: [Identifier: RelayDecorator.PartsPosition] = [:]
        /// Relay channels: each rendition's target duration is its upstream's (cache lifetimes, blocking time-outs).
        public var relayTargetDurations: [Identifier: Int] = [:]
        public var multivariantBody: ByteBuffer
        /// The media playlists as text (made from the bytes when asked).
        public var playlists: [Identifier: String] { bodies.mapValues { String(buffer: $0) } }
        public var multivariant: String { String(buffer: multivariantBody) }
        /// `tick` as the `Cueline-Tick` header spells it (ISO 8601), formatted once per render.
        public var tickText: String
        /// Which events the schedule was folded from (see ``Effect``); set by the follower when it keeps the window.
        public var effect = Effect(settled: -1, pending: -1)
        /// When these bytes existed (the follower's clock after rendering them): with the instant the serving time
        /// reached the window's boundary, when the window became servable (`cueline_tick_lateness_seconds`). Not part
        /// of the bytes.
        public var readyAt = Timestamp(milliseconds: .min)

        /// The events a window was rendered from: the settled prefix of the log (its last version) and how many of
        /// the events after it, decided by the window's tick, were applied on top. The version alone does not say:
        /// decision times need not follow version order (a command's effect delay, instances' clocks), so the same
        /// last version can be in effect with and without an earlier-versioned event decided later. Ticks and the
        /// settled prefix only move forward, so two windows of one channel with equal effects folded the same events.
        public struct Effect: Hashable, Sendable {
            public var settled: Int64
            public var pending: Int
        }

        public init(
            completedTicks: Int64, version: Int64, tick: Timestamp, targetDuration: Int,
            playlists: [Identifier: String], multivariant: String
        ) {
            self.completedTicks = completedTicks
            self.version = version
            self.tick = tick
            self.targetDuration = targetDuration
            self.bodies = playlists.mapValues { ByteBuffer(string: $0) }
            self.multivariantBody = ByteBuffer(string: multivariant)
            self.tickText = tick.iso8601
        }
    }

    /// The two delta updates of a media playlist.
    public struct DeltaBodies: Sendable {
        public var segments: ByteBuffer
        public var segmentsAndDateRanges: ByteBuffer

        public subscript(update: PlaylistBuilder.DeltaUpdate) -> ByteBuffer {
            switch update {
            case .segments: segments
            case .segmentsAndDateRanges: segmentsAndDateRanges
            }
        }
    }

    /// One rendition's media playlist as served: the encoded body and what its headers need.
    public struct ServedMedia: Sendable {
        public var body: ByteBuffer
        public var targetDuration: Int
        public var tick: Timestamp
        public var tickText: String
        /// Which window this is (`Rendered.completedTicks`) and, for a channel with parts, parts per segment: what a
        /// blocking reload compares `_HLS_msn` / `_HLS_part` with.
        public var completedTicks: Int64 = 0
        public var partsPerSegment: Int64?
        public var partMilliseconds: Int64?
        /// When the last of those ticks ended (clock channels).
        public var tickBoundary = Timestamp(milliseconds: 0)
        /// A relay channel's rendition whose upstream has parts: where it stands (blocking reloads wait on it instead).
        public var relayParts: RelayDecorator.PartsPosition?

        /// What a blocking reload's target is compared with: the upstream's position for a relay rendition with parts,
        /// else the window (`completedTicks`).
        public var blockingPosition: Int64 { relayParts?.ordinal ?? completedTicks }
    }

    public enum LookupError: Error, Sendable, Equatable {
        case unknownChannel(ChannelID)
        case unknownRendition(channel: ChannelID, rendition: Identifier)
        case notStarted(channel: ChannelID, firstSegmentEnds: Timestamp)
        case unknownBreak(channel: ChannelID, id: BreakID)
        case renderFailed(String)
        case upstreamMissing(channel: ChannelID, rendition: Identifier)
    }
}
