import HLS

/// What Cueline read of a break's media when it was placed, recorded on `BreakPlaced` so that every instance and
/// every replay serves the same asset list, whatever the asset server does later.
public struct BreakMedia: Hashable, Sendable, Codable {
    /// One entry per asset of the break, in order (one for an asset URI, one per pod asset); nil where the asset's
    /// playlist could not be read (it is then served whole and its duration taken as given).
    public var assets: [MeasuredAsset?]
    /// The planned duration the command asked for, when it was corrected to the media's length.
    public var requestedDurationMilliseconds: Int64?

    public init(assets: [MeasuredAsset?], requestedDurationMilliseconds: Int64? = nil) {
        self.assets = assets
        self.requestedDurationMilliseconds = requestedDurationMilliseconds
    }

    /// Whether Cueline serves the break's assets from its own asset list as chunks.
    public var isChunked: Bool { assets.contains { $0?.chunkMilliseconds != nil } }
}

/// One asset's media: its length (the sum of its `EXTINF`s) and, when it is served in chunks, each chunk's length.
public struct MeasuredAsset: Hashable, Sendable, Codable {
    public var durationMilliseconds: Int64
    /// Lengths of the consecutive chunks the asset is served as (they add up to `durationMilliseconds`); nil when it
    /// is served whole.
    public var chunkMilliseconds: [Int64]?

    public init(durationMilliseconds: Int64, chunkMilliseconds: [Int64]? = nil) {
        self.durationMilliseconds = durationMilliseconds
        self.chunkMilliseconds = chunkMilliseconds
    }
}

extension BreakMedia {
    /// How far a planned duration may be from the media's length and still be taken as the same (then corrected to
    /// the media): operators say "a 30 s spot" for 30.03 s of media. Beyond it the break would cut its ad short or
    /// leave the player waiting for media that is not there, so the command is refused.
    public static let toleranceMilliseconds: Int64 = 1000

    /// Checks a break's durations against what was measured, and corrects them to the media.
    ///
    /// - Parameters:
    ///   - measured: one entry per asset (nil: not readable), or nil when nothing was measured.
    ///   - chunked: whether measured assets are served in chunks.
    /// - Returns: the corrected planned duration and asset, and the media to record (nil when nothing was measured).
    static func reconcile(
        plannedDurationMilliseconds planned: Int64, asset: BreakAsset, measured: [MeasuredAsset?]?, chunked: Bool
    ) throws(ScheduleError) -> (planned: Int64, asset: BreakAsset, media: BreakMedia?) {
        guard var measured, measured.contains(where: { $0 != nil }) else { return (planned, asset, nil) }
        if !chunked {
            measured = measured.map { $0.map { MeasuredAsset(durationMilliseconds: $0.durationMilliseconds) } }
        }
        func differs(_ a: Int64, _ b: Int64) -> Bool { abs(a - b) > toleranceMilliseconds }
        let total = measured.reduce(0) { $0 + ($1?.durationMilliseconds ?? 0) }
        guard total <= Limits.maximumBreakMilliseconds else {
            throw .invalidField(
                "duration",
                "the media is \(DecimalNumber(milliseconds: total)) s long: a break lasts at most \(DecimalNumber(milliseconds: Limits.maximumBreakMilliseconds)) s"
            )
        }
        switch asset {
        case .uri(let uri):
            guard measured.count == 1, let media = measured[0] else { return (planned, asset, nil) }
            if differs(media.durationMilliseconds, planned) {
                throw .invalidField(
                    "duration",
                    "the asset \(uri) is \(DecimalNumber(milliseconds: media.durationMilliseconds)) s long, but the break is planned at \(DecimalNumber(milliseconds: planned)) s: plan it at \(DecimalNumber(milliseconds: media.durationMilliseconds)) s, or use an asset that fills the break"
                )
            }
            return (
                media.durationMilliseconds, asset,
                BreakMedia(
                    assets: measured,
                    requestedDurationMilliseconds: media.durationMilliseconds == planned ? nil : planned)
            )
        case .pod(var pod):
            guard measured.count == pod.count else { return (planned, asset, nil) }
            for (index, media) in measured.enumerated() {
                guard let media else { continue }
                if differs(media.durationMilliseconds, pod[index].durationMilliseconds) {
                    throw .invalidField(
                        "pod",
                        "asset \(index + 1) (\(pod[index].uri)) is \(DecimalNumber(milliseconds: media.durationMilliseconds)) s long, not \(DecimalNumber(milliseconds: pod[index].durationMilliseconds)) s: give its real length"
                    )
                }
                pod[index].durationMilliseconds = media.durationMilliseconds
            }
            var corrected = planned
            if measured.allSatisfy({ $0 != nil }) {
                let total = pod.reduce(0) { $0 + $1.durationMilliseconds }
                if differs(total, planned) {
                    throw .invalidField(
                        "duration",
                        "the pod's media adds up to \(DecimalNumber(milliseconds: total)) s, but the break is planned at \(DecimalNumber(milliseconds: planned)) s: plan it at \(DecimalNumber(milliseconds: total)) s, or use assets that fill the break"
                    )
                }
                corrected = total
            }
            return (
                corrected, .pod(pod),
                BreakMedia(assets: measured, requestedDurationMilliseconds: corrected == planned ? nil : planned)
            )
        case .list:
            return (planned, asset, nil)
        }
    }
}
