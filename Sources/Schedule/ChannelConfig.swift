import HLS

/// A channel's configuration, carried by `ChannelCreated` / `ChannelUpdated` events.
public struct ChannelConfig: Hashable, Sendable, Codable {
    /// Today's rule for a channel created now; a `ChannelCreated` read back from the log may hold an id of the
    /// earlier rule (`Identifier(stored:)`): that channel serves and replays, and `validate()` refuses it.
    public var id: ChannelID
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
    /// How far past the live edge a future break is published: a break starting later than
    /// `live edge + horizon` is not in the playlist yet. Nil (channels created before the horizon existed) publishes
    /// every future break, so their replay stays exact.
    public var horizonMilliseconds: Int64?
    /// Absolute base URL of this service as players reach it (`http://127.0.0.1:8080`), for asset-list URIs.
    public var publicBaseURL: String
    /// Low-Latency HLS: each segment is made of parts of this many milliseconds (a whole fraction of the segment),
    /// listed with `EXT-X-PART` near the live edge, and playlists are served at every part boundary with blocking
    /// reload and delta updates. Nil (every channel created before LL-HLS, and channels without parts): none of it,
    /// the bytes are what they always were.
    public var partDurationMilliseconds: Int64?
    /// Which markers the playlists carry and the SCTE-35 type breaks are signalled with (`Signalling`). Nil for
    /// channels created before it: renderer version 1, their bytes as they always were.
    public var signalling: Signalling?
    /// The ad settings the channel was created with (`ChannelState.adSettings` holds the current ones). Nil for
    /// channels created before them: no preload ranges, no ad server, their bytes as they always were.
    public var ads: AdSettings?

    public init(
        id: ChannelID, segmentDurationMilliseconds: Int64, windowSegments: Int, epoch: Timestamp,
        renditions: [RenditionConfig], source: Source = .clock, loopSegments: Int? = nil, publicBaseURL: String,
        horizonMilliseconds: Int64? = nil, partDurationMilliseconds: Int64? = nil, signalling: Signalling? = nil,
        ads: AdSettings? = nil
    ) {
        self.ads = ads
        self.id = id
        self.segmentDurationMilliseconds = segmentDurationMilliseconds
        self.windowSegments = windowSegments
        self.epoch = epoch
        self.renditions = renditions
        self.source = source
        self.loopSegments = loopSegments
        self.horizonMilliseconds = horizonMilliseconds
        self.publicBaseURL = publicBaseURL
        self.partDurationMilliseconds = partDurationMilliseconds
        self.signalling = signalling
    }

    private enum CodingKeys: String, CodingKey {
        case id, segmentDurationMilliseconds, windowSegments, epoch, renditions, source, loopSegments,
            horizonMilliseconds, publicBaseURL, partDurationMilliseconds, signalling, ads
    }

