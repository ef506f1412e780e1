import ArgumentParser
import EventStore
import Foundation
import Projector
import Schedule

/// Writes replay checkpoints ahead of any replay, so an auditor's first `replay --at` on a long log reads only what
/// follows the latest one. Run by the operator's role (the service role may read checkpoints, not write them: a
/// checkpoint is trusted only as far as the role that wrote it), e.g. hourly from `deploy/systemd/cueline-checkpoint.timer`.
struct CheckpointCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "checkpoint",
        abstract: "Write replay checkpoints (every 1,000 events) for channels past their latest one.",
        discussion: """
            Without channel names, every channel in the log. Safe to run from several places at once and at any time:
            a checkpoint already written is kept, and replay uses one only while the log still holds what it records.
            """)

    @Argument(help: "Channels; all of them when none is named.", transform: storedIdentifier)
    var channels: [ChannelID] = []

    @Flag(help: "One JSON object per channel instead of a table.")
    var json = false

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let store = try await openStore(database)
        let names = channels.isEmpty ? try await store.channelIDs() : channels
        var failed = 0
        if !json { print("channel".padding(toLength: 24, withPad: " ", startingAt: 0) + "  written  result") }
        for channel in names {
            let started = ContinuousClock.now
            do {
                guard try await store.version(of: channel) > 0 else { throw CLIError(message: "no such channel") }
                let written = try await Projector.Replay.checkpoint(channel, store: store)
                let seconds = (ContinuousClock.now - started) / .seconds(1)
                if json {
                    print(
                        #"{"channel":\#(jsonQuoted(channel.rawValue)),"written":\#(written),"seconds":\#(String(format: "%.3f", seconds))}"#
                    )
                } else {
                    print(
                        channel.rawValue.padding(toLength: 24, withPad: " ", startingAt: 0) + "  "
                            + String(written).padding(toLength: 7, withPad: " ", startingAt: 0) + "  ok")
                }
            } catch {
                failed += 1
                if json {
                    print(#"{"channel":\#(jsonQuoted(channel.rawValue)),"error":\#(jsonQuoted("\(error)"))}"#)
                } else {
                    print(
                        channel.rawValue.padding(toLength: 24, withPad: " ", startingAt: 0)
                            + "  -        failed: \(error)".escapingControlCharacters)
                }
            }
        }
        if failed > 0 { throw ExitCode(1) }
    }

    private func jsonQuoted(_ text: String) -> String {
        String(decoding: try! JSONEncoder().encode(text), as: UTF8.self)
    }
}
