@testable import SCTE35
import TestSupport
import Testing

extension SegmentationSignal {
    /// A signal drawn from the whole range of every field: UPIDs of 4 to 233 bytes, durations and PTS up to their
    /// widths, no duration and no PTS (immediate) among them.
    static func random(using generator: inout SplitMix64) throws -> SegmentationSignal {
        let upidLength = Int.random(in: 0...(maximumUPIDLength - 4), using: &generator)
        let upid = formatIdentifier + (0..<upidLength).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return try SegmentationSignal(
            eventID: UInt32.random(in: 0...UInt32.max, using: &generator),
            type: SegmentationType.allCases.randomElement(using: &generator)!,
            durationTicks90k: Bool.random(using: &generator)
                ? UInt64.random(in: 0..<(1 << 40), using: &generator) : nil,
            upid: upid,
            ptsTime: Bool.random(using: &generator) ? UInt64.random(in: 0..<(1 << 33), using: &generator) : nil)
    }
}

@Suite("SCTE-35 encoder: round trips through the parser")
struct SegmentationSignalRoundTripTests {
    @Test("2,000 random signals parse back to the same values, CRC checked", arguments: [1, 42, 2026] as [UInt64])
    func roundTrip(seed: UInt64) throws {
        var generator = SplitMix64(seed: seed)
        for _ in 0..<2_000 {
            let signal = try SegmentationSignal.random(using: &generator)
            let bytes = signal.encoded()
            let section = try SpliceInfoSection(bytes: bytes)
            #expect(SegmentationSignal(section: section) == signal)
            #expect(section.bytes == bytes && section.sapType == 3 && section.tier == 0xFFF)
            #expect(section.ptsAdjustment == 0)
            guard case .timeSignal(let ptsTime) = section.command, section.descriptors.count == 1,
                case .segmentation(let descriptor) = section.descriptors[0]
            else {
                Issue.record("not a time_signal with one segmentation descriptor: \(signal.hex)")
                return
            }
            #expect(ptsTime == signal.ptsTime)
            #expect(descriptor.eventID == signal.eventID && !descriptor.cancel)
            #expect(descriptor.typeID == signal.type.rawValue && descriptor.duration == signal.durationTicks90k)
            #expect(descriptor.upidType == 0x0C && descriptor.upid == signal.upid)
            #expect(descriptor.deliveryRestrictions == nil)
            #expect(descriptor.segmentNum == 0 && descriptor.segmentsExpected == 0)
            let subSegments =
                signal.type == .providerPlacementOpportunityStart
                || signal.type == .distributorPlacementOpportunityStart
            #expect((descriptor.subSegmentNum, descriptor.subSegmentsExpected) == (subSegments ? (0, 0) : (nil, nil)))
            let cue: Cue =
                signal.type.isStart
                ? .out(eventID: signal.eventID, durationMilliseconds: signal.durationTicks90k.map(ticksToMilliseconds))
                : .in(eventID: signal.eventID)
            #expect(section.cues == [cue])
            #expect(try SpliceInfoSection(text: signal.hex).bytes == bytes)
            #expect(try SpliceInfoSection(text: signal.base64).bytes == bytes)
        }
    }

    @Test("base64 of every length round-trips through the parser's decoder")
    func base64() {
        var generator = SplitMix64(seed: 7)
        for length in 1..<64 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(Base64.decode(Base64.encode(bytes)) == bytes)
        }
        #expect(Base64.encode([0x66, 0x6F, 0x6F, 0x62, 0x61]) == "Zm9vYmE=")  // RFC 4648 section 10
        #expect(Base64.encode([0x66, 0x6F, 0x6F, 0x62]) == "Zm9vYg==")
    }
}
