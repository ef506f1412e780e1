/// `EXT-X-DATERANGE` (§4.4.5.1) with the Interstitials attributes of Appendix D, typed.
///
/// The same type describes an augmenting tag (same ID, CLASS and START-DATE plus attributes added later):
/// what it carries is exactly what is rendered, in a fixed attribute order.
public struct DateRange: Hashable, Sendable {
    /// The attributes, and their line as rendered when the range was constructed.
    ///
    /// One immutable reference: a copy of a range (out of a tag, into a playlist) is one retain instead of a dozen,
    /// and the renderer copies the bytes rendered (and checked) once at construction instead of writing the tag again
    /// at every render. A change of any attribute makes new storage without bytes; such a range renders as before.
    final class Storage: Sendable {
        let fields: Fields
        /// The line with its newline, or why it cannot be rendered: nil after a change made after construction.
        let rendered: Result<[UInt8], RenderError>?

        init(_ fields: Fields, render: Bool) {
            self.fields = fields
            self.rendered = render ? PlaylistRenderer.renderResult(fields) : nil
        }
    }

    struct Fields: Hashable, Sendable {
        var id: String
        var classAttribute: String?
        var startDate: Timestamp?
        var cue: [Cue]?
        var endDate: Timestamp?
        var duration: DecimalNumber?
        var plannedDuration: DecimalNumber?
        var assetURI: String?
        var assetList: String?
        var resumeOffset: DecimalNumber?
        var playoutLimit: DecimalNumber?
        var snap: [Snap]?
        var restrict: [Restriction]?
        var contentMayVary: Bool?
        var timelineOccupies: TimelineOccupies?
        var timelineStyle: TimelineStyle?
        var skipControlOffset: DecimalNumber?
        var skipControlDuration: DecimalNumber?
        var skipControlLabelID: String?
        var clientAttributes: [ClientAttribute]
        var scte35Command: HexBytes?
        var scte35Out: HexBytes?
        var scte35In: HexBytes?
        var endOnNext: Bool
    }

    private(set) var storage: Storage

    /// Replaces the storage on every change (ranges are built by the initializer; changes are the parser's).
    private var fields: Fields {
        get { storage.fields }
        set { storage = Storage(newValue, render: false) }
    }

    public var id: String {
        get { storage.fields.id }
        set { fields.id = newValue }
    }
    public var classAttribute: String? {
        get { storage.fields.classAttribute }
        set { fields.classAttribute = newValue }
    }
    public var startDate: Timestamp? {
        get { storage.fields.startDate }
        set { fields.startDate = newValue }
    }
    public var cue: [Cue]? {
        get { storage.fields.cue }
        set { fields.cue = newValue }
    }
    public var endDate: Timestamp? {
        get { storage.fields.endDate }
        set { fields.endDate = newValue }
    }
    public var duration: DecimalNumber? {
        get { storage.fields.duration }
        set { fields.duration = newValue }
    }
    public var plannedDuration: DecimalNumber? {
        get { storage.fields.plannedDuration }
        set { fields.plannedDuration = newValue }
    }
    public var assetURI: String? {
        get { storage.fields.assetURI }
        set { fields.assetURI = newValue }
    }
    public var assetList: String? {
        get { storage.fields.assetList }
        set { fields.assetList = newValue }
    }
    public var resumeOffset: DecimalNumber? {
        get { storage.fields.resumeOffset }
        set { fields.resumeOffset = newValue }
    }
    public var playoutLimit: DecimalNumber? {
        get { storage.fields.playoutLimit }
        set { fields.playoutLimit = newValue }
    }
    public var snap: [Snap]? {
        get { storage.fields.snap }
        set { fields.snap = newValue }
    }
    public var restrict: [Restriction]? {
        get { storage.fields.restrict }
        set { fields.restrict = newValue }
    }
    public var contentMayVary: Bool? {
        get { storage.fields.contentMayVary }
        set { fields.contentMayVary = newValue }
    }
    public var timelineOccupies: TimelineOccupies? {
        get { storage.fields.timelineOccupies }
        set { fields.timelineOccupies = newValue }
    }
    public var timelineStyle: TimelineStyle? {
        get { storage.fields.timelineStyle }
        set { fields.timelineStyle = newValue }
    }
    public var skipControlOffset: DecimalNumber? {
        get { storage.fields.skipControlOffset }
        set { fields.skipControlOffset = newValue }
    }
    public var skipControlDuration: DecimalNumber? {
        get { storage.fields.skipControlDuration }
        set { fields.skipControlDuration = newValue }
    }
    public var skipControlLabelID: String? {
        get { storage.fields.skipControlLabelID }
        set { fields.skipControlLabelID = newValue }
    }
    public var clientAttributes: [ClientAttribute] {
        get { storage.fields.clientAttributes }
        set { fields.clientAttributes = newValue }
    }
    public var scte35Command: HexBytes? {
        get { storage.fields.scte35Command }
        set { fields.scte35Command = newValue }
    }
    public var scte35Out: HexBytes? {
        get { storage.fields.scte35Out }
        set { fields.scte35Out = newValue }
    }
    public var scte35In: HexBytes? {
        get { storage.fields.scte35In }
        set { fields.scte35In = newValue }
    }
    public var endOnNext: Bool {
        get { storage.fields.endOnNext }
        set { fields.endOnNext = newValue }
    }

    public static func == (lhs: DateRange, rhs: DateRange) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.fields == rhs.storage.fields
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(storage.fields)
    }

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
        storage = Storage(
            Fields(
                id: id, classAttribute: classAttribute, startDate: startDate, cue: cue, endDate: endDate,
                duration: duration, plannedDuration: plannedDuration, assetURI: assetURI, assetList: assetList,
                resumeOffset: resumeOffset, playoutLimit: playoutLimit, snap: snap, restrict: restrict,
                contentMayVary: contentMayVary, timelineOccupies: timelineOccupies, timelineStyle: timelineStyle,
                skipControlOffset: skipControlOffset, skipControlDuration: skipControlDuration,
                skipControlLabelID: skipControlLabelID, clientAttributes: clientAttributes,
                scte35Command: scte35Command, scte35Out: scte35Out, scte35In: scte35In, endOnNext: endOnNext),
            render: true)
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
