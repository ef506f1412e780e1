import HLS
import SCTE35
import Schedule

/// The body of `POST /channels/{channel}/scte35`.
///
///     {"section": "/DAvAAAAAAAA///wFAVIAACPf+/+…", "asset_list": "https://ads.example.com/decide?…"}
struct SCTE35Request: Decodable {
    /// The splice_info_section, base64 or hex.
    var section: String
    var assetUri: String?
    var assetList: String?
    /// Seconds, for an out cue that gives no duration.
    var duration: Double?
    /// `segment` (default) or `exact`, as for `place_break`.
    var align: String?
    var reason: String?

    /// The command this request is, for the section as parsed: what the channel's policy decides (`decideIngest`).
    func ingest(_ section: SpliceInfoSection) throws(CommandRequest.Invalid) -> SCTE35Ingest {
        // A JSON number can be 1e300 or -0: bounded before it is converted, never a trapping Int64(_:).
        var duration: Int64?
        if let seconds = self.duration {
            do {
                duration = try Limits.milliseconds(
                    seconds: seconds, field: "duration", maximum: Limits.maximumBreakMilliseconds)
            } catch {
                throw CommandRequest.Invalid(refusal: error)
            }
        }
        let asset: BreakAsset?
        switch (assetUri, assetList) {
        case (let uri?, nil): asset = .uri(uri)
        case (nil, let list?): asset = .list(list)
        case (nil, nil): asset = nil
        case (_?, _?):
            throw CommandRequest.Invalid(field: "asset_uri", reason: "give exactly one of asset_uri or asset_list")
        }
        return SCTE35Ingest(
            section: section.bytes, durationMilliseconds: duration, asset: asset,
            alignment: try CommandRequest.alignment(align))
    }
}

extension IngestCue {
    /// The API commands (token scopes) this cue may become, whatever the channel's state.
    var possibleCommands: [String] {
        switch self {
        case .place: [ScheduleCommand.Kind.placeBreak.rawValue]
        case .end, .cancel:
            [ScheduleCommand.Kind.cancelCurrentEvent.rawValue, ScheduleCommand.Kind.cancelBreak.rawValue]
        }
    }
}

extension ScheduleCommand {
    /// The command types tokens are scoped by (the `command` values of `POST …/commands`).
    var apiName: String { kind.scope?.rawValue ?? "channel" }
}
