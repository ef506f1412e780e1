@testable import SCTE35
import Testing

@Suite("SCTE-35 encoder: SegmentationSignal")
struct SegmentationSignalTests {
    /// A placement opportunity start, written out field by field from SCTE 35 2023 sections 9.6, 9.7.4, 9.4.1 and
    /// 10.3.3; the CRC_32 is threefive's (`threefive.crc.crc32`), not ours.
    static let placementStartBytes: [UInt8] = [
        0xFC,  // table_id
        0x30, 0x38,  // section_syntax_indicator 0, private_indicator 0, sap_type 3, section_length 56
        0x00,  // protocol_version
        0x00, 0x00, 0x00, 0x00, 0x00,  // encrypted_packet 0, encryption_algorithm 0, pts_adjustment 0
        0xFF,  // cw_index
        0xFF, 0xF0, 0x05,  // tier 0xFFF, splice_command_length 5
        0x06,  // splice_command_type: time_signal
        0xFE, 0x72, 0xBD, 0x00, 0x50,  // time_specified_flag 1, 6 reserved, pts_time 0x072BD0050
        0x00, 0x22,  // descriptor_loop_length 34
        0x02, 0x20,  // segmentation_descriptor, descriptor_length 32
        0x43, 0x55, 0x45, 0x49,  // "CUEI"
        0x48, 0x00, 0x00, 0x8E,  // segmentation_event_id
        0x7F,  // cancel 0, compliance indicator and 6 reserved bits 1
        0xFF,  // program_segmentation 1, duration 1, delivery_not_restricted 1, 5 reserved
        0x00, 0x00, 0x29, 0x32, 0xE0,  // segmentation_duration 2,700,000 ticks (30 s)
        0x0C, 0x0A,  // segmentation_upid_type MPU, segmentation_upid_length 10
        0x43, 0x55, 0x45, 0x4C, 0x62, 0x72, 0x6B, 0x2D, 0x34, 0x32,  // "CUEL" "brk-42"
        0x34, 0x00, 0x00,  // segmentation_type_id, segment_num, segments_expected
        0x00, 0x00,  // sub_segment_num, sub_segments_expected (a placement opportunity start)
        0xF7, 0xFF, 0x47, 0x25,  // CRC_32
    ]

    /// Its end, immediate: a 1-byte splice_time, no duration, no sub-segments.
    static let placementEndBytes: [UInt8] = [
        0xFC, 0x30, 0x2D,  // section_length 45
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xFF,
        0xFF, 0xF0, 0x01,  // tier, splice_command_length 1
        0x06, 0x7F,  // time_signal: time_specified_flag 0 and 7 reserved bits
        0x00, 0x1B,  // descriptor_loop_length 27
        0x02, 0x19, 0x43, 0x55, 0x45, 0x49, 0x48, 0x00, 0x00, 0x8E, 0x7F,
        0xBF,  // program_segmentation 1, duration 0, delivery_not_restricted 1, 5 reserved
        0x0C, 0x0A, 0x43, 0x55, 0x45, 0x4C, 0x62, 0x72, 0x6B, 0x2D, 0x34, 0x32,
        0x35, 0x00, 0x00,  // Provider Placement Opportunity End, segment_num, segments_expected
        0x25, 0x40, 0xA5, 0xE5,  // CRC_32 (threefive's)
    ]

    static func placementStart() throws -> SegmentationSignal {
        try SegmentationSignal(
            eventID: 0x4800_008E, type: .providerPlacementOpportunityStart, durationTicks90k: 2_700_000,
            upid: SegmentationSignal.upid(breakID: "brk-42"), ptsTime: 0x0_72BD_0050)
    }

    @Test("a placement opportunity start is written as derived by hand from the standard")
    func knownStart() throws {
        let signal = try Self.placementStart()
        #expect(signal.encoded() == Self.placementStartBytes)
        #expect(signal.hex == "0x" + Self.placementStartBytes.map { hex($0) }.joined())
        #expect(signal.hex.dropFirst(2).allSatisfy { $0.isNumber || ("A"..."F").contains($0) })
        #expect(try SpliceInfoSection(text: signal.base64).bytes == Self.placementStartBytes)
    }

