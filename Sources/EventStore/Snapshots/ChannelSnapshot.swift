import Foundation
import HLS
import Schedule

/// A channel's hot state (`ChannelState` with `.window` retention) after the events up to `version`: what replay
/// needs of the log before that version, so that a replay of a late instant folds only the events after it.
///
/// A snapshot is a cache of the log, never a source: it names the hash of the log's event at `version` (the chain
/// head, which commits to every event before it) and is used only when the log still holds that hash there, and only
/// for instants at or after `latestDecided` (every event up to `version` is in effect then, so the fold of those
/// events "as of" the instant is the fold of them all). Restoring it re-applies the held breaks as the events that
/// made them, so the restored state is the state the full fold reaches (`ChannelSnapshotTests` holds them equal,
/// and the playlists rendered from them byte-identical, at many instants).
public struct ChannelSnapshot: Hashable, Sendable, Codable {
    public static let formatVersion = 1
    /// The fold's semantics (`ChannelState.apply`): a checkpoint is used only by a build that folds as the build
    /// that wrote it did. Bump it whenever applying an event changes what state it leaves; `SnapshotFoldVersionTests`
    /// fails on such a change until it is bumped (it fingerprints the fold of a fixed history).
    ///
    /// 2 (issue 35): ad settings (`ChannelCreated`'s and `AdSettingsSet`) and a break's ad server, skip control and
    /// preload length: a build of fold 1 would drop them and render other bytes.
    ///
    /// 3 (issue 35): the prerolls replaced by `AdSettingsSet` (`ChannelState.replacedPrerolls`), which delta updates
    /// list as removed.
    public static let foldVersion = 3

    public var format: Int
    /// The `foldVersion` of the build that wrote it (nil: written before it was recorded, never used).
    public var fold: Int?
    public var channel: ChannelID
    /// The stream version of the last event folded in.
    public var version: Int64
    public var position: Int64
    /// The hash of the event at `version` (nil for events written before the hash chain existed).
    public var chainHash: String?
    /// The latest `decided_at` of the events folded in: the snapshot serves instants at or after it.
    public var latestDecided: Timestamp
    public var config: ChannelConfig
    /// The held breaks, in the state's order (by start, ties in placement order).
    public var breaks: [BreakState]
    /// The SCTE-35 ingest policy in force (nil: none was set; absent from snapshots written before policies).
    public var scte35Policy: SCTE35Policy?
    /// The ad settings in force (nil: none, or those the channel was created with, for snapshots written before
    /// `AdSettingsSet`: no such event existed then).
    public var adSettings: AdSettings?
    /// The prerolls replaced, with when (nil: none, or a snapshot written before fold 3).
    public var replacedPrerolls: [ChannelState.ReplacedPreroll]?

    /// Nil when the state has no channel yet (nothing to keep).
    public init?(_ state: ChannelState, chainHash: String?) {
        guard let config = state.config, state.latestDecided.milliseconds != .min else { return nil }
        format = Self.formatVersion
        fold = Self.foldVersion
        channel = state.channel
        version = state.version
        position = state.position
        self.chainHash = chainHash
        latestDecided = state.latestDecided
        self.config = config
        breaks = state.breaks
        scte35Policy = state.scte35Policy
        adSettings = state.adSettings
        replacedPrerolls = state.replacedPrerolls.isEmpty ? nil : state.replacedPrerolls
    }

    /// The state the full fold of the events up to `version` reaches, with `.window` retention.
    ///
    /// The held breaks are re-placed in the state's order (each lands last, so ties keep their order), then their
    /// playout limits and cancellations are applied; none of them retires on the way, because the clock of pruning
    /// (the latest decision applied) stays at or before the snapshot's, when none had retired. A last no-op event
    /// (the renditions as they are) brings the clock to the snapshot's `latestDecided`.
    public func restore() -> ChannelState {
        var state = ChannelState(channel: channel, retention: .window)
        let origin = Attribution(at: Timestamp(milliseconds: .min), actor: "snapshot", source: "snapshot")
        func apply(_ event: ScheduleEvent, _ attribution: Attribution) {
            state.apply(
                RecordedScheduleEvent(event: event, version: version, position: position, attribution: attribution))
        }
        apply(.channelCreated(config), origin)
        if let scte35Policy { apply(.scte35PolicySet(scte35Policy), origin) }
        if let adSettings, adSettings != config.ads { apply(.adSettingsSet(adSettings), origin) }
        for item in breaks { apply(.breakPlaced(item.spec), item.placed) }
        for item in breaks {
            if let limit = item.playoutLimitMilliseconds, let limited = item.limited, let kind = item.limitKind {
                apply(
                    .playoutLimitSet(id: item.id, limitMilliseconds: limit, kind: kind, scte35In: item.scte35In),
                    limited)
            }
        }
        for item in breaks {
            if let cancelled = item.cancelled {
                apply(.breakCancelled(id: item.id, kind: item.cancelKind ?? .cancelBreak), cancelled)
            }
        }
        apply(
            .renditionsUpdated(config.renditions), Attribution(at: latestDecided, actor: "snapshot", source: "snapshot")
        )
        state.restore(replacedPrerolls: replacedPrerolls ?? [])
        state.version = version
        state.position = position
        return state
    }

    /// Whether the restored state holds exactly what the snapshot recorded (a snapshot whose breaks a fold would
    /// not keep, e.g. edited, or a limit without its attribution, is refused rather than half-used).
    public func restoresExactly() -> Bool {
        let state = restore()
        return state.config == config && state.breaks == breaks && state.latestDecided == latestDecided
            && state.scte35Policy == scte35Policy && state.adSettings == (adSettings ?? config.ads)
            && state.replacedPrerolls == (replacedPrerolls ?? [])
    }

    public func encoded() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try! encoder.encode(self), as: UTF8.self)
    }

    public static func decode(_ text: String) throws -> ChannelSnapshot {
        let decoder = JSONDecoder()
        decoder.userInfo[Identifier.storedRuleKey] = true  // what Cueline wrote: ids by the rule they were created with
        return try decoder.decode(ChannelSnapshot.self, from: Data(text.utf8))
    }
}
