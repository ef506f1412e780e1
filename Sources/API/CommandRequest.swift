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
struct CommandRequest: Decodable {
    var command: String
    var id: String?
    var start: String?
    var `in`: Double?
    var duration: Double?
    var assetUri: String?
    var assetList: String?
    var pod: [PodItem]?
    var restrict: [String]?
    var snap: [String]?
    var cue: [String]?
    var attributes: [String: String]?
    /// `segment` (default): a start off a segment boundary moves to the next one; `exact` keeps it.
    var align: String?
    /// false: serve each asset whole (`X-ASSET-URI`) even when it could be served in chunks. Default true.
    var chunked: Bool?
    var playoutLimit: Double?
    var actor: String?
    var reason: String?

    struct PodItem: Decodable {
        var uri: String
        var duration: Double
    }

    /// A request field that is missing or wrong, named.
    struct Invalid: Error {
        var field: String
        var reason: String
    }

    func scheduleCommand() throws -> ScheduleCommand {
        switch command {
        case "place_break":
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
            guard assets == 1 else { throw Invalid(field: "asset_uri", reason: "give exactly one of asset_uri, asset_list or pod") }
            let asset: BreakAsset
            if let assetUri {
                asset = .uri(try checked { () throws(ScheduleError) in try AbsoluteURI(assetUri, field: "asset_uri").value })
            } else if let assetList {
                asset = .list(try checked { () throws(ScheduleError) in try AbsoluteURI(assetList, field: "asset_list").value })
            } else {
                guard pod!.count <= Limits.maximumPodAssets else { throw Invalid(field: "pod", reason: "holds at most \(Limits.maximumPodAssets) assets") }
                asset = .pod(try pod!.map { item in
                    PodAsset(
                        uri: try checked { () throws(ScheduleError) in try AbsoluteURI(item.uri, field: "pod").value },
                        durationMilliseconds: try milliseconds(item.duration, "pod"))
                })
            }
            if let id { _ = try checked { () throws(ScheduleError) in try Identifier(id, field: "id") } }
            for (name, value) in attributes ?? [:] {
                if let problem = PlainText.problem(in: name, maximumLength: 64) ?? PlainText.problem(in: value) {
                    throw Invalid(field: "attributes", reason: "\(name.debugDescription.escapingControlCharacters): \(problem)")
                }
            }
            var place = PlaceBreak(
                id: id, start: startSpec, plannedDurationMilliseconds: try milliseconds(duration, "duration"), asset: asset,
                options: InterstitialOptions(
                    restrict: try values(restrict, "restrict"), snap: try values(snap, "snap"), cue: InterstitialOptions.cue(requested: try values(cue, "cue")),
                    clientAttributes: (attributes ?? [:]).sorted { $0.key < $1.key }.map { ClientAttribute(name: $0.key, value: .string($0.value)) }),
                alignment: try Self.alignment(align))
            place.wholeAssets = chunked == false
            return .placeBreak(place)
        case "set_playout_limit":
            guard let id else { throw Invalid(field: "id", reason: "is required") }
            _ = try checked { () throws(ScheduleError) in try Identifier(id, field: "id") }
            guard let playoutLimit else { throw Invalid(field: "playout_limit", reason: "is required") }
            return .setPlayoutLimit(id: id, limitMilliseconds: try milliseconds(playoutLimit, "playout_limit"))
        case "cancel_current_event":
            return .cancelCurrentEvent
        case "cancel_break":
            guard let id else { throw Invalid(field: "id", reason: "is required") }
            _ = try checked { () throws(ScheduleError) in try Identifier(id, field: "id") }
            return .cancelBreak(id: id)
        default:
            throw Invalid(field: "command", reason: "\(command.prefix(64).debugDescription.escapingControlCharacters) is not one of place_break, set_playout_limit, cancel_current_event, cancel_break")
        }
    }

    /// The `align` field: absent is `segment`.
    static func alignment(_ text: String?) throws(Invalid) -> PlaceBreak.StartAlignment {
        guard let text else { return .segment }
        guard let alignment = PlaceBreak.StartAlignment(rawValue: text.lowercased()) else {
            throw Invalid(field: "align", reason: "\(text.prefix(64).debugDescription.escapingControlCharacters) is not segment or exact")
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
            throw Invalid(error)
        }
    }

    private func values<T: RawRepresentable>(_ list: [String]?, _ field: String) throws -> [T]? where T.RawValue == String {
        try list?.map { item in
            guard let value = T(rawValue: item.uppercased()) else {
                throw Invalid(field: field, reason: "\(item.prefix(64).debugDescription.escapingControlCharacters) is not a valid value")
            }
            return value
        }
    }
}
