import HLS

/// A channel's configuration, carried by `ChannelCreated` / `ChannelUpdated` events.
public struct ChannelConfig: Hashable, Sendable, Codable {
    public var id: String
    /// Segment duration in milliseconds (e.g. 6000, or 1000–2000 for low latency).
    public var segmentDurationMilliseconds: Int64
    /// Segments in the window.
    public var windowSegments: Int
    /// Segment 0 starts here.
    public var epoch: Timestamp
    public var renditions: [RenditionConfig]
    public var source: Source
    /// When set, the channel's media loops over this many segments (a demo or a slate): a discontinuity
    /// precedes every segment whose number is a multiple of it.
    public var loopSegments: Int?
    /// Absolute base URL of this service as players reach it (`http://127.0.0.1:8080`), for asset-list URIs.
    public var publicBaseURL: String

    public init(
        id: String, segmentDurationMilliseconds: Int64, windowSegments: Int, epoch: Timestamp,
        renditions: [RenditionConfig], source: Source = .clock, loopSegments: Int? = nil, publicBaseURL: String
    ) {
        self.id = id
        self.segmentDurationMilliseconds = segmentDurationMilliseconds
        self.windowSegments = windowSegments
        self.epoch = epoch
        self.renditions = renditions
        self.source = source
        self.loopSegments = loopSegments
        self.publicBaseURL = publicBaseURL
    }

    /// The integer target duration: the segment duration rounded up to whole seconds. Never changes.
    public var targetDuration: Int {
        Int((segmentDurationMilliseconds + 999) / 1000)
    }

    public enum Source: Hashable, Sendable, Codable {
        /// Segment n covers [epoch + n·d, epoch + (n+1)·d); URIs come from each rendition's template.
        case clock
        /// Follow an upstream encoder's live media playlists and decorate them. `upstream` is a URL or a file
        /// path in which `{rendition}` stands for the rendition's name.
        case relay(upstream: String)
    }

    /// Checks every field; the first problem names the field and the reason.
    public func validate() throws(ScheduleError) {
        guard isIdentifier(id) else {
            throw .invalidField("channel", "\(id.debugDescription) must be 1–64 characters of a-z, 0-9, '-' or '_'")
        }
        guard (100...60_000).contains(segmentDurationMilliseconds) else {
            throw .invalidField("segment-duration", "must be between 0.1 and 60 seconds (got \(DecimalNumber(milliseconds: segmentDurationMilliseconds)) s)")
        }
        let windowMilliseconds = Int64(windowSegments) * segmentDurationMilliseconds
        guard windowMilliseconds >= Int64(3 * targetDuration) * 1000 else {
            throw .invalidField("window", "\(windowSegments) segments last \(DecimalNumber(milliseconds: windowMilliseconds)) s, under 3 target durations (\(3 * targetDuration) s)")
        }
        guard windowSegments <= 10_000 else { throw .invalidField("window", "must be at most 10000 segments") }
        guard !renditions.isEmpty else { throw .invalidField("rendition", "a channel needs at least one rendition") }
        var names: Set<String> = []
        for rendition in renditions {
            try rendition.validate(needsTemplate: source == .clock)
            guard names.insert(rendition.name).inserted else {
                throw .invalidField("rendition", "name \(rendition.name) is used twice")
            }
        }
        if let loop = loopSegments, loop < 1 { throw .invalidField("loop", "must be at least 1 segment") }
        guard publicBaseURL.hasPrefix("http://") || publicBaseURL.hasPrefix("https://"), !publicBaseURL.contains("\""),
            !publicBaseURL.contains(where: \.isNewline)
        else { throw .invalidField("public-url", "must be an absolute http(s) URL (got \(publicBaseURL.debugDescription))") }
        if case .relay(let upstream) = source {
            guard !upstream.isEmpty, !upstream.contains(where: \.isNewline) else {
                throw .invalidField("relay", "a relay channel needs an upstream playlist URL or path")
            }
            guard renditions.count == 1 || upstream.contains("{rendition}") else {
                throw .invalidField("relay", "with several renditions the upstream must contain {rendition}")
            }
        }
    }
}

/// One rendition of a channel.
public struct RenditionConfig: Hashable, Sendable, Codable {
    public var name: String
    public var bandwidth: Int
    public var codecs: [String]
    public var resolution: String?
    public var frameRate: DecimalNumber?
    /// Segment URI template: `{n}` is the segment number, `{n%K}` the number modulo K, `{rendition}` the name.
    public var uriTemplate: String
    /// `EXT-X-MAP` URI for fMP4 segments.
    public var mapURI: String?

    public init(
        name: String, bandwidth: Int, codecs: [String] = [], resolution: String? = nil, frameRate: DecimalNumber? = nil,
        uriTemplate: String, mapURI: String? = nil
    ) {
        self.name = name
        self.bandwidth = bandwidth
        self.codecs = codecs
        self.resolution = resolution
        self.frameRate = frameRate
        self.uriTemplate = uriTemplate
        self.mapURI = mapURI
    }

    func validate(needsTemplate: Bool) throws(ScheduleError) {
        guard isIdentifier(name) else {
            throw .invalidField("rendition", "name \(name.debugDescription) must be 1–64 characters of a-z, 0-9, '-' or '_'")
        }
        guard bandwidth > 0 else { throw .invalidField("rendition", "\(name): bandwidth must be a positive number of bits per second") }
        guard !needsTemplate || uriTemplate.contains("{n"), !uriTemplate.contains(where: \.isNewline), !uriTemplate.hasPrefix("#") else {
            throw .invalidField("rendition", "\(name): the URI template must contain {n} or {n%K} and no line break")
        }
        if let resolution, Resolution(resolution) == nil {
            throw .invalidField("rendition", "\(name): resolution \(resolution.debugDescription) is not WIDTHxHEIGHT")
        }
        for codec in codecs where codec.isEmpty || codec.contains(",") || codec.contains("\"") {
            throw .invalidField("rendition", "\(name): codec \(codec.debugDescription) is not valid")
        }
        if let mapURI, mapURI.isEmpty || mapURI.contains("\"") || mapURI.contains(where: \.isNewline) {
            throw .invalidField("rendition", "\(name): map URI is not valid")
        }
    }

    /// The URI of segment `n`.
    public func segmentURI(_ n: Int64) -> String {
        var out = ""
        var rest = Substring(uriTemplate)
        while let open = rest.firstIndex(of: "{") {
            out += rest[..<open]
            guard let close = rest[open...].firstIndex(of: "}") else { break }
            let token = rest[rest.index(after: open)..<close]
            if token == "n" {
                out += String(n)
            } else if token == "rendition" {
                out += name
            } else if token.hasPrefix("n%"), let modulus = Int64(token.dropFirst(2)), modulus > 0 {
                out += String(n % modulus)
            } else {
                out += rest[open...close]
            }
            rest = rest[rest.index(after: close)...]
        }
        return out + rest
    }
}

/// 1–64 characters of `a-z`, `0-9`, `-`, `_` (also safe in URLs and file names).
public func isIdentifier(_ text: String) -> Bool {
    (1...64).contains(text.utf8.count)
        && text.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D || $0 == 0x5F }
}
