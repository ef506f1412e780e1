import Foundation
import HLS
import Schedule

/// The JSON body of `POST /channels/{channel}/commands`.
///
///     {"command": "place_break", "id": "brk-1", "in": 30, "duration": 30, "asset_uri": "https://…",
///      "restrict": ["skip", "jump"], "snap": ["out", "in"], "attributes": {"X-COM-EXAMPLE-AD": "abc"}, "align": "exact"}
///     {"command": "set_playout_limit", "id": "brk-1", "playout_limit": 12}
///     {"command": "cancel_current_event"}
///     {"command": "cancel_break", "id": "brk-1"}
///
/// The server decodes it (`scheduleCommand()` checks every field and names the wrong one); the CLI encodes it from
/// the command it parsed (`init(_:reason:)`), so both sides read and write the same type with `WireJSON`.
public struct CommandRequest: Codable, Sendable, Hashable {
    public var command: String
    public var id: String?
    public var start: String?
    public var `in`: Double?
    public var duration: Double?
    public var assetUri: String?
    public var assetList: String?
    public var pod: [PodItem]?
    public var restrict: [String]?
    public var snap: [String]?
    public var cue: [String]?
    public var attributes: [String: String]?
    /// `segment` (default): a start off a segment boundary moves to the next one; `exact` keeps it.
    public var align: String?
    /// false: serve each asset whole (`X-ASSET-URI`) even when it could be served in chunks. Default true.
    public var chunked: Bool?
    public var playoutLimit: Double?
    /// An ad server URL template (`AdServerTemplate`): each viewer's asset list is decided by it, the assets given
    /// (if any) being the fallback.
    public var adServer: String?
    /// Skip control, whole seconds: `X-SKIP-CONTROL-OFFSET`, `-DURATION`, `-LABEL-ID`.
    public var skipOffset: Double?
    public var skipDuration: Double?
    public var skipLabel: String?
    /// `point` or `range` (`X-TIMELINE-OCCUPIES`), `highlight` or `primary` (`X-TIMELINE-STYLE`).
    public var timelineOccupies: String?
    public var timelineStyle: String?
    /// `X-CONTENT-MAY-VARY`.
    public var contentMayVary: Bool?
    public var actor: String?
    public var reason: String?

    public struct PodItem: Codable, Sendable, Hashable {
        public var uri: String
        public var duration: Double

        public init(uri: String, duration: Double) {
            self.uri = uri
            self.duration = duration
        }
    }

    /// A request field that is missing or wrong, named.
    public struct Invalid: Error, Sendable, CustomStringConvertible {
        public var field: String
        public var reason: String

        public init(field: String, reason: String) {
            self.field = field
            self.reason = reason
        }

        /// A refusal of a check in `Schedule`, keeping the field it names.
        public init(refusal error: ScheduleError) {
            if case .invalidField(let field, let reason) = error {
                self.init(field: field, reason: reason)
            } else {
                self.init(field: error.field ?? "body", reason: error.description)
            }
        }

        public var description: String { "\(field) \(reason)" }
    }

    public init(command: ScheduleCommand.Kind) {
        self.command = command.rawValue
    }

