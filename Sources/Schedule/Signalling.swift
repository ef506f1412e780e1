import HLS
import SCTE35

/// How a channel announces its breaks to the rest of the plant: which markers its playlists carry, and the SCTE-35
/// segmentation type its breaks are signalled with. Set when the channel is created, recorded in `ChannelCreated`.
///
/// A channel created before signalling existed has none (`ChannelConfig.signalling` nil): its playlists carry only
/// the SCTE-35 a break was placed with and no CUE markers, byte for byte as renderer version 1 wrote them.
public struct Signalling: Hashable, Sendable, Codable {
    public enum Markers: String, Hashable, Sendable, Codable, CaseIterable {
        /// HLS Interstitials for players, each date range carrying `SCTE35-OUT` (and `SCTE35-IN` on an early return).
        case interstitial
        /// For a downstream SSAI or packager: date ranges without the interstitial class and asset, carrying
        /// `SCTE35-OUT`/`SCTE35-IN`, and `EXT-X-CUE-OUT`/`-CONT`/`-IN` on the segments.
        case scte35
        /// Interstitials and the CUE markers.
        case both

        /// Whether date ranges are interstitials (players play the break's assets).
        public var interstitials: Bool { self != .scte35 }
        /// Whether segments carry `EXT-X-CUE-OUT`/`-CONT`/`-IN`.
        public var cueMarkers: Bool { self != .interstitial }
    }

    public var markers: Markers
    /// The `segmentation_type_id` of a break's start: 0x34 (Provider Placement Opportunity Start, the default),
    /// 0x36 (Distributor Placement Opportunity Start), 0x22 (Break Start) or 0x30 (Provider Advertisement Start).
    public var segmentationType: UInt8

    public static let defaultSegmentationType = SegmentationType.providerPlacementOpportunityStart.rawValue
    /// The starts a channel may choose.
    public static let segmentationTypes: [SegmentationType] = [
        .providerPlacementOpportunityStart, .distributorPlacementOpportunityStart, .breakStart,
        .providerAdvertisementStart,
    ]

    public init(markers: Markers = .interstitial, segmentationType: UInt8 = Self.defaultSegmentationType) {
        self.markers = markers
        self.segmentationType = segmentationType
    }

    public func validate() throws(ScheduleError) {
        guard Self.segmentationTypes.contains(where: { $0.rawValue == segmentationType }) else {
            throw .invalidField(
                "segmentation-type",
                "must be one of \(Self.segmentationTypes.map { Self.name($0.rawValue) }.joined(separator: ", ")) (got \(Self.name(segmentationType)))"
            )
        }
    }

    /// `0x34` for a type.
    public static func name(_ type: UInt8) -> String {
        "0x" + hexDigits([type], uppercase: true)
    }

    /// The section that opens `spec`'s break on `channel`: `time_signal` (immediate: Cueline does not know the
    /// media's PTS; the date range's START-DATE says when), one segmentation descriptor of this channel's type, the
    /// planned duration, the break id in the UPID, and an event id stable for this placement: FNV-1a of
    /// "<channel>/<break id>/<start in ms since 1970>" (a break id placed again once its break has retired, e.g. every
    /// day's "halftime", gets a new one). A break placed from a received cue keeps that section instead. Nil when the
    /// section cannot be written (a break id too long for the UPID), which `decide` prevents.
    public func startSection(channel: ChannelID, spec: BreakSpec) -> HexBytes? {
        guard let signal = signal(channel: channel, spec: spec) else { return nil }
        return HexBytes(signal.encoded())
    }

    /// The section that ends `spec`'s break (`SCTE35-IN`, early or at its planned end): for a break placed from a
    /// received cue, the end paired with that section (`SpliceInfoSection.pairedEnd`: the same event id), else the
    /// end type paired with this channel's start, the same event id and UPID.
    public func endSection(channel: ChannelID, spec: BreakSpec) -> HexBytes? {
        if let received = spec.options.scte35Out {
            return HexBytes(hex: received).flatMap { SpliceInfoSection.pairedEnd(of: $0.bytes) }.map(HexBytes.init)
        }
        guard let signal = try? signal(channel: channel, spec: spec)?.ending() else { return nil }
        return HexBytes(signal.encoded())
    }

    private func signal(channel: ChannelID, spec: BreakSpec) -> SegmentationSignal? {
        guard let type = SegmentationType(rawValue: segmentationType), spec.plannedDurationMilliseconds >= 0 else {
            return nil
        }
        return try? SegmentationSignal(
            eventID: SegmentationSignal.eventID(
                key: "\(channel.rawValue)/\(spec.id.rawValue)/\(spec.start.milliseconds)"),
            type: type, durationTicks90k: UInt64(spec.plannedDurationMilliseconds) * 90,
            upid: SegmentationSignal.upid(breakID: spec.id.rawValue))
    }
}
