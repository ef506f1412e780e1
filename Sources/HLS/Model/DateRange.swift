/// `EXT-X-DATERANGE` (§4.4.5.1) with the Interstitials attributes of Appendix D, typed.
///
/// The same type describes an augmenting tag (same ID, CLASS and START-DATE plus attributes added later):
/// what it carries is exactly what is rendered, in a fixed attribute order.
public struct DateRange: Hashable, Sendable {
    public var id: String
    public var classAttribute: String?
    public var startDate: Timestamp?
    public var cue: [Cue]?
    public var endDate: Timestamp?
    public var duration: DecimalNumber?
    public var plannedDuration: DecimalNumber?
    // Interstitials (Appendix D)
    public var assetURI: String?
    public var assetList: String?
    public var resumeOffset: DecimalNumber?
    public var playoutLimit: DecimalNumber?
    public var snap: [Snap]?
    public var restrict: [Restriction]?
    public var contentMayVary: Bool?
    public var timelineOccupies: TimelineOccupies?
    public var timelineStyle: TimelineStyle?
    public var skipControlOffset: DecimalNumber?
    public var skipControlDuration: DecimalNumber?
    public var skipControlLabelID: String?
    /// Other `X-` attributes, in the order given.
    public var clientAttributes: [ClientAttribute]
    public var scte35Command: HexBytes?
    public var scte35Out: HexBytes?
    public var scte35In: HexBytes?
    public var endOnNext: Bool

    public static let interstitialClass = "com.apple.hls.interstitial"

    public init(
        id: String, classAttribute: String? = nil, startDate: Timestamp? = nil, cue: [Cue]? = nil,
        endDate: Timestamp? = nil, duration: DecimalNumber? = nil, plannedDuration: DecimalNumber? = nil,
        assetURI: String? = nil, assetList: String? = nil, resumeOffset: DecimalNumber? = nil,
        playoutLimit: DecimalNumber? = nil, snap: [Snap]? = nil, restrict: [Restriction]? = nil,
        contentMayVary: Bool? = nil, timelineOccupies: TimelineOccupies? = nil, timelineStyle: TimelineStyle? = nil,
        skipControlOffset: DecimalNumber? = nil, skipControlDuration: DecimalNumber? = nil,
        skipControlLabelID: String? = nil, clientAttributes: [ClientAttribute] = [], scte35Command: HexBytes? = nil,
        scte35Out: HexBytes? = nil, scte35In: HexBytes? = nil, endOnNext: Bool = false
    ) {
        self.id = id
        self.classAttribute = classAttribute
        self.startDate = startDate
        self.cue = cue
        self.endDate = endDate
        self.duration = duration
        self.plannedDuration = plannedDuration
        self.assetURI = assetURI
        self.assetList = assetList
        self.resumeOffset = resumeOffset
        self.playoutLimit = playoutLimit
        self.snap = snap
        self.restrict = restrict
        self.contentMayVary = contentMayVary
        self.timelineOccupies = timelineOccupies
        self.timelineStyle = timelineStyle
        self.skipControlOffset = skipControlOffset
        self.skipControlDuration = skipControlDuration
        self.skipControlLabelID = skipControlLabelID
        self.clientAttributes = clientAttributes
        self.scte35Command = scte35Command
        self.scte35Out = scte35Out
        self.scte35In = scte35In
        self.endOnNext = endOnNext
    }

    public var isInterstitial: Bool { classAttribute == Self.interstitialClass }

    public enum Cue: String, Hashable, Sendable, CaseIterable, Codable {
        case pre = "PRE", post = "POST", once = "ONCE"
    }

    public enum Snap: String, Hashable, Sendable, CaseIterable, Codable {
        case out = "OUT", `in` = "IN"
    }

    public enum Restriction: String, Hashable, Sendable, CaseIterable, Codable {
        case skip = "SKIP", jump = "JUMP"
    }

    public enum TimelineOccupies: String, Hashable, Sendable, CaseIterable, Codable {
        case point = "POINT", range = "RANGE"
    }

    public enum TimelineStyle: String, Hashable, Sendable, CaseIterable, Codable {
        case highlight = "HIGHLIGHT", primary = "PRIMARY"
    }
}

/// A client-defined `X-<NAME>` attribute.
public struct ClientAttribute: Hashable, Sendable, Codable {
    /// Including the `X-` prefix: `X-COM-EXAMPLE-AD-ID`.
    public var name: String
    public var value: Value

    public init(name: String, value: Value) {
        self.name = name
        self.value = value
    }

    /// The three value types the draft allows for client attributes.
    public enum Value: Hashable, Sendable, Codable {
        case string(String)
        case hex(HexBytes)
        case decimal(DecimalNumber)
    }
}

/// Bytes written as `0x…` hexadecimal (SCTE-35 sections, client attributes).
public struct HexBytes: Hashable, Sendable, Codable, CustomStringConvertible {
    public var bytes: [UInt8]

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Parses `0xFC30…` or `0XFC30…`; an odd number of digits is refused.
    public init?(hex text: some StringProtocol) {
        let body = text.dropFirst(2)
        guard text.hasPrefix("0x") || text.hasPrefix("0X"), !body.isEmpty, body.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(body.count / 2)
        var index = body.startIndex
        while index < body.endIndex {
            let next = body.index(index, offsetBy: 2)
            guard let byte = UInt8(body[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        self.bytes = bytes
    }

    /// `0x` and upper-case digits.
    public var description: String { "0x" + hexDigits(bytes, uppercase: true) }
}
