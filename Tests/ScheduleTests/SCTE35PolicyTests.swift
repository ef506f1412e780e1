import Foundation
import HLS
@testable import SCTE35
import Schedule
import TestSupport
import Testing

/// Issue 33: a channel's SCTE-35 ingest policy, kept in the log, and the dry-run of another policy over what the
/// channel received.
@Suite("SCTE-35 ingest policy")
struct SCTE35PolicyTests {
    /// A time_signal with one segmentation descriptor of any type.
    static func signal(
        _ type: UInt8, event: UInt32, seconds: UInt64? = nil, restricted: Bool = false, cancel: Bool = false
    ) -> [UInt8] {
        SpliceInfoSection.encodeTimeSignal(
            ptsTime: nil,
            descriptors: [
                SegmentationDescriptor(
                    eventID: event, cancel: cancel, deliveryRestrictions: restricted ? 0x03 : nil,
                    duration: seconds.map { $0 * 90_000 }, upidType: 0x0C, upid: Array("CUELx".utf8), typeID: type)
            ])
    }

    static let asset = BreakAsset.uri("https://ads.example.com/a.m3u8")

    static func ingest(_ bytes: [UInt8], asset: BreakAsset? = asset) -> ScheduleCommand {
        .ingestSCTE35(SCTE35Ingest(section: bytes, asset: asset))
    }

    static func policy(_ json: String) throws(ScheduleError) -> SCTE35Policy {
        try SCTE35Policy.parse(json: Data(json.utf8))
    }

