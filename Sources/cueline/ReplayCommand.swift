import ArgumentParser
import EventStore
import Foundation
import HLS
import Projector
import Schedule

struct Replay: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a playlist exactly as it was served at an instant.",
        discussion: """
            Folds the events in effect at --at (decided at or before it) and renders with the same code the server uses.
            Served playlists carry the instant they were rendered for in the X-Cueline-Tick header.
            """)

    @Argument var channel: String

    @Option(help: "The instant (ISO 8601), e.g. an X-Cueline-Tick header.")
    var at: TimeArgument

    @Option(help: "Rendition; defaults to the first one.")
    var rendition: String?

    @Flag(help: "Print the multivariant playlist instead.")
    var multivariant = false

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let store = try await openStore(database)
        var events: [RecordedScheduleEvent] = []
        var version: Int64 = 0
        while true {
            let batch = try await store.readStream(channel, after: version, limit: 1000)
            events += try batch.map(ChannelLoader.decode)
            version = batch.last?.version ?? version
            if batch.count < 1000 { break }
        }
        let state = fold(channel, events, asOf: at.timestamp)
        guard let config = state.config else {
            throw CLIError(message: "channel \(channel) did not exist at \(at.timestamp)")
        }
        guard config.source == .clock else {
            throw CLIError(message: "channel \(channel) relays an upstream encoder; its upstream playlists are not recorded, so it cannot be replayed")
        }
        let rendered = try ChannelFollower.render(config: config, state: state, tick: at.timestamp)
        if multivariant {
            print(rendered.multivariant, terminator: "")
            return
        }
        let name = rendition ?? config.renditions[0].name
        guard config.renditions.contains(where: { $0.name == name }) else {
            throw CLIError(message: "channel \(channel) had no rendition \(name) at \(at.timestamp); it had \(config.renditions.map(\.name).joined(separator: ", "))")
        }
        guard let text = rendered.playlists[name] else {
            throw CLIError(message: "channel \(channel) served no playlist at \(at.timestamp): its window was not full yet")
        }
        print(text, terminator: "")
    }
}
