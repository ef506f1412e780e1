import HLS

/// How a channel fills its breaks from an ad server, and what its playlists announce for players to fetch early:
/// set with the channel (`channel create`), changed with `channel update` (`AdSettingsSet`). A channel without any
/// (every channel created before them) renders as it always did.
public struct AdSettings: Hashable, Sendable, Codable {
    /// The ad server a break without its own asks (`--ad-server`).
    public var adServer: AdServerTemplate?
    /// How long a viewer's asset-list request may wait on the ad server, every wrapper included (`--ad-timeout`).
    public var timeoutMilliseconds: Int64
    /// Requests to one ad server host in flight at once, for this channel's viewers (`--ad-concurrency`); a request
    /// beyond it queues until its deadline, then gets the fallback.
    public var concurrency: Int
    /// What fills a break when the ad server gives nothing and the break has no assets of its own (`--slate`).
    public var slate: Slate?
    /// How long before a break its preload range starts (`--preload`; 0: none).
    public var preloadMilliseconds: Int64
    /// What a viewer who joins plays first (`--preroll-asset`, `--preroll-ad-server`).
    public var preroll: Preroll?
    /// Who reports impressions: players from the asset list (`client`), or Cueline when it serves the list
    /// (`server`, for players that do not report).
    public var beacons: Beacons

    public static let defaultTimeoutMilliseconds: Int64 = 1500
    public static let defaultConcurrency = 32
    public static let defaultPreloadMilliseconds: Int64 = 20_000
    public static let timeoutRange: ClosedRange<Int64> = 100...10_000
    public static let concurrencyRange: ClosedRange<Int> = 1...1024
    public static let preloadRange: ClosedRange<Int64> = 0...600_000
    /// The longest preroll (2 minutes).
    public static let maximumPrerollMilliseconds: Int64 = 120_000

    /// The settings of a channel created now: no ad server, a 20 s preload.
    public static let defaults = AdSettings()

    public init(
        adServer: AdServerTemplate? = nil, timeoutMilliseconds: Int64 = defaultTimeoutMilliseconds,
        concurrency: Int = defaultConcurrency, slate: Slate? = nil,
        preloadMilliseconds: Int64 = defaultPreloadMilliseconds, preroll: Preroll? = nil, beacons: Beacons = .client
    ) {
        self.adServer = adServer
        self.timeoutMilliseconds = timeoutMilliseconds
        self.concurrency = concurrency
        self.slate = slate
        self.preloadMilliseconds = preloadMilliseconds
        self.preroll = preroll
        self.beacons = beacons
    }

    public struct Slate: Hashable, Sendable, Codable {
        /// A VOD playlist.
        public var uri: String
        /// Its length as measured when it was set (nil: it could not be read then).
        public var durationMilliseconds: Int64?

        public init(uri: String, durationMilliseconds: Int64?) {
            self.uri = uri
            self.durationMilliseconds = durationMilliseconds
        }
    }

    public enum Preroll: Hashable, Sendable, Codable {
        /// One VOD asset of this length.
        case asset(uri: String, durationMilliseconds: Int64)
        /// Asked of an ad server for each viewer, for at most this long.
        case adServer(AdServerTemplate, durationMilliseconds: Int64)

        public var durationMilliseconds: Int64 {
            switch self {
            case .asset(_, let duration), .adServer(_, let duration): duration
            }
        }
    }

    public enum Beacons: String, Hashable, Sendable, Codable, CaseIterable {
        case client, server
    }