    @Test("its end: same event id and UPID, the paired type, immediate, no duration")
    func knownEnd() throws {
        let end = try Self.placementStart().ending()
        #expect(end.type == .providerPlacementOpportunityEnd && end.durationTicks90k == nil && end.ptsTime == nil)
        #expect(end.encoded() == Self.placementEndBytes)
        #expect(try SpliceInfoSection(bytes: end.encoded()).cues == [.in(eventID: 0x4800_008E)])
    }

    @Test(
        "every start ends with its paired type",
        arguments: [
            (SegmentationType.breakStart, SegmentationType.breakEnd),
            (.providerAdvertisementStart, .providerAdvertisementEnd),
            (.providerPlacementOpportunityStart, .providerPlacementOpportunityEnd),
            (.distributorPlacementOpportunityStart, .distributorPlacementOpportunityEnd),
        ])
    func pairs(start: SegmentationType, end: SegmentationType) throws {
        #expect(start.isStart && !end.isStart && start.end == end && end.end == end)
        let signal = try SegmentationSignal(channelID: "c", breakID: "b", type: start, durationTicks90k: 90_000)
        let ending = try signal.ending(at: 42)
        #expect(ending.eventID == signal.eventID && ending.upid == signal.upid && ending.type == end)
        let section = try SpliceInfoSection(bytes: ending.encoded())
        #expect(section.cues == [.in(eventID: signal.eventID)])
    }

    @Test("the published time_signal samples are written back byte for byte, CRC included")
    func publishedSamples() throws {
        for text in [Samples.placementStart, Samples.placementEnd, Samples.programEndStart, Samples.programStartAdID] {
            let section = try SpliceInfoSection(text: text)
            guard case .timeSignal(let ptsTime) = section.command else {
                Issue.record("not a time_signal"); continue
            }
            let descriptors = section.descriptors.compactMap { descriptor -> SegmentationDescriptor? in
                guard case .segmentation(let segmentation) = descriptor else { return nil }
                return segmentation
            }
            let written = SpliceInfoSection.encodeTimeSignal(
                ptsTime: ptsTime, descriptors: descriptors, ptsAdjustment: section.ptsAdjustment, tier: section.tier,
                sapType: section.sapType)
            #expect(written == section.bytes, "\(text)")
            #expect(Base64.encode(section.bytes) == text || text.hasPrefix("fc"))
        }
    }

