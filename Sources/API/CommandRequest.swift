import Foundation
import HLS
import Schedule

/// The JSON body of `POST /channels/{channel}/commands`.
///
///     {"command": "place_break", "id": "brk-1", "in": 30, "duration": 30, "asset_uri": "https://…",
///      "restrict": ["skip", "jump"], "snap": ["out", "in"], "attributes": {"X-COM-EXAMPLE-AD": "abc"}}
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
                guard let time = Timestamp(iso8601: text) else { throw Invalid(field: "start", reason: "is not an ISO 8601 date-time with a time zone") }
                startSpec = .at(time)
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
                asset = .uri(assetUri)
            } else if let assetList {
                asset = .list(assetList)
            } else {
                asset = .pod(try pod!.map { PodAsset(uri: $0.uri, durationMilliseconds: try milliseconds($0.duration, "pod")) })
            }
            return .placeBreak(PlaceBreak(
                id: id, start: startSpec, plannedDurationMilliseconds: try milliseconds(duration, "duration"), asset: asset,
                options: InterstitialOptions(
                    restrict: try values(restrict, "restrict"), snap: try values(snap, "snap"), cue: try values(cue, "cue"),
                    clientAttributes: (attributes ?? [:]).sorted { $0.key < $1.key }.map { ClientAttribute(name: $0.key, value: .string($0.value)) })))
        case "set_playout_limit":
            guard let id else { throw Invalid(field: "id", reason: "is required") }
            guard let playoutLimit else { throw Invalid(field: "playout_limit", reason: "is required") }
            return .setPlayoutLimit(id: id, limitMilliseconds: try milliseconds(playoutLimit, "playout_limit"))
        case "cancel_current_event":
            return .cancelCurrentEvent
        case "cancel_break":
            guard let id else { throw Invalid(field: "id", reason: "is required") }
            return .cancelBreak(id: id)
        default:
            throw Invalid(field: "command", reason: "\(command.debugDescription) is not one of place_break, set_playout_limit, cancel_current_event, cancel_break")
        }
    }

    private func milliseconds(_ seconds: Double, _ field: String) throws -> Int64 {
        guard seconds.isFinite, seconds >= 0, seconds <= 86_400 else { throw Invalid(field: field, reason: "must be seconds between 0 and 86400") }
        return Int64((seconds * 1000).rounded())
    }

    private func values<T: RawRepresentable>(_ list: [String]?, _ field: String) throws -> [T]? where T.RawValue == String {
        try list?.map { item in
            guard let value = T(rawValue: item.uppercased()) else { throw Invalid(field: field, reason: "\(item.debugDescription) is not a valid value") }
            return value
        }
    }
}
