import HLS
import Schedule
import Testing

/// Every value a request can carry is checked against one rule and stated bounds (issue 11, "validated once").
@Suite("Bounds and value types")
struct BoundsTests {
    private static let controlCharacters = (Array(0x00...0x1F) + Array(0x7F...0x9F)).map {
        String(Character(Unicode.Scalar($0)!))
    }

    private func refusal(_ command: ScheduleCommand, on channel: Channel, at seconds: Double = 61) -> ScheduleError? {
        do {
            _ = try decide(command, state: channel.state, now: at(seconds))
            return nil
        } catch {
            return error
        }
    }

    private func field(_ error: ScheduleError?) -> String? {
        if case .invalidField(let field, _)? = error { return field }
        return nil
    }

    private func placeAt(
        _ start: Timestamp, id: BreakID = "brk-x", asset: BreakAsset = .uri("https://ads.example.com/a.m3u8"),
        attributes: [ClientAttribute] = [],
        alignment: PlaceBreak.StartAlignment = .segment
    ) -> ScheduleCommand {
        .placeBreak(
            PlaceBreak(
                id: id, start: .at(start), plannedDurationMilliseconds: 30_000, asset: asset,
                options: InterstitialOptions(clientAttributes: attributes), alignment: alignment))
    }

    // MARK: - Identifiers

    @Test(
        "one identifier rule",
        arguments: [
            ("c1", true), ("a", true), ("0", true), ("brk-1_x", true), (String(repeating: "a", count: 64), true),
            ("", false), ("_x", false), ("-x", false), ("X", false), ("a.b", false), ("a b", false), ("é", false),
            (String(repeating: "a", count: 65), false), ("a\u{0}", false), ("a\n", false), ("a/b", false),
        ])
    func identifierRule(text: String, valid: Bool) {
        #expect(Identifier.isValid(text) == valid)
        #expect((Identifier(text) != nil) == valid)
        #expect(Identifier.isValid(text) == valid)
    }

    @Test("token names follow the identifier rule and may hold dots")
    func tokenNames() {
        #expect(Identifier.isValidTokenName("ops.alice"))
        #expect(Identifier.isValidTokenName("c1"))
        #expect(!Identifier.isValidTokenName(".alice"))
        #expect(!Identifier.isValidTokenName("_alice"))
        #expect(!Identifier.isValid("ops.alice"), "channel and break ids have no dots")
    }

    @Test("break, rendition and channel ids refuse a leading '_' or '-'")
    func leadingPunctuation() throws {
        let channel = try Channel()
        // Ids of the earlier rule are read back from the log, never placed again.
        #expect(["_brk", "-brk"].allSatisfy { BreakID($0) == nil })
        #expect(field(refusal(placeAt(at(90), id: BreakID(stored: "_brk")!), on: channel)) == "id")
        #expect(field(refusal(placeAt(at(90), id: BreakID(stored: "-brk")!), on: channel)) == "id")
        var config = demoConfig()
        config.id = ChannelID(stored: "-demo")!
        #expect(throws: ScheduleError.self) { try config.validate() }
        config = demoConfig(renditions: [Identifier(stored: "_720p")!])
        #expect(throws: ScheduleError.self) { try config.validate() }
    }

    @Test("ids with control characters are refused, not looked up", arguments: ["brk\u{0}1", "brk\u{1B}[2J", "brk\n"])
    func hostileIDs(id: String) throws {
        let channel = try Channel()
        // No command can carry one: the id is checked where it enters, naming the field.
        #expect(BreakID(id) == nil && BreakID(stored: id) == nil)
        #expect(throws: ScheduleError.self) { try BreakID(id, field: "id") }
        do { _ = try BreakID(id, field: "id") } catch {
            #expect(error.field == "id" && !error.description.contains("\u{1B}"))
        }
        #expect(refusal(.cancelBreak(id: "brk-404"), on: channel) == .unknownBreak(channel: "demo", id: "brk-404"))
    }

    // MARK: - Instants (issue 11 #3)

    @Test("a break start is within 2000-01-01 … 2200-01-01 and at most 7 days ahead")
    func startBounds() throws {
        let channel = try Channel()
        #expect(Timestamp(iso8601: "9999-12-31T23:59:59.999-23:59") == nil, "year 10000 cannot even be parsed")
        for text in [
            "9999-12-31T23:59:59.999Z", "2200-01-01T00:00:00.001Z", "2199-12-31T23:59:59.999Z",
            "2026-03-08T12:01:01.001Z",
        ] {
            let start = try #require(Timestamp(iso8601: text))
            #expect(field(refusal(placeAt(start), on: channel)) == "start", "\(text)")
        }
        #expect(field(refusal(placeAt(Timestamp(milliseconds: .max)), on: channel)) == "start")
        #expect(field(refusal(placeAt(Timestamp(milliseconds: .min)), on: channel)) == "start")
        // 7 days after the decision instant (61 s after the epoch) is the last start allowed.
        #expect(refusal(placeAt(at(61 + 7 * 86_400), alignment: .exact), on: channel) == nil)
        #expect(field(refusal(placeAt(at(61 + 7 * 86_400 + 0.001), alignment: .exact), on: channel)) == "start")
        // The horizon applies to the start after it moved to a segment boundary: 61 s + 7 days moves to 66 s + 7 days.
        #expect(refusal(placeAt(at(60 + 7 * 86_400)), on: channel) == nil)
        let snapped = refusal(placeAt(at(61 + 7 * 86_400)), on: channel)
        #expect(field(snapped) == "start")
        #expect(snapped?.description.contains("moved to the next segment boundary") == true)
    }

