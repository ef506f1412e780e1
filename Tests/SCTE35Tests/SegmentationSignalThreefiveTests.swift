import Foundation
import SCTE35
import TestSupport
import Testing

/// The encoder checked by an independent decoder: threefive (PyPI), through scripts/ci/check-scte35-threefive.py.
/// scripts/test.sh installs threefive (`ensure_threefive` in scripts/lib/common.sh); without it this suite skips.
@Suite("SCTE-35 encoder: threefive decodes what it writes")
struct SegmentationSignalThreefiveTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/ci/check-scte35-threefive.py").path

    static let threefiveImports: Bool = {
        (try? run(["python3", "-c", "import threefive"]))?.status == 0
    }()

    static func run(_ arguments: [String], input: String = "") throws -> (status: Int32, output: Data) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.standardError
        try process.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, output)
    }

    /// Every type with and without a duration, their ends, immediate and timed, break ids of every shape, the
    /// widest values, and random signals.
    static func signals() throws -> [SegmentationSignal] {
        var signals: [SegmentationSignal] = []
        for (index, type) in SegmentationType.allCases.enumerated() {
            let start = try SegmentationSignal(
                channelID: "news", breakID: "brk-\(index)", type: type, durationTicks90k: 2_700_000,
                ptsTime: 0x0_72BD_0050)
            signals += [start, try start.ending(), try start.ending(at: 0x1_0000_0000)]
        }
        signals.append(
            try SegmentationSignal(
                channelID: "sport-1", breakID: "pause-café ☕", type: .breakStart, durationTicks90k: nil))
        signals.append(
            try SegmentationSignal(
                eventID: 0xFFFF_FFFE, type: .distributorPlacementOpportunityStart, durationTicks90k: (1 << 40) - 1,
                upid: SegmentationSignal.upid(breakID: String(repeating: "z", count: 229)), ptsTime: (1 << 33) - 1))
        signals.append(try SegmentationSignal(eventID: 0, type: .providerAdvertisementEnd, upid: Array("CUEL".utf8)))
        var generator = SplitMix64(seed: 35)
        for _ in 0..<60 { signals.append(try SegmentationSignal.random(using: &generator)) }
        return signals
    }

    @Test(
        "type, duration, event id, UPID and CRC as threefive reads them",
        .enabled(if: threefiveImports, "python3 cannot import threefive: pip install threefive (scripts/test.sh does)")
    )
    func threefiveAgrees() throws {
        let signals = try Self.signals()
        let result = try Self.run(["python3", Self.script], input: signals.map(\.hex).joined(separator: "\n"))
        let lines = String(decoding: result.output, as: UTF8.self).split(separator: "\n")
        try #require(lines.count == signals.count, "one JSON line per section")
        for (signal, line) in zip(signals, lines) {
            let decoded = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            try check(signal, decoded)
        }
        #expect(result.status == 0, "the script exits 0 when every section decodes with a matching CRC")
    }

    func check(_ signal: SegmentationSignal, _ decoded: [String: Any]) throws {
        let context = Comment(rawValue: signal.hex)
        #expect(decoded["decoded"] as? Bool == true, context)
        #expect(decoded["crc_ok"] as? Bool == true, context)
        let decode = try #require(decoded["decode"] as? [String: Any], context)
        let info = try #require(decode["info_section"] as? [String: Any], context)
        #expect(info["crc"].flatMap(integer) == decoded["crc_stated"].flatMap(integer), context)
        let command = try #require(decode["command"] as? [String: Any], context)
        #expect(command["command_type"] as? Int == 6, context)
        #expect(command["time_specified_flag"] as? Bool == (signal.ptsTime != nil), context)
        if let ptsTime = signal.ptsTime {
            // threefive gives seconds rounded to microseconds: within a tick.
            let seconds = try #require(command["pts_time"] as? Double, context)
            #expect(abs(seconds * 90_000 - Double(ptsTime)) < 1, context)
        }
        let descriptors = try #require(decode["descriptors"] as? [[String: Any]], context)
        try #require(descriptors.count == 1, context)
        let descriptor = descriptors[0]
        #expect(descriptor["identifier"] as? String == "CUEI", context)
        #expect(descriptor["segmentation_type_id"] as? Int == Int(signal.type.rawValue), context)
        #expect(descriptor["segmentation_event_id"].flatMap(integer) == UInt64(signal.eventID), context)
        #expect(descriptor["segmentation_event_cancel_indicator"] as? Bool == false, context)
        #expect(descriptor["delivery_not_restricted_flag"] as? Bool == true, context)
        #expect(descriptor["segmentation_duration_flag"] as? Bool == (signal.durationTicks90k != nil), context)
        if let duration = signal.durationTicks90k {
            let seconds = try #require(descriptor["segmentation_duration"] as? Double, context)
            #expect(abs(seconds * 90_000 - Double(duration)) < 1, context)
        }
        #expect(descriptor["segmentation_upid_type"] as? Int == 0x0C, context)
        #expect(descriptor["segmentation_upid_length"] as? Int == signal.upid.count, context)
        let upid = try #require(descriptor["segmentation_upid"] as? [String: Any], context)
        #expect(upid["format_identifier"] as? String == "CUEL", context)
        // threefive writes the private bytes as one hex number, leading zero bytes dropped: compare as numbers,
        // with the length checked above.
        let privateHex = try #require(upid["private_data"] as? String, context)
        #expect(hexDigitsEqual(privateHex, Array(signal.upid.dropFirst(4))), context)
        #expect(descriptor["segment_num"] as? Int == 0 && descriptor["segments_expected"] as? Int == 0, context)
    }
}

/// A JSON number, or a "0x…" string as threefive writes ids and CRCs.
private func integer(_ value: Any) -> UInt64? {
    if let number = value as? Int { return UInt64(exactly: number) }
    guard let text = value as? String, text.hasPrefix("0x") else { return nil }
    return UInt64(text.dropFirst(2), radix: 16)
}

/// Whether "0x…" names the same number as the bytes read big-endian (any length; leading zeros aside).
private func hexDigitsEqual(_ text: String, _ bytes: [UInt8]) -> Bool {
    guard text.hasPrefix("0x") else { return false }
    let digits = String(text.dropFirst(2).lowercased().drop { $0 == "0" })
    let expected = bytes.map { $0 < 0x10 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    return digits == String(expected.drop { $0 == "0" })
}
