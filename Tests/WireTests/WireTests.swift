import API
import Foundation
import HLS
import Schedule
import Testing
import Wire

/// The wire types: what the CLI encodes is what the server decodes, every view reads back as written with the one
/// JSON configuration, and the OpenAPI document names the same properties the types write.
@Suite("Wire: one schema for the server, the CLI and the OpenAPI document")
struct WireTests {
    static let epoch = Timestamp(iso8601: "2026-03-01T12:00:00Z")!

    static let config = ChannelConfig(
        id: "demo", segmentDurationMilliseconds: 6000, windowSegments: 5, epoch: epoch,
        renditions: [RenditionConfig(name: "720p", bandwidth: 2_800_000, uriTemplate: "720p/seg{n}.ts")],
        publicBaseURL: "http://127.0.0.1:8080", signalling: Signalling(markers: .both),
        ads: AdSettings(
            adServer: try! AdServerTemplate("https://ads.example.com/vast?b={break_id}", field: "ad_server"),
            slate: AdSettings.Slate(uri: "https://cdn.example.com/slate.m3u8", durationMilliseconds: 10_000)))

    // MARK: - Commands

    static let commands: [ScheduleCommand] = [
        .placeBreak(
            PlaceBreak(
                id: "brk-1", start: .at(epoch.adding(milliseconds: 90_000)), plannedDurationMilliseconds: 30_000,
                asset: .uri("https://ads.example.com/a.m3u8"),
                options: InterstitialOptions(
                    restrict: [.skip, .jump], snap: [.out], cue: [.once],
                    clientAttributes: [ClientAttribute(name: "X-COM-EXAMPLE-AD", value: .string("abc"))]),
                alignment: .exact)),
        .placeBreak(
            PlaceBreak(
                start: .inMilliseconds(1_500), plannedDurationMilliseconds: 12_250,
                asset: .list("https://ads.example.com/list.json"))),
        .placeBreak(
            {
                var place = PlaceBreak(
                    id: "pod", start: .inMilliseconds(60_000), plannedDurationMilliseconds: 20_000,
                    asset: .pod([
                        PodAsset(uri: "https://ads.example.com/1.m3u8", durationMilliseconds: 10_000),
                        PodAsset(uri: "https://ads.example.com/2.m3u8", durationMilliseconds: 10_000),
                    ]),
                    options: InterstitialOptions(cue: nil))
                place.wholeAssets = true
                return place
            }()),
        .setPlayoutLimit(id: "brk-1", limitMilliseconds: 12_000),
        .cancelCurrentEvent,
        .cancelBreak(id: "brk-1"),
    ]

    @Test("the body the CLI encodes is the command the server decodes", arguments: commands)
    func commandRoundTrip(command: ScheduleCommand) throws {
        let request = try CommandRequest(command, reason: "because")
        let wire = try WireJSON.encode(request)
        let decoded = try WireJSON.decode(CommandRequest.self, from: wire)
        #expect(decoded == request)
        #expect(try decoded.scheduleCommand() == command, "\(String(decoding: wire, as: UTF8.self))")
        #expect(decoded.reason == "because")
    }