    @Test(
        "Limits.instant refuses what cannot be parsed or is out of range, naming the field",
        arguments: [
            "9999-12-31T23:59:59.999-23:59", "1999-12-31T23:59:59.999Z", "2200-01-01T00:00:00.001Z",
            "0000-01-01T00:00:00Z",
            "not a date", "2026-03-01T12:00:00", "2026-03-01T12:00:00Z\u{0}",
        ])
    func limitsInstant(text: String) {
        #expect(throws: ScheduleError.self) { try Limits.instant(text, field: "from") }
        do {
            _ = try Limits.instant(text, field: "from")
        } catch {
            #expect(field(error) == "from")
            #expect(!error.description.containsControlCharacter)
        }
    }

    @Test("the ends of the range are accepted")
    func limitsInstantEnds() throws {
        #expect(try Limits.instant("2000-01-01T00:00:00Z", field: "at") == Limits.earliestInstant)
        #expect(try Limits.instant("2200-01-01T00:00:00Z", field: "at") == Limits.latestInstant)
        #expect(try Limits.instant("2199-12-31T23:00:00-01:00", field: "at") == Limits.latestInstant)
    }

    @Test(
        "a channel epoch is within the range",
        arguments: ["1970-01-01T00:00:00Z", "1999-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999Z"])
    func epochBounds(text: String) throws {
        var config = demoConfig()
        config.epoch = try #require(Timestamp(iso8601: text))
        var refused: ScheduleError?
        do { try config.validate() } catch { refused = error }
        #expect(field(refused) == "epoch")
    }

    // MARK: - Durations

    @Test(
        "delays and durations at the extremes are refused without trapping",
        arguments: [Int64.max, Int64.min, -1, 86_400_001])
    func delays(delay: Int64) throws {
        let channel = try Channel()
        let command = ScheduleCommand.placeBreak(
            PlaceBreak(
                id: "brk-x", start: .inMilliseconds(delay), plannedDurationMilliseconds: 30_000,
                asset: .uri("https://ads.example.com/a.m3u8")))
        #expect(field(refusal(command, on: channel)) == "in")
        let long = ScheduleCommand.placeBreak(
            PlaceBreak(
                id: "brk-x", start: .at(at(90)), plannedDurationMilliseconds: delay,
                asset: .uri("https://ads.example.com/a.m3u8")))
        #expect(field(refusal(long, on: channel)) == "duration")
        let pod = ScheduleCommand.placeBreak(
            PlaceBreak(
                id: "brk-x", start: .at(at(90)), plannedDurationMilliseconds: 30_000,
                asset: .pod([PodAsset(uri: "https://ads.example.com/a.m3u8", durationMilliseconds: delay)])))
        #expect(field(refusal(pod, on: channel)) == "pod")
        // A limit that large is only compared, never added: refused as not below the planned duration.
        var onAir = channel
        try onAir.apply(place("brk-1", start: 90, duration: 30), at: at(61))
        #expect(refusal(.setPlayoutLimit(id: "brk-1", limitMilliseconds: delay), on: onAir, at: 100) != nil)
    }

    @Test("seconds given as JSON numbers", arguments: [1e300, -1e300, Double.nan, Double.infinity, -0.001, 86_400.001])
    func seconds(value: Double) {
        #expect(throws: ScheduleError.self) { try Limits.milliseconds(seconds: value, field: "duration") }
    }

