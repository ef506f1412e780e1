/// A multivariant playlist (§4.4.6).
public struct MultivariantPlaylist: Hashable, Sendable {
    public var version: Int?
    public var independentSegments: Bool
    public var start: StartPoint?
    public var media: [Rendition]
    public var variants: [Variant]
    public var iFrameVariants: [Variant]
    /// Tags this code does not model, kept verbatim.
    public var unknownTags: [String]

    public init(
        version: Int? = nil, independentSegments: Bool = false, start: StartPoint? = nil, media: [Rendition] = [],
        variants: [Variant] = [], iFrameVariants: [Variant] = [], unknownTags: [String] = []
    ) {
        self.version = version
        self.independentSegments = independentSegments
        self.start = start
        self.media = media
        self.variants = variants
        self.iFrameVariants = iFrameVariants
        self.unknownTags = unknownTags
    }
}

/// `EXT-X-STREAM-INF` (with its URI line) or `EXT-X-I-FRAME-STREAM-INF` (URI as an attribute).
public struct Variant: Hashable, Sendable {
    public var bandwidth: Int
    public var averageBandwidth: Int?
    public var codecs: [String]
    public var resolution: Resolution?
    public var frameRate: DecimalNumber?
    public var hdcpLevel: String?
    public var videoRange: VideoRange?
    public var audio: String?
    public var video: String?
    public var subtitles: String?
    /// A group id, or nil; `closedCaptionsNone` renders `CLOSED-CAPTIONS=NONE`.
    public var closedCaptions: String?
    public var closedCaptionsNone: Bool
    public var uri: String

    public init(
        bandwidth: Int, averageBandwidth: Int? = nil, codecs: [String] = [], resolution: Resolution? = nil,
        frameRate: DecimalNumber? = nil, hdcpLevel: String? = nil, videoRange: VideoRange? = nil, audio: String? = nil,
        video: String? = nil, subtitles: String? = nil, closedCaptions: String? = nil, closedCaptionsNone: Bool = false,
        uri: String
    ) {
        self.bandwidth = bandwidth
        self.averageBandwidth = averageBandwidth
        self.codecs = codecs
        self.resolution = resolution
        self.frameRate = frameRate
        self.hdcpLevel = hdcpLevel
        self.videoRange = videoRange
        self.audio = audio
        self.video = video
        self.subtitles = subtitles
        self.closedCaptions = closedCaptions
        self.closedCaptionsNone = closedCaptionsNone
        self.uri = uri
    }

    public enum VideoRange: String, Hashable, Sendable, CaseIterable {
        case sdr = "SDR", hlg = "HLG", pq = "PQ"
    }
}

public struct Resolution: Hashable, Sendable, CustomStringConvertible {
    public var width: Int
    public var height: Int

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "x")
        guard parts.count == 2, let width = Int(parts[0]), let height = Int(parts[1]), width > 0, height > 0 else {
            return nil
        }
        self.init(width: width, height: height)
    }

    public var description: String { "\(width)x\(height)" }
}

/// `EXT-X-MEDIA`: an alternative rendition.
public struct Rendition: Hashable, Sendable {
    public enum MediaType: String, Hashable, Sendable, CaseIterable {
        case audio = "AUDIO", video = "VIDEO", subtitles = "SUBTITLES", closedCaptions = "CLOSED-CAPTIONS"
    }

    public var type: MediaType
    public var uri: String?
    public var groupID: String
    public var language: String?
    public var associatedLanguage: String?
    public var name: String
    public var isDefault: Bool
    public var autoselect: Bool
    public var forced: Bool
    public var instreamID: String?
    public var characteristics: String?
    public var channels: String?

    public init(
        type: MediaType, uri: String? = nil, groupID: String, language: String? = nil,
        associatedLanguage: String? = nil,
        name: String, isDefault: Bool = false, autoselect: Bool = false, forced: Bool = false,
        instreamID: String? = nil,
        characteristics: String? = nil, channels: String? = nil
    ) {
        self.type = type
        self.uri = uri
        self.groupID = groupID
        self.language = language
        self.associatedLanguage = associatedLanguage
        self.name = name
        self.isDefault = isDefault
        self.autoselect = autoselect
        self.forced = forced
        self.instreamID = instreamID
        self.characteristics = characteristics
        self.channels = channels
    }
}
