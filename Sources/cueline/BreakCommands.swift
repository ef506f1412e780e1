import ArgumentParser
import EventStore
import Foundation
import HLS
import Projector
import Schedule

struct BreakCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "break", abstract: "Place, end early and cancel breaks.", subcommands: [Place.self, Limit.self, Cancel.self])

    struct Place: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Place a break ahead of the live edge.",
            discussion: "--attr X-NAME=value: 0x… is hex, a plain number is a decimal, anything else a string.")

        @Argument var channel: String

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

        @Option(help: "Break id (a-z, 0-9, '-', '_'); generated if left out.")
        var id: String?

        @Option(help: "skip, jump or skip,jump")
        var restrict: String?

        @Option(help: "out, in or out,in")
        var snap: String?

        @Option(help: ArgumentHelp(
            "pre, post, once (comma-separated), or none. Default: once.",
            discussion: "A live break plays once for each viewer; CUE=\"ONCE\" also keeps hls.js 1.6 from appending it into the primary's buffer, where the primary froze at the break's start."))
        var cue: String?

        @Option(help: "X-NAME=value client attribute (repeatable).")
        var attr: [String] = []

        @Option(help: ArgumentHelp(
            "segment (default) or exact.",
            discussion: "segment moves a start that is not on a segment boundary to the next one, so players handle the break the same way every time; exact keeps the start given. Relay channels always keep it."))
        var align: PlaceBreak.StartAlignment = .segment

        @Flag(help: ArgumentHelp(
            "Serve the asset whole (X-ASSET-URI) rather than in chunks.",
            discussion: "When Cueline can read an asset's playlist it checks the planned duration against it and serves the asset from its own asset list as chunks of at most 2 s, so an early return that reaches a player mid-ad ends the ad within one chunk. This keeps the duration check and serves the asset as it is."))
        var noChunks = false

        @OptionGroup var database: DatabaseOptions
        @OptionGroup var options: CommandOptions

        func validate() throws {
            guard (at == nil) != (inDuration == nil) else { throw ValidationError("give exactly one of --at or --in") }
            let assets = [assetURI != nil, assetList != nil, !pod.isEmpty].filter { $0 }.count
            guard assets == 1 else { throw ValidationError("give exactly one of --asset-uri, --asset-list or --pod") }
            // Checked here, before anything is sent or stored: the same types the HTTP API checks with.
            try checkOption("asset-uri") { () throws(ScheduleError) in if let assetURI { _ = try AbsoluteURI(assetURI, field: "asset-uri") } }
            try checkOption("asset-list") { () throws(ScheduleError) in if let assetList { _ = try AbsoluteURI(assetList, field: "asset-list") } }
            try checkOption("id") { () throws(ScheduleError) in if let id { _ = try Identifier(id, field: "id") } }
            try checkOption(nil) { () throws(ScheduleError) in _ = try Identifier(channel, field: "channel") }
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
            if let assetURI {
                asset = .uri(assetURI)
            } else if let assetList {
                asset = .list(assetList)
            } else {
                asset = .pod(try pod.map { item in
                    guard let comma = item.lastIndex(of: ","), let duration = DurationArgument.parse(String(item[item.index(after: comma)...])) else {
                        throw CLIError(message: "pod: \(item.debugDescription) is not URI,DURATION", exitCode: ExitStatus.usage)
                    }
                    return PodAsset(uri: String(item[..<comma]), durationMilliseconds: duration)
                })
            }
            var request = PlaceBreak(
                id: id, start: at.map { .at($0.timestamp) } ?? .inMilliseconds(inDuration!.milliseconds),
                plannedDurationMilliseconds: duration.milliseconds, asset: asset,
                options: InterstitialOptions(
                    restrict: try list(restrict, "restrict"), snap: try list(snap, "snap"), cue: InterstitialOptions.cue(requested: cue == "none" ? [] : try list(cue, "cue")),
                    clientAttributes: try attr.map(parseAttribute)),
                alignment: align)
            request.wholeAssets = noChunks
            try await cueline.run(.placeBreak(request), channel: channel, database: database, options: options) { outcome in
                guard case .breakPlaced(let spec)? = outcome.events.first else { return "placed" }
                let line = "placed \(spec.id) on \(channel): start \(spec.start), planned \(DecimalNumber(milliseconds: spec.plannedDurationMilliseconds)) s (version \(outcome.result.version))"
                return outcome.note(for: .placeBreak(request)).map { line + "\n" + $0.escapingControlCharacters } ?? line
            }
        }

        private func list<T: RawRepresentable>(_ text: String?, _ field: String) throws -> [T]? where T.RawValue == String {
            guard let text else { return nil }
            return try text.split(separator: ",").map { item in
                guard let value = T(rawValue: item.uppercased()) else {
                    throw CLIError(message: "\(field): \(String(item).debugDescription) is not a valid value", exitCode: ExitStatus.usage)
                }
                return value
            }
        }

        private func parseAttribute(_ text: String) throws -> ClientAttribute {
            guard let equals = text.firstIndex(of: "=") else {
                throw CLIError(message: "attr: \(text.debugDescription) is not X-NAME=value", exitCode: ExitStatus.usage)
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

        @Argument var channel: String
        @Argument var breakID: String

        @Option(name: .customLong("playout-limit"), help: "Total seconds the break plays.")
        var playoutLimit: DurationArgument

        @OptionGroup var database: DatabaseOptions
        @OptionGroup var options: CommandOptions

        func run() async throws {
            try await cueline.run(.setPlayoutLimit(id: breakID, limitMilliseconds: playoutLimit.milliseconds), channel: channel, database: database, options: options) { outcome in
                "break \(breakID) on \(channel) ends after \(DecimalNumber(milliseconds: playoutLimit.milliseconds)) s (version \(outcome.result.version))"
            }
        }
    }

    struct Cancel: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Cancel a break that is not on air yet.")

        @Argument var channel: String
        @Argument var breakID: String

        @OptionGroup var database: DatabaseOptions
        @OptionGroup var options: CommandOptions

        func run() async throws {
            try await cueline.run(.cancelBreak(id: breakID), channel: channel, database: database, options: options) { outcome in
                "cancelled break \(breakID) on \(channel) (version \(outcome.result.version))"
            }
        }
    }
}

