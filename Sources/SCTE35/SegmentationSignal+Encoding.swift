extension SegmentationSignal {
    /// The `splice_info_section`, CRC_32 included: `time_signal` with this signal's splice time and one
    /// segmentation descriptor (program segmentation, delivery not restricted, `segment_num` and
    /// `segments_expected` 0, and for a placement opportunity start `sub_segment_num` and
    /// `sub_segments_expected` 0).
    public func encoded() -> [UInt8] {
        SpliceInfoSection.encodeTimeSignal(ptsTime: ptsTime, descriptors: [descriptor])
    }

    /// The section as an HLS `hexadecimal-sequence` (RFC 8216 section 4.2): "0x" and uppercase hex digits, the
    /// form `SCTE35-OUT`/`SCTE35-IN` take on a date range.
    public var hex: String {
        "0x" + uppercaseHex(encoded())
    }

    /// The section in standard base64, the form automation and `#EXT-X-CUE-OUT` tags often carry.
    public var base64: String {
        Base64.encode(encoded())
    }

    /// The segmentation descriptor this signal writes.
    var descriptor: SegmentationDescriptor {
        SegmentationDescriptor(
            eventID: eventID, duration: durationTicks90k, upidType: Self.upidType, upid: upid, typeID: type.rawValue,
            subSegmentNum: type.hasSubSegments ? 0 : nil, subSegmentsExpected: type.hasSubSegments ? 0 : nil)
    }

    /// The signal a section carries when it is one Cueline could have written: a `time_signal` whose first
    /// segmentation descriptor has a break type, an MPU UPID and is not a cancel. Nil otherwise.
    public init?(section: SpliceInfoSection) {
        guard case .timeSignal(let ptsTime) = section.command else { return nil }
        let first = section.descriptors.lazy.compactMap { descriptor -> SegmentationDescriptor? in
            guard case .segmentation(let segmentation) = descriptor else { return nil }
            return segmentation
        }.first
        guard let first, !first.cancel, first.upidType == Self.upidType,
            let type = SegmentationType(rawValue: first.typeID)
        else { return nil }
        guard
            let signal = try? SegmentationSignal(
                eventID: first.eventID, type: type, durationTicks90k: first.duration, upid: first.upid,
                ptsTime: ptsTime)
        else { return nil }
        self = signal
    }
}

/// Two uppercase hex digits a byte (outside the extension, where `hex` is the global function, not the property).
private func uppercaseHex(_ bytes: [UInt8]) -> String {
    bytes.map { hex($0) }.joined()
}
