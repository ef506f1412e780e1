/// The `segmentation_type_id` values (SCTE 35 table 23) that Cueline writes: the starts of a break and their ends.
public enum SegmentationType: UInt8, CaseIterable, Hashable, Sendable {
    case breakStart = 0x22
    case breakEnd = 0x23
    case providerAdvertisementStart = 0x30
    case providerAdvertisementEnd = 0x31
    case providerPlacementOpportunityStart = 0x34
    case providerPlacementOpportunityEnd = 0x35
    case distributorPlacementOpportunityStart = 0x36
    case distributorPlacementOpportunityEnd = 0x37

    /// Break Start, Provider/Distributor Advertisement Start, Placement Opportunity Start, Ad Block Start: every
    /// start a received section may carry, including the ones Cueline does not write.
    public static let breakStarts: Set<UInt8> = [0x22, 0x30, 0x32, 0x34, 0x36, 0x44, 0x46]
    /// The matching ends.
    public static let breakEnds: Set<UInt8> = [0x23, 0x31, 0x33, 0x35, 0x37, 0x45, 0x47]

    /// Whether this type opens a break.
    public var isStart: Bool { Self.breakStarts.contains(rawValue) }

    /// The end paired with a start (0x22→0x23, 0x30→0x31, 0x34→0x35, 0x36→0x37); an end is its own pair.
    public var end: SegmentationType {
        switch self {
        case .breakStart, .breakEnd: return .breakEnd
        case .providerAdvertisementStart, .providerAdvertisementEnd: return .providerAdvertisementEnd
        case .providerPlacementOpportunityStart, .providerPlacementOpportunityEnd:
            return .providerPlacementOpportunityEnd
        case .distributorPlacementOpportunityStart, .distributorPlacementOpportunityEnd:
            return .distributorPlacementOpportunityEnd
        }
    }

    /// Placement opportunity starts carry `sub_segment_num` and `sub_segments_expected` (section 10.3.3.1).
    var hasSubSegments: Bool {
        self == .providerPlacementOpportunityStart || self == .distributorPlacementOpportunityStart
    }
}
