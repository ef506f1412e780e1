import ArgumentParser
import EventStore
import Foundation
import HLS
import Projector
import Schedule
import Wire

struct ChannelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "channel", abstract: "Create and list channels, change their renditions.",
        subcommands: [Create.self, Update.self, UpdateRenditions.self, List.self])

    /// The ad settings `create` and `update` take (`AdSettings`).
    struct AdOptions: ParsableArguments {
        @Option(
            name: .customLong("ad-server"),
            help: ArgumentHelp(
                "URL template of the ad server that fills the channel's breaks for each viewer.",
                discussion:
                    "Placeholders: {break_id} {channel} {duration} {start} {primary_id} and {param.NAME} (NAME one of \(AdServerTemplate.allowedParameters.joined(separator: ", "))). A break placed afterwards without --ad-server of its own is filled by it."
            ))
        var adServer: String?

        @Option(
            name: .customLong("ad-timeout"),
            help: "How long a viewer's asset list may wait on the ad server (default 1.5 s).")
        var adTimeout: DurationArgument?

        @Option(
            name: .customLong("ad-concurrency"),
            help:
                "Requests to one ad server in flight at once for this channel's viewers (default 32); more wait, then fall back."
        )
        var adConcurrency: Int?

        @Option(help: "A VOD playlist that fills a break when the ad server gives nothing and the break has no asset.")
        var slate: String?

        @Option(
            help: "Announce each break this long before it starts (com.apple.hls.preload; default 20 s, 0 for none).")
        var preload: DurationArgument?

        @Option(
            name: .customLong("ad-beacons"),
            help:
                "client (players report, from the asset list) or server (Cueline fires impressions when it serves the list)."
        )
        var adBeacons: AdSettings.Beacons?

        @Option(
            name: .customLong("preroll-asset"),
            help:
                "A VOD playlist a viewer who joins plays once before the programme (CUE=\"PRE,ONCE\"); with --preroll-duration."
        )
        var prerollAsset: String?

        @Option(
            name: .customLong("preroll-ad-server"),
            help:
                "An ad server template deciding each joining viewer's preroll (placeholders as --ad-server); with --preroll-duration."
        )
        var prerollAdServer: String?

        @Option(
            name: .customLong("preroll-duration"),
            help: "The preroll's length: the asset's, or the most an ad server's preroll may fill (at most 120 s).")
        var prerollDuration: DurationArgument?

        @Flag(name: .customLong("no-preroll"), help: "(update) Remove the channel's preroll.")
        var noPreroll = false

        @Flag(name: .customLong("no-ad-server"), help: "(update) Remove the channel's ad server.")
        var noAdServer = false

        @Flag(name: .customLong("no-slate"), help: "(update) Remove the channel's slate.")
        var noSlate = false

        /// The change these options ask for; the error names the option.
        func change() throws -> AdSettingsChange {
            var change = AdSettingsChange()
            if noAdServer {
                change.adServer = .some(nil)
            } else if let adServer {
                try checkOption("ad-server") { () throws(ScheduleError) in
                    change.adServer = .some(try AdServerTemplate(adServer, field: "ad-server"))
                }
            }
            change.timeoutMilliseconds = adTimeout?.milliseconds
            change.concurrency = adConcurrency
            if noSlate {
                change.slate = .some(nil)
            } else if let slate {
                try checkOption("slate") { () throws(ScheduleError) in _ = try AbsoluteURI(slate, field: "slate") }
                change.slate = .some(AdSettings.Slate(uri: slate, durationMilliseconds: nil))
            }
            change.preloadMilliseconds = preload?.milliseconds
            change.beacons = adBeacons
            if noPreroll {
                guard prerollAsset == nil, prerollAdServer == nil, prerollDuration == nil else {
                    throw ValidationError("--no-preroll removes the preroll: give no other --preroll option with it")
                }
                change.preroll = .some(nil)
            } else if prerollAsset != nil || prerollAdServer != nil || prerollDuration != nil {
                guard (prerollAsset == nil) != (prerollAdServer == nil) else {
                    throw ValidationError(
                        "give one of --preroll-asset (one VOD playlist) and --preroll-ad-server (decided per viewer)")
                }
                guard let duration = prerollDuration?.milliseconds else {
                    throw ValidationError("--preroll-duration is needed with a preroll: its length, at most 120 s")
                }
                if let prerollAsset {
                    try checkOption("preroll-asset") { () throws(ScheduleError) in
                        _ = try AbsoluteURI(prerollAsset, field: "preroll-asset")
                    }
                    change.preroll = .some(.asset(uri: prerollAsset, durationMilliseconds: duration))
                } else if let prerollAdServer {
                    try checkOption("preroll-ad-server") { () throws(ScheduleError) in
                        change.preroll = .some(
                            .adServer(
                                try AdServerTemplate(prerollAdServer, field: "preroll-ad-server"),
                                durationMilliseconds: duration))
                    }
                }
                try checkOption("preroll-duration") { () throws(ScheduleError) in
                    try AdSettings(preroll: change.preroll ?? nil).validate()
                }
            }
            return change
        }
    }

    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change a channel's ad settings (what is not given stays as it is).",
            discussion: "Breaks already placed keep the ad server they were placed with.")

        @Argument(transform: identifier) var id: ChannelID
        @OptionGroup var ads: AdOptions
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var options: CommandOptions

        func run() async throws {
            let change = try ads.change()
            guard !change.isEmpty else { throw ValidationError("give at least one setting to change") }
            try await sendCommand(.setAdSettings(change), channel: id, database: database, options: options) {
                answer in
                guard case .adSettingsSet(let settings)? = answer.events.first else { return "updated channel \(id)" }
                return "channel \(id) ad settings: \(AdSettingsText.line(settings)) (version \(answer.version))"
            }
        }
    }

    /// The rendition options shared by `create` and `update-renditions`.
    struct RenditionOptions: ParsableArguments {
        @Option(help: "NAME,BANDWIDTH,URI-TEMPLATE (NAME,BANDWIDTH for relay channels); repeat per rendition.")
        var rendition: [String]

        @Option(help: "NAME=CODEC,CODEC")
        var codecs: [String] = []

        @Option(help: "NAME=WIDTHxHEIGHT")
        var resolution: [String] = []

        @Option(help: "NAME=URI of the fMP4 initialization segment (EXT-X-MAP).")
        var map: [String] = []

        @Option(
            help:
                "NAME=PART-URI-TEMPLATE for channels with --part-duration: {n} the segment number, {p} the part's index in it."
        )
        var part: [String] = []

        @Option(
            name: .customLong("independent-parts"),
            help: "NAME=K: every K-th part of a segment starts with an independent frame (default: only the first).")
        var independentParts: [String] = []

        func renditions(relay: Bool) throws -> [RenditionConfig] {
            func lookup(_ pairs: [String], _ name: String) -> String? {
                pairs.first { $0.hasPrefix(name + "=") }.map { String($0.dropFirst(name.count + 1)) }
            }
            return try rendition.map { spec in
                var parts = spec.split(separator: ",", maxSplits: 2).map(String.init)
                if relay && parts.count == 2 { parts.append("") }
                guard parts.count == 3, let bandwidth = Int(parts[1]) else {
                    throw CLIError(
                        message:
                            "rendition: \(spec.debugDescription) is not NAME,BANDWIDTH,URI-TEMPLATE (NAME,BANDWIDTH with --relay)",
                        exitCode: ExitStatus.usage)
                }
                guard let name = Identifier(parts[0]) else {
                    throw CLIError(
                        message:
                            "rendition: name \(parts[0].debugDescription.escapingControlCharacters) must be \(Identifier.rule)",
                        exitCode: ExitStatus.usage)
                }
                var interval: Int?
                if let text = lookup(independentParts, parts[0]) {
                    guard let value = Int(text) else {
                        throw CLIError(
                            message:
                                "independent-parts: \(text.debugDescription.escapingControlCharacters) is not a number of parts",
                            exitCode: ExitStatus.usage)
                    }
                    interval = value
                }
                return RenditionConfig(
                    name: name, bandwidth: bandwidth,
                    codecs: lookup(codecs, parts[0]).map { $0.split(separator: ",").map(String.init) } ?? [],
                    resolution: lookup(resolution, parts[0]), uriTemplate: parts[2], mapURI: lookup(map, parts[0]),
                    partURITemplate: lookup(part, parts[0]), independentPartInterval: interval)
            }
        }
    }

    struct UpdateRenditions: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "update-renditions",
            abstract: "Replace a channel's renditions (the segment timing never changes).")

        @Argument(transform: identifier) var id: ChannelID
        @OptionGroup var renditionOptions: RenditionOptions
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var options: CommandOptions

        func run() async throws {
            try options.requireDatabase(for: "channel update-renditions")
            let store = try await openStore(database)
            let relay = try await ChannelLoader.load(id, from: store).config.map { $0.source != .clock } ?? false
            let renditions = try renditionOptions.renditions(relay: relay)
            for rendition in renditions {
                try usageError { () throws(ScheduleError) in try rendition.validate(needsTemplate: !relay) }
            }
            try await sendCommand(.updateRenditions(renditions), channel: id, database: database, options: options) {
                answer in
                "channel \(id) now has renditions \(renditions.map(\.name.rawValue).joined(separator: ", ")) (version \(answer.version))"
            }
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a channel.",
            discussion: """
                --rendition NAME,BANDWIDTH,URI-TEMPLATE (repeat per rendition). In the template {n} is the segment number,
                {n%K} the number modulo K (for looping media). Codecs and resolution: --codecs NAME=avc1.64001f,mp4a.40.2
                and --resolution NAME=1280x720.
                """)

        @Argument(help: "Channel id: a-z, 0-9, '-', '_', starting with a letter or a digit.", transform: identifier)
        var id: ChannelID

        @Option(name: .customLong("segment-duration"), help: "Segment duration.")
        var segmentDuration: DurationArgument

        @Option(help: "Segments in the live window (at least 3 target durations).")
        var window: Int

        @OptionGroup var renditionOptions: RenditionOptions

        @Option(
            help:
                "Relay: follow this upstream media playlist (URL or path; {rendition} stands for the name) instead of the clock."
        )
        var relay: String?

        @Option(
            help: "When segment 0 starts (ISO 8601); defaults to one window before now, so playlists are full at once.")
        var epoch: TimeArgument?

        @Option(help: "The media loops every N segments (a discontinuity marks each loop).")
        var loop: Int?

        @Option(name: .customLong("public-url"), help: "Base URL players reach this service at, for asset-list URIs.")
        var publicURL = "http://127.0.0.1:8080"

        @Option(
            help: """
                Publish a future break once its start is this close to the live edge (default 120 s, at least 3 target \
                durations): playlists carry the next breaks, not the whole day's plan.
                """)
        var horizon: DurationArgument?

        @Option(
            name: .customLong("part-duration"),
            help: """
                Low-Latency HLS: segments are made of parts this long (a whole fraction of the segment, e.g. 0.25 with 1 s \
                segments); each rendition needs --part NAME=TEMPLATE.
                """)
        var partDuration: DurationArgument?

        @Option(
            help: """
                What the playlists mark breaks with: interstitial (HLS Interstitials for players, each carrying \
                SCTE35-OUT), scte35 (for a downstream SSAI: SCTE-35 date ranges without an asset, and \
                EXT-X-CUE-OUT/-CONT/-IN), or both.
                """)
        var markers: Signalling.Markers = .interstitial

        @Option(
            name: .customLong("segmentation-type"),
            help: """
                The SCTE-35 segmentation type a break starts with: 0x34 provider placement opportunity (default), \
                0x36 distributor placement opportunity, 0x22 break, 0x30 provider advertisement.
                """,
            transform: parseSegmentationType)
        var segmentationType: UInt8 = Signalling.defaultSegmentationType

        @OptionGroup var ads: AdOptions

        @OptionGroup var database: DatabaseOptions
        @OptionGroup var options: CommandOptions

        func validate() throws {
            // Bounded before `run` multiplies it by the segment duration.
            guard (1...10_000).contains(window) else { throw ValidationError("--window must be 1 to 10000 segments") }
        }

        func run() async throws {
            try options.requireDatabase(for: "channel create")
            let renditions = try renditionOptions.renditions(relay: relay != nil)
            let now = wallClock()
            let defaultEpoch = now.adding(milliseconds: -Int64(window) * segmentDuration.milliseconds)
            let config = ChannelConfig(
                id: id, segmentDurationMilliseconds: segmentDuration.milliseconds, windowSegments: window,
                epoch: epoch?.timestamp
                    ?? Timestamp(milliseconds: defaultEpoch.milliseconds - defaultEpoch.milliseconds % 1000),
                renditions: renditions,
                source: relay.map { .relay(upstream: $0) } ?? .clock, loopSegments: loop, publicBaseURL: publicURL,
                horizonMilliseconds: horizon?.milliseconds
                    ?? max(120_000, 3 * ((segmentDuration.milliseconds + 999) / 1000) * 1000),
                partDurationMilliseconds: partDuration?.milliseconds,
                signalling: Signalling(markers: markers, segmentationType: segmentationType),
                ads: try ads.change().applied(to: .defaults))
            // Every field is checked before anything is written: a newline in a codec or a template starting with a
            // space would make every playlist of the channel unservable.
            try usageError { () throws(ScheduleError) in try config.validate() }
            if ads.noAdServer || ads.noSlate || ads.noPreroll {
                throw ValidationError("--no-ad-server, --no-slate and --no-preroll are for channel update")
            }
            try await sendCommand(.createChannel(config), channel: id, database: database, options: options) { answer in
                "created channel \(id): \(renditions.count) renditions, \(DecimalNumber(milliseconds: config.segmentDurationMilliseconds)) s segments, target duration \(config.targetDuration), epoch \(config.epoch)"
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the channels.")

        @OptionGroup var database: DatabaseOptions

        @Flag(help: "Print JSON (what GET /channels answers).")
        var json = false

        @Option(help: "Read it from this server's HTTP API instead of the database (or CUELINE_SERVER).")
        var server: String?

        @Option(help: "API token for --server (or CUELINE_TOKEN); lists the channels it may read.")
        var token: String?

        func run() async throws {
            var views: [ChannelView] = []
            if let remote = RemoteAPI.configured(server: server, token: token) {
                views = try await remote.channels()
            } else {
                let store = try await openStore(database)
                for id in try await store.channelIDs() {
                    do {
                        let state = try await ChannelLoader.load(id, from: store)
                        if state.config != nil { views.append(ChannelView(state)) }
                    } catch {
                        FileHandle.standardError.write(
                            Data("warning: stream \(id) is not readable as a channel: \(error)\n".utf8))
                    }
                }
            }
            // One order on both paths (the database's collation may not be Swift's).
            views.sort { $0.id < $1.id }
            if json {
                try printJSON(views)
                return
            }
            print(
                table(
                    ["CHANNEL", "SEGMENT", "TD", "WINDOW", "RENDITIONS", "EPOCH"],
                    views.map { view in
                        [
                            view.id.rawValue, "\(view.segmentDuration)s", "\(view.targetDuration)",
                            "\(view.windowSegments)",
                            view.renditions.map(\.rawValue).joined(separator: ","), view.epoch.iso8601,
                        ]
                    }))
        }
    }
}

