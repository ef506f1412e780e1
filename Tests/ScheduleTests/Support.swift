import Foundation
import Testing
import HLS
import Schedule

let epoch = Timestamp(iso8601: "2026-03-01T12:00:00Z")!

func at(_ seconds: Double) -> Timestamp {
    epoch.adding(milliseconds: Int64((seconds * 1000).rounded()))
}

func demoConfig(segment: Int64 = 6000, window: Int = 5, renditions: [Identifier] = ["720p", "480p", "360p"])
    -> ChannelConfig
{
    ChannelConfig(
        id: "demo", segmentDurationMilliseconds: segment, windowSegments: window, epoch: epoch,
        renditions: renditions.enumerated().map { index, name in
            RenditionConfig(
                name: name, bandwidth: 3_000_000 / (index + 1), codecs: ["avc1.64001f", "mp4a.40.2"],
                uriTemplate: "\(name)/seg{n}.ts")
        },
        publicBaseURL: "http://127.0.0.1:8080")
}

/// Applies commands through `decide` and `evolve`, the way the service does, without a store.
struct Channel {
    var state: ChannelState
    var position: Int64 = 0
    /// Every event applied, as the log would hold it.
    var recorded: [RecordedScheduleEvent] = []

    init(_ config: ChannelConfig = demoConfig()) throws {
        state = ChannelState(channel: config.id)
        try apply(.createChannel(config), at: epoch)
    }

    @discardableResult
    mutating func apply(_ command: ScheduleCommand, at time: Timestamp, actor: String = "op") throws -> [ScheduleEvent]
    {
        let events = try decide(command, state: state, now: time)
        for event in events {
            position += 1
            // Through the codec, as the log would store it.
            let encoded = EventCodec.encode(event)
            let decoded = try EventCodec.decode(
                type: encoded.type, schemaVersion: encoded.schemaVersion, payload: encoded.payload)
            // Exact: the follower folds a command's own events as decided, replay folds them as decoded.
            #expect(decoded == event)
            let record = RecordedScheduleEvent(
                event: decoded, version: state.version + 1, position: position,
                attribution: Attribution(at: time, actor: actor, source: "test"))
            recorded.append(record)
            state = evolve(state, record)
        }
        return events
    }

    func render(_ rendition: Identifier, at tick: Timestamp) throws -> String {
        let config = state.config!
        let playlist = PlaylistBuilder.mediaPlaylist(
            config: config, state: state, rendition: config.renditions.first { $0.name == rendition }!, at: tick)!
        return try PlaylistRenderer.render(playlist)
    }
}

func place(
    _ id: BreakID, start seconds: Double, duration: Double, asset: BreakAsset? = nil,
    alignment: PlaceBreak.StartAlignment = .segment
) -> ScheduleCommand {
    .placeBreak(
        PlaceBreak(
            id: id, start: .at(at(seconds)), plannedDurationMilliseconds: Int64(duration * 1000),
            asset: asset ?? .uri("https://ads.example.com/pods/\(id)/master.m3u8"),
            options: InterstitialOptions(restrict: [.skip, .jump], snap: [.out, .in]),
            alignment: alignment))
}
