import Foundation
import HLS
import TestSupport
import Testing

/// Breaks whose asset the service can read: measured at placement, served as chunks from its own asset list.
@Suite(
    "Asset media: measured at placement, served in chunks",
    .enabled(
        if: TestDatabase.isConfigured && CLIRunner.isAvailable, "needs DATABASE_URL and CUELINE_BIN (scripts/test.sh)"))
struct AssetChunkTests {
    struct Setup {
        var server: ServerProcess
        var cli: CLIRunner
        var commands: String { "\(server.baseURL)/channels/one/commands" }
        var ad: String { "\(server.baseURL)/media/ad/ad.m3u8" }
    }

    /// Channel `one` served with a media directory holding a 10.010 s VOD ad of five segments.
    private func setUp() async throws -> Setup {
        let (url, cli) = try await CLIRunner.onFreshDatabase(channels: ["one"])
        let media = FileManager.default.temporaryDirectory.appendingPathComponent("chunks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: media.appendingPathComponent("ad"), withIntermediateDirectories: true)
        var playlist = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-PLAYLIST-TYPE:VOD\n"
        for n in 0..<5 { playlist += "#EXTINF:2.002,\nad\(n).ts\n" }
        try Data((playlist + "#EXT-X-ENDLIST\n").utf8).write(to: media.appendingPathComponent("ad/ad.m3u8"))
        // An external asset list of 30 s (two assets of 15 s).
        try Data(
            #"{"ASSETS":[{"URI":"https://ads.example/a.m3u8","DURATION":15},{"URI":"https://ads.example/b.m3u8","DURATION":15.0}]}"#
                .utf8
        )
        .write(to: media.appendingPathComponent("ad/list.json"))
        let server = try ServerProcess(
            databaseURL: url, extraArguments: ["--media-dir", media.path, "--unauthenticated-commands"])
        try await server.waitUntilReady()
        return Setup(server: server, cli: cli)
    }

    @Test("a \"10 s\" ad of 10.010 s: planned at 10.010 s, said so, listed as 5 chunks whatever _HLS_start_offset says")
    func placedAndChunked() async throws {
        let setup = try await setUp()
        defer { setup.server.stop() }
        let (placed, status) = try await HTTP.post(
            setup.commands,
            json: #"{"command":"place_break","id":"ad-1","in":20,"duration":10,"asset_uri":"\#(setup.ad)"}"#)
        #expect(status == 201, "\(placed)")
        #expect(placed.contains("10.010"), "the answer says the planned duration was corrected: \(placed)")
        let list = try await HTTP.get("\(setup.server.baseURL)/channels/one/breaks/ad-1/assets.json")
        #expect(list.1 == 200)
        #expect(list.0.components(separatedBy: "\"URI\"").count - 1 == 5, "\(list.0)")
        #expect(list.0.contains(#"/channels/one/breaks/ad-1/chunks/0-4.m3u8","DURATION":2.002"#), "\(list.0)")
        // A player joining mid-break gets the same list: hls.js lays it out from the break's start.
        let joined = try await HTTP.get(
            "\(setup.server.baseURL)/channels/one/breaks/ad-1/assets.json?_HLS_primary_id=x&_HLS_start_offset=4.5")
        #expect(joined.0 == list.0)
        // Chunk 2 is a VOD playlist of the ad's third segment, by absolute URI.
        let (chunk, chunkStatus) = try await HTTP.get(
            "\(setup.server.baseURL)/channels/one/breaks/ad-1/chunks/0-2.m3u8")
        #expect(chunkStatus == 200)
        #expect(chunk.contains("#EXT-X-PLAYLIST-TYPE:VOD") && chunk.contains("#EXT-X-ENDLIST"), "\(chunk)")
        #expect(chunk.contains("#EXTINF:2.002,\n\(setup.server.baseURL)/media/ad/ad2.ts\n#EXT-X-ENDLIST"), "\(chunk)")
        #expect(!chunk.contains("ad1.ts") && !chunk.contains("ad3.ts"), "\(chunk)")
        for bad in [
            "0-5.m3u8", "1-0.m3u8", "0-0-0.m3u8", "0-0.ts", "x-0.m3u8", "-0.m3u8", "0--1.m3u8",
            "00000000000000000000001-0.m3u8",
        ] {
            let (_, badStatus) = try await HTTP.get("\(setup.server.baseURL)/channels/one/breaks/ad-1/chunks/\(bad)")
            #expect(badStatus == 404, "\(bad)")
        }
        let (_, unknownBreak) = try await HTTP.get("\(setup.server.baseURL)/channels/one/breaks/nope/chunks/0-0.m3u8")
        #expect(unknownBreak == 404)
        // The playlist points players at this service's list, not at the ad (once the change is served).
        var media = ""
        for _ in 0..<40 where !media.contains("ad-1") {
            media = try await HTTP.get("\(setup.server.baseURL)/channels/one/720p.m3u8").0
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(media.contains("/channels/one/breaks/ad-1/assets.json?_HLS_interstitial_id=ad-1"), "\(media)")
        #expect(!media.contains("X-ASSET-URI"), "\(media)")
    }

    @Test(
        "a duration far from the media is refused naming the field; an unreadable asset is placed whole, with a warning"
    )
    func refusedAndUnreadable() async throws {
        let setup = try await setUp()
        defer { setup.server.stop() }
        let (refused, status) = try await HTTP.post(
            setup.commands, json: #"{"command":"place_break","in":20,"duration":30,"asset_uri":"\#(setup.ad)"}"#)
        #expect(status == 422 && refused.contains("duration") && refused.contains("10.010 s long"), "\(refused)")
        // Nothing listens on port 1: the break is placed as asked, served whole, and the answer says why.
        let (placed, placedStatus) = try await HTTP.post(
            setup.commands,
            json:
                #"{"command":"place_break","id":"far","in":20,"duration":30,"asset_uri":"http://127.0.0.1:1/ad.m3u8"}"#)
        #expect(placedStatus == 201, "\(placed)")
        #expect(placed.contains("could not be read"), "\(placed)")
        let (list, _) = try await HTTP.get("\(setup.server.baseURL)/channels/one/breaks/far/assets.json")
        #expect(list == #"{"ASSETS":[{"URI":"http://127.0.0.1:1/ad.m3u8","DURATION":30.000}]}"#)
    }

    @Test("the CLI (straight to the database) measures too, and prints the correction")
    func cliMeasures() async throws {
        let setup = try await setUp()
        defer { setup.server.stop() }
        let placed = try setup.cli.run([
            "break", "place", "one", "--id", "cli-1", "--in", "20s", "--duration", "10s", "--asset-uri", setup.ad,
        ])
        #expect(placed.status == 0, "\(placed.stderr)")
        #expect(placed.stdout.contains("10.010"), "\(placed.stdout)")
        #expect(placed.stdout.contains("served as 5 chunks of at most 2.002 s"), "\(placed.stdout)")
        // --no-chunks: the duration is still checked and corrected, the asset served whole.
        let whole = try setup.cli.run([
            "break", "place", "one", "--id", "cli-2", "--in", "60s", "--duration", "10s", "--asset-uri", setup.ad,
            "--no-chunks",
        ])
        #expect(
            whole.status == 0 && whole.stdout.contains("planned 10.010 s") && !whole.stdout.contains("chunks"),
            "\(whole.stdout) \(whole.stderr)")
        // Said, not accepted silently: hls.js ignores a playout limit set once such a break has begun (issue 34).
        #expect(
            (whole.stdout + whole.stderr).contains("an early return reaches its viewers only at the end of the asset"),
            "\(whole.stdout)")
        // The CLI wrote to the database; the server learns of it through LISTEN (or its poll): wait up to 5 s.
        var (list, listStatus) = try await HTTP.get("\(setup.server.baseURL)/channels/one/breaks/cli-2/assets.json")
        for _ in 0..<50 where listStatus == 404 {
            try await Task.sleep(for: .milliseconds(100))
            (list, listStatus) = try await HTTP.get("\(setup.server.baseURL)/channels/one/breaks/cli-2/assets.json")
        }
        #expect(list == #"{"ASSETS":[{"URI":"\#(setup.ad)","DURATION":10.010}]}"#)
        let (_, chunkStatus) = try await HTTP.get("\(setup.server.baseURL)/channels/one/breaks/cli-2/chunks/0-0.m3u8")
        #expect(chunkStatus == 404)
        let refused = try setup.cli.run([
            "break", "place", "one", "--in", "100s", "--duration", "3s", "--asset-uri", setup.ad,
        ])
        #expect(refused.status == 1 && refused.stderr.contains("duration: the asset"), "\(refused.stderr)")
    }

    @Test(
        "an external asset list is read when placed: one whose assets do not fill the break is said, one that does is placed quietly"
    )
    func externalListMeasured() async throws {
        let setup = try await setUp()
        defer { setup.server.stop() }
        let list = "\(setup.server.baseURL)/media/ad/list.json"
        let (short, status) = try await HTTP.post(
            setup.commands,
            json: #"{"command":"place_break","id":"list-36","in":20,"duration":36,"asset_list":"\#(list)"}"#)
        #expect(status == 201, "\(short)")
        #expect(
            short.contains(
                "holds 30.000 s of assets for a 36.000 s break: viewers return to the live stream after 30.000 s"),
            "\(short)")
        let (fits, fitsStatus) = try await HTTP.post(
            setup.commands,
            json: #"{"command":"place_break","id":"list-30","in":80,"duration":30,"asset_list":"\#(list)"}"#)
        #expect(fitsStatus == 201 && !fits.contains("warning"), "\(fits)")
        let (unread, unreadStatus) = try await HTTP.post(
            setup.commands,
            json:
                #"{"command":"place_break","id":"list-x","in":140,"duration":30,"asset_list":"http://127.0.0.1:1/list.json"}"#
        )
        #expect(unreadStatus == 201 && unread.contains("the asset list's length was not checked"), "\(unread)")
    }
}
