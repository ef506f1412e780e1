import Foundation

/// What an ad server answered, read: a VAST document (4.x or 3.0; 2.0 reads the same) or a VMAP document of ad
/// breaks. Only what filling a live break needs is kept: for each ad its order, its linear creative's HLS media, its
/// duration and skip offset, and the tracking to report; for a wrapper, where the next answer is and the tracking it
/// adds.
public enum AdResponse: Hashable, Sendable {
    case vast(VASTDocument)
    case vmap([VMAPBreak])

    /// Reads an ad server's answer.
    public static func parse(_ data: Data) throws(AdParseFailure) -> AdResponse {
        let root: XMLTree.Element
        do {
            root = try XMLTree.parse(data)
        } catch {
            throw .xml(error)
        }
        switch root.name {
        case "VAST": return .vast(VASTDocument(root))
        case "VMAP": return .vmap(VMAPBreak.breaks(in: root))
        default: throw .notVAST(root: String(root.name.prefix(64)))
        }
    }
}

public enum AdParseFailure: Error, Hashable, Sendable, CustomStringConvertible {
    case xml(XMLTree.Failure)
    case notVAST(root: String)

    public var description: String {
        switch self {
        case .xml(let failure): "\(failure)"
        case .notVAST(let root): "its root element is <\(root)>, not <VAST> or <VMAP>"
        }
    }
}

/// A VAST document: its ads in document order and the error URLs of a "no ad" answer.
public struct VASTDocument: Hashable, Sendable {
    public var version: String?
    public var ads: [VASTAd]
    /// `<Error>` directly under `<VAST>`: VAST 4's way of saying there is no ad (and where to report it).
    public var errorURLs: [String]

    public init(version: String? = nil, ads: [VASTAd], errorURLs: [String] = []) {
        self.version = version
        self.ads = ads
        self.errorURLs = errorURLs
    }

    init(_ root: XMLTree.Element) {
        version = root.attributes["version"]
        ads = root.children("Ad").compactMap(VASTAd.init)
        errorURLs = root.children("Error").map(\.text).filter { !$0.isEmpty }
    }

    /// The ads to play, in order (VAST 4.1 §2.3.2): a pod (the ads with a `sequence`) in sequence order, the
    /// standalone ads left out; without a pod, the standalone ads in document order. `single` (under a wrapper that
    /// does not allow multiple ads, VAST 4.1 §3.19.2): no pod, the first standalone ad only (the first ad when every
    /// ad has a sequence).
    public func playOrder(single: Bool = false) -> [VASTAd] {
        if single { return Array((ads.first { $0.sequence == nil } ?? ads.first).map { [$0] } ?? []) }
        let pod = ads.enumerated().filter { $0.element.sequence != nil }
        return pod.isEmpty
            ? ads
            : pod.sorted { ($0.element.sequence!, $0.offset) < ($1.element.sequence!, $1.offset) }.map(\.element)
    }
}

/// One `<Ad>`.
public struct VASTAd: Hashable, Sendable {
    public enum Kind: Hashable, Sendable {
        case inline
        /// `<Wrapper>`: the next answer's URL (`VASTAdTagURI`) and what it allows.
        case wrapper(tagURI: String, followAdditionalWrappers: Bool, allowMultipleAds: Bool)
    }

    public var id: String?
    public var sequence: Int?
    public var kind: Kind
    public var impressions: [String]
    public var errorURLs: [String]
    /// The first linear creative (a wrapper's carries only tracking).
    public var linear: VASTLinear?

    public init(
        id: String? = nil, sequence: Int? = nil, kind: Kind, impressions: [String] = [], errorURLs: [String] = [],
        linear: VASTLinear? = nil
    ) {
        self.id = id
        self.sequence = sequence
        self.kind = kind
        self.impressions = impressions
        self.errorURLs = errorURLs
        self.linear = linear
    }