    @Test("the event id is FNV-1a of channel/break: stable, and never 0xFFFFFFFF")
    func eventID() {
        // FNV-1a 32 of "news/brk-42"; "foo" + "/" + "bar" hashes as the string "foo/bar".
        #expect(SegmentationSignal.eventID(channelID: "news", breakID: "brk-42") == 0x9C0F_0CC1)
        #expect(SegmentationSignal.eventID(channelID: "news", breakID: "brk-42") == fnv1a("news/brk-42"))
        #expect(fnv1a("") == 0x811C_9DC5 && fnv1a("a") == 0xE40C_292C && fnv1a("foobar") == 0xBF9C_F968)
        #expect(
            SegmentationSignal.eventID(channelID: "news", breakID: "brk-43")
                != SegmentationSignal.eventID(channelID: "news", breakID: "brk-42"))
        // "ch/brk-lddwehj" hashes to 0xFFFFFFFF (found by meeting in the middle); it is moved off that value.
        #expect(fnv1a("ch/brk-lddwehj") == 0xFFFF_FFFF)
        #expect(SegmentationSignal.eventID(channelID: "ch", breakID: "brk-lddwehj") == 0xFFFF_FFFE)
    }

    @Test("the break id comes back out of the UPID")
    func breakID() throws {
        let signal = try SegmentationSignal(
            channelID: "news", breakID: "pause-café", type: .breakStart, durationTicks90k: nil)
        #expect(signal.upid.prefix(4) == [0x43, 0x55, 0x45, 0x4C])
        #expect(signal.breakID == "pause-café")
        let parsed = try #require(SegmentationSignal(section: try SpliceInfoSection(bytes: signal.encoded())))
        #expect(parsed.breakID == "pause-café" && parsed == signal)
    }

    @Test("values that do not fit are refused, naming the field")
    func refusals() {
        let longest = String(repeating: "x", count: SegmentationSignal.maximumUPIDLength - 4)
        #expect(throws: Never.self) {
            let signal = try SegmentationSignal(
                channelID: "c", breakID: longest, type: .distributorPlacementOpportunityStart,
                durationTicks90k: (1 << 40) - 1, ptsTime: (1 << 33) - 1)
            #expect(signal.encoded()[2...].count - 1 <= 4093)
            #expect(SegmentationSignal(section: try SpliceInfoSection(bytes: signal.encoded())) == signal)
        }
        let cases: [(() throws(SCTE35Error) -> SegmentationSignal, String)] = [
            (
                { () throws(SCTE35Error) in
                    try SegmentationSignal(
                        channelID: "c", breakID: longest + "x", type: .breakStart, durationTicks90k: nil)
                }, "segmentation_upid"
            ),
            (
                { () throws(SCTE35Error) in try SegmentationSignal(eventID: 1, type: .breakStart, upid: [1, 2]) },
                "segmentation_upid"
            ),
            (
                { () throws(SCTE35Error) in
                    try SegmentationSignal(channelID: "c", breakID: "b", type: .breakStart, durationTicks90k: 1 << 40)
                }, "segmentation_duration"
            ),
            (
                { () throws(SCTE35Error) in
                    try SegmentationSignal(
                        channelID: "c", breakID: "b", type: .breakStart, durationTicks90k: nil, ptsTime: 1 << 33)
                }, "pts_time"
            ),
        ]
        for (make, field) in cases {
            do {
                _ = try make()
                Issue.record("\(field): accepted")
            } catch {
                #expect(error.description.contains("cannot write \(field)"), "\(error.description)")
            }
        }
    }
}

/// FNV-1a 32-bit, written out again here so the test does not check the function with itself.
func fnv1a(_ text: String) -> UInt32 {
    text.utf8.reduce(UInt32(0x811C_9DC5)) { ($0 ^ UInt32($1)) &* 16_777_619 }
}

@Suite("SCTE-35: the end paired with a received start")
struct PairedEndTests {
    @Test("a time_signal start's end: the paired type, the same event id, UPID and segment numbers, no duration")
    func timeSignal() throws {
        let start = try SpliceInfoSection.decode(Samples.placementStart)
        let end = try SpliceInfoSection(bytes: try #require(SpliceInfoSection.pairedEnd(of: start)))
        guard case .timeSignal(nil) = end.command, case .segmentation(let descriptor) = end.descriptors.first else {
            Issue.record("\(end)")
            return
        }
        #expect(descriptor.typeID == 0x35 && descriptor.eventID == 0x4800_008E && descriptor.duration == nil)
        #expect(descriptor.upidType == 0x08 && descriptor.upid == [0x00, 0x00, 0x00, 0x00, 0x2C, 0xA0, 0xA1, 0x8A])
        #expect(descriptor.segmentNum == 2 && descriptor.segmentsExpected == 0)
        #expect(end.cues == [.in(eventID: 0x4800_008E)])
    }

    @Test("a splice_insert out's end is the splice_insert return of the same event; an end or a null has none")
    func spliceInsert() throws {
        let out = try SpliceInfoSection.decode(Samples.spliceInsertOut)
        let end = try SpliceInfoSection(bytes: try #require(SpliceInfoSection.pairedEnd(of: out)))
        guard case .insert(let insert) = end.command else {
            Issue.record("\(end)")
            return
        }
        #expect(
            !insert.outOfNetwork && insert.immediate && insert.eventID == 0x4800_008F && insert.breakDuration == nil)
        #expect(end.cues == [.in(eventID: 0x4800_008F)])
        #expect(SpliceInfoSection.pairedEnd(of: try SpliceInfoSection.decode(Samples.placementEnd)) == nil)
        #expect(SpliceInfoSection.pairedEnd(of: [0xFC, 0x30]) == nil)
    }
}
