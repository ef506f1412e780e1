import HLS
import Schedule

/// The decided ads of a break as the HLS Interstitials asset list players read (rfc8216bis-22 D.2): `ASSETS` in
/// play order, each with its `DURATION`; the pod's `SKIP-CONTROL`; and, for players that report, each ad's tracking
/// in the SVTA2053-2 shape (`X-AD-CREATIVE-SIGNALING` on the asset: Shaka, Bitmovin and the hls.js plugins read it).
public enum AdAssetList {
    /// An ad kept for the break and the length it is listed with.
    public struct Fitted: Hashable, Sendable {
        public var ad: DecidedAd
        public var durationMilliseconds: Int64

        public init(ad: DecidedAd, durationMilliseconds: Int64) {
            self.ad = ad
            self.durationMilliseconds = durationMilliseconds
        }
    }

    /// How far VAST's `<Duration>` and the media's own length may differ before the media's length is used (and the
    /// difference said): a segment's rounding.
    public static let durationToleranceMilliseconds: Int64 = 500

    /// The ads that fit in `breakMilliseconds`, in order: each listed with its VAST duration, or its media's length
    /// when Cueline has read it and it differs by more than `durationToleranceMilliseconds`; an ad with neither is
    /// dropped, and so is an ad that does not fit in what the ads before it left (a later, shorter one may still
    /// fit). What was dropped or corrected is said in the notes.
    public static func fit(
        _ ads: [DecidedAd], breakMilliseconds: Int64, measured: (String) -> Int64? = { _ in nil }
    ) -> (fitted: [Fitted], notes: [String]) {
        var fitted: [Fitted] = []
        var notes: [String] = []
        var used: Int64 = 0
        for ad in ads {
            var duration = ad.durationMilliseconds
            if let media = measured(ad.uri) {
                if let vast = duration, abs(vast - media) > durationToleranceMilliseconds {
                    notes.append(
                        "ad \(ad.name): VAST says \(DecimalNumber(milliseconds: vast)) s, its media is \(DecimalNumber(milliseconds: media)) s: listed at the media's length"
                    )
                    duration = media
                } else {
                    // Fitted on the longer of the two: a pod of creatives each a little longer than VAST says must
                    // not run past the break.
                    duration = max(duration ?? media, media)
                }
            }
            guard let duration, duration > 0 else {
                notes.append("ad \(ad.name) has no duration: dropped")
                continue
            }
            guard used + duration <= breakMilliseconds else {
                notes.append(
                    "ad \(ad.name) (\(DecimalNumber(milliseconds: duration)) s) does not fit in the \(DecimalNumber(milliseconds: breakMilliseconds - used)) s left of the \(DecimalNumber(milliseconds: breakMilliseconds)) s break: dropped"
                )
                continue
            }
            used += duration
            fitted.append(Fitted(ad: ad, durationMilliseconds: duration))
        }
        return (fitted, notes)
    }

    /// The pod's skip control: the break's own when it has one, else, for a pod of one ad skippable in VAST, from its
    /// `skipoffset` (whole seconds, rounded up) until its end. Nil otherwise: `SKIP-CONTROL` skips the whole
    /// interstitial, so one skippable ad must not make the other advertisers' ads of the pod skippable.
    public static func skipControl(_ fitted: [Fitted], breakSkip: SkipControl?) -> SkipControl? {
        if let breakSkip { return breakSkip }
        guard fitted.count == 1, let first = fitted.first, let offset = first.ad.skipOffset else { return nil }
        let seconds = (offset.milliseconds(of: first.durationMilliseconds) + 999) / 1000
        let remaining = first.durationMilliseconds / 1000 - seconds
        guard remaining > 0 else { return nil }
        return SkipControl(offsetMilliseconds: seconds * 1000, durationMilliseconds: remaining * 1000)
    }