    @Test("the file: parsed and written back the same; a problem names the key and the reason")
    func file() throws {
        let text = #"""
            {"place": ["0x22", "0x30", "0x34", "0x36"], "end": ["0x23", "0x31", "0x35", "0x37"], "cancel": [],
             "ignore": ["0x10", "0x11", "0x20", "0x21", "0x38", "0x39", "0x3A", "0x3B"],
             "splice_insert": "follow", "restricted": "place", "default_duration": 30}
            """#
        let policy = try Self.policy(text)
        #expect(policy.place == [0x22, 0x30, 0x34, 0x36])
        #expect(policy.defaultDurationMilliseconds == 30_000)
        let written = try JSONEncoder().encode(policy)
        #expect(try SCTE35Policy.parse(json: written) == policy)
        #expect(try Self.policy(#"{"place": ["0x34"]}"#).end.isEmpty, "a list left out is empty")
        for (bad, field, words) in [
            (#"{"place": ["0x34"], "overlay": []}"#, "policy.overlay", "is not a policy key"),
            ("{\"\\u001B[2Jkey\": 1}", "policy.\\u{1B}[2Jkey", "is not a policy key"),
            (#"{"place": ["0x3G"]}"#, "policy.place", #"place[0]: "0x3G" is not a segmentation type"#),
            (#"{"place": ["0x34"], "ignore": ["0x34"]}"#, "policy.ignore", "0x34 is also in place"),
            (#"{"place": [], "default_duration": 0}"#, "policy.default_duration", "must be more than 0"),
            (
                #"{"place": [], "splice_insert": "maybe"}"#, "policy.splice_insert",
                #"must be follow or ignore (got "maybe")"#
            ),
            (#"["0x34"]"#, "policy", "must be a JSON object"),
            ("{", "policy", "is not JSON"),
        ] {
            do {
                _ = try Self.policy(bad)
                Issue.record("\(bad) was accepted")
            } catch {
                guard case .invalidField(let name, let reason) = error else {
                    Issue.record("\(bad): \(error)")
                    continue
                }
                #expect(name == field && reason.contains(words), "\(bad): \(name) \(reason)")
            }
        }
    }

    @Test("what a policy reads in a section: overlays, programs and restricted starts ignored by rule, with why")
    func reading() throws {
        let standard = SCTE35Policy.standard
        func read(_ bytes: [UInt8], _ policy: SCTE35Policy = .standard) throws -> (cues: [IngestCue], ignored: [String])
        {
            policy.read(try SpliceInfoSection(bytes: bytes))
        }
        #expect(try read(Self.signal(0x34, event: 7, seconds: 30)).cues.count == 1)
        #expect(
            try read(Self.signal(0x38, event: 7, seconds: 30)).ignored == [
                "0x38 Provider Overlay Placement Opportunity Start (the policy ignores it)"
            ])
        #expect(try read(Self.signal(0x50, event: 7)).ignored == ["0x50 Network Start (in no list of the policy)"])
        #expect(try read(Self.signal(0x10, event: 7, cancel: true)).cues == [.cancel(eventID: 7)])
        var strict = standard
        strict.restricted = .ignore
        #expect(try read(Self.signal(0x34, event: 7, seconds: 30, restricted: true), strict).cues.isEmpty)
        #expect(try read(Self.signal(0x34, event: 7, seconds: 30, restricted: true)).cues.count == 1)
        var noInsert = standard
        noInsert.spliceInsert = .ignore
        let insert = try SpliceInfoSection.decode(
            "/DAvAAAAAAAA///wFAVIAACPf+/+c2nALv4AUsz1AAAAAAAKAAhDVUVJAAABNWLbowo=")
        #expect(try read(insert).cues.count == 1)
        #expect(try read(insert, noInsert).ignored == ["splice_insert (the policy ignores splice_insert)"])
    }

    @Test("the policy is in the log: set, folded, and followed by the next section; every section kept as received")
    func inTheLog() throws {
        var channel = try Channel()
        let events = try channel.apply(Self.ingest(Self.signal(0x34, event: 9, seconds: 20)), at: at(60))
        guard case .scte35Received(let received) = events.first, case .breakPlaced(let spec) = events.last else {
            Issue.record("\(events)")
            return
        }
        #expect(events.count == 2 && received.outcome == .placed && received.consequences == 1)
        #expect(spec.id == "scte35-9" && spec.plannedDurationMilliseconds == 20_000)
        #expect(spec.options.scte35Out == received.ingest.section, "the break keeps the section as received")
        // A policy that ignores placement opportunities: the same kind of section is now kept and ignored.
        try channel.apply(.setSCTE35Policy(try Self.policy(#"{"place": ["0x22"], "end": ["0x23"]}"#)), at: at(61))
        #expect(channel.state.scte35Policy?.place == [0x22])
        let ignored = try channel.apply(Self.ingest(Self.signal(0x34, event: 10, seconds: 20)), at: at(62))
        guard case .scte35Received(let record) = ignored.first else {
            Issue.record("\(ignored)")
            return
        }
        #expect(ignored.count == 1 && record.outcome == .ignored && record.consequences == 0)
        #expect(record.detail.contains("0x34 Provider Placement Opportunity Start (in no list of the policy)"))
        // A start without a duration takes the policy's default.
        try channel.apply(
            .setSCTE35Policy(try Self.policy(#"{"place": ["0x22"], "end": ["0x23"], "default_duration": 12}"#)),
            at: at(63))
        let placed = try channel.apply(Self.ingest(Self.signal(0x22, event: 11)), at: at(90))
        guard case .breakPlaced(let defaulted)? = placed.last else {
            Issue.record("\(placed)")
            return
        }
        #expect(defaulted.plannedDurationMilliseconds == 12_000)
    }

    @Test(
        "a channel marked for an SSAI alone places a start sent without an asset; an interstitial channel asks for one")
    func noAssetForSSAI() throws {
        var ssai = try Channel(SignallingTests.signalled(.scte35))
        let events = try ssai.apply(Self.ingest(Self.signal(0x34, event: 5, seconds: 20), asset: nil), at: at(60))
        guard case .breakPlaced(let spec)? = events.last else {
            Issue.record("\(events)")
            return
        }
        #expect(
            spec.asset
                == .list(
                    "http://127.0.0.1:8080/channels/demo/breaks/scte35-5/assets.json?_HLS_interstitial_id=scte35-5"))
        #expect(PlaylistBuilder.assetList(state: ssai.state, breakID: "scte35-5") == #"{"ASSETS":[]}"#)
        var players = try Channel(SignallingTests.signalled(.both))
        #expect(throws: ScheduleError.invalidField("asset_uri", "give exactly one of asset_uri or asset_list")) {
            try players.apply(Self.ingest(Self.signal(0x34, event: 5, seconds: 20), asset: nil), at: at(60))
        }
    }

    /// A day of automation on a channel: starts of several types, their ends, overlays, repeats, ends of breaks long
    /// over, operators' own commands, and the policy changed once.
    static func history(seed: UInt64) throws -> Channel {
        var channel = try Channel()
        var generator = SplitMix64(seed: seed)
        var second = 60.0
        var event: UInt32 = 100
        for step in 0..<200 {
            second += Double(generator.next() % 9) + 1
            let types: [UInt8] = [0x22, 0x30, 0x34, 0x36, 0x38, 0x10, 0x23, 0x35, 0x37, 0x31]
            let type = types[Int(generator.next() % UInt64(types.count))]
            if generator.next() % 5 == 0 { event += 1 }
            let bytes = Self.signal(
                type, event: event, seconds: generator.next() % 3 == 0 ? nil : 6 + generator.next() % 20)
            let command: ScheduleCommand
            switch step {
            case 80:
                command = .setSCTE35Policy(
                    try Self.policy(#"{"place": ["0x22", "0x34"], "end": ["0x23", "0x35"], "default_duration": 10}"#))
            case _ where generator.next() % 13 == 0: command = .cancelCurrentEvent
            default: command = Self.ingest(bytes, asset: generator.next() % 7 == 0 ? nil : Self.asset)
            }
            _ = try? channel.apply(command, at: at(second))
        }
        return channel
    }

    @Test("the dry-run of the policy each section met reproduces the log exactly", arguments: [1, 2, 3] as [UInt64])
    func dryRunAsLogged(seed: UInt64) throws {
        let channel = try Self.history(seed: seed)
        let lines = SCTE35DryRun.run(channel.recorded, channel: "demo", policy: nil)
        #expect(lines.count > 100)
        #expect(Set(lines.map(\.logged)).isSuperset(of: [.placed, .ignored]), "\(Set(lines.map(\.logged)))")
        #expect(lines.allSatisfy { !$0.differs }, "\(lines.filter(\.differs).prefix(3))")
    }

    @Test("the dry-run of the channel's current policy reproduces what it decided since it was set")
    func dryRunCurrent() throws {
        var channel = try Channel()
        let policy = try Self.policy(#"{"place": ["0x22", "0x34"], "end": ["0x23", "0x35"], "default_duration": 30}"#)
        try channel.apply(.setSCTE35Policy(policy), at: at(60))
        var second = 61.0
        // A start, an overlay, its end while on air, a second start for the same event id (-2) and its end before it
        // starts: placed, ignored, ended, placed, cancelled.
        for event: UInt32 in 1...30 {
            for (type, after) in [(0x34, 0), (0x38, 5), (0x35, 10), (0x22, 3), (0x23, 3)] as [(UInt8, Double)] {
                second += after
                _ = try? channel.apply(Self.ingest(Self.signal(type, event: event)), at: at(second))
            }
            second += 6
        }
        let lines = SCTE35DryRun.run(channel.recorded, channel: "demo", policy: policy)
        #expect(lines.count == 150 && lines.allSatisfy { !$0.differs })
        #expect(lines.filter { $0.logged == .placed }.count >= 30)
        #expect(Set(lines.map(\.logged)) == Set(SCTE35Received.Outcome.allCases), "every outcome happened")
        // A proposal that ignores placement opportunities: those starts, and their ends, now differ.
        let proposal = try Self.policy(#"{"place": ["0x22"], "end": ["0x23"], "default_duration": 30}"#)
        let proposed = SCTE35DryRun.run(channel.recorded, channel: "demo", policy: proposal)
        let starts = proposed.filter { $0.logged == .placed && $0.loggedBreak?.rawValue.hasPrefix("scte35-") == true }
        #expect(proposed.contains { $0.differs && $0.proposed == .ignored && $0.logged == .placed })
        #expect(starts.count >= 30)
        let between = SCTE35DryRun.run(channel.recorded, channel: "demo", policy: proposal, between: at(100)...at(130))
        #expect(between.allSatisfy { $0.at >= at(100) && $0.at <= at(130) } && !between.isEmpty)
    }
}