    /// As the synthesized decoding, but the id as stored (today's rule or the earlier one).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let text = try container.decode(String.self, forKey: .id)
        guard let id = ChannelID(stored: text) else {
            throw DecodingError.dataCorruptedError(
                forKey: .id, in: container, debugDescription: "must be \(Identifier.rule)")
        }
        self.id = id
        segmentDurationMilliseconds = try container.decode(Int64.self, forKey: .segmentDurationMilliseconds)
        windowSegments = try container.decode(Int.self, forKey: .windowSegments)
        epoch = try container.decode(Timestamp.self, forKey: .epoch)
        renditions = try container.decode([RenditionConfig].self, forKey: .renditions)
        source = try container.decode(Source.self, forKey: .source)
        loopSegments = try container.decodeIfPresent(Int.self, forKey: .loopSegments)
        horizonMilliseconds = try container.decodeIfPresent(Int64.self, forKey: .horizonMilliseconds)
        publicBaseURL = try container.decode(String.self, forKey: .publicBaseURL)
        partDurationMilliseconds = try container.decodeIfPresent(Int64.self, forKey: .partDurationMilliseconds)
        signalling = try container.decodeIfPresent(Signalling.self, forKey: .signalling)
        ads = try container.decodeIfPresent(AdSettings.self, forKey: .ads)
    }

    /// The renderer version this channel's playlists are written with: 1 before signalling, 2 with it (3 with ad
    /// settings: `ChannelState.rendererVersion`).
    public var rendererVersion: Int { signalling == nil ? 1 : 2 }

    /// Parts in a segment, for a channel with parts (the part duration divides the segment duration).
    public var partsPerSegment: Int64? {
        partDurationMilliseconds.map { $0 > 0 ? segmentDurationMilliseconds / $0 : 1 }
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
        // Today's rule, also for an id read back under the earlier one.
        _ = try Identifier(id.rawValue, field: "channel")
        guard (100...60_000).contains(segmentDurationMilliseconds) else {
            throw .invalidField(
                "segment-duration",
                "must be between 0.1 and 60 seconds (got \(DecimalNumber(milliseconds: segmentDurationMilliseconds)) s)"
            )
        }
        // Bounded before any arithmetic on it.
        guard (1...10_000).contains(windowSegments) else {
            throw .invalidField("window", "must be 1 to 10000 segments")
        }
        let windowMilliseconds = Int64(windowSegments) * segmentDurationMilliseconds
        guard windowMilliseconds >= Int64(3 * targetDuration) * 1000 else {
            throw .invalidField(
                "window",
                "\(windowSegments) segments last \(DecimalNumber(milliseconds: windowMilliseconds)) s, under 3 target durations (\(3 * targetDuration) s)"
            )
        }
        try Limits.check(instant: epoch, field: "epoch")
        guard !renditions.isEmpty else { throw .invalidField("rendition", "a channel needs at least one rendition") }
        guard renditions.count <= 32 else { throw .invalidField("rendition", "a channel has at most 32 renditions") }
        var names: Set<Identifier> = []
        for rendition in renditions {
            try rendition.validate(needsTemplate: source == .clock)
            guard names.insert(rendition.name).inserted else {
                throw .invalidField("rendition", "name \(rendition.name) is used twice")
            }
        }
        if let loop = loopSegments, loop < 1 { throw .invalidField("loop", "must be at least 1 segment") }
        if let horizon = horizonMilliseconds, !(Int64(3 * targetDuration) * 1000...86_400_000).contains(horizon) {
            throw .invalidField("horizon", "must be between 3 target durations (\(3 * targetDuration) s) and 86400 s")
        }
        if let part = partDurationMilliseconds {
            guard case .clock = source else {
                throw .invalidField(
                    "part-duration",
                    "is for clock channels: a relay channel serves the parts of its upstream LL-HLS playlist (EXT-X-PART-INF), as they come"
                )
            }
            guard (100...segmentDurationMilliseconds).contains(part), segmentDurationMilliseconds % part == 0 else {
                throw .invalidField(
                    "part-duration",
                    "must be between 0.1 s and the segment duration and divide it into whole parts (got \(DecimalNumber(milliseconds: part)) s for \(DecimalNumber(milliseconds: segmentDurationMilliseconds)) s segments)"
                )
            }
            guard segmentDurationMilliseconds / part <= 100 else {
                throw .invalidField(
                    "part-duration", "a segment has at most 100 parts (got \(segmentDurationMilliseconds / part))")
            }
            for rendition in renditions where rendition.partURITemplate == nil {
                throw .invalidField(
                    "rendition",
                    "\(rendition.name): a channel with parts needs a part URI template with {n} and {p} for every rendition"
                )
            }
        } else if let rendition = renditions.first(where: { $0.partURITemplate != nil }) {
            throw .invalidField(
                "rendition", "\(rendition.name): a part URI template needs --part-duration on the channel")
        }
        _ = try AbsoluteURI(publicBaseURL, field: "public-url")
        if let signalling {
            try signalling.validate()
            if signalling.markers.cueMarkers, source != .clock {
                throw .invalidField(
                    "markers",
                    "\(signalling.markers.rawValue) writes EXT-X-CUE markers on the clock's segments; a relay channel takes interstitial (its upstream's own markers pass through)"
                )
            }
        }
        if case .relay(let upstream) = source {
            guard !upstream.isEmpty, upstream.utf8.count <= Limits.uriBytes, !upstream.containsControlCharacter else {
                throw .invalidField(
                    "relay", "a relay channel needs an upstream playlist URL or path, without control characters")
            }
            guard renditions.count == 1 || upstream.contains("{rendition}") else {
                throw .invalidField("relay", "with several renditions the upstream must contain {rendition}")
            }
        }
        try ads?.validate()
        try ads?.check(markers: signalling?.markers)
    }
}

/// One rendition of a channel.
public struct RenditionConfig: Hashable, Sendable, Codable {
    public var name: Identifier
    public var bandwidth: Int
    public var codecs: [String]
    public var resolution: String?
    public var frameRate: DecimalNumber?
    /// Segment URI template: `{n}` is the segment number, `{n%K}` the number modulo K, `{rendition}` the name.
    public var uriTemplate: String
    /// `EXT-X-MAP` URI for fMP4 segments.
    public var mapURI: String?
    /// LL-HLS part URI template (channels with parts): the segment's tokens, and `{p}` the index of the part in its
    /// segment (from 0).
    public var partURITemplate: String?
    /// Parts whose index is a multiple of this start with an independent frame (`INDEPENDENT=YES`); nil: only a
    /// segment's first part (every segment starts with one).
    public var independentPartInterval: Int?

    public init(
        name: Identifier, bandwidth: Int, codecs: [String] = [], resolution: String? = nil,
        frameRate: DecimalNumber? = nil,
        uriTemplate: String, mapURI: String? = nil, partURITemplate: String? = nil, independentPartInterval: Int? = nil
    ) {
        self.name = name
        self.bandwidth = bandwidth
        self.codecs = codecs
        self.resolution = resolution
        self.frameRate = frameRate
        self.uriTemplate = uriTemplate
        self.mapURI = mapURI
        self.partURITemplate = partURITemplate
        self.independentPartInterval = independentPartInterval
    }

