import ArgumentParser
import Foundation
import HLS
import Projector

struct LintCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lint",
        abstract: "Check HLS playlists against the rules in hls-rules.md.",
        discussion: """
            One playlist is checked on its own. Several media playlists are taken as the renditions of one channel at
            one instant and must also agree with each other (target duration, date ranges, program date-times).
            --previous names the earlier version of a playlist (repeat it for several, in the same order) to check
            the rules between updates: media sequence, date range immutability and removal, and the rest.
            --full names the full playlist a delta update (_HLS_skip) was made from, at the same position, to check the
            delta against it (what it skips, what it keeps).
            Exit status: 0 clean (warnings allowed unless --strict), 1 findings, 2 usage.
            """)

    @Argument(help: "Playlist files or http(s) URLs.")
    var playlists: [String]

    @Option(help: "The previous version of the playlist at the same position.")
    var previous: [String] = []

    @Option(help: "The full playlist of the same instant, for a delta update at the same position.")
    var full: [String] = []

    @Flag(help: "Treat warnings as failures.")
    var strict = false

    @Flag(help: "Print findings as JSON.")
    var json = false

    func validate() throws {
        guard !playlists.isEmpty else { throw ValidationError("name at least one playlist file or URL") }
        guard full.count <= playlists.count else {
            throw ValidationError("--full is given \(full.count) times for \(playlists.count) playlists")
        }
        guard previous.count <= playlists.count else {
            throw ValidationError("--previous is given \(previous.count) times for \(playlists.count) playlists")
        }
    }

    func run() async throws {
        var findings: [Finding] = []
        var media: [(name: String, parsed: ParsedMediaPlaylist)] = []
        for (index, source) in playlists.enumerated() {
            let text = try await Self.load(source)
            let sourceFindings = Lint.check(text)
            findings += sourceFindings.map {
                var f = $0; f.source = source; return f
            }
            guard case .media(let parsed)? = try? PlaylistParser.parse(text) else { continue }
            media.append((source, parsed))
            if index < full.count {
                let fullText = try await Self.load(full[index])
                do {
                    findings += Lint.checkDelta(full: try PlaylistParser.parseMedia(fullText), delta: parsed).map {
                        var f = $0; f.source = source; return f
                    }
                } catch {
                    findings.append(
                        Finding(
                            rule: error.rule, line: error.line, message: "full playlist: \(error.message)",
                            source: full[index]))
                }
            }
            if index < previous.count {
                let earlierText = try await Self.load(previous[index])
                do {
                    let earlier = try PlaylistParser.parseMedia(earlierText)
                    findings += Lint.checkUpdate(previous: earlier, current: parsed).map {
                        var f = $0; f.source = source; return f
                    }
                } catch {
                    findings.append(
                        Finding(
                            rule: error.rule, line: error.line, message: "previous playlist: \(error.message)",
                            source: previous[index]))
                }
            }
        }
        if media.count > 1 {
            findings += Lint.checkRenditions(media)
        }
        let errors = findings.filter { $0.severity == .error }.count
        let warnings = findings.count - errors
        if json {
            struct Report: Encodable {
                var findings: [Finding]
                var errors: Int
                var warnings: Int
            }
            try printJSON(Report(findings: findings, errors: errors, warnings: warnings))
        } else {
            for finding in findings { print(finding) }
            print(
                "\(errors) error\(errors == 1 ? "" : "s"), \(warnings) warning\(warnings == 1 ? "" : "s") in \(playlists.count) playlist\(playlists.count == 1 ? "" : "s")"
            )
        }
        if errors > 0 || (strict && warnings > 0) {
            throw ExitCode(1)
        }
    }

    static func load(_ source: String) async throws -> String {
        do {
            return try await RelayPoller.fetch(source)
        } catch let error as RelayPoller.FetchError {
            throw CLIError(
                message: error.description.hasPrefix("cannot read")
                    ? "\(error.description): no such file or not readable" : error.description)
        }
    }
}
