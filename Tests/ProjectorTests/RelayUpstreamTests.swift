import Foundation
import HLS
@testable import Projector
import Schedule
import Testing

@Suite("Relay upstream playlists taken or refused")
struct RelayUpstreamTests {
    static let good = """
        #EXTM3U
        #EXT-X-VERSION:6
        #EXT-X-TARGETDURATION:1
        #EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=0.75
        #EXT-X-PART-INF:PART-TARGET=0.25
        #EXT-X-PROGRAM-DATE-TIME:2026-03-01T12:01:00.000Z
        #EXTINF:1.0,
        seg1.m4s
        #EXT-X-PART:DURATION=0.25,URI="seg2.0.m4s"

        """

    @Test("a good LL-HLS upstream is taken")
    func good() throws {
        let playlist = try RelayPoller.upstreamPlaylist(Self.good)
        #expect(
            RelayDecorator.partsPosition(playlist)
                == RelayDecorator.PartsPosition(lastSegment: 0, partial: 1, partTargetMilliseconds: 250))
    }

    @Test(
        "a control character in a URI or a quoted value is refused before it can fail every render of the channel",
        arguments: [
            ("seg1.m4s", "se\rg1.m4s"), (#"URI="seg2.0.m4s""#, "URI=\"seg2\u{1B}[2J.0.m4s\""),
            ("seg1.m4s", "seg1\u{7F}.m4s"),
        ])
    func controlCharacters(from: String, to: String) throws {
        let text = Self.good.replacingOccurrences(of: from, with: to)
        #expect(text != Self.good)
        #expect {
            _ = try RelayPoller.upstreamPlaylist(text)
        } throws: { error in
            "\(error)".contains("control character") && "\(error)".contains("not relayed")
        }
    }

    @Test("an upstream out of bounds is refused with the reason")
    func outOfBounds() {
        #expect(throws: RelayDecorator.Failure.outOfRange("EXT-X-TARGETDURATION 0 is not between 1 and 3600 s")) {
            _ = try RelayPoller.upstreamPlaylist(
                Self.good.replacingOccurrences(of: "TARGETDURATION:1", with: "TARGETDURATION:0"))
        }
    }
}
