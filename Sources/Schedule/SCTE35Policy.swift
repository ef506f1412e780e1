import Foundation
import HLS
import SCTE35

/// What a channel does with the SCTE-35 it receives (`POST /channels/{channel}/scte35`): which segmentation types
/// place a break, which end one early, which cancel one, which are ignored, what a `splice_insert` does, and whether a
/// start that restricts delivery places a break. Kept in the log (`SCTE35PolicySet`), so it is versioned, audited and
/// replayed; a channel that never set one follows `standard`, the fixed rule Cueline applied before policies existed.
///
/// The file `cueline scte35 policy set` reads, and the payload the log keeps, is JSON:
///
///     {"place": ["0x22", "0x30", "0x34", "0x36"], "end": ["0x23", "0x31", "0x35", "0x37"], "cancel": [],
///      "ignore": ["0x10", "0x11", "0x20", "0x21", "0x38", "0x39", "0x3A", "0x3B"],
///      "splice_insert": "follow", "restricted": "place", "default_duration": 30}
///
/// A segmentation type in no list is ignored too (and said so); a descriptor with the cancel indicator always cancels
/// its event.
public struct SCTE35Policy: Hashable, Sendable {
    public enum Action: String, Hashable, Sendable, CaseIterable {
        case place, end, cancel, ignore
    }

    /// `splice_insert`: `follow` (out-of-network places a break, its return ends it, a cancel cancels) or `ignore`.
    public enum SpliceInsertRule: String, Hashable, Sendable, Codable, CaseIterable {
        case follow, ignore
    }

    /// A start whose descriptor restricts delivery (`delivery_not_restricted_flag` 0): `place` it (the restriction
    /// bits are kept with the received section), or `ignore` it.
    public enum RestrictedRule: String, Hashable, Sendable, Codable, CaseIterable {
        case place, ignore
    }

    /// Segmentation type ids by action, each sorted and listed once.
    public var place: [UInt8]
    public var end: [UInt8]
    public var cancel: [UInt8]
    public var ignore: [UInt8]
    public var spliceInsert: SpliceInsertRule
    public var restricted: RestrictedRule
    /// The break length for a start that gives none, or nil: such a start is refused unless the request says.
    public var defaultDurationMilliseconds: Int64?

    public init(
        place: [UInt8], end: [UInt8], cancel: [UInt8] = [], ignore: [UInt8] = [],
        spliceInsert: SpliceInsertRule = .follow, restricted: RestrictedRule = .place,
        defaultDurationMilliseconds: Int64? = nil
    ) {
        self.place = Array(Set(place)).sorted()
        self.end = Array(Set(end)).sorted()
        self.cancel = Array(Set(cancel)).sorted()
        self.ignore = Array(Set(ignore)).sorted()
        self.spliceInsert = spliceInsert
        self.restricted = restricted
        self.defaultDurationMilliseconds = defaultDurationMilliseconds
    }

    /// The rule before policies: every break start places (Break, Provider/Distributor Advertisement, Placement
    /// Opportunity, Ad Block), every break end ends, `splice_insert` is followed; overlays, programs, chapters and the
    /// rest are ignored.
    public static let standard = SCTE35Policy(
        place: Array(SegmentationType.breakStarts), end: Array(SegmentationType.breakEnds),
        ignore: [0x10, 0x11, 0x20, 0x21, 0x38, 0x39, 0x3A, 0x3B])

    /// What a segmentation type does under this policy (nil: in no list).
    public func action(for type: UInt8) -> Action? {
        if place.contains(type) { return .place }
        if end.contains(type) { return .end }
        if cancel.contains(type) { return .cancel }
        if ignore.contains(type) { return .ignore }
        return nil
    }

    public func validate() throws(ScheduleError) {
        var seen: [UInt8: Action] = [:]
        for (action, types) in [(Action.place, place), (.end, end), (.cancel, cancel), (.ignore, ignore)] {
            for type in types {
                if let earlier = seen[type] {
                    throw .invalidField(
                        "policy.\(action.rawValue)",
                        "\(Self.name(type)) is also in \(earlier.rawValue): a segmentation type has one action")
                }
                seen[type] = action
            }
        }
        if let duration = defaultDurationMilliseconds, !(1...Limits.maximumBreakMilliseconds).contains(duration) {
            throw .invalidField(
                "policy.default_duration",
                "must be more than 0 and at most \(DecimalNumber(milliseconds: Limits.maximumBreakMilliseconds)) seconds"
            )
        }
    }

    /// `0x34`.
    public static func name(_ type: UInt8) -> String { Signalling.name(type) }

