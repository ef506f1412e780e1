import EventStore
import Foundation
import HLS
import Projector
import Schedule
import Testing

/// A replay checkpoint is used only by a build that folds events as the build that wrote it did
/// (`ChannelSnapshot.foldVersion`). This fingerprints the fold of a fixed history that uses every event kind: when
/// `ChannelState.apply` changes what it leaves, the fingerprint changes, and this fails until `foldVersion` is bumped
/// (so checkpoints written by older builds are no longer trusted) and the fingerprint below is updated with it.
@Suite("Replay checkpoints carry the fold version")
struct SnapshotFoldVersionTests {
    static let fingerprints: [Int: String] = [
        1: "e15c4144217371916a6d00b95149a3b3ae1c941423b457851f544f4f7b0d44b6",
        2: "f8b194ecbf8cab79b2f50cf58ea53a7206aeef5cd4ad33787dcb5a5a0475db03",
        3: "fa21fc30a9513df1449119e7211bdce5aa65cd8012dfe269ce8a166ff983dc12",
    ]

    @Test("the fold of a fixed history has the fingerprint recorded for this fold version")
    func fingerprint() async throws {
        let store = InMemoryEventStore()
        let clock = TestClock()
        let handler = CommandHandler(store: store, clock: clock.read)
        var n = 0
        func run(_ command: ScheduleCommand) async throws {
            n += 1
            _ = try await handler.handle(
                command, channel: "demo", context: CommandContext(commandID: "fp-\(n)", actor: "op", source: "test"))
        }
        try await run(.createChannel(config()))
        clock.set(60)
        for index in 0..<4 {
            try await run(
                .placeBreak(
                    PlaceBreak(
                        id: BreakID("b\(index)")!, start: .inMilliseconds(6_000 + Int64(index) * 60_000),
                        plannedDurationMilliseconds: 30_000,
                        asset: .uri("https://a.example/ad\(index).m3u8"))))
        }
        // Issue 35: ad settings changed, and a break filled by an ad server with skip control (fold 2).
        try await run(
            .setAdSettings(
                AdSettingsChange(
                    adServer: .some(try AdServerTemplate("https://ads.example/v?b={break_id}", field: "ad_server")),
                    preloadMilliseconds: 10_000)))
        try await run(
            .placeBreak(
                PlaceBreak(
                    id: "b9", start: .inMilliseconds(400_000), plannedDurationMilliseconds: 20_000, asset: .pod([]),
                    options: InterstitialOptions(skipControl: SkipControl(offsetMilliseconds: 5000, labelID: "Skip")))))
        // A preroll set, then replaced (fold 3: the replaced one is kept, with when).
        for uri in ["https://ads.example/pre-a.m3u8", "https://ads.example/pre-b.m3u8"] {
            try await run(
                .setAdSettings(AdSettingsChange(preroll: .some(.asset(uri: uri, durationMilliseconds: 10_000)))))
        }
        clock.set(80)
        try await run(.setPlayoutLimit(id: "b0", limitMilliseconds: 12_000))
        try await run(.cancelBreak(id: "b2"))
        clock.set(140)
        try await run(.cancelCurrentEvent)
        try await run(.updateRenditions(config().renditions))
        let events = try await Projector.Replay.events("demo", from: store)
        // The hot form as checkpoints hold it, just after the last event (aired breaks still held) and much later
        // (retired), and the whole history.
        let last = events.last!.attribution.at
        var encoded: [String] = []
        for (instant, retention) in [
            (last, ChannelState.Retention.window), (last.adding(milliseconds: 3_600_000), .window), (last, .all),
        ] {
            let state = fold("demo", events, asOf: instant, retention: retention)
            let snapshot = try #require(ChannelSnapshot(state, chainHash: nil))
            #expect(snapshot.fold == ChannelSnapshot.foldVersion)
            encoded.append(snapshot.encoded())
        }
        #expect(
            encoded[2].contains(#""cancelled""#) && encoded[2].contains(#""playoutLimitMilliseconds""#)
                && encoded[2].contains(#""replacedPrerolls""#), "\(encoded[2])"
        )
        let digest = sha256Hex(encoded.joined(separator: "\n"))
        #expect(
            Self.fingerprints[ChannelSnapshot.foldVersion] == digest,
            "the fold of this history changed (\(digest)): bump ChannelSnapshot.foldVersion and record the new fingerprint under it"
        )
    }
}
