/// The section that ends the break a received start opened: what Cueline publishes as `SCTE35-IN` when a break placed
/// from automation's cue ends in any other way than automation's own return (an operator's early return, a cancel on
/// air, the planned end), so that a downstream pairing starts and ends by event id closes the avail it opened.
extension SpliceInfoSection {
    /// The paired end of `start`: for a `time_signal`, its first break-start segmentation descriptor's end type
    /// (0x22→0x23, 0x30→0x31, 0x32→0x33, 0x34→0x35, 0x36→0x37, 0x44→0x45, 0x46→0x47) with the same event id,
    /// UPID and segment numbers, no duration, immediate; for a `splice_insert` out of network, a `splice_insert`
    /// return (out of network 0, immediate) with the same splice event id, program id and avail numbers. Nil for any
    /// other section (it opened no break), or one that does not parse.
    public static func pairedEnd(of start: [UInt8]) -> [UInt8]? {
        guard let section = try? SpliceInfoSection(bytes: start) else { return nil }
        switch section.command {
        case .timeSignal:
            for descriptor in section.descriptors {
                guard case .segmentation(let segmentation) = descriptor, !segmentation.cancel,
                    SegmentationType.breakStarts.contains(segmentation.typeID)
                else { continue }
                let end = SegmentationDescriptor(
                    eventID: segmentation.eventID, deliveryRestrictions: segmentation.deliveryRestrictions,
                    duration: nil, upidType: segmentation.upidType, upid: segmentation.upid,
                    typeID: segmentation.typeID + 1, segmentNum: segmentation.segmentNum,
                    segmentsExpected: segmentation.segmentsExpected)
                guard end.descriptorLength <= 255 else { return nil }
                return encodeTimeSignal(ptsTime: nil, descriptors: [end], tier: section.tier, sapType: section.sapType)
            }
            return nil
        case .insert(let insert) where insert.outOfNetwork && !insert.cancel:
            var command = BitWriter()
            command.bits(32, UInt64(insert.eventID))
            command.flag(false)  // splice_event_cancel_indicator
            command.reserved(7)
            command.flag(false)  // out_of_network_indicator: the return
            command.flag(true)  // program_splice_flag
            command.flag(false)  // duration_flag
            command.flag(true)  // splice_immediate_flag
            command.reserved(4)
            command.bits(16, UInt64(insert.uniqueProgramID))
            command.bits(8, UInt64(insert.availNum))
            command.bits(8, UInt64(insert.availsExpected))
            return encode(
                commandType: 0x05, command: command, descriptors: [], tier: section.tier, sapType: section.sapType)
        default:
            return nil
        }
    }
}