extension Signalling.Markers: ExpressibleByArgument {}
extension AdSettings.Beacons: ExpressibleByArgument {}

/// `0x34` (or `34`, hexadecimal) to a segmentation type id; `Signalling.validate` says which ones a channel may take.
private func parseSegmentationType(_ text: String) throws -> UInt8 {
    let digits = text.hasPrefix("0x") || text.hasPrefix("0X") ? text.dropFirst(2) : Substring(text)
    guard let value = UInt8(digits, radix: 16) else {
        throw ValidationError("--segmentation-type \(text.debugDescription) is not a hexadecimal byte such as 0x34")
    }
    return value
}

/// Runs a `Schedule` check on command-line values; a refusal is a usage error (exit code 2) naming the option.
private func usageError(_ check: () throws(ScheduleError) -> Void) throws {
    do {
        try check()
    } catch {
        if case .invalidField(let field, let reason) = error {
            throw CLIError(
                message: (field == "channel" ? "channel id " : "--\(field) ") + reason, exitCode: ExitStatus.usage)
        }
        throw CLIError(message: error.description, exitCode: ExitStatus.usage)
    }
}

/// Ad settings in one line, for the CLI's answers and `channel list`.
enum AdSettingsText {
    static func line(_ settings: AdSettings) -> String {
        var parts: [String] = []
        parts.append("ad server \(settings.adServer?.value ?? "none")")
        parts.append("timeout \(DecimalNumber(milliseconds: settings.timeoutMilliseconds)) s")
        parts.append("concurrency \(settings.concurrency)")
        parts.append("slate \(settings.slate?.uri ?? "none")")
        parts.append("preload \(DecimalNumber(milliseconds: settings.preloadMilliseconds)) s")
        parts.append("beacons \(settings.beacons.rawValue)")
        switch settings.preroll {
        case nil: break
        case .asset(let uri, let duration)?:
            parts.append("preroll \(uri) (\(DecimalNumber(milliseconds: duration)) s)")
        case .adServer(let template, let duration)?:
            parts.append("preroll from \(template.value) (up to \(DecimalNumber(milliseconds: duration)) s)")
        }
        return parts.joined(separator: ", ").escapingControlCharacters
    }
}
