import ArgumentParser
import EventStore
import Foundation
import HLS
import Projector
import Schedule
import Wire

struct BreakCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "break", abstract: "Place, end early and cancel breaks.",
        subcommands: [Place.self, Limit.self, Cancel.self])

    struct Place: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Place a break ahead of the live edge.",
            discussion: "--attr X-NAME=value: 0x… is hex, a plain number is a decimal, anything else a string.")

        @Argument(transform: identifier) var channel: ChannelID

        @Option(help: "Start time (ISO 8601).")
        var at: TimeArgument?

        @Option(name: .customLong("in"), help: "Start this long from now.")
        var inDuration: DurationArgument?

        @Option(help: "Planned duration.")
        var duration: DurationArgument

        @Option(name: .customLong("asset-uri"), help: "Absolute URI of the VOD playlist to play.")
        var assetURI: String?

        @Option(name: .customLong("asset-list"), help: "Absolute URI of an external asset list.")
        var assetList: String?

        @Option(help: "URI,DURATION of one pod asset served from this service's asset list (repeat in order).")
        var pod: [String] = []

        @Option(
            help: "Break id (a-z, 0-9, '-', '_', starting with a letter or a digit); generated if left out.",
            transform: identifier)
        var id: BreakID?

        @Option(help: "skip, jump or skip,jump")
        var restrict: String?

        @Option(help: "out, in or out,in")
        var snap: String?

        @Option(
            help: ArgumentHelp(
                "pre, post, once (comma-separated), or none. Default: once.",
                discussion:
                    "A live break plays once for each viewer; CUE=\"ONCE\" also keeps hls.js 1.6 from appending it into the primary's buffer, where the primary froze at the break's start."
            ))
        var cue: String?

        @Option(help: "X-NAME=value client attribute (repeatable).")
        var attr: [String] = []

        @Option(
            help: ArgumentHelp(
                "segment (default) or exact.",
                discussion:
                    "segment moves a start that is not on a segment boundary to the next one, so players handle the break the same way every time; exact keeps the start given. Relay channels always keep it."
            ))
        var align: PlaceBreak.StartAlignment = .segment

        @Flag(
            help: ArgumentHelp(
                "Serve the asset whole (X-ASSET-URI) rather than in chunks.",
                discussion:
                    "When Cueline can read an asset's playlist it checks the planned duration against it and serves the asset from its own asset list as chunks of at most 2 s, so an early return that reaches a player mid-ad ends the ad within one chunk. This keeps the duration check and serves the asset as it is."
            ))
        var noChunks = false

        @Option(
            name: .customLong("ad-server"),
            help: ArgumentHelp(
                "URL template of the ad server that fills the break for each viewer (default: the channel's).",
                discussion:
                    "Placeholders: {break_id} {channel} {duration} {start} {primary_id} and {param.NAME} for a query parameter the player sent (NAME one of \(AdServerTemplate.allowedParameters.joined(separator: ", "))). The asset given with --asset-uri or --pod, if any, is the fallback."
            ))
        var adServer: String?

        @Option(name: .customLong("skip-offset"), help: "Offer a skip button this far into the break (whole seconds).")
        var skipOffset: DurationArgument?

        @Option(name: .customLong("skip-duration"), help: "Show the skip button this long (default: to the end).")
        var skipDuration: DurationArgument?

        @Option(name: .customLong("skip-label"), help: "The skip button's label key (a-z, A-Z, '-', '_').")
        var skipLabel: String?

        @Option(name: .customLong("timeline-occupies"), help: "point or range: how players draw the break.")
        var timelineOccupies: String?

        @Option(name: .customLong("timeline-style"), help: "highlight or primary: set apart from the programme or not.")
        var timelineStyle: String?

        @Option(name: .customLong("content-may-vary"), help: "yes or no: whether viewers may see different ads.")
        var contentMayVary: String?

        @OptionGroup var database: DatabaseOptions
        @OptionGroup var options: CommandOptions

        func validate() throws {
            guard (at == nil) != (inDuration == nil) else { throw ValidationError("give exactly one of --at or --in") }
            let assets = [assetURI != nil, assetList != nil, !pod.isEmpty].filter { $0 }.count
            // None: an ad server fills the break (its --ad-server or the channel's; refused when neither applies).
            guard assets <= 1 else { throw ValidationError("give at most one of --asset-uri, --asset-list or --pod") }
            try checkOption("ad-server") { () throws(ScheduleError) in
                if let adServer { _ = try AdServerTemplate(adServer, field: "ad-server") }
            }
            guard skipOffset != nil || (skipDuration == nil && skipLabel == nil) else {
                throw ValidationError("--skip-duration and --skip-label need --skip-offset")
            }
            guard contentMayVary == nil || ["yes", "no"].contains(contentMayVary!.lowercased()) else {
                throw ValidationError("--content-may-vary: \(contentMayVary!.debugDescription) is not yes or no")
            }
            // Checked here, before anything is sent or stored: the same types the HTTP API checks with.
            try checkOption("asset-uri") { () throws(ScheduleError) in
                if let assetURI { _ = try AbsoluteURI(assetURI, field: "asset-uri") }
            }
            try checkOption("asset-list") { () throws(ScheduleError) in
                if let assetList { _ = try AbsoluteURI(assetList, field: "asset-list") }
            }
            for item in pod {
                let uri = item.lastIndex(of: ",").map { String(item[..<$0]) } ?? item
                try checkOption("pod") { () throws(ScheduleError) in _ = try AbsoluteURI(uri, field: "pod") }
            }
            for item in attr {
                try checkPlainText(item, option: "attr", maximumLength: Limits.textBytes + 64)
            }
        }

        func run() async throws {
            let asset: BreakAsset
            if assetURI == nil, assetList == nil, pod.isEmpty {
                asset = .pod([])  // an ad server's break without a fallback of its own
            } else if let assetURI {
                asset = .uri(assetURI)
            } else if let assetList {
                asset = .list(assetList)
            } else {
                asset = .pod(
                    try pod.map { item in
                        guard let comma = item.lastIndex(of: ","),
                            let duration = DurationArgument.parse(String(item[item.index(after: comma)...]))
                        else {
                            throw CLIError(
                                message: "pod: \(item.debugDescription) is not URI,DURATION", exitCode: ExitStatus.usage
                            )
                        }
                        return PodAsset(uri: String(item[..<comma]), durationMilliseconds: duration)
                    })
            }
            var request = PlaceBreak(
                id: id, start: at.map { .at($0.timestamp) } ?? .inMilliseconds(inDuration!.milliseconds),
                plannedDurationMilliseconds: duration.milliseconds, asset: asset,
                options: InterstitialOptions(
                    restrict: try list(restrict, "restrict"), snap: try list(snap, "snap"),
                    cue: InterstitialOptions.cue(requested: cue == "none" ? [] : try list(cue, "cue")),
                    timelineOccupies: try single(timelineOccupies, "timeline-occupies"),
                    timelineStyle: try single(timelineStyle, "timeline-style"),
                    contentMayVary: contentMayVary.map { $0.lowercased() == "yes" },
                    clientAttributes: try attr.map(parseAttribute),
                    skipControl: skipOffset.map {
                        SkipControl(
                            offsetMilliseconds: $0.milliseconds, durationMilliseconds: skipDuration?.milliseconds,
                            labelID: skipLabel)
                    }),
                alignment: align)
            request.wholeAssets = noChunks
            // Checked in validate().
            request.adServer = try adServer.map { try AdServerTemplate($0, field: "ad-server") }
            try await sendCommand(.placeBreak(request), channel: channel, database: database, options: options) {
                answer in
                guard case .breakPlaced(let spec)? = answer.events.first else { return "placed" }
                let line =
                    "placed \(spec.id) on \(channel): start \(spec.start), planned \(DecimalNumber(milliseconds: spec.plannedDurationMilliseconds)) s (version \(answer.version))"
                return answer.note.map { line + "\n" + $0.escapingControlCharacters } ?? line
            }
        }

        /// One value of an enumeration (`point`), not a list.
        private func single<T: RawRepresentable>(_ text: String?, _ field: String) throws -> T?
        where T.RawValue == String {
            guard let values: [T] = try list(text, field) else { return nil }
            guard values.count == 1 else {
                throw CLIError(
                    message: "\(field): give one value, not \(text!.debugDescription)", exitCode: ExitStatus.usage)
            }
            return values[0]
        }

        private func list<T: RawRepresentable>(_ text: String?, _ field: String) throws -> [T]?
        where T.RawValue == String {
            guard let text else { return nil }
            return try text.split(separator: ",").map { item in
                guard let value = T(rawValue: item.uppercased()) else {
                    throw CLIError(
                        message: "\(field): \(String(item).debugDescription) is not a valid value",
                        exitCode: ExitStatus.usage)
                }
                return value
            }
        }

        private func parseAttribute(_ text: String) throws -> ClientAttribute {
            guard let equals = text.firstIndex(of: "=") else {
                throw CLIError(
                    message: "attr: \(text.debugDescription) is not X-NAME=value", exitCode: ExitStatus.usage)
            }
            let name = String(text[..<equals])
            let value = String(text[text.index(after: equals)...])
            if let hex = HexBytes(hex: value) { return ClientAttribute(name: name, value: .hex(hex)) }
            if let number = DecimalNumber(value) { return ClientAttribute(name: name, value: .decimal(number)) }
            return ClientAttribute(name: name, value: .string(value))
        }
    }

    struct Limit: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "End a break on air early: set its playout limit.")

        @Argument(transform: identifier) var channel: ChannelID
        @Argument(transform: identifier) var breakID: BreakID

        @Option(name: .customLong("playout-limit"), help: "Total seconds the break plays.")
        var playoutLimit: DurationArgument

        @OptionGroup var database: DatabaseOptions
        @OptionGroup var options: CommandOptions

        func run() async throws {
            try await sendCommand(
                .setPlayoutLimit(id: breakID, limitMilliseconds: playoutLimit.milliseconds), channel: channel,
                database: database, options: options
            ) { answer in
                "break \(breakID) on \(channel) ends after \(DecimalNumber(milliseconds: playoutLimit.milliseconds)) s (version \(answer.version))"
            }
        }
    }

    struct Cancel: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Cancel a break that is not on air yet.")

        @Argument(transform: identifier) var channel: ChannelID
        @Argument(transform: identifier) var breakID: BreakID

        @OptionGroup var database: DatabaseOptions
        @OptionGroup var options: CommandOptions

        func run() async throws {
            try await sendCommand(.cancelBreak(id: breakID), channel: channel, database: database, options: options) {
                answer in
                "cancelled break \(breakID) on \(channel) (version \(answer.version))"
            }
        }
    }
}

