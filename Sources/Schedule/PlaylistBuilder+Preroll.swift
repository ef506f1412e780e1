import HLS
import SCTE35

/// Prerolls on join (rfc8216bis-22 D.2 `CUE`): a channel with a preroll (`--preroll-asset`, `--preroll-ad-server`)
/// publishes one interstitial with `CUE="PRE,ONCE"` at every tick, so a viewer who joins plays it once before the
/// programme, wherever the join lands.
///
/// A live playlist slides, and a range may leave it only once it has ended before the window's first segment
/// (hls-rules: no removal while a date of it is in a segment, no stale range kept). So the preroll is a sequence of
/// ranges, one in each playlist: range `k` starts at `k × period` (milliseconds since 1970), lasts the preroll's
/// length, and is the one published from the tick its predecessor ended before the window (then it is still ahead of
/// the live edge: the period is longer than the window and the preroll) until it ends before the window itself. A
/// player already watching sees each new range as a preroll of a session it has started: it does not play it (PRE
/// is "before playback of the primary asset begins"; hls.js places a PRE at the timeline's start, behind the
/// playhead). The ID names `k` and a digest of the preroll's setting, so a changed preroll is a new range.
///
/// The period is 100 target durations (10 minutes at 6 s), or the window, the preroll and two target durations when
/// that is longer: a viewer who joins within a preroll's length of a range's end has it ended by the next one (hls.js
/// ends an interstitial whose range left the playlist), which the period keeps to a preroll's length in 100 target
/// durations of joins (2.5 % for 15 s at 6 s).
extension PlaylistBuilder {
    /// The prefix of a preroll range's ID (a break id has no `.`, so none collides).
    public static let prerollPrefix = "preroll."

    /// The preroll range of `config`'s playlist whose window starts at `windowStart`, or nil when the channel has no
    /// preroll or its markers carry no interstitials.
    public static func prerollRange(config: ChannelConfig, settings: AdSettings?, windowStart: Timestamp) -> DateRange?
    {
        guard let preroll = settings?.preroll, config.signalling?.markers.interstitials ?? true else { return nil }
        let index = prerollIndex(config: config, preroll: preroll, windowStart: windowStart)
        return prerollTag(config: config, preroll: preroll, index: index)
    }

    /// Between ranges: how far apart their starts are.
    static func prerollPeriod(config: ChannelConfig, preroll: AdSettings.Preroll) -> Int64 {
        let target = Int64(config.targetDuration) * 1000
        let window = Int64(config.windowSegments) * config.segmentDurationMilliseconds
        return max(100 * target, window + preroll.durationMilliseconds + 2 * target)
    }

    /// The first range not ended before `windowStart`: the smallest `k` with `k × period + length > windowStart`.
    static func prerollIndex(config: ChannelConfig, preroll: AdSettings.Preroll, windowStart: Timestamp) -> Int64 {
        let period = prerollPeriod(config: config, preroll: preroll)
        let from = windowStart.milliseconds - preroll.durationMilliseconds
        // Floor division (instants before 1970 included), then the next one.
        return (from >= 0 ? from / period : -((-from + period - 1) / period)) + 1
    }

    /// The ID of range `index`: `preroll.<index>.<digest>`, the digest FNV-1a of the preroll's setting.
    public static func prerollID(_ preroll: AdSettings.Preroll, index: Int64) -> String {
        let setting: String
        switch preroll {
        case .asset(let uri, let duration): setting = "asset \(uri) \(duration)"
        case .adServer(let template, let duration): setting = "ad-server \(template.value) \(duration)"
        }
        let digest = SegmentationSignal.eventID(key: setting)
        return prerollPrefix + "\(index)." + hexDigits([24, 16, 8, 0].map { UInt8(truncatingIfNeeded: digest >> $0) })
    }

    /// The index a preroll range's ID names (`preroll.<index>.<digest>`), or nil for any other ID.
    public static func prerollIndex(fromID id: String) -> Int64? {
        guard id.hasPrefix(prerollPrefix) else { return nil }
        let parts = id.dropFirst(prerollPrefix.count).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count <= 18, let index = Int64(parts[0]) else { return nil }
        return index
    }

    static func prerollTag(config: ChannelConfig, preroll: AdSettings.Preroll, index: Int64) -> DateRange {
        let id = prerollID(preroll, index: index)
        let start = Timestamp(milliseconds: index * prerollPeriod(config: config, preroll: preroll))
        var assetURI: String?
        var assetList: String?
        switch preroll {
        case .asset(let uri, _):
            assetURI = uri + (uri.contains("?") ? "&" : "?") + "_HLS_interstitial_id=" + id
        case .adServer:
            assetList = prerollAssetListURI(config: config, rangeID: id)
        }
        return DateRange(
            id: id, classAttribute: DateRange.interstitialClass, startDate: start, cue: [.pre, .once],
            duration: DecimalNumber(milliseconds: preroll.durationMilliseconds), assetURI: assetURI,
            assetList: assetList)
    }

    /// This service's asset list for a preroll decided by an ad server.
    public static func prerollAssetListURI(config: ChannelConfig, rangeID: String) -> String {
        let base = config.publicBaseURL.hasSuffix("/") ? String(config.publicBaseURL.dropLast()) : config.publicBaseURL
        return "\(base)/channels/\(config.id)/prerolls/\(rangeID)/assets.json?_HLS_interstitial_id=\(rangeID)"
    }

    /// Whether `rangeID` is the preroll range `state`'s playlists publish for a window starting at `windowStart`, or
    /// the one before or after it: a player may ask for the list of the range it saw at its last reload, and a relay
    /// channel's window follows its upstream's clock, not this server's.
    public static func isCurrentPreroll(_ rangeID: String, state: ChannelState, windowStart: Timestamp) -> Bool {
        guard let config = state.config, let preroll = state.adSettings?.preroll,
            let index = prerollIndex(fromID: rangeID)
        else { return false }
        let current = prerollIndex(config: config, preroll: preroll, windowStart: windowStart)
        return (current - 1...current + 1).contains(index) && prerollID(preroll, index: index) == rangeID
    }

    /// The preroll range that left the playlists between two window starts (it ended before the later one), if any.
    static func prerollRemoved(config: ChannelConfig, settings: AdSettings?, from before: Timestamp, to now: Timestamp)
        -> String?
    {
        guard let preroll = settings?.preroll, config.signalling?.markers.interstitials ?? true else { return nil }
        let then = prerollIndex(config: config, preroll: preroll, windowStart: before)
        let current = prerollIndex(config: config, preroll: preroll, windowStart: now)
        return current > then ? prerollID(preroll, index: current - 1) : nil
    }
}