    /// The asset list JSON. `tracking`: each asset carries its ad's tracking for the player to report.
    public static func json(_ fitted: [Fitted], skip: SkipControl?, tracking: Bool) -> String {
        var assets: [String] = []
        for item in fitted {
            var asset =
                #"{"URI":\#(jsonString(item.ad.uri)),"DURATION":\#(DecimalNumber(milliseconds: item.durationMilliseconds))"#
            if tracking { asset += #","X-AD-CREATIVE-SIGNALING":"# + signalling(item) }
            assets.append(asset + "}")
        }
        var out = #"{"ASSETS":[\#(assets.joined(separator: ","))]"#
        if let skip {
            var fields = [#""OFFSET":\#(skip.offsetMilliseconds / 1000)"#]
            if let duration = skip.durationMilliseconds { fields.append(#""DURATION":\#(duration / 1000)"#) }
            if let label = skip.labelID { fields.append(#""LABEL-ID":\#(jsonString(label))"#) }
            out += #","SKIP-CONTROL":{\#(fields.joined(separator: ","))}"#
        }
        return out + "}"
    }

    /// The VAST events SVTA2053-2 names, with where in the creative each fires (a fraction of its duration);
    /// `progress` carries its own offset, the others none.
    static let quartiles: [(event: String, fraction: (Int64, Int64))] = [
        ("start", (0, 4)), ("firstQuartile", (1, 4)), ("midpoint", (2, 4)), ("thirdQuartile", (3, 4)),
        ("complete", (4, 4)),
    ]
    static let untimed = ["skip", "pause", "resume", "mute", "unmute", "rewind", "fullscreen", "exitFullscreen"]

    /// One ad's `X-AD-CREATIVE-SIGNALING`: a slot of one linear creative, its tracking grouped by event (URLs in the
    /// order the wrappers and the inline ad gave them).
    static func signalling(_ item: Fitted) -> String {
        let ad = item.ad
        let duration = item.durationMilliseconds
        var tracking: [String] = []
        func entry(_ type: String, offset: Int64?, urls: [String]) {
            guard !urls.isEmpty else { return }
            var fields = [#""type":\#(jsonString(type))"#]
            if let offset { fields.append(#""offset":\#(DecimalNumber(milliseconds: offset))"#) }
            fields.append(#""urls":[\#(urls.map(jsonString).joined(separator: ","))]"#)
            tracking.append("{" + fields.joined(separator: ",") + "}")
        }
        entry("impression", offset: nil, urls: unique(ad.impressions))
        for (event, fraction) in quartiles {
            entry(
                event, offset: duration * fraction.0 / fraction.1,
                urls: unique(ad.tracking.filter { $0.event == event }.map(\.url)))
        }
        // progress events, each at its own offset, in order of offset.
        let progress = ad.tracking.filter { $0.event == "progress" && $0.offset != nil }
        var offsets: [Int64: [String]] = [:]
        for event in progress { offsets[event.offset!.milliseconds(of: duration), default: []].append(event.url) }
        for offset in offsets.keys.sorted() { entry("progress", offset: offset, urls: unique(offsets[offset]!)) }
        for event in untimed {
            entry(event, offset: nil, urls: unique(ad.tracking.filter { $0.event == event }.map(\.url)))
        }
        entry("error", offset: nil, urls: unique(ad.errorURLs))
        var slot = [
            #""type":"linear""#, #""start":0"#, #""duration":\#(DecimalNumber(milliseconds: duration))"#,
        ]
        var identifiers: [String] = []
        if let universal = ad.universalAdID {
            identifiers.append(
                #"{"scheme":"urn:smpte:ul:060E2B34.01040101.01200900.00000000","value":\#(jsonString(universal))}"#)
        }
        if let id = ad.adID { identifiers.append(#"{"scheme":"vast:Ad@id","value":\#(jsonString(id))}"#) }
        slot.append(#""identifiers":[\#(identifiers.joined(separator: ","))]"#)
        slot.append(#""tracking":[\#(tracking.joined(separator: ","))]"#)
        if let click = ad.clickThrough, !click.isEmpty { slot.append(#""clickThrough":\#(jsonString(click))"#) }
        return #"{"version":2,"type":"slot","payload":[{\#(slot.joined(separator: ","))}]}"#
    }

    static func unique(_ urls: [String]) -> [String] {
        var seen: Set<String> = []
        return urls.filter { seen.insert($0).inserted }
    }
}