    /// The body that asks for `command`: what a client sends (the inverse of `scheduleCommand()`).
    ///
    /// - Throws: `Invalid` for what the API cannot carry: channel commands, an SCTE-35 return, timeline options,
    ///   and attributes that are not strings.
    public init(_ command: ScheduleCommand, reason: String? = nil) throws(Invalid) {
        func seconds(_ milliseconds: Int64) -> Double { Double(milliseconds) / 1000 }
        self.init(command: command.kind)
        self.reason = reason
        switch command {
        case .placeBreak(let request):
            id = request.id?.rawValue
            duration = seconds(request.plannedDurationMilliseconds)
            align = request.alignment.rawValue
            if request.wholeAssets { chunked = false }
            switch request.start {
            case .at(let time): start = time.iso8601
            case .inMilliseconds(let delay): self.in = seconds(delay)
            }
            switch request.asset {
            case .uri(let uri): assetUri = uri
            case .list(let uri): assetList = uri
            case .pod(let assets): pod = assets.map { PodItem(uri: $0.uri, duration: seconds($0.durationMilliseconds)) }
            }
            let options = request.options
            restrict = options.restrict?.map(\.rawValue)
            snap = options.snap?.map(\.rawValue)
            // The command's cue is final (the default already applied, nil for none); absent would mean the default.
            cue = options.cue?.map(\.rawValue) ?? []
            if options.scte35Out != nil {
                throw Invalid(field: "options", reason: "an SCTE-35 section is sent to the SCTE-35 route, not here")
            }
            timelineOccupies = options.timelineOccupies?.rawValue.lowercased()
            timelineStyle = options.timelineStyle?.rawValue.lowercased()
            contentMayVary = options.contentMayVary
            if let skip = options.skipControl {
                skipOffset = seconds(skip.offsetMilliseconds)
                skipDuration = skip.durationMilliseconds.map(seconds)
                skipLabel = skip.labelID
            }
            adServer = request.adServer?.value
            var attributes: [String: String] = [:]
            for attribute in options.clientAttributes {
                guard case .string(let value) = attribute.value else {
                    throw Invalid(
                        field: "attributes", reason: "\(attribute.name): only string attributes are part of the API")
                }
                attributes[attribute.name] = value
            }
            if !attributes.isEmpty { self.attributes = attributes }
        case .setPlayoutLimit(let id, let limit):
            self.id = id.rawValue
            playoutLimit = seconds(limit)
        case .cancelCurrentEvent:
            break
        case .cancelBreak(let id):
            self.id = id.rawValue
        case .createChannel, .updateRenditions, .returnFromBreak, .setSCTE35Policy, .ingestSCTE35, .setAdSettings:
            throw Invalid(field: "command", reason: "\(command.kind.rawValue) is not an API command")
        }
    }

    /// The command this body asks for, every field checked; `Invalid` names the first wrong one.
    public func scheduleCommand() throws -> ScheduleCommand {
        guard let kind = ScheduleCommand.Kind(rawValue: command), ScheduleCommand.Kind.api.contains(kind) else {
            throw Invalid(
                field: "command",
                reason:
                    "\(command.prefix(64).debugDescription.escapingControlCharacters) is not one of \(ScheduleCommand.Kind.api.map(\.rawValue).joined(separator: ", "))"
            )
        }
        switch kind {
        case .placeBreak:
            let startSpec: PlaceBreak.Start
            switch (start, self.in) {
            case (let text?, nil):
                startSpec = .at(try checked { () throws(ScheduleError) in try Limits.instant(text, field: "start") })
            case (nil, let seconds?):
                startSpec = .inMilliseconds(try milliseconds(seconds, "in"))
            default:
                throw Invalid(field: "start", reason: "give exactly one of start or in")
            }
            guard let duration else { throw Invalid(field: "duration", reason: "is required") }
            let assets = [assetUri != nil, assetList != nil, pod != nil].filter { $0 }.count
            // With an ad server (the break's or the channel's) the assets are its fallback, and may be none: `decide`
            // refuses a break without assets when no ad server applies.
            guard assets <= 1 else {
                throw Invalid(field: "asset_uri", reason: "give at most one of asset_uri, asset_list or pod")
            }
            let template = try adServer.map { text throws(Invalid) in
                try checked { () throws(ScheduleError) in try AdServerTemplate(text, field: "ad_server") }
            }
            var skip: SkipControl?
            if let skipOffset {
                skip = SkipControl(
                    offsetMilliseconds: try milliseconds(skipOffset, "skip_offset"),
                    durationMilliseconds: try skipDuration.map { seconds throws(Invalid) in
                        try milliseconds(seconds, "skip_duration")
                    },
                    labelID: skipLabel)
            } else if skipDuration != nil || skipLabel != nil {
                throw Invalid(field: "skip_offset", reason: "is required with skip_duration or skip_label")
            }
            let asset: BreakAsset
            if assets == 0 {
                asset = .pod([])
            } else if let assetUri {
                asset = .uri(
                    try checked { () throws(ScheduleError) in try AbsoluteURI(assetUri, field: "asset_uri").value })
            } else if let assetList {
                asset = .list(
                    try checked { () throws(ScheduleError) in try AbsoluteURI(assetList, field: "asset_list").value })
            } else {
                guard pod!.count <= Limits.maximumPodAssets else {
                    throw Invalid(field: "pod", reason: "holds at most \(Limits.maximumPodAssets) assets")
                }
                asset = .pod(
                    try pod!.map { item in
                        PodAsset(
                            uri: try checked { () throws(ScheduleError) in try AbsoluteURI(item.uri, field: "pod").value
                            },
                            durationMilliseconds: try milliseconds(item.duration, "pod"))
                    })
            }
            let breakID = try id.map { id throws(Invalid) in
                try checked { () throws(ScheduleError) in try BreakID(id, field: "id") }
            }
            for (name, value) in attributes ?? [:] {
                if let problem = PlainText.problem(in: name, maximumLength: 64) ?? PlainText.problem(in: value) {
                    throw Invalid(
                        field: "attributes", reason: "\(name.debugDescription.escapingControlCharacters): \(problem)")
                }
            }
            var place = PlaceBreak(
                id: breakID, start: startSpec, plannedDurationMilliseconds: try milliseconds(duration, "duration"),
                asset: asset,
                options: InterstitialOptions(
                    restrict: try values(restrict, "restrict"), snap: try values(snap, "snap"),
                    cue: InterstitialOptions.cue(requested: try values(cue, "cue")),
                    timelineOccupies: try value(timelineOccupies, "timeline_occupies"),
                    timelineStyle: try value(timelineStyle, "timeline_style"),
                    contentMayVary: contentMayVary,
                    clientAttributes: (attributes ?? [:]).sorted { $0.key < $1.key }.map {
                        ClientAttribute(name: $0.key, value: .string($0.value))
                    },
                    skipControl: skip),
                alignment: try Self.alignment(align))
            place.wholeAssets = chunked == false
            place.adServer = template
            return .placeBreak(place)
        case .setPlayoutLimit:
            guard let id else { throw Invalid(field: "id", reason: "is required") }
            let breakID = try checked { () throws(ScheduleError) in try BreakID(id, field: "id") }
            guard let playoutLimit else { throw Invalid(field: "playout_limit", reason: "is required") }
            return .setPlayoutLimit(id: breakID, limitMilliseconds: try milliseconds(playoutLimit, "playout_limit"))
        case .cancelCurrentEvent:
            return .cancelCurrentEvent
        case .cancelBreak:
            guard let id else { throw Invalid(field: "id", reason: "is required") }
            return .cancelBreak(id: try checked { () throws(ScheduleError) in try BreakID(id, field: "id") })
        case .createChannel, .updateRenditions, .returnFromBreak, .setSCTE35Policy, .ingestSCTE35, .setAdSettings:
            throw Invalid(field: "command", reason: "\(command) is not an API command")
        }
    }

