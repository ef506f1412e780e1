import ArgumentParser
import EventStore
import Foundation
import HLS
import Projector
import Schedule
import Wire

struct AsRunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "as-run",
        abstract: "What aired: per break, planned and actual times, who placed and ended it, through which door.")

    @Argument(transform: storedIdentifier) var channel: ChannelID

    @Option(help: "Breaks planned to start at or after this instant.")
    var from: TimeArgument?

    @Option(help: "Breaks planned to start before this instant.")
    var to: TimeArgument?

    @Option(help: "csv or json")
    var format = "csv"

    @OptionGroup var database: DatabaseOptions

    @Option(help: "Read it from this server's HTTP API instead of the database (or CUELINE_SERVER).")
    var server: String?

    @Option(help: "API token for --server (or CUELINE_TOKEN).")
    var token: String?

    func validate() throws {
        guard format == "csv" || format == "json" else { throw ValidationError("--format must be csv or json") }
    }

    func run() async throws {
        let report: AsRunReport
        if let remote = RemoteAPI.configured(server: server, token: token) {
            report = try await remote.asRun(channel, from: from?.timestamp, to: to?.timestamp)
        } else {
            let store = try await openStore(database)
            let state = try await ChannelLoader.load(channel, from: store)
            // Worded as the API's read answers it, so both paths say the same.
            guard state.config != nil else { throw CLIError(message: "channel \(channel) does not exist") }
            let entries = AsRun.entries(state: state, from: from?.timestamp, to: to?.timestamp, at: wallClock())
            report = AsRunReport(channel: channel, entries: entries, totals: AsRun.totals(entries))
        }
        if format == "json" {
            // The API's as-run answer.
            try printJSON(report)
        } else {
            print(AsRun.csv(report.entries, escapingControlCharacters: true), terminator: "")
        }
    }
}

struct LogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "The audit trail: every command applied or refused, who, when, through which door, why.")

    @Argument(transform: storedIdentifier) var channel: ChannelID

    @Option(help: "Only what was decided at or before this instant.")
    var at: TimeArgument?

    @Flag(help: "Keep printing new entries as they are appended.")
    var follow = false

    @Flag(help: "Print JSON lines.")
    var json = false

    @OptionGroup var database: DatabaseOptions

    @Option(help: "Read it from this server's HTTP API instead of the database (or CUELINE_SERVER).")
    var server: String?

    @Option(help: "API token for --server (or CUELINE_TOKEN).")
    var token: String?

    struct Line: Encodable {
        var decidedAt: Timestamp
        var outcome: String
        var what: String
        var actor: String
        var source: String
        var commandID: String
        var reason: String?
        var version: Int64?
        var position: Int64?
        var payload: String?
    }

    func run() async throws {
        // The same pages from the database or the API; each round reads only what is new (cursors kept).
        let reader = try await ChannelLogReader.open(channel, database: database, server: server, token: token)
        var seenVersion: Int64 = 0
        var refusalCursor: Int64 = 0
        repeat {
            let events = try await reader.events(after: seenVersion)
            let (refusals, next) = try await reader.refusals(after: refusalCursor)
            var lines: [Line] = events.map {
                Line(
                    decidedAt: $0.decidedAt, outcome: "applied", what: $0.type, actor: $0.actor, source: $0.source,
                    commandID: $0.commandID,
                    reason: $0.reason, version: $0.version, position: $0.position, payload: $0.payload)
            }
            lines += refusals.map {
                Line(
                    decidedAt: $0.decidedAt, outcome: "refused", what: $0.command, actor: $0.actor, source: $0.source,
                    commandID: $0.commandId,
                    reason: $0.reason, version: nil, position: nil, payload: $0.request)
            }
            seenVersion = events.last?.version ?? seenVersion
            refusalCursor = next
            lines = lines.filter { line in at.map { line.decidedAt <= $0.timestamp } ?? true }.sorted {
                $0.decidedAt < $1.decidedAt
            }
            for line in lines {
                if json {
                    // One line per entry: compact.
                    FileHandle.standardOutput.write(try WireJSON.encode(line) + Data("\n".utf8))
                } else {
                    // Actor, reason and payload came from requests: printed with control characters escaped.
                    var text =
                        "\(line.decidedAt.iso8601)  \(line.outcome == "refused" ? "REFUSED " : "")\(line.what.escapingControlCharacters)"
                        + "  by \(line.actor.escapingControlCharacters) via \(line.source.escapingControlCharacters)"
                    if let version = line.version { text += "  v\(version)" }
                    if let reason = line.reason?.escapingControlCharacters {
                        text += line.outcome == "refused" ? "  because: \(reason)" : "  reason: \(reason)"
                    }
                    if line.outcome == "applied", let payload = line.payload {
                        text += "\n    \(payload.escapingControlCharacters)"
                    }
                    print(text)
                }
            }
            if follow { try await Task.sleep(for: .seconds(1)) }
        } while follow
    }
}

struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract:
            "Prove the log is untouched: recompute every channel's hash chain, and re-render recorded samples of what was served."
    )

    @Argument(help: "A channel; all channels when left out.", transform: storedIdentifier)
    var channel: ChannelID?

    @Option(help: "How many recorded samples per channel to re-render.")
    var samples = 50

    @Flag(help: "Print JSON.")
    var json = false

    @OptionGroup var database: DatabaseOptions

    struct ChannelReport: Encodable {
        var channel: ChannelID
        var events: Int
        var chained: Int
        var unchained: Int
        var firstBrokenLink: String?
        var samplesChecked: Int
        var samplesMismatched: [String]
        /// Events this build cannot read: skipped by serving and replay alike, but the log should not hold them.
        var unreadableEvents: [String]
        /// Replay checkpoints compared with the fold of the log at their version, and those that differ.
        var checkpointsChecked: Int
        var checkpointsMismatched: [String]
        var ok: Bool
    }

    func run() async throws {
        let store = try await openStore(database)
        var channels = [ChannelID]()
        if let channel { channels = [channel] } else { channels = try await store.channelIDs() }
        var reports: [ChannelReport] = []
        for id in channels {
            let events = try await loadEvents(id, from: store)
            let chain = HashChain.verify(events)
            var mismatched: [String] = []
            var checked = 0
            let recorded = try await PostgresRenderSampleStore(pool: store.pool).renderSamples(of: id, limit: 100_000)
            let stride = max(1, recorded.count / max(1, samples))
            let (readable, unreadable) = ChannelLoader.decodeReadable(events)
            let decoded = chain.firstBreak == nil ? readable : nil
            let unreadableEvents = unreadable.map { event, reason in
                "event at position \(event.position) (version \(event.version), \(event.type)) cannot be read by this build: \(reason)"
            }
            for sample in recorded.enumerated().filter({ $0.offset % stride == 0 }).map(\.element).prefix(samples) {
                guard let decoded else { break }
                // A channel renders with the version its configuration implies (1 before signalling, 2 with it): a
                // sample of a version this build renders is re-rendered and compared byte for byte.
                guard PlaylistBuilder.rendererVersions.contains(sample.rendererVersion) else {
                    mismatched.append(
                        "\(sample.tick.iso8601) \(sample.rendition): rendered by renderer version \(sample.rendererVersion), which this build cannot reproduce"
                    )
                    continue
                }
                checked += 1
                let text = try? Projector.Replay.playlist(
                    id, decoded, at: sample.tick, rendition: sample.rendition, multivariant: false)
                if text.map(sha256Hex) != sample.sha256 {
                    mismatched.append("\(sample.tick.iso8601) \(sample.rendition): replay differs from what was served")
                }
            }
            let checkpoints = try await Projector.Replay.auditCheckpoints(
                id, events: events, readable: readable, store: store)
            reports.append(
                ChannelReport(
                    channel: id, events: events.count, chained: chain.checked, unchained: chain.unchained,
                    firstBrokenLink: chain.firstBreak?.description, samplesChecked: checked,
                    samplesMismatched: mismatched,
                    unreadableEvents: unreadableEvents,
                    checkpointsChecked: checkpoints.checked, checkpointsMismatched: checkpoints.mismatched,
                    ok: chain.firstBreak == nil && mismatched.isEmpty && unreadableEvents.isEmpty
                        && checkpoints.mismatched.isEmpty))
        }
        if json {
            try printJSON(reports)
        } else {
            for report in reports {
                if let broken = report.firstBrokenLink {
                    print("\(report.channel): BROKEN: \(broken)")
                } else {
                    print(
                        "\(report.channel): \(report.chained) events chained"
                            + (report.unchained > 0 ? ", \(report.unchained) written before tamper evidence" : "")
                            + ", \(report.samplesChecked) served playlists re-rendered identically"
                            + (report.samplesMismatched.isEmpty ? "" : ", \(report.samplesMismatched.count) DIFFER")
                            + ", \(report.checkpointsChecked) replay checkpoints re-folded"
                            + (report.checkpointsMismatched.isEmpty
                                ? "" : ", \(report.checkpointsMismatched.count) DIFFER"))
                }
                for mismatch in report.samplesMismatched { print("  \(mismatch)") }
                for mismatch in report.checkpointsMismatched {
                    print("  CHECKPOINT: \(mismatch)".escapingControlCharacters)
                }
                for unreadable in report.unreadableEvents { print("  UNREADABLE: \(unreadable)") }
            }
        }
        if reports.contains(where: { !$0.ok }) { throw ExitCode(1) }
    }
}
