import HLS
import Schedule

/// A channel as `GET /channels` lists it.
public struct ChannelView: Codable, Sendable, Hashable {
    public var id: ChannelID
    public var segmentDuration: DecimalNumber
    public var targetDuration: Int
    public var windowSegments: Int
    public var epoch: Timestamp
    public var renditions: [Identifier]
    /// `clock` (segments from the channel's clock) or `relay` (an upstream encoder's playlists decorated).
    public var source: String
    /// What breaks are marked with (`interstitial`, `scte35`, `both`) and the SCTE-35 segmentation type of their start
    /// (`0x34`); absent for a channel created before signalling (no SCTE-35 written, no CUE markers).
    public var markers: String?
    public var segmentationType: String?
    /// Its ad settings (`ChannelState.adSettings`); absent for a channel that never had any.
    public var ads: AdSettingsView?

    /// A channel's ad settings, seconds as numbers.
    public struct AdSettingsView: Codable, Sendable, Hashable {
        public var adServer: String?
        public var adTimeout: DecimalNumber
        public var adConcurrency: Int
        public var slate: String?
        public var slateDuration: DecimalNumber?
        public var preload: DecimalNumber
        public var adBeacons: AdSettings.Beacons
        /// The preroll on join: one asset, or an ad server's decision, and its length.
        public var prerollAsset: String?
        public var prerollAdServer: String?
        public var prerollDuration: DecimalNumber?

        public init(_ settings: AdSettings) {
            adServer = settings.adServer?.value
            adTimeout = DecimalNumber(milliseconds: settings.timeoutMilliseconds)
            adConcurrency = settings.concurrency
            slate = settings.slate?.uri
            slateDuration = settings.slate?.durationMilliseconds.map { DecimalNumber(milliseconds: $0) }
            preload = DecimalNumber(milliseconds: settings.preloadMilliseconds)
            adBeacons = settings.beacons
            switch settings.preroll {
            case .asset(let uri, _)?: prerollAsset = uri
            case .adServer(let template, _)?: prerollAdServer = template.value
            case nil: break
            }
            prerollDuration = settings.preroll.map { DecimalNumber(milliseconds: $0.durationMilliseconds) }
        }
    }

    /// A channel as its state holds it: its configuration and its ad settings as last set.
    public init(_ state: ChannelState) {
        self.init(state.config!, ads: state.adSettings)
    }

    public init(_ config: ChannelConfig, ads: AdSettings? = nil) {
        self.ads = (ads ?? config.ads).map(AdSettingsView.init)
        id = config.id  // as stored: a channel of the earlier rule is listed too
        segmentDuration = DecimalNumber(milliseconds: config.segmentDurationMilliseconds)
        targetDuration = config.targetDuration
        windowSegments = config.windowSegments
        epoch = config.epoch
        renditions = config.renditions.map(\.name)
        if case .relay = config.source { source = "relay" } else { source = "clock" }
        markers = config.signalling?.markers.rawValue
        segmentationType = config.signalling.map { Signalling.name($0.segmentationType) }
    }
}