    init?(_ element: XMLTree.Element) {
        id = element.attributes["id"].map { String($0.prefix(128)) }
        sequence = element.attributes["sequence"].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        let body: XMLTree.Element
        if let inline = element.child("InLine") {
            body = inline
            kind = .inline
        } else if let wrapper = element.child("Wrapper") {
            body = wrapper
            let tag = wrapper.child("VASTAdTagURI")?.text ?? ""
            kind = .wrapper(
                tagURI: tag,
                followAdditionalWrappers: Self.flag(wrapper.attributes["followAdditionalWrappers"], default: true),
                allowMultipleAds: Self.flag(wrapper.attributes["allowMultipleAds"], default: false))
        } else {
            return nil
        }
        impressions = body.children("Impression").map(\.text).filter { !$0.isEmpty }
        errorURLs = body.children("Error").map(\.text).filter { !$0.isEmpty }
        let creatives = body.child("Creatives")?.children("Creative") ?? []
        linear =
            creatives.lazy.compactMap { creative in
                creative.child("Linear").map { VASTLinear($0, creative: creative) }
            }.first
    }

    static func flag(_ value: String?, default fallback: Bool) -> Bool {
        switch value?.trimmingCharacters(in: .whitespaces).lowercased() {
        case "true", "1": true
        case "false", "0": false
        default: fallback
        }
    }
}

/// A `<Linear>` creative: duration, skip offset, media files and tracking events.
public struct VASTLinear: Hashable, Sendable {
    public var creativeID: String?
    public var adID: String?
    public var universalAdID: String?
    /// `<Duration>` in milliseconds; nil when missing or not `HH:MM:SS(.mmm)`.
    public var durationMilliseconds: Int64?
    public var skipOffset: SkipOffset?
    public var mediaFiles: [VASTMediaFile]
    /// `<Tracking event=…>` in document order.
    public var tracking: [TrackingEvent]
    public var clickThrough: String?

    public init(
        creativeID: String? = nil, adID: String? = nil, universalAdID: String? = nil, durationMilliseconds: Int64?,
        skipOffset: SkipOffset? = nil, mediaFiles: [VASTMediaFile] = [], tracking: [TrackingEvent] = [],
        clickThrough: String? = nil
    ) {
        self.creativeID = creativeID
        self.adID = adID
        self.universalAdID = universalAdID
        self.durationMilliseconds = durationMilliseconds
        self.skipOffset = skipOffset
        self.mediaFiles = mediaFiles
        self.tracking = tracking
        self.clickThrough = clickThrough
    }

    init(_ linear: XMLTree.Element, creative: XMLTree.Element) {
        creativeID = creative.attributes["id"].map { String($0.prefix(128)) }
        adID = creative.attributes["adId"].map { String($0.prefix(128)) }
        universalAdID = creative.child("UniversalAdId").map { String($0.text.prefix(128)) }.flatMap {
            $0.isEmpty || $0 == "unknown" ? nil : $0
        }
        durationMilliseconds = linear.child("Duration").flatMap { VASTTime.milliseconds($0.text) }
        skipOffset = linear.attributes["skipoffset"].flatMap(SkipOffset.init)
        mediaFiles = (linear.child("MediaFiles")?.children("MediaFile") ?? []).map { file in
            VASTMediaFile(
                uri: file.text, type: file.attributes["type"] ?? "", delivery: file.attributes["delivery"],
                bitrate: file.attributes["bitrate"].flatMap { Int($0) })
        }
        tracking = (linear.child("TrackingEvents")?.children("Tracking") ?? []).compactMap { tracking in
            guard let event = tracking.attributes["event"], !tracking.text.isEmpty else { return nil }
            return TrackingEvent(
                event: event, url: tracking.text, offset: tracking.attributes["offset"].flatMap(SkipOffset.init))
        }
        clickThrough = linear.path("VideoClicks", "ClickThrough")?.text
    }

    /// The first media file that is an HLS playlist, in document order.
    public var hlsMedia: VASTMediaFile? { mediaFiles.first(where: \.isHLS) }
}

public struct VASTMediaFile: Hashable, Sendable {
    public var uri: String
    public var type: String
    public var delivery: String?
    public var bitrate: Int?

    public init(uri: String, type: String, delivery: String? = nil, bitrate: Int? = nil) {
        self.uri = uri
        self.type = type
        self.delivery = delivery
        self.bitrate = bitrate
    }

