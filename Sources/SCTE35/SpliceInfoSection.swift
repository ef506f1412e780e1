/// An SCTE-35 `splice_info_section` (ANSI/SCTE 35, section 9.6), as far as a break schedule needs it:
/// `splice_insert`, `time_signal` and segmentation descriptors are decoded; other commands and descriptors are
/// kept by type. The CRC_32 is checked before anything else is believed. Pure; no Foundation.
public struct SpliceInfoSection: Hashable, Sendable {
    public var sapType: UInt8
    public var protocolVersion: UInt8
    public var ptsAdjustment: UInt64
    public var tier: UInt16
    public var command: SpliceCommand
    public var descriptors: [SpliceDescriptor]
    /// The section exactly as received, CRC included: what `SCTE35-OUT`/`SCTE35-IN` carry.
    public var bytes: [UInt8]

    /// Parses one section. Throws `SCTE35Error` naming the field and byte offset where it went wrong.
    public init(bytes input: [UInt8]) throws(SCTE35Error) {
        var reader = BitReader(input)
        let tableID = try reader.bits(8, "table_id")
        guard tableID == 0xFC else { throw .notSpliceInfo(tableID: UInt8(tableID)) }
        let syntaxIndicator = try reader.bits(1, "section_syntax_indicator")
        let privateIndicator = try reader.bits(1, "private_indicator")
        guard syntaxIndicator == 0, privateIndicator == 0 else {
            throw .invalid(field: "section_syntax_indicator", offset: 1, reason: "must be 0 in a splice_info_section")
        }
        sapType = UInt8(try reader.bits(2, "sap_type"))
        let sectionLength = Int(try reader.bits(12, "section_length"))
        guard sectionLength + 3 == input.count else {
            throw .invalid(
                field: "section_length", offset: 1,
                reason: "says \(sectionLength + 3) bytes in all but \(input.count) were given")
        }
        guard input.count >= 17 else { throw .truncated(field: "CRC_32", offset: input.count) }
        let stated = input.suffix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let computed = CRC32MPEG2.checksum(input.dropLast(4))
        guard stated == computed else { throw .crcMismatch(stated: stated, computed: computed) }

        protocolVersion = UInt8(try reader.bits(8, "protocol_version"))
        guard protocolVersion == 0 else {
            throw .unsupported("protocol_version \(protocolVersion); only 0 is defined")
        }
        let encrypted = try reader.bits(1, "encrypted_packet")
        _ = try reader.bits(6, "encryption_algorithm")
        guard encrypted == 0 else { throw .unsupported("encrypted sections") }
        ptsAdjustment = try reader.bits(33, "pts_adjustment")
        _ = try reader.bits(8, "cw_index")
        tier = UInt16(try reader.bits(12, "tier"))
        let commandLength = Int(try reader.bits(12, "splice_command_length"))
        let commandType = UInt8(try reader.bits(8, "splice_command_type"))
        let commandStart = reader.byteOffset
        let commandEnd = commandLength == 0xFFF ? nil : commandStart + commandLength
        guard (commandEnd ?? 0) <= input.count - 4 else {
            throw .truncated(field: "splice_command_length", offset: commandStart - 2)
        }
        command = try SpliceCommand.parse(type: commandType, &reader, commandEnd: commandEnd)
        // 0xFFF is the legacy "unknown length"; otherwise the command must be exactly as long as stated.
        if commandLength != 0xFFF && reader.byteOffset - commandStart != commandLength {
            throw .invalid(
                field: "splice_command_length", offset: commandStart - 2,
                reason: "says \(commandLength) bytes but the command took \(reader.byteOffset - commandStart)")
        }
        let loopLength = Int(try reader.bits(16, "descriptor_loop_length"))
        let loopEnd = reader.byteOffset + loopLength
        guard loopEnd <= input.count - 4 else {
            throw .truncated(field: "descriptor_loop_length", offset: reader.byteOffset - 2)
        }
        var descriptors: [SpliceDescriptor] = []
        while reader.byteOffset < loopEnd {
            descriptors.append(try SpliceDescriptor.parse(&reader, limit: loopEnd))
        }
        self.descriptors = descriptors
        bytes = input
    }

    /// Parses a section given as hex (optionally `0x`-prefixed) or base64, the two ways automation sends it.
    public init(text: String) throws(SCTE35Error) {
        try self.init(bytes: try SpliceInfoSection.decode(text))
    }