    /// Checks every value; the error names the field as the HTTP API spells it.
    public func validate() throws(ScheduleError) {
        guard Self.timeoutRange.contains(timeoutMilliseconds) else {
            throw .invalidField(
                "ad_timeout",
                "must be between \(DecimalNumber(milliseconds: Self.timeoutRange.lowerBound)) and \(DecimalNumber(milliseconds: Self.timeoutRange.upperBound)) seconds (got \(DecimalNumber(milliseconds: timeoutMilliseconds)))"
            )
        }
        guard Self.concurrencyRange.contains(concurrency) else {
            throw .invalidField(
                "ad_concurrency",
                "must be between \(Self.concurrencyRange.lowerBound) and \(Self.concurrencyRange.upperBound) (got \(concurrency))"
            )
        }
        guard Self.preloadRange.contains(preloadMilliseconds) else {
            throw .invalidField(
                "preload",
                "must be between 0 and \(DecimalNumber(milliseconds: Self.preloadRange.upperBound)) seconds (got \(DecimalNumber(milliseconds: preloadMilliseconds)))"
            )
        }
        if let slate { _ = try AbsoluteURI(slate.uri, field: "slate") }
        if let adServer, let problem = AdServerTemplate.problem(in: adServer.value) {
            throw .invalidField("ad_server", problem)
        }
        switch preroll {
        case .asset(let uri, let duration)?:
            _ = try AbsoluteURI(uri, field: "preroll_asset")
            try Self.checkPreroll(duration)
        case .adServer(let template, let duration)?:
            if let problem = AdServerTemplate.problem(in: template.value) {
                throw .invalidField("preroll_ad_server", problem)
            }
            try Self.checkPreroll(duration)
        case nil: break
        }
    }

    /// An ad server only where players ask for asset lists: not on a channel marked for a downstream SSAI alone.
    public func check(markers: Signalling.Markers?) throws(ScheduleError) {
        if let preroll, let markers, !markers.interstitials {
            let field: String
            if case .asset = preroll { field = "preroll_asset" } else { field = "preroll_ad_server" }
            throw .invalidField(
                field,
                "the channel's markers are \(markers.rawValue): its playlists carry no interstitials, so no player would play a preroll"
            )
        }
        if adServer != nil, let markers, !markers.interstitials {
            throw .invalidField(
                "ad_server",
                "the channel's markers are \(markers.rawValue): players never ask it for an asset list, so no ad server would be asked; its breaks would all be refused"
            )
        }
    }

    private static func checkPreroll(_ duration: Int64) throws(ScheduleError) {
        guard duration > 0, duration <= maximumPrerollMilliseconds else {
            throw .invalidField(
                "preroll_duration",
                "must be more than 0 and at most \(DecimalNumber(milliseconds: maximumPrerollMilliseconds)) seconds (got \(DecimalNumber(milliseconds: duration)))"
            )
        }
    }
}

/// A change to a channel's ad settings (`cueline channel update`, the command `set_ad_settings`): a field given
/// replaces the setting, a field given as null clears it (optional ones), a field left out keeps it (RFC 7396 merge
/// patch semantics in its JSON).
public struct AdSettingsChange: Hashable, Sendable, Codable {
    /// `.some(nil)` clears.
    public var adServer: AdServerTemplate??
    public var timeoutMilliseconds: Int64?
    public var concurrency: Int?
    public var slate: AdSettings.Slate??
    public var preloadMilliseconds: Int64?
    public var preroll: AdSettings.Preroll??
    public var beacons: AdSettings.Beacons?

    public init(
        adServer: AdServerTemplate?? = nil, timeoutMilliseconds: Int64? = nil, concurrency: Int? = nil,
        slate: AdSettings.Slate?? = nil, preloadMilliseconds: Int64? = nil, preroll: AdSettings.Preroll?? = nil,
        beacons: AdSettings.Beacons? = nil
    ) {
        self.adServer = adServer
        self.timeoutMilliseconds = timeoutMilliseconds
        self.concurrency = concurrency
        self.slate = slate
        self.preloadMilliseconds = preloadMilliseconds
        self.preroll = preroll
        self.beacons = beacons
    }

    /// Whether it changes nothing.
    public var isEmpty: Bool { self == AdSettingsChange() }

    /// `settings` with this change applied.
    public func applied(to settings: AdSettings) -> AdSettings {
        var next = settings
        if let adServer { next.adServer = adServer }
        if let timeoutMilliseconds { next.timeoutMilliseconds = timeoutMilliseconds }
        if let concurrency { next.concurrency = concurrency }
        if let slate { next.slate = slate }
        if let preloadMilliseconds { next.preloadMilliseconds = preloadMilliseconds }
        if let preroll { next.preroll = preroll }
        if let beacons { next.beacons = beacons }
        return next
    }