struct EventCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "event", abstract: "Act on the event on air.", subcommands: [CancelCurrent.self])

    struct CancelCurrent: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "cancel-current", abstract: "End the break on air now: return to the program at the live edge."
        )

        @Argument(transform: identifier) var channel: ChannelID

        @OptionGroup var database: DatabaseOptions
        @OptionGroup var options: CommandOptions

        func run() async throws {
            try await sendCommand(.cancelCurrentEvent, channel: channel, database: database, options: options) {
                answer in
                if case .breakCancelled(let id, _)? = answer.events.first {
                    return "removed break \(id) on \(channel): " + (answer.note ?? "cancelled")
                        + " (version \(answer.version))"
                }
                guard case .playoutLimitSet(let id, let limit, _, _)? = answer.events.first else {
                    return "ended the current event"
                }
                return
                    "ended break \(id) on \(channel) after \(DecimalNumber(milliseconds: limit)) s (version \(answer.version))"
            }
        }
    }
}

struct ScheduleCommandLine: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schedule", abstract: "Show a channel's breaks and their state.")

    @Argument(transform: storedIdentifier) var channel: ChannelID
    @OptionGroup var database: DatabaseOptions

    @Flag(help: "Print JSON.")
    var json = false

    @Option(help: "Read it from this server's HTTP API instead of the database (or CUELINE_SERVER).")
    var server: String?

    @Option(help: "API token for --server (or CUELINE_TOKEN).")
    var token: String?

    func run() async throws {
        let view: ScheduleView
        if let remote = RemoteAPI.configured(server: server, token: token) {
            view = try await remote.schedule(channel)
        } else {
            let store = try await openStore(database)
            // The follower's form (aired breaks leave ~10 minutes after they end), so both paths list the same breaks.
            let state = try await ChannelLoader.load(channel, from: store, retention: .window)
            // Worded as the API's read answers it, so both paths say the same.
            guard let config = state.config else { throw CLIError(message: "channel \(channel) does not exist") }
            view = ScheduleView(state: state, liveEdge: Timeline(config).liveEdge(at: wallClock()))
        }
        if json {
            try printJSON(view)
            return
        }
        print("channel \(view.channel), version \(view.version), live edge \(view.liveEdge)")
        print(
            table(
                ["BREAK", "STATE", "START", "PLANNED", "LIMIT", "END", "PLACED BY"],
                view.breaks.map { item in
                    [
                        item.id.rawValue, item.state.rawValue, item.startDate.iso8601, "\(item.plannedDuration)s",
                        item.playoutLimit.map { "\($0)s" } ?? "-", item.endDate.iso8601, item.placedBy,
                    ]
                }))
    }
}
