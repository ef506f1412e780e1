import SCTE35
import Testing

/// Sections from the SCTE 35 standard's sample messages (section 14), with their CRC_32 as published.
enum Samples {
    /// 14.1 time_signal – Placement Opportunity Start, 307 s.
    static let placementStart = "/DA0AAAAAAAA///wBQb+cr0AUAAeAhxDVUVJSAAAjn/PAAGlmbAICAAAAAAsoKGKNAIAmsnRfg=="
    /// 14.2 splice_insert, out of network, 60.29 s with auto return.
    static let spliceInsertOut = "/DAvAAAAAAAA///wFAVIAACPf+/+c2nALv4AUsz1AAAAAAAKAAhDVUVJAAABNWLbowo="
    /// 14.3 time_signal – Placement Opportunity End.
    static let placementEnd = "/DAvAAAAAAAA///wBQb+dGKQoAAZAhdDVUVJSAAAjn+fCAgAAAAALKChijUCAKnMZ1g="
    /// 14.4 time_signal – Program End and Program Start in one section (two descriptors).
    static let programEndStart =
        "fc3048000000000000fffff00506fe7a4d88b60032021743554549480000187f9f0808000000002ccbc344110000021743554549480000197f9f0808000000002ca4dba01000009972e343"
    /// time_signal – Program Start with an Ad-ID UPID and a 30.03 s duration.
    static let programStartAdID = "/DA4AAAAAAAA///wBQb+AAAAAAAiAiBDVUVJAAAAA3//AAApPWwDDEFCQ0QwMTIzNDU2SBAAAGgCL9A="
    /// splice_insert, immediate, 60 s.
    static let spliceInsertImmediate = "/DAgAAAAAAAAAP/wDwUAAAABf//+AFJlwAABAAAAAMOOklg="
}

@Suite("SCTE-35 splice_info_section")
struct SpliceInfoSectionTests {
    @Test("time_signal with a placement opportunity start: PTS, event id, duration, UPID, type")
    func placementStart() throws {
        let section = try SpliceInfoSection(text: Samples.placementStart)
        #expect(section.bytes.count == 55)
        guard case .timeSignal(let pts) = section.command else { Issue.record("not a time_signal"); return }
        #expect(pts == 0x0_72BD_0050)
        #expect(section.descriptors.count == 1)
        guard case .segmentation(let descriptor) = section.descriptors.first else {
            Issue.record("no segmentation descriptor"); return
        }
        #expect(descriptor.eventID == 0x4800_008E)
        #expect(descriptor.typeID == 0x34)
        #expect(descriptor.duration == 0x00_01A5_99B0)
        #expect(descriptor.upidType == 0x08)
        #expect(descriptor.upid == [0x00, 0x00, 0x00, 0x00, 0x2C, 0xA0, 0xA1, 0x8A])
        #expect(descriptor.segmentNum == 2)
        #expect(section.cues == [.out(eventID: 0x4800_008E, durationMilliseconds: 307_000)])
    }

    @Test("the matching placement opportunity end is a return for the same event id")
    func placementEnd() throws {
        let section = try SpliceInfoSection(text: Samples.placementEnd)
        #expect(section.cues == [.in(eventID: 0x4800_008E)])
    }

    @Test("splice_insert out of network with a break duration and auto return")
    func spliceInsertOut() throws {
        let section = try SpliceInfoSection(text: Samples.spliceInsertOut)
        guard case .insert(let insert) = section.command else { Issue.record("not a splice_insert"); return }
        #expect(insert.eventID == 0x4800_008F)
        #expect(insert.outOfNetwork && insert.programSplice && !insert.immediate && insert.autoReturn)
        #expect(insert.ptsTime == 0x0_7369_C02E)
        #expect(insert.breakDuration == 0x0_0052_CCF5)
        #expect(section.descriptors == [.other(tag: 0x00, identifier: 0x4355_4549)])
        #expect(section.cues == [.out(eventID: 0x4800_008F, durationMilliseconds: 60_294)])
    }

    @Test("an immediate splice_insert has no splice time")
    func immediate() throws {
        let section = try SpliceInfoSection(text: Samples.spliceInsertImmediate)
        guard case .insert(let insert) = section.command else { Issue.record("not a splice_insert"); return }
        #expect(insert.immediate && insert.ptsTime == nil)
        #expect(section.cues == [.out(eventID: 1, durationMilliseconds: 60_000)])
    }

    @Test("program boundaries and content identification are not breaks")
    func notBreaks() throws {
        let twoDescriptors = try SpliceInfoSection(text: Samples.programEndStart)
        #expect(twoDescriptors.descriptors.count == 2)
        #expect(twoDescriptors.cues.isEmpty)
        let adID = try SpliceInfoSection(text: Samples.programStartAdID)
        guard case .segmentation(let descriptor) = adID.descriptors.first else {
            Issue.record("no segmentation descriptor"); return
        }
        #expect(String(decoding: descriptor.upid, as: UTF8.self) == "ABCD0123456H")
        #expect(descriptor.typeID == 0x10)
        #expect(adID.cues.isEmpty)
    }

    @Test("hex with or without 0x and base64 decode to the same section")
    func encodings() throws {
        let base64 = try SpliceInfoSection(text: Samples.spliceInsertOut)
        let hexText = base64.bytes.map {
            String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16)
        }.joined()
        #expect(try SpliceInfoSection(text: hexText) == base64)
        #expect(try SpliceInfoSection(text: "0x" + hexText.uppercased()) == base64)
    }

    @Test("a cancel is a cancel, whatever else the section says")
    func cancel() throws {
        // splice_insert for event 0x4800008F with splice_event_cancel_indicator set, CRC computed here.
        var bytes: [UInt8] = [
            0xFC, 0x30, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xF0, 0x05, 0x05, 0x48, 0x00, 0x00, 0x8F,
            0xFF, 0x00, 0x00,
        ]
        bytes[2] = UInt8(bytes.count + 4 - 3)
        let crc = CRC32MPEG2.checksum(bytes)
        bytes += [UInt8(crc >> 24), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)]
        #expect(try SpliceInfoSection(bytes: bytes).cues == [.cancel(eventID: 0x4800_008F)])
    }

    @Test("every corrupted byte is caught by the CRC")
    func corruption() throws {
        let good = try SpliceInfoSection(text: Samples.placementStart).bytes
        for index in 3..<good.count {
            var bad = good
            bad[index] ^= 0x10
            #expect(throws: SCTE35Error.self) { try SpliceInfoSection(bytes: bad) }
        }
    }

    @Test(
        "malformed input is refused with the field and the reason",
        arguments: [
            ("", "neither hex nor base64"),
            ("not base64!", "neither hex nor base64"),
            ("fc", "ends inside"),
            ("0030000000", "not a splice_info_section"),
            ("/DAvAAAAAAAA///wBQb+dGKQoAAZAhdDVUVJSAAAjn+fCAgAAAAALKChijUCAKnMZ1c=", "CRC_32"),
        ])
    func malformed(text: String, mention: String) {
        do {
            _ = try SpliceInfoSection(text: text)
            Issue.record("\(text) was accepted")
        } catch {
            #expect(error.description.contains(mention), "\(error.description)")
        }
    }

    @Test("truncating a valid section anywhere is an error, never a crash")
    func truncation() throws {
        let good = try SpliceInfoSection(text: Samples.programEndStart).bytes
        for length in 0..<good.count {
            #expect(throws: SCTE35Error.self) { try SpliceInfoSection(bytes: Array(good.prefix(length))) }
        }
    }
}
