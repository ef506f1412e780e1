// Guards the exact round trip of `EventCodec`: `decode(encode(event)) == event` for every `ScheduleEvent`.
//
// The follower folds a command's own events as decided (`ChannelFollower.ingest(_:)` takes the in-memory
// `ScheduleEvent`, not the JSON payload it stored), while a replay or another instance folds the same events as
// decoded from the log. Both must reach the same state, so every field an event carries (every optional set, and
// every optional nil) must come back from its payload unchanged, and encoding what was decoded must give the same
// bytes.
import HLS
import Schedule
import Testing

@Suite("the event codec's round trip is exact")
struct EventCodecRoundTripTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let event: ScheduleEvent
        var testDescription: String { name }
    }

    // Identifiers at their maximum length (64), by today's rule and by the earlier rule a log may still hold.
    static let longest = Identifier("9" + String(repeating: "a-_0", count: 15) + "zzz")!
    static let storedLongest = Identifier(stored: "_" + String(repeating: "x-9_", count: 15) + "end")!
    static let epoch = Timestamp(iso8601: "2026-03-01T12:00:00Z")!
    // Millisecond precision; the first and last instants ISO 8601 with a four-digit year carries; before 1970.
    static let instants: [Timestamp] = [
        epoch.adding(milliseconds: 1), Timestamp.representable.upperBound, Timestamp.representable.lowerBound,
        Timestamp(milliseconds: -1), Timestamp(milliseconds: 0), Limits.latestInstant,
    ]
    static let longURI = "https://ads.example.com/" + String(repeating: "p", count: Limits.uriBytes - 24 - 5) + ".m3u8"
    static let scte35Out = "0xFC302500000000000000FFF01405000000017FEFFE0000000000000000000000000000A1B2C3D4"
    static let scte35In = "0xfc302000000000000000fff00f05000000017f4ffe00000000000000000000c0ffee"

    static let fullRendition = RenditionConfig(
        name: longest, bandwidth: 1_000_000_000_000, codecs: ["avc1.64001f", "mp4a.40.2", "ec-3"],
        resolution: "1920x1080",
        frameRate: DecimalNumber(mantissa: 29_970, scale: 3), uriTemplate: "1080p/{rendition}/seg{n%1000}.m4s?a=1&b=2",
        mapURI: "https://cdn.example.com/init/{rendition}.mp4", partURITemplate: "1080p/seg{n}.part{p}.m4s",
        independentPartInterval: 2)
    static let bareRendition = RenditionConfig(name: "a", bandwidth: 1, uriTemplate: "")
    static let wholeFrameRate = RenditionConfig(
        name: "r2", bandwidth: 800_000, frameRate: DecimalNumber(integer: 60), uriTemplate: "s{n}.ts")

    static var channels: [Case] {
        let clock = ChannelConfig(
            id: longest, segmentDurationMilliseconds: 2000, windowSegments: 10_000, epoch: Timestamp(milliseconds: -1),
            renditions: [fullRendition, wholeFrameRate, bareRendition], source: .clock, loopSegments: 7,
            publicBaseURL: "https://cueline.example.com:8443/base/path", horizonMilliseconds: 86_400_000,
            partDurationMilliseconds: 500)
        let relay = ChannelConfig(
            id: storedLongest, segmentDurationMilliseconds: 6006, windowSegments: 1,
            epoch: Timestamp.representable.upperBound,
            renditions: [fullRendition],
            source: .relay(upstream: "https://origin.example.com/live/{rendition}/index.m3u8?token=x/y&z=1"),
            loopSegments: 1, publicBaseURL: "http://127.0.0.1:8080", horizonMilliseconds: 18_000,
            partDurationMilliseconds: 1001)
        let fileRelay = ChannelConfig(
            id: "r", segmentDurationMilliseconds: 100, windowSegments: 3, epoch: Timestamp.representable.lowerBound,
            renditions: [bareRendition], source: .relay(upstream: "/var/media/{rendition}/live é.m3u8"),
            publicBaseURL: "http://h")
        return [
            Case(name: "ChannelCreated, clock, every optional set", event: .channelCreated(clock)),
            Case(
                name: "ChannelCreated, relay (URL), every optional set, id of the earlier rule",
                event: .channelCreated(relay)),
            Case(name: "ChannelCreated, relay (path), every optional nil", event: .channelCreated(fileRelay)),
            Case(name: "ChannelCreated, demoConfig()", event: .channelCreated(demoConfig())),
            Case(
                name: "RenditionsUpdated, full and bare",
                event: .renditionsUpdated([fullRendition, wholeFrameRate, bareRendition])),
            Case(name: "RenditionsUpdated, demoConfig()'s", event: .renditionsUpdated(demoConfig().renditions)),
            Case(name: "RenditionsUpdated, none", event: .renditionsUpdated([])),
        ]
    }

    static let everyAttributeKind: [ClientAttribute] = [
        ClientAttribute(name: "X-COM-EXAMPLE-AD-ID", value: .string("ad-42")),
        ClientAttribute(name: "X-TEXT", value: .string("café e\u{301} 広告 🎬 \\ / ' <&> \u{2028} ∞")),
        ClientAttribute(name: "X-EMPTY", value: .string("")),
        ClientAttribute(
            name: "X-HEX",
            value: .hex(HexBytes([0xFC, 0x30, 0x11, 0x00, 0x00, 0x0F, 0xAB, 0x10, 0xFF, 0x7F, 0x80, 0x01]))),
        ClientAttribute(name: "X-HEX-ONE", value: .hex(HexBytes([0x00]))),
        ClientAttribute(name: "X-DECIMAL", value: .decimal(DecimalNumber(milliseconds: 30_030))),
        ClientAttribute(name: "X-NEGATIVE", value: .decimal(DecimalNumber(mantissa: -5, scale: 3))),
        ClientAttribute(name: "X-NEGATIVE-WHOLE", value: .decimal(DecimalNumber(integer: -12))),
        ClientAttribute(name: "X-ZERO", value: .decimal(DecimalNumber(mantissa: 0, scale: 9))),
        ClientAttribute(name: "X-LARGEST", value: .decimal(DecimalNumber(mantissa: .max, scale: 9))),
        ClientAttribute(name: "X-SMALLEST", value: .decimal(DecimalNumber(mantissa: -Int64.max, scale: 9))),
        ClientAttribute(name: "X-HUGE-WHOLE", value: .decimal(DecimalNumber(integer: .max))),
        ClientAttribute(name: "X-TINY", value: .decimal(DecimalNumber(mantissa: 1, scale: 9))),
    ]

    static var breaks: [Case] {
        let full = InterstitialOptions(
            restrict: [.skip, .jump], snap: [.out, .in], cue: [.pre, .once], timelineOccupies: .range,
            timelineStyle: .highlight,
            contentMayVary: true, clientAttributes: everyAttributeKind, scte35Out: scte35Out)
        let others = InterstitialOptions(
            restrict: [.jump], snap: [.in], cue: [.post], timelineOccupies: .point, timelineStyle: .primary,
            contentMayVary: false,
            clientAttributes: [everyAttributeKind[3], everyAttributeKind[6]], scte35Out: "0x00")
        let empties = InterstitialOptions(restrict: [], snap: [], cue: [], clientAttributes: [])
        let chunked = MeasuredAsset(durationMilliseconds: 30_030, chunkMilliseconds: Array(repeating: 2002, count: 15))
        let whole = MeasuredAsset(durationMilliseconds: 6006)
        let pod = [
            PodAsset(uri: longURI, durationMilliseconds: 6006),
            PodAsset(uri: "http://a/b.m3u8", durationMilliseconds: 1),
            PodAsset(uri: "https://c.example/d.m3u8", durationMilliseconds: 3_600_000),
        ]
        func spec(
            _ id: BreakID, _ start: Timestamp, _ asset: BreakAsset, _ options: InterstitialOptions, _ media: BreakMedia?
        ) -> ScheduleEvent {
            .breakPlaced(
                BreakSpec(
                    id: id, start: start, plannedDurationMilliseconds: 30_030, asset: asset, options: options,
                    media: media))
        }
        var cases = [
            Case(
                name: "BreakPlaced, URI asset, every option, chunked media with a requested duration",
                event: spec(
                    longest, instants[0], .uri(longURI), full,
                    BreakMedia(assets: [chunked], requestedDurationMilliseconds: 30_000))),
            Case(
                name: "BreakPlaced, asset list, the other enum values, media with an unreadable asset",
                event: spec(
                    storedLongest, instants[1], .list("https://ads.example.com/vast?pod=1&dur=30"), others,
                    BreakMedia(assets: [nil]))),
            Case(
                name: "BreakPlaced, pod, empty lists, media with whole, chunked and unreadable assets",
                event: spec(
                    "p", instants[2], .pod(pod), empties,
                    BreakMedia(assets: [whole, nil, chunked], requestedDurationMilliseconds: 0))),
            Case(
                name: "BreakPlaced, pod of none, empty media",
                event: spec("e", instants[3], .pod([]), others, BreakMedia(assets: []))),
            Case(
                name: "BreakPlaced, every optional nil",
                event: .breakPlaced(
                    BreakSpec(id: "b", start: epoch, plannedDurationMilliseconds: 0, asset: .uri("http://h/x.m3u8")))),
        ]
        for (index, instant) in instants.enumerated() {
            cases.append(
                Case(
                    name: "BreakPlaced at \(instant) (ms \(instant.milliseconds))",
                    event: spec(
                        Identifier("t\(index)")!, instant, .list("http://h/l"),
                        InterstitialOptions(cue: InterstitialOptions.defaultCue), nil)))
        }
        return cases
    }

    static var limitsAndCancels: [Case] {
        var cases: [Case] = []
        for kind in EarlyReturnKind.allCases {
            cases.append(
                Case(
                    name: "PlayoutLimitSet, \(kind.rawValue), with SCTE35-IN",
                    event: .playoutLimitSet(id: longest, limitMilliseconds: 12_345, kind: kind, scte35In: scte35In)))
            cases.append(
                Case(
                    name: "PlayoutLimitSet, \(kind.rawValue), without SCTE35-IN",
                    event: .playoutLimitSet(id: storedLongest, limitMilliseconds: 0, kind: kind, scte35In: nil)))
        }
        cases.append(
            Case(
                name: "PlayoutLimitSet, largest limit",
                event: .playoutLimitSet(id: "b", limitMilliseconds: .max, kind: .playoutLimit)))
        cases.append(
            Case(
                name: "PlayoutLimitSet, empty SCTE35-IN",
                event: .playoutLimitSet(id: "b", limitMilliseconds: 1, kind: .scte35Return, scte35In: "")))
        for kind in BreakCancelKind.allCases {
            cases.append(
                Case(name: "BreakCancelled, \(kind.rawValue)", event: .breakCancelled(id: longest, kind: kind)))
            cases.append(
                Case(
                    name: "BreakCancelled, \(kind.rawValue), id of the earlier rule",
                    event: .breakCancelled(id: storedLongest, kind: kind)))
        }
        cases.append(Case(name: "BreakCancelled, default kind", event: .breakCancelled(id: "b")))
        return cases
    }

    /// Issue 33: the SCTE-35 policy and the sections received, every outcome.
    static var scte35: [Case] {
        var cases = [
            Case(name: "SCTE35PolicySet, standard", event: .scte35PolicySet(.standard)),
            Case(
                name: "SCTE35PolicySet, every rule",
                event: .scte35PolicySet(
                    SCTE35Policy(
                        place: [0x22], end: [0x23], cancel: [0x40], ignore: [0x00, 0xFF], spliceInsert: .ignore,
                        restricted: .ignore, defaultDurationMilliseconds: 3_600_000))),
        ]
        for outcome in SCTE35Received.Outcome.allCases {
            var ingest = SCTE35Ingest(
                section: [0xFC, 0x30, 0x00], durationMilliseconds: outcome == .placed ? 30_000 : nil,
                asset: outcome == .placed ? .uri(longURI) : nil, alignment: .exact)
            if outcome == .placed { ingest.measured = [nil] }
            cases.append(
                Case(
                    name: "SCTE35Received, \(outcome.rawValue)",
                    event: .scte35Received(
                        SCTE35Received(
                            ingest: ingest, outcome: outcome, breakID: outcome == .ignored ? nil : longest,
                            detail: "why \u{202E}", deliveryRestrictions: outcome == .placed ? 0x1F : nil,
                            consequences: outcome == .ignored ? 0 : 1))))
        }
        return cases
    }

    static let cases: [Case] = channels + breaks + limitsAndCancels + scte35 + ads

    /// Issue 35: ad settings (every field, each optional one absent too), a channel created with them, a break filled
    /// by an ad server with skip control.
    static var ads: [Case] {
        let template = try! AdServerTemplate(
            "https://ads.example.com/vast?b={break_id}&c={channel}&d={duration}&s={start}&p={primary_id}&g={param.gdpr}",
            field: "ad_server")
        let full = AdSettings(
            adServer: template, timeoutMilliseconds: 100, concurrency: 1024,
            slate: .init(uri: longURI, durationMilliseconds: 9_999), preloadMilliseconds: 0,
            preroll: .adServer(template, durationMilliseconds: 120_000), beacons: .server)
        var config = channels.compactMap { if case .channelCreated(let config) = $0.event { config } else { nil } }[0]
        config.ads = AdSettings()
        var spec = BreakSpec(
            id: longest, start: Timestamp(milliseconds: 1_700_000_000_000), plannedDurationMilliseconds: 30_000,
            asset: .pod([]),
            options: InterstitialOptions(
                timelineOccupies: .range, timelineStyle: .primary, contentMayVary: false,
                skipControl: SkipControl(offsetMilliseconds: 0, durationMilliseconds: 30_000, labelID: "Skip_Ad-x")))
        spec.adServer = template
        return [
            Case(name: "AdSettingsSet, defaults", event: .adSettingsSet(AdSettings())),
            Case(name: "AdSettingsSet, every field", event: .adSettingsSet(full)),
            Case(
                name: "AdSettingsSet, a preroll asset, a slate not measured",
                event: .adSettingsSet(
                    AdSettings(
                        slate: .init(uri: "https://s.example.com/s.m3u8", durationMilliseconds: nil),
                        preroll: .asset(uri: longURI, durationMilliseconds: 1)))),
            Case(name: "ChannelCreated, with ad settings", event: .channelCreated(config)),
            Case(name: "BreakPlaced, an ad server's, skip control and the timeline", event: .breakPlaced(spec)),
        ]
    }

    @Test("decode(encode(event)) == event, and encoding the decoded event gives the same payload", arguments: cases)
    func roundTrip(_ item: Case) throws {
        let event = item.event
        let encoded = EventCodec.encode(event)
        #expect(encoded.type == event.typeName)
        #expect(encoded.schemaVersion == event.writtenSchemaVersion)
        let decoded = try EventCodec.decode(
            type: encoded.type, schemaVersion: encoded.schemaVersion, payload: encoded.payload)
        #expect(decoded == event)
        #expect(EventCodec.encode(decoded).payload == encoded.payload)
    }

    @Test("the cases cover every event type and every kind")
    func coverage() {
        #expect(Set(Self.cases.map(\.event.typeName)) == Set(ScheduleEvent.typeNames))
        var limitKinds: Set<EarlyReturnKind> = [], cancelKinds: Set<BreakCancelKind> = []
        for item in Self.cases {
            if case .playoutLimitSet(_, _, let kind, _) = item.event { limitKinds.insert(kind) }
            if case .breakCancelled(_, let kind) = item.event { cancelKinds.insert(kind) }
        }
        #expect(limitKinds == Set(EarlyReturnKind.allCases) && cancelKinds == Set(BreakCancelKind.allCases))
        #expect(
            Self.longest.rawValue.utf8.count == 64 && Self.storedLongest.rawValue.utf8.count == 64
                && !Self.storedLongest.isCurrent)
        #expect(Self.longURI.utf8.count == Limits.uriBytes)
    }
}