    @Test("keys are snake_case on the wire, and the command is its wire name")
    func snakeCase() throws {
        let place = try CommandRequest(Self.commands[0])
        let text = String(decoding: try WireJSON.encode(place), as: UTF8.self)
        #expect(
            text.contains(#""command":"place_break""#)
                && text.contains(#""asset_uri":"https://ads.example.com/a.m3u8""#), "\(text)")
        let limit = String(decoding: try WireJSON.encode(try CommandRequest(Self.commands[3])), as: UTF8.self)
        #expect(limit == #"{"command":"set_playout_limit","id":"brk-1","playout_limit":12}"#)
    }

    @Test("commands the API does not take are refused by name, on both sides")
    func notAPICommands() throws {
        #expect(throws: CommandRequest.Invalid.self) { try CommandRequest(.createChannel(Self.config)) }
        #expect(throws: CommandRequest.Invalid.self) { try CommandRequest(.returnFromBreak(id: "a", scte35In: nil)) }
        let hex = ScheduleCommand.placeBreak(
            PlaceBreak(
                start: .inMilliseconds(0), plannedDurationMilliseconds: 1000, asset: .uri("https://a.example/x.m3u8"),
                options: InterstitialOptions(clientAttributes: [
                    ClientAttribute(name: "X-A", value: .decimal(DecimalNumber(milliseconds: 5000)))
                ])))
        do {
            _ = try CommandRequest(hex)
            Issue.record("a decimal attribute has no wire form")
        } catch {
            #expect(error.field == "attributes")
        }
        do {
            _ = try CommandRequest(command: .createChannel).scheduleCommand()
            Issue.record("create_channel is not an API command")
        } catch let invalid as CommandRequest.Invalid {
            #expect(
                invalid.field == "command"
                    && invalid.reason.contains("place_break, set_playout_limit, cancel_current_event, cancel_break"),
                "\(invalid)")
        }
    }

    @Test("each command kind's wire name is spelled once; names for logs are its kebab-case form")
    func kinds() {
        #expect(
            ScheduleCommand.Kind.api.map(\.rawValue) == [
                "place_break", "set_playout_limit", "cancel_current_event", "cancel_break",
            ])
        for command in Self.commands {
            #expect(command.name == command.kind.rawValue.replacingOccurrences(of: "_", with: "-"))
            #expect(command.kind.scope == command.kind)
        }
        #expect(ScheduleCommand.returnFromBreak(id: "a", scte35In: nil).kind.scope == .cancelCurrentEvent)
        #expect(ScheduleCommand.createChannel(Self.config).kind.scope == nil)
        #expect(
            ScheduleCommand.placeBreak(
                PlaceBreak(start: .inMilliseconds(0), plannedDurationMilliseconds: 1, asset: .uri("x"))
            ).name == "place-break")
    }

    // MARK: - Views

    /// A schedule with one break whose every optional field is filled, so every key is written.
    static func fullSchedule() throws -> ScheduleView {
        var state = ChannelState(channel: "demo")
        var position: Int64 = 0
        func apply(_ command: ScheduleCommand, at time: Timestamp) throws {
            for event in try decide(command, state: state, now: time) {
                position += 1
                state = evolve(
                    state,
                    RecordedScheduleEvent(
                        event: event, version: state.version + 1, position: position,
                        attribution: Attribution(at: time, actor: "ops", source: "http")))
            }
        }
        try apply(.createChannel(config), at: epoch)
        try apply(commands[0], at: epoch)
        var view = ScheduleView(state: state, liveEdge: epoch.adding(milliseconds: 60_000))
        var item = try #require(view.breaks.first)
        item.playoutLimit = DecimalNumber(milliseconds: 12_000)
        item.resumeOffset = DecimalNumber(milliseconds: 0)
        item.assetList = "https://ads.example.com/list.json"
        item.pod = [PodAsset(uri: "https://ads.example.com/1.m3u8", durationMilliseconds: 10_000)]
        item.endedEarlyBy = "ops"
        item.endedEarlyAt = epoch
        item.skipOffset = DecimalNumber(integer: 5)
        item.skipDuration = DecimalNumber(integer: 10)
        item.skipLabel = "Skip-Ad"
        item.timelineOccupies = "RANGE"
        item.timelineStyle = "PRIMARY"
        item.contentMayVary = false
        item.endedEarlyHow = .playoutLimit
        item.cancelledBy = "ops"
        item.cancelledAt = epoch
        item.cancelledHow = .cancelBreak
        view.breaks = [item]
        view.next = "\(item.startDate.iso8601),\(item.id)"
        return view
    }

    static let event = EventView(
        position: 7, channel: "demo", version: 2, type: "BreakPlaced", schemaVersion: 1, payload: #"{"id":"brk-1"}"#,
        decidedAt: epoch, actor: "ops", source: "http", commandId: "key-1", reason: "why",
        hash: String(repeating: "a", count: 64))

    static let response = CommandResponse(
        channel: "demo", version: 2, replayed: false, events: [event], note: "start moved")

    @Test("answers are read with ids of the earlier rule (a channel _x still lists); requests are read by today's rule")
    func storedIDsInAnswers() throws {
        var config = Self.config
        config.id = try #require(ChannelID(stored: "_x"))
        let wire = try WireJSON.encode([ChannelView(config)])
        #expect(try WireJSON.decode([ChannelView].self, from: wire, answers: true).map(\.id.rawValue) == ["_x"])
        #expect(throws: DecodingError.self) { try WireJSON.decode([ChannelView].self, from: wire) }
    }

    @Test("views read back as written")
    func viewRoundTrip() throws {
        let schedule = try Self.fullSchedule()
        #expect(try WireJSON.decode(ScheduleView.self, from: try WireJSON.encode(schedule)) == schedule)
        #expect(try WireJSON.decode(ScheduleView.self, from: try WireJSON.encode(schedule, pretty: true)) == schedule)
        #expect(try WireJSON.decode(CommandResponse.self, from: try WireJSON.encode(Self.response)) == Self.response)
        let channel = ChannelView(Self.config)
        #expect(try WireJSON.decode(ChannelView.self, from: try WireJSON.encode(channel)) == channel)
        let error = ErrorBody(error: "duration is required", field: "duration")
        #expect(
            String(decoding: try WireJSON.encode(error), as: UTF8.self)
                == #"{"error":"duration is required","field":"duration"}"#)
    }

    // MARK: - OpenAPI

    /// The keys `value` writes on the wire.
    static func keys(_ value: some Encodable) throws -> Set<String> {
        Set(try #require(try JSONSerialization.jsonObject(with: try WireJSON.encode(value)) as? [String: Any]).keys)
    }

    static func schemas() throws -> [String: [String: Any]] {
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.json.utf8)) as? [String: Any])
        let components = try #require(document["components"] as? [String: Any])
        return try #require(components["schemas"] as? [String: [String: Any]])
    }

    static func properties(_ schema: String) throws -> Set<String> {
        Set(try #require(try schemas()[schema]?["properties"] as? [String: Any]).keys)
    }

    @Test("the OpenAPI document's schemas name exactly the properties the wire types write")
    func openAPIProperties() throws {
        var command = try CommandRequest(Self.commands[0], reason: "why")
        command.in = 30
        command.assetList = "https://ads.example.com/list.json"
        command.pod = [CommandRequest.PodItem(uri: "https://ads.example.com/1.m3u8", duration: 10)]
        command.chunked = false
        command.playoutLimit = 12
        command.actor = "ops"
        command.skipOffset = 5
        command.skipDuration = 10
        command.skipLabel = "Skip-Ad"
        command.timelineOccupies = "range"
        command.timelineStyle = "primary"
        command.contentMayVary = true
        command.adServer = "https://ads.example.com/vast"
        #expect(try Self.properties("Command") == Self.keys(command))
        let schedule = try Self.fullSchedule()
        #expect(try Self.properties("Schedule") == Self.keys(schedule))
        #expect(try Self.properties("Break") == Self.keys(schedule.breaks[0]))
        #expect(try Self.properties("CommandResult") == Self.keys(Self.response))
        #expect(try Self.properties("Event") == Self.keys(Self.event))
        #expect(try Self.properties("Channel") == Self.keys(ChannelView(Self.config)))
        #expect(try Self.properties("Error") == Self.keys(ErrorBody(error: "e", field: "f")))
    }

    @Test("hex is written by one function: two digits a byte, lower case unless asked, HexBytes as 0x and upper case")
    func hex() {
        let bytes: [UInt8] = [0x00, 0x0F, 0xAB, 0x10, 0xFF]
        #expect(hexDigits(bytes) == "000fab10ff")
        #expect(hexDigits(bytes, uppercase: true) == "000FAB10FF")
        #expect(hexDigits([UInt8]()) == "")
        #expect(HexBytes(bytes).description == "0x000FAB10FF")
        #expect(HexBytes(hex: HexBytes(bytes).description)?.bytes == bytes)
    }

    @Test("the OpenAPI document's enums and identifier pattern come from the types")
    func openAPIEnums() throws {
        let schemas = try Self.schemas()
        let command = try #require((schemas["Command"]?["properties"] as? [String: Any])?["command"] as? [String: Any])
        #expect(command["enum"] as? [String] == ScheduleCommand.Kind.api.map(\.rawValue))
        #expect(schemas["Identifier"]?["pattern"] as? String == Identifier.pattern)
        let event = try #require(schemas["Event"]?["properties"] as? [String: [String: Any]])
        #expect(event["type"]?["enum"] as? [String] == ScheduleEvent.typeNames)
        #expect(event["source"]?["enum"] as? [String] == CommandSource.allCases.map(\.rawValue))
        let breakProperties = try #require(schemas["Break"]?["properties"] as? [String: [String: Any]])
        #expect(breakProperties["state"]?["enum"] as? [String] == BreakState.Phase.allCases.map(\.rawValue))
        #expect(breakProperties["ended_early_how"]?["enum"] as? [String] == EarlyReturnKind.allCases.map(\.rawValue))
        #expect(breakProperties["cancelled_how"]?["enum"] as? [String] == BreakCancelKind.allCases.map(\.rawValue))
        let pattern = try Regex(Identifier.pattern)
        for (text, valid) in [
            ("c1", true), ("brk-1_x", true), ("_x", false), ("-x", false), ("X", false), ("a.b", false),
        ] {
            #expect(
                (try pattern.wholeMatch(in: text) != nil) == valid, "the emitted pattern and the type agree on \(text)")
            #expect((Identifier(text) != nil) == valid)
        }
        // Ids in answers are typed as created: the earlier rule's `_x` is one, `X` never was.
        #expect(schemas["StoredIdentifier"]?["pattern"] as? String == Identifier.storedPattern)
        #expect(breakProperties["id"]?["$ref"] as? String == "#/components/schemas/StoredIdentifier")
        #expect(event["channel"]?["$ref"] as? String == "#/components/schemas/StoredIdentifier")
        let stored = try Regex(Identifier.storedPattern)
        for (text, valid) in [("c1", true), ("_x", true), ("-x", true), ("X", false), ("a.b", false), ("", false)] {
            #expect(
                (try stored.wholeMatch(in: text) != nil) == valid, "the emitted pattern and the type agree on \(text)")
            #expect((Identifier(stored: text) != nil) == valid)
        }
    }
}