    private enum CodingKeys: String, CodingKey {
        case adServer, timeoutMilliseconds, concurrency, slate, preloadMilliseconds, preroll, beacons
    }

    // Double optionals kept apart in JSON: a key with null clears, a missing key keeps.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func tri<T: Decodable>(_ key: CodingKeys, _ type: T.Type) throws -> T?? {
            guard container.contains(key) else { return nil }
            if try container.decodeNil(forKey: key) { return .some(nil) }
            return .some(try container.decode(T.self, forKey: key))
        }
        adServer = try tri(.adServer, AdServerTemplate.self)
        timeoutMilliseconds = try container.decodeIfPresent(Int64.self, forKey: .timeoutMilliseconds)
        concurrency = try container.decodeIfPresent(Int.self, forKey: .concurrency)
        slate = try tri(.slate, AdSettings.Slate.self)
        preloadMilliseconds = try container.decodeIfPresent(Int64.self, forKey: .preloadMilliseconds)
        preroll = try tri(.preroll, AdSettings.Preroll.self)
        beacons = try container.decodeIfPresent(AdSettings.Beacons.self, forKey: .beacons)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        func tri<T: Encodable>(_ value: T??, _ key: CodingKeys) throws {
            switch value {
            case .none: break
            case .some(.none): try container.encodeNil(forKey: key)
            case .some(.some(let inner)): try container.encode(inner, forKey: key)
            }
        }
        try tri(adServer, .adServer)
        try container.encodeIfPresent(timeoutMilliseconds, forKey: .timeoutMilliseconds)
        try container.encodeIfPresent(concurrency, forKey: .concurrency)
        try tri(slate, .slate)
        try container.encodeIfPresent(preloadMilliseconds, forKey: .preloadMilliseconds)
        try tri(preroll, .preroll)
        try container.encodeIfPresent(beacons, forKey: .beacons)
    }
}

/// Skip control (HLS Interstitials, `X-SKIP-CONTROL-*`): players may offer a skip button from `offset` seconds into
/// the interstitial for `duration` seconds (until its end when absent), labelled by `labelID`.
public struct SkipControl: Hashable, Sendable, Codable {
    public var offsetMilliseconds: Int64
    public var durationMilliseconds: Int64?
    public var labelID: String?

    public init(offsetMilliseconds: Int64, durationMilliseconds: Int64? = nil, labelID: String? = nil) {
        self.offsetMilliseconds = offsetMilliseconds
        self.durationMilliseconds = durationMilliseconds
        self.labelID = labelID
    }

    /// `[a-zA-Z_-]` (rfc8216bis-22 D.3: no digits), 1–64 characters: the key a player application looks its localized
    /// skip-button label up by.
    public static func labelProblem(_ label: String) -> String? {
        let allowed = label.unicodeScalars.allSatisfy { scalar in
            switch scalar {
            case "a"..."z", "A"..."Z", "_", "-": true
            default: false
            }
        }
        guard (1...64).contains(label.count), allowed else {
            return
                "\(label.debugDescription.escapingControlCharacters) must be 1–64 characters of a-z, A-Z, '_' or '-' (no digits: rfc8216bis-22 D.3)"
        }
        return nil
    }

    public func validate(breakMilliseconds: Int64) throws(ScheduleError) {
        guard offsetMilliseconds >= 0, offsetMilliseconds % 1000 == 0 else {
            throw .invalidField("skip_offset", "must be a whole number of seconds, 0 or more")
        }
        guard offsetMilliseconds < breakMilliseconds else {
            throw .invalidField(
                "skip_offset",
                "\(DecimalNumber(milliseconds: offsetMilliseconds)) s is not inside the \(DecimalNumber(milliseconds: breakMilliseconds)) s break"
            )
        }
        if let durationMilliseconds {
            guard durationMilliseconds > 0, durationMilliseconds % 1000 == 0 else {
                throw .invalidField("skip_duration", "must be a whole number of seconds, more than 0")
            }
        }
        if let labelID, let problem = Self.labelProblem(labelID) {
            throw .invalidField("skip_label", problem)
        }
    }
}