    /// `application/x-mpegURL` or `application/vnd.apple.mpegurl` (any case), as VAST names HLS.
    public var isHLS: Bool {
        let type = self.type.trimmingCharacters(in: .whitespaces).lowercased()
        return type == "application/x-mpegurl" || type == "application/vnd.apple.mpegurl"
    }
}

/// A `<Tracking>`: the event's name as VAST spells it (`start`, `firstQuartile`, `progress`, …) and its URL.
public struct TrackingEvent: Hashable, Sendable {
    public var event: String
    public var url: String
    /// `progress` events: when.
    public var offset: SkipOffset?

    public init(event: String, url: String, offset: SkipOffset? = nil) {
        self.event = event
        self.url = url
        self.offset = offset
    }
}

/// A `skipoffset` (or a `progress` offset): a time from the creative's start, or a percentage of its duration.
public enum SkipOffset: Hashable, Sendable {
    case milliseconds(Int64)
    case percent(Int)

    public init?(_ text: String) {
        let text = text.trimmingCharacters(in: .whitespaces)
        if text.hasSuffix("%") {
            guard let value = Int(text.dropLast()), (0...100).contains(value) else { return nil }
            self = .percent(value)
        } else {
            guard let value = VASTTime.milliseconds(text) else { return nil }
            self = .milliseconds(value)
        }
    }

    /// In milliseconds from the creative's start, for a creative of `duration`.
    public func milliseconds(of duration: Int64) -> Int64 {
        switch self {
        case .milliseconds(let value): value
        case .percent(let percent): duration * Int64(percent) / 100
        }
    }
}

/// VAST's time values: `HH:MM:SS` or `HH:MM:SS.mmm`.
public enum VASTTime {
    /// Milliseconds, or nil for anything else (and for more than 24 hours).
    public static func milliseconds(_ text: String) -> Int64? {
        let text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, let hours = Int64(parts[0]), let minutes = Int64(parts[1]), hours >= 0, hours < 24,
            minutes >= 0, minutes < 60, parts[0].count <= 2, parts[1].count == 2
        else { return nil }
        let secondsText = parts[2].split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(secondsText.count), secondsText[0].count == 2, let seconds = Int64(secondsText[0]),
            seconds >= 0, seconds < 60
        else { return nil }
        var fraction: Int64 = 0
        if secondsText.count == 2 {
            let digits = secondsText[1]
            guard !digits.isEmpty, digits.count <= 9, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else {
                return nil
            }
            // Milliseconds, rounded half up from whatever precision was given.
            let padded = digits + String(repeating: "0", count: max(0, 4 - digits.count))
            fraction = (Int64(padded.prefix(4))! + 5) / 10
        }
        return ((hours * 60 + minutes) * 60 + seconds) * 1000 + fraction
    }
}

/// One `<vmap:AdBreak>` of a VMAP document: its ads inline (`VASTAdData`) or where to ask for them (`AdTagURI`).
public struct VMAPBreak: Hashable, Sendable {
    public enum Source: Hashable, Sendable {
        case vast(VASTDocument)
        case tagURI(String)
    }

    public var breakID: String?
    public var timeOffset: String?
    public var source: Source?

    public init(breakID: String? = nil, timeOffset: String? = nil, source: Source?) {
        self.breakID = breakID
        self.timeOffset = timeOffset
        self.source = source
    }

    /// The linear breaks of a VMAP document, in document order (`breakType` lists `linear`; non-linear and
    /// display breaks have nothing for an interstitial to play).
    static func breaks(in root: XMLTree.Element) -> [VMAPBreak] {
        root.children("AdBreak").compactMap { adBreak in
            let types = (adBreak.attributes["breakType"] ?? "linear").lowercased().split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard types.contains("linear") else { return nil }
            let adSource = adBreak.child("AdSource")
            var source: Source?
            if let data = adSource?.child("VASTAdData")?.child("VAST") {
                source = .vast(VASTDocument(data))
            } else if let tag = adSource?.child("AdTagURI")?.text, !tag.isEmpty {
                source = .tagURI(tag)
            }
            return VMAPBreak(
                breakID: adBreak.attributes["breakId"], timeOffset: adBreak.attributes["timeOffset"], source: source)
        }
    }
}
