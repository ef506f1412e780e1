/// Writing a `splice_info_section` (SCTE 35 2023, section 9.6) that carries a `time_signal` (9.7.4) and
/// segmentation descriptors (10.3.3): what the parser reads, written back. Unencrypted, `protocol_version` 0,
/// `cw_index` 0xFF, program segmentation only (no component loop); reserved bits are 1 (section 9.2).
extension SpliceInfoSection {
    /// The whole section, `CRC_32` included. The caller keeps every field within its width and the descriptors
    /// within 4,093 bytes of section (`SegmentationSignal` checks this when it is made).
    static func encodeTimeSignal(
        ptsTime: UInt64?, descriptors: [SegmentationDescriptor], ptsAdjustment: UInt64 = 0, tier: UInt16 = 0xFFF,
        sapType: UInt8 = 3
    ) -> [UInt8] {
        var command = BitWriter()
        writeSpliceTime(ptsTime, to: &command)
        return encode(
            commandType: 0x06, command: command, descriptors: descriptors, ptsAdjustment: ptsAdjustment, tier: tier,
            sapType: sapType)
    }

    /// The whole section around a written command (`splice_command_type` and its bytes).
    static func encode(
        commandType: UInt8, command: BitWriter, descriptors: [SegmentationDescriptor], ptsAdjustment: UInt64 = 0,
        tier: UInt16 = 0xFFF, sapType: UInt8 = 3
    ) -> [UInt8] {
        var loop = BitWriter()
        for descriptor in descriptors { descriptor.write(to: &loop) }

        var section = BitWriter()
        section.bits(8, 0xFC)  // table_id
        section.flag(false)  // section_syntax_indicator
        section.flag(false)  // private_indicator
        section.bits(2, UInt64(sapType))
        // Everything after section_length: 11 bytes of header, the command, the loop and its length, the CRC.
        let sectionLength = 11 + command.bytes.count + 2 + loop.bytes.count + 4
        precondition(sectionLength <= 4093, "a splice_info_section is at most 4,096 bytes")
        section.bits(12, UInt64(sectionLength))
        section.bits(8, 0)  // protocol_version
        section.flag(false)  // encrypted_packet
        section.bits(6, 0)  // encryption_algorithm
        section.bits(33, ptsAdjustment)
        section.bits(8, 0xFF)  // cw_index: no control word, the section is not encrypted
        section.bits(12, UInt64(tier))
        section.bits(12, UInt64(command.bytes.count))  // splice_command_length
        section.bits(8, UInt64(commandType))  // splice_command_type
        section.bytes(command.bytes)
        section.bits(16, UInt64(loop.bytes.count))  // descriptor_loop_length
        section.bytes(loop.bytes)
        let crc = CRC32MPEG2.checksum(section.bytes)
        section.bits(32, UInt64(crc))
        return section.bytes
    }
}

/// `splice_time()` (section 9.4.1): the PTS with `time_specified_flag` set, or the flag alone (an immediate signal).
func writeSpliceTime(_ ptsTime: UInt64?, to writer: inout BitWriter) {
    if let ptsTime {
        writer.flag(true)
        writer.reserved(6)
        writer.bits(33, ptsTime)
    } else {
        writer.flag(false)
        writer.reserved(7)
    }
}

extension SegmentationDescriptor {
    /// A descriptor to write; the parser's fields, with program segmentation.
    init(
        eventID: UInt32, cancel: Bool = false, deliveryRestrictions: UInt8? = nil, duration: UInt64?,
        upidType: UInt8, upid: [UInt8], typeID: UInt8, segmentNum: UInt8 = 0, segmentsExpected: UInt8 = 0,
        subSegmentNum: UInt8? = nil, subSegmentsExpected: UInt8? = nil
    ) {
        self.eventID = eventID
        self.cancel = cancel
        self.deliveryRestrictions = deliveryRestrictions
        self.duration = duration
        self.upidType = upidType
        self.upid = upid
        self.typeID = typeID
        self.segmentNum = segmentNum
        self.segmentsExpected = segmentsExpected
        self.subSegmentNum = subSegmentNum
        self.subSegmentsExpected = subSegmentsExpected
    }

    /// The descriptor's length after `descriptor_length`: identifier, event id and flags, then the rest.
    var descriptorLength: Int {
        guard !cancel else { return 9 }
        return 10 + (duration == nil ? 0 : 5) + 2 + upid.count + 3 + (subSegmentNum == nil ? 0 : 2)
    }

    /// `segmentation_descriptor()` (section 10.3.3) with its tag and length.
    func write(to writer: inout BitWriter) {
        precondition(descriptorLength <= 255 && upid.count <= 255, "a descriptor is at most 255 bytes")
        writer.bits(8, 0x02)  // splice_descriptor_tag
        writer.bits(8, UInt64(descriptorLength))
        writer.bits(32, 0x4355_4549)  // identifier: "CUEI"
        writer.bits(32, UInt64(eventID))
        writer.flag(cancel)
        // segmentation_event_id_compliance_indicator (1: the id follows section 10.3.3.1) and 6 reserved bits.
        writer.reserved(7)
        guard !cancel else { return }
        writer.flag(true)  // program_segmentation_flag
        writer.flag(duration != nil)
        writer.flag(deliveryRestrictions == nil)  // delivery_not_restricted_flag
        if let deliveryRestrictions {
            writer.bits(5, UInt64(deliveryRestrictions))
        } else {
            writer.reserved(5)
        }
        if let duration { writer.bits(40, duration) }
        writer.bits(8, UInt64(upidType))
        writer.bits(8, UInt64(upid.count))
        writer.bytes(upid)
        writer.bits(8, UInt64(typeID))
        writer.bits(8, UInt64(segmentNum))
        writer.bits(8, UInt64(segmentsExpected))
        if let subSegmentNum {
            writer.bits(8, UInt64(subSegmentNum))
            writer.bits(8, UInt64(subSegmentsExpected ?? 0))
        }
    }
}