    /// Hex when every character is a hex digit (after an optional `0x`), otherwise base64.
    public static func decode(_ text: String) throws(SCTE35Error) -> [UInt8] {
        let trimmed = text.filter { !$0.isWhitespace }
        let body = trimmed.hasPrefix("0x") || trimmed.hasPrefix("0X") ? String(trimmed.dropFirst(2)) : trimmed
        if !body.isEmpty, body.count % 2 == 0, body.allSatisfy(\.isHexDigit) {
            var bytes: [UInt8] = []
            var index = body.startIndex
            while index < body.endIndex {
                let next = body.index(index, offsetBy: 2)
                bytes.append(UInt8(body[index..<next], radix: 16)!)
                index = next
            }
            return bytes
        }
        guard let bytes = Base64.decode(trimmed) else {
            throw .badEncoding("is neither hex nor base64")
        }
        return bytes
    }
}

public enum SpliceCommand: Hashable, Sendable {
    case null
    case insert(SpliceInsert)
    case timeSignal(ptsTime: UInt64?)
    case bandwidthReservation
    case privateCommand(identifier: UInt32)

    static func parse(type: UInt8, _ reader: inout BitReader, commandEnd: Int?) throws(SCTE35Error) -> SpliceCommand {
        switch type {
        case 0x00: return .null
        case 0x05: return .insert(try SpliceInsert(&reader))
        case 0x06: return .timeSignal(ptsTime: try readSpliceTime(&reader))
        case 0x07: return .bandwidthReservation
        case 0xFF:
            let identifier = UInt32(try reader.bits(32, "identifier"))
            // The private bytes run to the end of the command; skip them by the stated length.
            if let end = commandEnd { reader.seek(byte: end) }
            return .privateCommand(identifier: identifier)
        default:
            throw .unsupported("splice_command_type 0x\(hex(type)); send splice_insert or time_signal")
        }
    }
}

/// `splice_insert()` (section 9.7.3).
public struct SpliceInsert: Hashable, Sendable {
    public var eventID: UInt32
    public var cancel: Bool
    public var outOfNetwork: Bool
    public var programSplice: Bool
    public var immediate: Bool
    public var ptsTime: UInt64?
    /// `break_duration()` in 90 kHz ticks, when given.
    public var breakDuration: UInt64?
    public var autoReturn: Bool
    public var uniqueProgramID: UInt16
    public var availNum: UInt8
    public var availsExpected: UInt8

    init(_ reader: inout BitReader) throws(SCTE35Error) {
        eventID = UInt32(try reader.bits(32, "splice_event_id"))
        cancel = try reader.bits(1, "splice_event_cancel_indicator") == 1
        _ = try reader.bits(7, "reserved")
        outOfNetwork = false
        programSplice = true
        immediate = false
        autoReturn = false
        uniqueProgramID = 0
        availNum = 0
        availsExpected = 0
        guard !cancel else { return }
        outOfNetwork = try reader.bits(1, "out_of_network_indicator") == 1
        programSplice = try reader.bits(1, "program_splice_flag") == 1
        let durationFlag = try reader.bits(1, "duration_flag") == 1
        immediate = try reader.bits(1, "splice_immediate_flag") == 1
        _ = try reader.bits(4, "reserved")
        if programSplice && !immediate {
            ptsTime = try readSpliceTime(&reader)
        }
        if !programSplice {
            let count = try reader.bits(8, "component_count")
            for _ in 0..<count {
                _ = try reader.bits(8, "component_tag")
                if !immediate { _ = try readSpliceTime(&reader) }
            }
        }
        if durationFlag {
            autoReturn = try reader.bits(1, "auto_return") == 1
            _ = try reader.bits(6, "reserved")
            breakDuration = try reader.bits(33, "duration")
        }
        uniqueProgramID = UInt16(try reader.bits(16, "unique_program_id"))
        availNum = UInt8(try reader.bits(8, "avail_num"))
        availsExpected = UInt8(try reader.bits(8, "avails_expected"))
    }
}

/// `splice_time()`: the PTS when `time_specified_flag` is set.
func readSpliceTime(_ reader: inout BitReader) throws(SCTE35Error) -> UInt64? {
    if try reader.bits(1, "time_specified_flag") == 1 {
        _ = try reader.bits(6, "reserved")
        return try reader.bits(33, "pts_time")
    }
    _ = try reader.bits(7, "reserved")
    return nil
}

public enum SpliceDescriptor: Hashable, Sendable {
    case segmentation(SegmentationDescriptor)
    /// Any other descriptor (avail, DTMF, time, audio, private), kept by tag and identifier.
    case other(tag: UInt8, identifier: UInt32)

    static func parse(_ reader: inout BitReader, limit: Int) throws(SCTE35Error) -> SpliceDescriptor {
        let start = reader.byteOffset
        let tag = UInt8(try reader.bits(8, "splice_descriptor_tag"))
        let length = Int(try reader.bits(8, "descriptor_length"))
        let end = reader.byteOffset + length
        guard end <= limit else { throw .truncated(field: "descriptor_length", offset: start + 1) }
        guard length >= 4 else {
            throw .invalid(
                field: "descriptor_length", offset: start + 1,
                reason: "is \(length); a descriptor holds at least its identifier")
        }
        let identifier = UInt32(try reader.bits(32, "identifier"))
        defer { reader.seek(byte: end) }
        guard tag == 0x02, identifier == 0x4355_4549 else { return .other(tag: tag, identifier: identifier) }
        var sub = BitReader(reader.bytes, from: reader.byteOffset, to: end)
        return .segmentation(try SegmentationDescriptor(&sub))
    }
}

