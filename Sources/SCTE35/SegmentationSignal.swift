/// A break announced the way a downstream SSAI or packager reads it: a `time_signal` with one segmentation
/// descriptor of a break type, the event id stable for the break and the break id in the UPID. The value is checked
/// when it is made, so `encoded()` always gives a section the standard allows.
///
/// The UPID is an MPU() (`segmentation_upid_type` 0x0C, SCTE 35 2023 section 10.3.3.3): a 32-bit
/// `format_identifier`, then private bytes its owner defines. SCTE 35 deprecates the user-defined type 0x01 in
/// favour of MPU; ADI (0x09) and URI (0x0F) carry a structured string, not a free-form id. Cueline writes the
/// identifier "CUEL" followed by the break id's UTF-8 bytes. The standard asks for an identifier registered with
/// SMPTE-RA; "CUEL" is not registered, which decoders accept (they read the private bytes as opaque).
public struct SegmentationSignal: Hashable, Sendable {
    /// `segmentation_upid_type` of every signal Cueline writes: MPU().
    public static let upidType: UInt8 = 0x0C
    /// The MPU `format_identifier` in front of a break id: "CUEL".
    public static let formatIdentifier: [UInt8] = Array("CUEL".utf8)
    /// The longest UPID that keeps the descriptor within its 255 bytes (with a duration and sub-segments).
    public static let maximumUPIDLength = 233

    /// `segmentation_event_id`: the same for a break's start and its end.
    public let eventID: UInt32
    public let type: SegmentationType
    /// `segmentation_duration` in 90 kHz ticks (below 2^40), or nil for none (an end).
    public let durationTicks90k: UInt64?
    /// The whole `segmentation_upid`: the MPU format identifier and its private bytes.
    public let upid: [UInt8]
    /// The `time_signal`'s `pts_time` (below 2^33), or nil for an immediate signal (`time_specified_flag` 0).
    public let ptsTime: UInt64?

    /// A signal as given. Throws `SCTE35Error.unencodable` naming the field that does not fit.
    public init(
        eventID: UInt32, type: SegmentationType, durationTicks90k: UInt64? = nil, upid: [UInt8],
        ptsTime: UInt64? = nil
    ) throws(SCTE35Error) {
        guard (4...Self.maximumUPIDLength).contains(upid.count) else {
            throw .unencodable(
                field: "segmentation_upid",
                reason: "an MPU() UPID is a 4-byte format identifier and at most \(Self.maximumUPIDLength - 4) "
                    + "more bytes; this one is \(upid.count) bytes")
        }
        if let durationTicks90k, durationTicks90k >= 1 << 40 {
            throw .unencodable(
                field: "segmentation_duration", reason: "\(durationTicks90k) ticks do not fit in 40 bits")
        }
        if let ptsTime, ptsTime >= 1 << 33 {
            throw .unencodable(field: "pts_time", reason: "\(ptsTime) does not fit in 33 bits")
        }
        self.eventID = eventID
        self.type = type
        self.durationTicks90k = durationTicks90k
        self.upid = upid
        self.ptsTime = ptsTime
    }

    /// The signal for a break of a channel: its event id from `eventID(channelID:breakID:)`, the break id in the UPID.
    /// Throws when the break id is longer than 229 UTF-8 bytes, or the duration or PTS is too wide.
    public init(
        channelID: String, breakID: String, type: SegmentationType, durationTicks90k: UInt64?, ptsTime: UInt64? = nil
    ) throws(SCTE35Error) {
        try self.init(
            eventID: Self.eventID(channelID: channelID, breakID: breakID), type: type,
            durationTicks90k: durationTicks90k, upid: Self.upid(breakID: breakID), ptsTime: ptsTime)
    }

    /// The end that closes this signal's break: the same event id and UPID, the end type paired with the start
    /// (0x22→0x23, 0x30→0x31, 0x34→0x35, 0x36→0x37), no duration, at `ptsTime` (nil: immediate).
    public func ending(at ptsTime: UInt64? = nil) throws(SCTE35Error) -> SegmentationSignal {
        try SegmentationSignal(eventID: eventID, type: type.end, upid: upid, ptsTime: ptsTime)
    }

    /// The break id a Cueline UPID carries: the bytes after "CUEL" when they are UTF-8, else nil.
    public var breakID: String? {
        guard upid.starts(with: Self.formatIdentifier) else { return nil }
        return String(validating: upid.dropFirst(4), as: UTF8.self)
    }

    /// "CUEL" and the break id's UTF-8 bytes.
    public static func upid(breakID: String) -> [UInt8] {
        formatIdentifier + Array(breakID.utf8)
    }

    /// A `segmentation_event_id` stable for a break: FNV-1a (32-bit: offset basis 0x811C9DC5, prime 0x01000193)
    /// of the UTF-8 bytes of "<channel>/<break>". The same break of the same channel always gets the same id, in
    /// every instance and every replay; 0xFFFFFFFF, which some equipment treats as "no event", becomes 0xFFFFFFFE.
    public static func eventID(channelID: String, breakID: String) -> UInt32 {
        eventID(key: "\(channelID)/\(breakID)")
    }

    /// FNV-1a (32-bit) of a key's UTF-8 bytes, 0xFFFFFFFF made 0xFFFFFFFE: the event id of whatever the key names.
    public static func eventID(key: String) -> UInt32 {
        var hash: UInt32 = 0x811C_9DC5
        for byte in key.utf8 {
            hash ^= UInt32(byte)
            hash &*= 0x0100_0193
        }
        return hash == 0xFFFF_FFFF ? 0xFFFF_FFFE : hash
    }
}