struct EventCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "event", abstract: "Act on the event on air.", subcommands: [CancelCurrent.self])

    struct CancelCurrent: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "cancel-current", abstract: "End the break on air now: return to the program at the live edge.")

        @Argument var channel: String

        @OptionGroup var database: DatabaseOptions
        @OptionGroup var options: CommandOptions

        func run() async throws {
            try await cueline.run(.cancelCurrentEvent, channel: channel, database: database, options: options) { outcome in
                if case .breakCancelled(let id, _)? = outcome.events.first {
                    return "removed break \(id) on \(channel): " + (outcome.note(for: .cancelCurrentEvent) ?? "cancelled") + " (version \(outcome.result.version))"
                }
                guard case .playoutLimitSet(let id, let limit, _, _)? = outcome.events.first else { return "ended the current event" }
                return "ended break \(id) on \(channel) after \(DecimalNumber(milliseconds: limit)) s (version \(outcome.result.version))"
            }
        }
    }
}

struct ScheduleCommandLine: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "schedule", abstract: "Show a channel's breaks and their state.")

    @Argument var channel: String
    @OptionGroup var database: DatabaseOptions

    @Flag(help: "Print JSON.")
    var json = false

    @Option(help: "Read it from this server's HTTP API instead of the database (or CUELINE_SERVER).")
    var server: String?

    @Option(help: "API token for --server (or CUELINE_TOKEN).")
    var token: String?

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        if let server = server ?? environment["CUELINE_SERVER"] {
            try await remote(RemoteAPI(server: server, token: token ?? environment["CUELINE_TOKEN"]))
            return
        }
        let store = try await openStore(database)
        let state = try await ChannelLoader.load(channel, from: store)
        guard let config = state.config else { throw ScheduleError.unknownChannel(channel) }
        let liveEdge = Timeline(config).liveEdge(at: wallClock())
        if json {
            try printJSON(state.breaks.map { item in
                BreakRow(id: item.id, state: item.phase(liveEdge: liveEdge).rawValue, start: item.start, planned: DecimalNumber(milliseconds: item.spec.plannedDurationMilliseconds), playoutLimit: item.playoutLimitMilliseconds.map { DecimalNumber(milliseconds: $0) }, end: item.end, placedBy: item.placed.actor)
            })
            return
        }
        print("channel \(channel), version \(state.version), live edge \(liveEdge)")
        print(table(
            ["BREAK", "STATE", "START", "PLANNED", "LIMIT", "END", "PLACED BY"],
            state.breaks.map { item in
                [item.id, item.phase(liveEdge: liveEdge).rawValue, item.start.iso8601, "\(DecimalNumber(milliseconds: item.spec.plannedDurationMilliseconds))s",
                 item.playoutLimitMilliseconds.map { "\(DecimalNumber(milliseconds: $0))s" } ?? "-", item.end.iso8601, item.placed.actor]
            }))
    }

    /// The same table from `GET /channels/{channel}/schedule`.
    func remote(_ api: RemoteAPI) async throws {
        let answer = try await api.send("GET", "/channels/\(channel)/schedule")
        guard answer.status == 200 else {
            throw CLIError(message: (RemoteAPI.message(answer.body) ?? "HTTP \(answer.status)") + (answer.status == 401 || answer.status == 403 ? " (HTTP \(answer.status))" : ""))
        }
        if json {
            FileHandle.standardOutput.write(answer.body + Data("\n".utf8))
            return
        }
        let schedule = try JSONSerialization.jsonObject(with: answer.body) as? [String: Any] ?? [:]
        print("channel \(channel), version \(schedule["version"] ?? "?"), live edge \(schedule["live_edge"] ?? "?")")
        let breaks = schedule["breaks"] as? [[String: Any]] ?? []
        func text(_ value: Any?, suffix: String = "") -> String { value.map { "\($0)\(suffix)" } ?? "-" }
        print(table(
            ["BREAK", "STATE", "START", "PLANNED", "LIMIT", "END", "PLACED BY"],
            breaks.map { item in
                [text(item["id"]), text(item["state"]), text(item["start_date"]), text(item["planned_duration"], suffix: "s"),
                 text(item["playout_limit"], suffix: "s"), text(item["end_date"]), text(item["placed_by"])]
            }))
    }

    struct BreakRow: Encodable {
        var id: String
        var state: String
        var start: Timestamp
        var planned: DecimalNumber
        var playoutLimit: DecimalNumber?
        var end: Timestamp
        var placedBy: String
    }
}