/// `segmentation_descriptor()` (section 10.3.3).
public struct SegmentationDescriptor: Hashable, Sendable {
    public var eventID: UInt32
    public var cancel: Bool
    /// The five restriction bits (web delivery, no regional blackout, archive, device restrictions) when
    /// `delivery_not_restricted_flag` is 0; nil when delivery is not restricted.
    public var deliveryRestrictions: UInt8?
    /// `segmentation_duration` in 90 kHz ticks, when given.
    public var duration: UInt64?
    public var upidType: UInt8
    public var upid: [UInt8]
    public var typeID: UInt8
    public var segmentNum: UInt8
    public var segmentsExpected: UInt8
    public var subSegmentNum: UInt8?
    public var subSegmentsExpected: UInt8?

    init(_ reader: inout BitReader) throws(SCTE35Error) {
        eventID = UInt32(try reader.bits(32, "segmentation_event_id"))
        cancel = try reader.bits(1, "segmentation_event_cancel_indicator") == 1
        _ = try reader.bits(7, "reserved")
        upidType = 0
        upid = []
        typeID = 0
        segmentNum = 0
        segmentsExpected = 0
        guard !cancel else { return }
        let programSegmentation = try reader.bits(1, "program_segmentation_flag") == 1
        let durationFlag = try reader.bits(1, "segmentation_duration_flag") == 1
        let deliveryNotRestricted = try reader.bits(1, "delivery_not_restricted_flag") == 1
        let restrictions = UInt8(try reader.bits(5, deliveryNotRestricted ? "reserved" : "delivery restrictions"))
        deliveryRestrictions = deliveryNotRestricted ? nil : restrictions
        if !programSegmentation {
            let count = try reader.bits(8, "component_count")
            for _ in 0..<count {
                _ = try reader.bits(8, "component_tag")
                _ = try reader.bits(7, "reserved")
                _ = try reader.bits(33, "pts_offset")
            }
        }
        if durationFlag { duration = try reader.bits(40, "segmentation_duration") }
        upidType = UInt8(try reader.bits(8, "segmentation_upid_type"))
        let upidLength = Int(try reader.bits(8, "segmentation_upid_length"))
        upid = try reader.bytes(upidLength, "segmentation_upid")
        typeID = UInt8(try reader.bits(8, "segmentation_type_id"))
        segmentNum = UInt8(try reader.bits(8, "segment_num"))
        segmentsExpected = UInt8(try reader.bits(8, "segments_expected"))
        // Present for placement opportunity starts since SCTE 35 2016; older encoders leave them out.
        if [0x34, 0x36, 0x38, 0x3A].contains(typeID), reader.remainingBytes >= 2 {
            subSegmentNum = UInt8(try reader.bits(8, "sub_segment_num"))
            subSegmentsExpected = UInt8(try reader.bits(8, "sub_segments_expected"))
        }
    }
}

/// What went wrong, with the field and the byte offset, for a 422 an engineer can act on.
public enum SCTE35Error: Error, Hashable, Sendable, CustomStringConvertible {
    case badEncoding(String)
    case notSpliceInfo(tableID: UInt8)
    case truncated(field: String, offset: Int)
    case invalid(field: String, offset: Int, reason: String)
    case crcMismatch(stated: UInt32, computed: UInt32)
    case unsupported(String)
    /// A value the encoder cannot write: too long or too wide for its field.
    case unencodable(field: String, reason: String)

    public var description: String {
        switch self {
        case .badEncoding(let reason): return "the section \(reason)"
        case .notSpliceInfo(let tableID):
            return "table_id is 0x\(hex(tableID)), not 0xFC: this is not a splice_info_section"
        case .truncated(let field, let offset): return "the section ends inside \(field) at byte \(offset)"
        case .invalid(let field, let offset, let reason): return "\(field) at byte \(offset) \(reason)"
        case .crcMismatch(let stated, let computed):
            return "CRC_32 is 0x\(hex(stated)) but the bytes give 0x\(hex(computed)): the section is corrupt"
        case .unsupported(let what): return "unsupported: \(what)"
        case .unencodable(let field, let reason): return "cannot write \(field): \(reason)"
        }
    }
}

func hex(_ value: some FixedWidthInteger) -> String {
    let digits = String(value, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, value.bitWidth / 4 - digits.count)) + digits
}
