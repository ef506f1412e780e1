import HLS

/// Preload ranges (rfc8216bis-22 Appendix F): each break announced `AdSettings.preloadMilliseconds` ahead, so players
/// fetch its asset list at a random point before it and an ad server's load is spread.
extension PlaylistBuilder {
    /// The class of a preload range (rfc8216bis-22 Appendix F).
    public static let preloadClass = "com.apple.hls.preload"

    /// The id of a break's preload range: the break's id with `.preload` (a break id has no `.`, so none collides).
    public static func preloadID(_ id: BreakID) -> String { id.rawValue + ".preload" }

    /// The break a preload range's id names, or nil for any other id.
    public static func preloadTarget(_ rangeID: String) -> BreakID? {
        guard rangeID.hasSuffix(".preload") else { return nil }
        return BreakID(stored: rangeID.dropLast(8))
    }

    /// Where a break's preload range starts: the channel's preload length before the break, not before the break was
    /// placed (a range that starts before it was first published would tell players to fetch at once). Nil when the
    /// break has none: no ad settings or a preload of 0, markers without interstitials, or a break placed less than
    /// a millisecond ahead.
    static func preloadStart(_ item: BreakState, config: ChannelConfig) -> Timestamp? {
        guard let preload = item.spec.preloadMilliseconds, preload > 0, config.signalling?.markers.interstitials ?? true
        else { return nil }
        let start = max(item.start.adding(milliseconds: -preload), item.placed.at)
        return start < item.start ? start : nil
    }

    /// A break's preload range: `X-URI` the interstitial's asset list (or asset), `X-TARGET-ID` its id, ending at its
    /// start. Kept between ticks with the break's other tags.
    static func preloadTag(_ item: BreakState, placing: DateRange, config: ChannelConfig)
        -> DateRange?
    {
        guard let start = preloadStart(item, config: config),
            let uri = placing.assetList ?? placing.assetURI
        else { return nil }
        let key = KeptTagsKey(channel: config.id, breakID: item.id)
        let shard = keptTagsShards[Int(UInt(bitPattern: key.hashValue) % 16)]
        if let kept = shard.entries.withLock({ $0[key] }), kept.spec == item.spec,
            kept.publicBaseURL == config.publicBaseURL, kept.signalling == config.signalling,
            let preload = kept.preload, preload.start == start
        {
            return preload.tag
        }
        let tag = DateRange(
            id: preloadID(item.id), classAttribute: preloadClass, startDate: start,
            duration: DecimalNumber(milliseconds: item.start.milliseconds(since: start)),
            clientAttributes: [
                ClientAttribute(name: "X-URI", value: .string(uri)),
                ClientAttribute(name: "X-TARGET-ID", value: .string(item.id.rawValue)),
                ClientAttribute(name: "X-TARGET-CLASS", value: .string(DateRange.interstitialClass)),
            ])
        shard.entries.withLock { kept in
            guard var entry = kept[key], entry.spec == item.spec, entry.signalling == config.signalling else { return }
            entry.preload = (start, tag)
            kept[key] = entry
        }
        return tag
    }
}