    /// The `align` field: absent is `segment`.
    public static func alignment(_ text: String?) throws(Invalid) -> PlaceBreak.StartAlignment {
        guard let text else { return .segment }
        guard let alignment = PlaceBreak.StartAlignment(rawValue: text.lowercased()) else {
            throw Invalid(
                field: "align",
                reason: "\(text.prefix(64).debugDescription.escapingControlCharacters) is not segment or exact")
        }
        return alignment
    }

    /// Seconds to milliseconds: finite, 0…86400 (`Limits.maximumDelayMilliseconds`), never a trapping conversion.
    private func milliseconds(_ seconds: Double, _ field: String) throws(Invalid) -> Int64 {
        try checked { () throws(ScheduleError) in try Limits.milliseconds(seconds: seconds, field: field) }
    }

    /// Runs a check from `Schedule`, answering its refusal as this request's `Invalid`.
    private func checked<T>(_ check: () throws(ScheduleError) -> T) throws(Invalid) -> T {
        do {
            return try check()
        } catch {
            throw Invalid(refusal: error)
        }
    }

    private func value<T: RawRepresentable & CaseIterable>(_ text: String?, _ field: String) throws -> T?
    where T.RawValue == String {
        try text.map { item in
            guard let value = T(rawValue: item.uppercased()) else {
                throw Invalid(
                    field: field,
                    reason:
                        "\(item.prefix(64).debugDescription.escapingControlCharacters) is not one of \(T.allCases.map { $0.rawValue.lowercased() }.joined(separator: ", "))"
                )
            }
            return value
        }
    }

    private func values<T: RawRepresentable>(_ list: [String]?, _ field: String) throws -> [T]?
    where T.RawValue == String {
        try list?.map { item in
            guard let value = T(rawValue: item.uppercased()) else {
                throw Invalid(
                    field: field,
                    reason: "\(item.prefix(64).debugDescription.escapingControlCharacters) is not a valid value")
            }
            return value
        }
    }
}