    @Test("seconds at the ends of the range")
    func secondsInRange() throws {
        #expect(try Limits.milliseconds(seconds: -0.0, field: "in") == 0)
        #expect(try Limits.milliseconds(seconds: 86_400, field: "in") == 86_400_000)
        #expect(throws: ScheduleError.self) {
            try Limits.milliseconds(seconds: 3600.001, field: "duration", maximum: Limits.maximumBreakMilliseconds)
        }
    }

    @Test("a window of Int.max segments is refused, not multiplied", arguments: [Int.max, Int.min, 0, 10_001])
    func window(segments: Int) {
        let config = demoConfig(window: segments)
        #expect(throws: ScheduleError.self) { try config.validate() }
    }

    // MARK: - Text and URIs (issue 11 #4, #11)

    @Test("plain text refuses every control character", arguments: controlCharacters)
    func plainText(character: String) {
        #expect(PlainText.problem(in: "before\(character)after") != nil)
        #expect(throws: ScheduleError.self) { try PlainText("x\(character)", field: "reason") }
    }

    @Test("plain text is bounded in bytes and keeps printable Unicode")
    func plainTextLength() throws {
        #expect(PlainText.problem(in: String(repeating: "a", count: Limits.textBytes)) == nil)
        #expect(PlainText.problem(in: String(repeating: "a", count: Limits.textBytes + 1)) != nil)
        #expect(
            PlainText.problem(in: String(repeating: "é", count: Limits.textBytes / 2 + 1)) != nil,
            "bytes, not characters")
        #expect(try PlainText("café — “ok” 🎬", field: "reason").value == "café — “ok” 🎬")
    }

    @Test(
        "asset URIs refuse control characters, whitespace and quotes",
        arguments: controlCharacters + [" ", "\"", "\u{A0}", "\u{2028}"])
    func assetURICharacters(character: String) throws {
        let channel = try Channel()
        let uri = "https://ads.example.com/a\(character).m3u8"
        #expect(field(refusal(placeAt(at(90), asset: .uri(uri)), on: channel)) == "asset_uri")
        #expect(field(refusal(placeAt(at(90), asset: .list(uri)), on: channel)) == "asset_list")
        #expect(
            field(refusal(placeAt(at(90), asset: .pod([PodAsset(uri: uri, durationMilliseconds: 1000)])), on: channel))
                == "pod")
    }

    @Test(
        "URIs are absolute http(s) with a host, at most 2048 bytes",
        arguments: [
            "ftp://ads.example.com/a.m3u8", "https://", "https:///a.m3u8", "//ads.example.com/a", "/a.m3u8",
            "HTTPS://x.example/a",
            "https://ads.example.com/" + String(repeating: "a", count: 2048),
        ])
    func uriShape(uri: String) {
        #expect(AbsoluteURI.problem(in: uri) != nil)
    }

    @Test("URIs that are fine")
    func goodURIs() throws {
        for uri in [
            "https://ads.example.com/a.m3u8?x=1&y=%20", "http://127.0.0.1:8080",
            "https://a.b/" + String(repeating: "a", count: 2000),
        ] {
            #expect(AbsoluteURI.problem(in: uri) == nil, "\(uri)")
        }
    }

    @Test("client attribute values refuse control characters", arguments: controlCharacters)
    func attributeValues(character: String) throws {
        let channel = try Channel()
        let command = placeAt(
            at(90), attributes: [ClientAttribute(name: "X-COM-EXAMPLE", value: .string("a\(character)b"))])
        #expect(field(refusal(command, on: channel)) == "attr")
    }

    @Test("a codec with a newline, a URI template starting with a space or holding a tag line are refused")
    func renditionFields() {
        var config = demoConfig()
        config.renditions[0].codecs = ["avc1.64001f\n#EXT-X-ENDLIST"]
        #expect(throws: ScheduleError.self) { try config.validate() }
        for template in [
            " #EXT-X-ENDLIST{n}.ts", "seg{n}.ts\n#EXT-X-ENDLIST", "#EXT-X-ENDLIST{n}", "seg{n}\u{1B}.ts", "seg{n}\t.ts",
            "seg{n}\u{0}.ts",
        ] {
            config = demoConfig()
            config.renditions[0].uriTemplate = template
            #expect(throws: ScheduleError.self, "\(template.debugDescription)") { try config.validate() }
        }
        config = demoConfig()
        config.renditions[0].mapURI = "init\u{7F}.mp4"
        #expect(throws: ScheduleError.self) { try config.validate() }
        config = demoConfig()
        config.publicBaseURL = "http://127.0.0.1:8080/\u{1B}"
        #expect(throws: ScheduleError.self) { try config.validate() }
        #expect(throws: Never.self) { try demoConfig().validate() }
    }

    @Test(
        "a segment number modulo K needs K a positive whole number",
        arguments: ["a{n%0}.ts", "a{n%-1}.ts", "a{n%x}.ts", "a{n%}.ts", "a{nx}.ts", "a{n%99999999999999999999}.ts"])
    func moduloTemplates(template: String) {
        var config = demoConfig()
        config.renditions[0].uriTemplate = template
        #expect(throws: ScheduleError.self, "\(template)") { try config.validate() }
        config.renditions[0].uriTemplate = "a{n%3}.ts"
        #expect(throws: Never.self) { try config.validate() }
        #expect(config.renditions[0].segmentURI(7) == "a1.ts")
    }

    // MARK: - Output

    @Test("as-run CSV for a terminal escapes control characters; the plain CSV keeps the bytes")
    func asRunCSV() throws {
        var channel = try Channel()
        try channel.apply(place("brk-1", start: 90, duration: 30), at: at(61), actor: "mallory\u{1B}[2J")
        let entries = AsRun.entries(state: channel.state, from: nil, to: nil, at: at(200))
        #expect(AsRun.csv(entries).contains("mallory\u{1B}[2J"))
        let terminal = AsRun.csv(entries, escapingControlCharacters: true)
        #expect(!terminal.replacingOccurrences(of: "\r\n", with: "").containsControlCharacter)
        #expect(terminal.contains("mallory\\u{1B}[2J"))
    }
}