    /// Whether part `part` of a segment is independent.
    public func isIndependent(part: Int) -> Bool {
        guard let interval = independentPartInterval, interval > 0 else { return part == 0 }
        return part % interval == 0
    }

    /// Checks every field; `needsTemplate` for clock channels, whose segment URIs come from the template.
    public func validate(needsTemplate: Bool) throws(ScheduleError) {
        guard name.isCurrent else {  // a name of the earlier rule, read back from the log
            throw .invalidField("rendition", "name \(name.rawValue.debugDescription) must be \(Identifier.rule)")
        }
        guard (1...1_000_000_000_000).contains(bandwidth) else {
            throw .invalidField(
                "rendition", "\(name): bandwidth must be a positive number of bits per second (at most 10^12)")
        }
        // Every `{n…}` must be a token `segmentURI` replaces: `{n%0}` or `{n%-1}` would otherwise be served as
        // written, the same URI for every segment.
        var numbered = false
        for token in Self.braceTokens(in: uriTemplate) where token.hasPrefix("n") {
            if token == "n" {
                numbered = true
            } else if token.hasPrefix("n%"), let modulus = Int64(token.dropFirst(2)), modulus > 0 {
                numbered = true
            } else {
                throw .invalidField(
                    "rendition",
                    "\(name): {\(token.prefix(32).escapingControlCharacters)} in the URI template is not {n} or {n%K} with K a whole number from 1 to 9223372036854775807"
                )
            }
        }
        guard !needsTemplate || numbered else {
            throw .invalidField("rendition", "\(name): the URI template must contain {n} or {n%K}")
        }
        if needsTemplate || !uriTemplate.isEmpty, let problem = AbsoluteURI.referenceProblem(in: uriTemplate) {
            throw .invalidField("rendition", "\(name): URI template \(problem)")
        }
        if let resolution,
            resolution.containsControlCharacter || Resolution(resolution) == nil || resolution.utf8.count > 16
        {
            throw .invalidField(
                "rendition",
                "\(name): resolution \(resolution.debugDescription.escapingControlCharacters) is not WIDTHxHEIGHT")
        }
        // A codec is an RFC 6381 token: printable ASCII, no space, comma or quote (it sits in a quoted CODECS list).
        for codec in codecs
        where codec.isEmpty || codec.utf8.count > 64
            || codec.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value >= 0x7F || $0 == "," || $0 == "\"" })
        {
            throw .invalidField(
                "rendition", "\(name): codec \(codec.debugDescription.escapingControlCharacters) is not valid")
        }
        if let mapURI, let problem = AbsoluteURI.referenceProblem(in: mapURI) {
            throw .invalidField("rendition", "\(name): map URI \(problem)")
        }
        if let partURITemplate {
            var numbered = false, indexed = false
            for token in Self.braceTokens(in: partURITemplate) {
                if token == "p" {
                    indexed = true
                } else if token == "n" || (token.hasPrefix("n%") && (Int64(token.dropFirst(2)) ?? 0) > 0) {
                    numbered = true
                } else if token.hasPrefix("n") {
                    throw .invalidField(
                        "rendition",
                        "\(name): {\(token.prefix(32).escapingControlCharacters)} in the part URI template is not {n}, {n%K} or {p}"
                    )
                }
            }
            guard numbered, indexed else {
                throw .invalidField("rendition", "\(name): the part URI template must contain {n} (or {n%K}) and {p}")
            }
            if let problem = AbsoluteURI.referenceProblem(in: partURITemplate) {
                throw .invalidField("rendition", "\(name): part URI template \(problem)")
            }
        }
        if let interval = independentPartInterval, !(1...100).contains(interval) {
            throw .invalidField("rendition", "\(name): the independent part interval must be 1 to 100 parts")
        }
    }

    /// What stands between `{` and the next `}` in `template`, as `segmentURI` reads it.
    static func braceTokens(in template: String) -> [Substring] {
        var tokens: [Substring] = []
        var rest = Substring(template)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            tokens.append(rest[rest.index(after: open)..<close])
            rest = rest[rest.index(after: close)...]
        }
        return tokens
    }

    /// The URI of segment `n`.
    public func segmentURI(_ n: Int64) -> String {
        var out = ""
        var rest = Substring(uriTemplate)
        while let open = rest.firstIndex(of: "{") {
            out += rest[..<open]
            guard let close = rest[open...].firstIndex(of: "}") else {
                // An unclosed `{`: the rest is kept as written (once).
                rest = rest[open...]
                break
            }
            let token = rest[rest.index(after: open)..<close]
            if token == "n" {
                out += String(n)
            } else if token == "rendition" {
                out += name.rawValue
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
