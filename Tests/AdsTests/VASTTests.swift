import Foundation
import Testing

@testable import Ads

/// Reads a fixture from `Fixtures/`.
func fixture(_ name: String) throws -> Data {
    let url = try #require(Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Fixtures"))
    return try Data(contentsOf: url)
}

@Suite("VAST and VMAP: what an ad server's answer is read as")
struct VASTTests {
    @Test("a VAST 4.1 pod plays in sequence order, standalone ads left out; HLS media picked past an mp4")
    func pod() throws {
        guard case .vast(let document) = try AdResponse.parse(try fixture("pod-4.1.xml")) else {
            Issue.record("not read as VAST")
            return
        }
        #expect(document.version == "4.1")
        #expect(document.ads.map(\.id) == ["standalone-1", "second", "first"])
        let played = document.playOrder()
        #expect(played.map(\.id) == ["first", "second"])
        let first = try #require(played[0].linear)
        #expect(first.durationMilliseconds == 6000)
        #expect(first.skipOffset == .milliseconds(5500))
        #expect(first.hlsMedia?.uri == "https://cdn.example.com/first/master.m3u8")
        #expect(first.clickThrough == "https://advertiser.example.com/landing")
        // CDATA with spaces around it is trimmed.
        #expect(
            played[0].impressions == [
                "https://track.example.com/imp?ad=first&n=1", "https://track.example.com/imp?ad=first&n=2",
            ])
        #expect(
            first.tracking.map(\.event) == [
                "start", "firstQuartile", "midpoint", "thirdQuartile", "complete", "progress", "skip",
            ])
        #expect(first.tracking[5].offset == .milliseconds(3000))
        let second = try #require(played[1].linear)
        // Entities unescaped, white space around text trimmed, the other spelling of the HLS type read.
        #expect(second.hlsMedia?.uri == "https://cdn.example.com/second/master.m3u8?a=1&b=2")
        #expect(second.mediaFiles.map(\.isHLS) == [false, true])
        #expect(second.skipOffset == .percent(25))
        #expect(second.universalAdID == "CNPA0002000H")
        #expect(second.tracking.first?.url == "https://track.example.com/start?ad=second&x=1")
        // Under a wrapper that does not allow multiple ads: no pod, the first standalone ad.
        #expect(document.playOrder(single: true).map(\.id) == ["standalone-1"])
    }

    @Test("VAST 3.0 without a namespace, its media type in capitals")
    func vast3() throws {
        guard case .vast(let document) = try AdResponse.parse(try fixture("inline-3.0.xml")) else {
            Issue.record("not read as VAST")
            return
        }
        #expect(document.version == "3.0")
        let ad = try #require(document.playOrder().first)
        #expect(ad.linear?.durationMilliseconds == 30_000)
        #expect(ad.linear?.hlsMedia?.uri == "https://cdn.example.com/v3/index.m3u8")
    }

    @Test("VMAP: linear breaks in document order, inline VAST or an ad tag; a non-linear break left out")
    func vmap() throws {
        guard case .vmap(let breaks) = try AdResponse.parse(try fixture("vmap.xml")) else {
            Issue.record("not read as VMAP")
            return
        }
        #expect(breaks.map(\.breakID) == ["preroll", "midroll"])
        guard case .vast(let inline)? = breaks[0].source else {
            Issue.record("the first break's ads are inline")
            return
        }
        #expect(inline.ads.map(\.id) == ["vmap-inline"])
        #expect(breaks[1].source == .tagURI("https://ads.example.com/midroll?n=2"))
    }

    @Test(
        "VAST times: HH:MM:SS with optional milliseconds; anything else is no duration",
        arguments: [
            ("00:00:15", Int64(15000)), ("00:00:15.000", 15000), ("00:01:02.5", 62500), ("01:00:00", 3_600_000),
            ("  00:00:06.250\n", 6250), ("00:00:06.2509", 6251),
        ])
    func times(text: String, milliseconds: Int64) {
        #expect(VASTTime.milliseconds(text) == milliseconds)
    }

    @Test(
        "malformed VAST times",
        arguments: ["15", "00:15", "00:00:60", "00:60:00", "-1:00:00", "00:00:1", "00:00:10.", "aa:bb:cc", ""])
    func badTimes(text: String) {
        #expect(VASTTime.milliseconds(text) == nil)
    }

    @Test("a document type is refused unread: entity expansion and external entities never reach the parser")
    func documentType() {
        let laughs = """
            <?xml version="1.0"?>
            <!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>
            <VAST version="4.1"><Ad><InLine><Impression>&lol1;</Impression></InLine></Ad></VAST>
            """
        #expect(throws: AdParseFailure.xml(.documentType)) { try AdResponse.parse(Data(laughs.utf8)) }
        let external = """
            <?xml version="1.0"?><!doctype VAST [<!ENTITY x SYSTEM "file:///etc/passwd">]><VAST>&x;</VAST>
            """
        #expect(throws: AdParseFailure.xml(.documentType)) { try AdResponse.parse(Data(external.utf8)) }
    }

    @Test("a document that is not UTF-8 is refused unread: a UTF-16 DOCTYPE cannot hide from the check")
    func notUTF8() {
        let laughs = "<?xml version=\"1.0\" encoding=\"UTF-16\"?><!DOCTYPE x [<!ENTITY a \"aaaa\">]><VAST>&a;</VAST>"
        var utf16 = Data([0xFF, 0xFE])
        for unit in laughs.utf16 { utf16.append(contentsOf: [UInt8(unit & 0xFF), UInt8(unit >> 8)]) }
        #expect(throws: AdParseFailure.xml(.notUTF8)) { try AdResponse.parse(utf16) }
        #expect(throws: AdParseFailure.xml(.notUTF8)) {
            try AdResponse.parse(Data("<?xml version='1.0' encoding='ISO-8859-1'?><VAST/>".utf8))
        }
    }

    @Test("a DOCTYPE inside the body (an HTML companion's CDATA) is text, not a declaration")
    func companionDoctype() throws {
        let text = """
            <VAST version="4.1"><Ad id="c"><InLine><Creatives><Creative><CompanionAds><Companion>
            <HTMLResource><![CDATA[<!DOCTYPE html><html><body>hi</body></html>]]></HTMLResource>
            </Companion></CompanionAds></Creative></Creatives></InLine></Ad></VAST>
            """
        guard case .vast(let document) = try AdResponse.parse(Data(text.utf8)) else {
            Issue.record("not read as VAST")
            return
        }
        #expect(document.ads.map(\.id) == ["c"])
    }

    @Test("what is not VAST: cut off, HTML, another root, nothing")
    func notVAST() {
        #expect(throws: AdParseFailure.self) { try AdResponse.parse(Data("<VAST version=\"4.1\"><Ad><InLine>".utf8)) }
        #expect(throws: AdParseFailure.self) {
            try AdResponse.parse(Data("<html><body>502 Bad Gateway</body></html>".utf8))
        }
        #expect(throws: AdParseFailure.notVAST(root: "rss")) { try AdResponse.parse(Data("<rss/>".utf8)) }
        #expect(throws: AdParseFailure.self) { try AdResponse.parse(Data()) }
    }

    @Test("a byte-order mark and an XML declaration are read")
    func byteOrderMark() throws {
        let text = "\u{FEFF}<?xml version=\"1.0\" encoding=\"UTF-8\"?><VAST version=\"4.1\"/>"
        #expect(try AdResponse.parse(Data(text.utf8)) == .vast(VASTDocument(version: "4.1", ads: [])))
    }

    @Test("elements and depth are bounded while reading")
    func bounds() {
        let many = "<VAST>" + String(repeating: "<Ad/>", count: 30_000) + "</VAST>"
        #expect(throws: AdParseFailure.xml(.tooManyElements(limit: 20_000))) { try AdResponse.parse(Data(many.utf8)) }
        let deep = String(repeating: "<a>", count: 100) + String(repeating: "</a>", count: 100)
        #expect(throws: AdParseFailure.xml(.tooDeep(limit: 48))) { try AdResponse.parse(Data(deep.utf8)) }
    }

    @Test("an ad with neither InLine nor Wrapper is not an ad; a wrapper's flags as VAST spells them")
    func wrapperFlags() throws {
        let text = """
            <VAST version="4.1">
              <Ad id="nothing"/>
              <Ad id="w" sequence="1"><Wrapper followAdditionalWrappers="false" allowMultipleAds="true">
                <VASTAdTagURI><![CDATA[ https://ads.example.com/next ]]></VASTAdTagURI>
                <Impression>https://track.example.com/w</Impression>
              </Wrapper></Ad>
            </VAST>
            """
        guard case .vast(let document) = try AdResponse.parse(Data(text.utf8)) else {
            Issue.record("not read as VAST")
            return
        }
        #expect(document.ads.count == 1)
        #expect(
            document.ads[0].kind
                == .wrapper(
                    tagURI: "https://ads.example.com/next", followAdditionalWrappers: false, allowMultipleAds: true))
        #expect(document.ads[0].impressions == ["https://track.example.com/w"])
    }
}

@Suite("Where an ad server may send Cueline")
struct HostPolicyTests {
    @Test(
        "private, loopback, link-local, shared and unspecified literals, and localhost",
        arguments: [
            "127.0.0.1", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1",
            "0.0.0.0", "localhost", "ads.localhost", "[::1]", "::", "fd00::1", "fe80::1", "::ffff:127.0.0.1",
            "LOCALHOST",
        ])
    func privateHosts(host: String) {
        #expect(HostPolicy.isPrivate(host: host))
    }

    @Test(
        "public addresses and names",
        arguments: ["8.8.8.8", "172.32.0.1", "100.128.0.1", "ads.example.com", "2001:db8::1", "192.169.0.1", "1.2.3"])
    func publicHosts(host: String) {
        #expect(!HostPolicy.isPrivate(host: host))
    }
}
