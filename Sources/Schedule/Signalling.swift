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

    /// The section that opens a break of `channel` lasting `milliseconds`: `time_signal` (immediate: Cueline does not
    /// know the media's PTS; the date range's START-DATE says when), one segmentation descriptor of this channel's
    /// type, the duration, the event id stable for the break, the break id in the UPID. Nil when the section cannot
    /// be written (a break id too long for the UPID), which `decide` prevents.
    public func startSection(channel: ChannelID, breakID: BreakID, milliseconds: Int64) -> HexBytes? {
        guard let type = SegmentationType(rawValue: segmentationType), milliseconds >= 0,
            let signal = try? SegmentationSignal(
                channelID: channel.rawValue, breakID: breakID.rawValue, type: type,
                durationTicks90k: UInt64(milliseconds) * 90)
        else { return nil }
        return HexBytes(signal.encoded())
    }

    /// The section that ends the break early: the end type paired with the start, the same event id and UPID.
    public func endSection(channel: ChannelID, breakID: BreakID) -> HexBytes? {
        guard let type = SegmentationType(rawValue: segmentationType),
            let signal = try? SegmentationSignal(
                channelID: channel.rawValue, breakID: breakID.rawValue, type: type, durationTicks90k: nil
            ).ending()
        else { return nil }
        return HexBytes(signal.encoded())
    }
}
