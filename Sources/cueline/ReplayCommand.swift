import ArgumentParser
import EventStore
import Foundation
import HLS
import Projector
import Schedule

struct ReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay", abstract: "Print a playlist exactly as it was served at an instant.",
        discussion: """
            Folds the events in effect at --at (decided at or before it) and renders with the same code the server uses.
            Served playlists carry the instant they were rendered for in the X-Cueline-Tick header.
            """)

    @Argument(transform: storedIdentifier) var channel: ChannelID

    @Option(help: "The instant (ISO 8601), e.g. an X-Cueline-Tick header.")
    var at: TimeArgument?

    @Option(
        parsing: .upToNextOption,
        help: "Two instants A B: print every distinct version served between them, with the tick it first appeared at.")
    var between: [TimeArgument] = []

    @Option(help: "Rendition; defaults to the first one.", transform: storedIdentifier)
    var rendition: Identifier?

    @Option(
        help:
            "YES or v2: the delta update served to a request with _HLS_skip (LL-HLS channels) instead of the full playlist.",
        transform: { text in
            guard let update = PlaylistBuilder.DeltaUpdate(rawValue: text) else {
                throw ValidationError("--skip must be YES or v2")
            }
            return update
        })
    var skip: PlaylistBuilder.DeltaUpdate?

    @Flag(help: "Print the multivariant playlist instead.")
    var multivariant = false

    @OptionGroup var database: DatabaseOptions

    @Option(help: "Replay through this server's HTTP API instead of the database (or CUELINE_SERVER).")
    var server: String?

    @Option(help: "API token for --server (or CUELINE_TOKEN).")
    var token: String?

    func validate() throws {
        guard (at == nil) != between.isEmpty else { throw ValidationError("give --at T or --between A B") }
        guard between.isEmpty || (between.count == 2 && between[0].timestamp <= between[1].timestamp) else {
            throw ValidationError("--between needs two instants, the earlier first")
        }
        // Every segment boundary between them is rendered: a bounded span keeps that a bounded amount of work.
        guard
            between.isEmpty
                || between[1].timestamp.milliseconds(since: between[0].timestamp) <= Limits.maximumDelayMilliseconds
        else {
            throw ValidationError("--between instants must be at most 24 hours apart")
        }
    }

    func run() async throws {
        // As the server's replay route: a later instant was never served, and commands still to come may change it.
        let now = wallClock()
        if let latest = at?.timestamp ?? between.last?.timestamp, latest > now {
            throw CLIError(
                message:
                    "\(at == nil ? "--between's end" : "at") is after this machine's clock (\(now.iso8601)): a replay answers instants already served"
            )
        }
        if let remote = RemoteAPI.configured(server: server, token: token) {
            if let at {
                print(
                    try await remote.replay(
                        channel, at: at.timestamp, rendition: rendition, multivariant: multivariant, skip: skip),
                    terminator: "")
            } else {
                // The server replays one instant per request: the log is read through the API and folded here.
                let reader = try await ChannelLogReader.open(channel, database: database, server: server, token: token)
                printVersions(ChannelLoader.decodeReadable(try await reader.events(after: 0)).readable)
            }
            return
        }
        let store = try await openStore(database)
        if let at {
            // Checkpoints (migration 0007) first, so this and later replays read only what follows the last one.
            do { try await Projector.Replay.checkpoint(channel, store: store) } catch {
                FileHandle.standardError.write(
                    Data("note: replay checkpoints not written (\(error)); replaying from the log\n".utf8))
            }
            let (state, checkpoint) = try await Projector.Replay.stateAndCheckpoint(
                channel, store: store, asOf: at.timestamp)
            if let checkpoint {
                FileHandle.standardError.write(
                    Data(
                        "note: replayed from the checkpoint at version \(checkpoint.snapshot.version), written by \(checkpoint.writtenBy.escapingControlCharacters) (cueline verify re-folds every checkpoint)\n"
                            .utf8))
            }
            print(
                try Projector.Replay.playlist(
                    channel, state: state, at: at.timestamp, rendition: rendition, multivariant: multivariant,
                    skip: skip), terminator: "")
            return
        }
        printVersions(try await Projector.Replay.events(channel, from: store))
    }

    /// `--between`: every distinct playlist served between the two instants, with the tick it first appeared at.
    private func printVersions(_ events: [RecordedScheduleEvent]) {
        // Every instant the bytes can change: segment boundaries and the instants events took effect.
        let (from, to) = (between[0].timestamp, between[1].timestamp)
        var candidates: Set<Int64> = [from.milliseconds]
        for event in events where event.attribution.at > from && event.attribution.at <= to {
            candidates.insert(event.attribution.at.milliseconds)
        }
        if let config = fold(channel, events, asOf: to).config, config.source == .clock {
            let timeline = Timeline(config)
            var boundary = timeline.nextBoundary(after: from)
            while boundary <= to {
                candidates.insert(boundary.milliseconds)
                boundary = timeline.nextBoundary(after: boundary)
            }
        }
        var previous: String?
        for tick in candidates.sorted().map(Timestamp.init(milliseconds:)) {
            guard
                let text = try? Projector.Replay.playlist(
                    channel, events, at: tick, rendition: rendition, multivariant: multivariant), text != previous
            else { continue }
            print("=== \(tick.iso8601)")
            print(text, terminator: "")
            previous = text
        }
    }
}