    /// `0x34 Provider Placement Opportunity Start`: the name SCTE 35 table 23 gives, where there is one.
    public static func describe(_ type: UInt8) -> String {
        let names: [UInt8: String] = [
            0x00: "Not Indicated", 0x01: "Content Identification", 0x10: "Program Start", 0x11: "Program End",
            0x12: "Program Early Termination", 0x13: "Program Breakaway", 0x14: "Program Resumption",
            0x15: "Program Runover Planned", 0x16: "Program Runover Unplanned", 0x17: "Program Overlap Start",
            0x18: "Program Blackout Override", 0x19: "Program Join", 0x20: "Chapter Start", 0x21: "Chapter End",
            0x22: "Break Start", 0x23: "Break End", 0x24: "Opening Credit Start", 0x25: "Opening Credit End",
            0x26: "Closing Credit Start", 0x27: "Closing Credit End", 0x30: "Provider Advertisement Start",
            0x31: "Provider Advertisement End", 0x32: "Distributor Advertisement Start",
            0x33: "Distributor Advertisement End", 0x34: "Provider Placement Opportunity Start",
            0x35: "Provider Placement Opportunity End", 0x36: "Distributor Placement Opportunity Start",
            0x37: "Distributor Placement Opportunity End", 0x38: "Provider Overlay Placement Opportunity Start",
            0x39: "Provider Overlay Placement Opportunity End", 0x3A: "Distributor Overlay Placement Opportunity Start",
            0x3B: "Distributor Overlay Placement Opportunity End", 0x3C: "Provider Promo Start",
            0x3D: "Provider Promo End", 0x3E: "Distributor Promo Start", 0x3F: "Distributor Promo End",
            0x40: "Unscheduled Event Start", 0x41: "Unscheduled Event End", 0x42: "Alternate Content Opportunity Start",
            0x43: "Alternate Content Opportunity End", 0x44: "Provider Ad Block Start", 0x45: "Provider Ad Block End",
            0x46: "Distributor Ad Block Start", 0x47: "Distributor Ad Block End", 0x50: "Network Start",
            0x51: "Network End",
        ]
        return names[type].map { "\(name(type)) \($0)" } ?? name(type)
    }
}

// MARK: - The file and the log's payload

extension SCTE35Policy: Codable {
    private enum CodingKeys: String, CodingKey {
        case place, end, cancel, ignore
        case spliceInsert = "splice_insert"
        case restricted
        case defaultDuration = "default_duration"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func types(_ key: CodingKeys) throws -> [UInt8] {
            let texts = try container.decodeIfPresent([String].self, forKey: key) ?? []
            return try texts.enumerated().map { index, text in
                let digits = text.hasPrefix("0x") || text.hasPrefix("0X") ? text.dropFirst(2) : Substring(text)
                guard digits.count == 2, let value = UInt8(digits, radix: 16) else {
                    throw DecodingError.dataCorruptedError(
                        forKey: key, in: container,
                        debugDescription:
                            "\(key.stringValue)[\(index)]: \(text.debugDescription) is not a segmentation type such as 0x34"
                    )
                }
                return value
            }
        }
        var duration: Int64?
        if let seconds = try container.decodeIfPresent(DecimalNumber.self, forKey: .defaultDuration) {
            duration = seconds.checkedMilliseconds
            guard duration != nil else {
                throw DecodingError.dataCorruptedError(
                    forKey: .defaultDuration, in: container, debugDescription: "is not a number of seconds")
            }
        }
        func rule<Rule: RawRepresentable & CaseIterable>(_ key: CodingKeys, _ default: Rule) throws -> Rule
        where Rule.RawValue == String {
            guard let text = try container.decodeIfPresent(String.self, forKey: key) else { return `default` }
            guard let value = Rule(rawValue: text) else {
                throw DecodingError.dataCorruptedError(
                    forKey: key, in: container,
                    debugDescription:
                        "must be \(Rule.allCases.map(\.rawValue).joined(separator: " or ")) (got \(text.prefix(64).debugDescription))"
                )
            }
            return value
        }
        self.init(
            place: try types(.place), end: try types(.end), cancel: try types(.cancel), ignore: try types(.ignore),
            spliceInsert: try rule(.spliceInsert, SpliceInsertRule.follow),
            restricted: try rule(.restricted, RestrictedRule.place), defaultDurationMilliseconds: duration)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(place.map(Self.name), forKey: .place)
        try container.encode(end.map(Self.name), forKey: .end)
        try container.encode(cancel.map(Self.name), forKey: .cancel)
        try container.encode(ignore.map(Self.name), forKey: .ignore)
        try container.encode(spliceInsert, forKey: .spliceInsert)
        try container.encode(restricted, forKey: .restricted)
        // Seconds as a JSON number, as the file gives them (whole milliseconds: a Double holds them exactly).
        try container.encodeIfPresent(defaultDurationMilliseconds.map { Double($0) / 1000 }, forKey: .defaultDuration)
    }

    /// The policy a file holds, checked: a key it does not know, a malformed type or value, a type in two lists
    /// are refused naming the field.
    public static func parse(json data: Data) throws(ScheduleError) -> SCTE35Policy {
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw .invalidField("policy", "is not JSON: \(error.localizedDescription)")
        }
        guard let keys = (object as? [String: Any])?.keys else {
            throw .invalidField("policy", "must be a JSON object")
        }
        let known = Set(["place", "end", "cancel", "ignore", "splice_insert", "restricted", "default_duration"])
        if let unknown = keys.sorted().first(where: { !known.contains($0) }) {
            throw .invalidField(
                // A key is the file's text: escaped and cut, never printed raw to an operator's terminal.
                "policy.\(unknown.prefix(64).escapingControlCharacters)",
                "is not a policy key (\(known.sorted().joined(separator: ", ")))")
        }
        let policy: SCTE35Policy
        do {
            policy = try JSONDecoder().decode(SCTE35Policy.self, from: data)
        } catch let DecodingError.dataCorrupted(context) {
            throw .invalidField(Self.field(context.codingPath), context.debugDescription)
        } catch let DecodingError.typeMismatch(_, context) {
            throw .invalidField(Self.field(context.codingPath), "has the wrong type: \(context.debugDescription)")
        } catch {
            throw .invalidField("policy", "\(error)")
        }
        try policy.validate()
        return policy
    }

    private static func field(_ path: [any CodingKey]) -> String {
        (["policy"] + path.filter { $0.intValue == nil }.map(\.stringValue)).joined(separator: ".")
    }
}
