import HLS
import NIOCore
import Schedule
import Testing

@testable import API
@testable import Projector

/// ``MediaPlaylistAnswer`` alone, on windows made here: no follower, no channel, no clock.
@Suite("Media playlist answer rules")
struct MediaPlaylistAnswerTests {
    static let boundary = Timestamp(iso8601: "2026-03-01T12:01:00.500Z")!

    /// A clock channel's window: 1 s segments of 4 parts of 250 ms, `completed` parts ended, the last at `boundary`.
    static func clockWindow(completed: Int64) -> ChannelFollower.ServedMedia {
        ChannelFollower.ServedMedia(
            body: ByteBuffer(string: "#EXTM3U\n"), targetDuration: 1, tick: boundary, tickText: boundary.iso8601,
            completedTicks: completed, partsPerSegment: 4, partMilliseconds: 250, tickBoundary: boundary)
    }

    /// A relay rendition's window: its upstream at segment `last` complete and `partial` parts of the next.
    static func relayWindow(last: Int64, partial: Int64) -> ChannelFollower.ServedMedia {
        var served = clockWindow(completed: 0)
        (served.partsPerSegment, served.partMilliseconds) = (nil, nil)
        served.relayParts = RelayDecorator.PartsPosition(
            lastSegment: last, partial: partial, partTargetMilliseconds: 250, lastSegmentParts: 4)
        return served
    }

    static func answer(msn: Int64?, part: Int64? = nil) -> MediaPlaylistAnswer {
        var directives = DeliveryDirectives()
        (directives.msn, directives.part) = (msn, part)
        return MediaPlaylistAnswer(channel: "ll", rendition: "720p", directives: directives)
    }

    @Test("a part there already is answered at once for half a target duration (at least 1 s); one to come is a wait")
    func decide() {
        guard
            case .playlist(_, let maxAge) = Self.answer(msn: 60, part: 1).decide(
                .success(Self.clockWindow(completed: 242)))
        else {
            Issue.record("not answered at once")
            return
        }
        #expect(maxAge == 1)
        guard case .wait(let wait) = Self.answer(msn: 60, part: 2).decide(.success(Self.clockWindow(completed: 242)))
        else {
            Issue.record("not a wait")
            return
        }
        #expect(wait == MediaPlaylistAnswer.Wait(target: 243, timeoutMilliseconds: 3000, waitOn: nil))
        guard case .refuse(let error) = Self.answer(msn: 62).decide(.success(Self.clockWindow(completed: 242))) else {
            Issue.record("not refused")
            return
        }
        #expect(error.status == .badRequest && error.field == "_HLS_msn")
        guard case .refuse(let missing) = Self.answer(msn: nil).decide(.failure(.unknownChannel("ll"))) else {
            Issue.record("not refused")
            return
        }
        #expect(missing.status == .notFound && missing.message == "channel ll does not exist")
    }

    @Test(
        "a wake-up: the part there is answered for 6 target durations with its boundary; not there, or no word, is the 503"
    )
    func wakeup() {
        let answer = Self.answer(msn: 60, part: 2)
        let wait = MediaPlaylistAnswer.Wait(target: 243, timeoutMilliseconds: 3000, waitOn: nil)
        let served = Self.clockWindow(completed: 244)
        guard
            case .playlist(_, let maxAge, let partEnded) = answer.afterWakeup(
                wait, window: .success(served), millisecondsLeft: 1000)
        else {
            Issue.record("not answered")
            return
        }
        #expect(maxAge == 6 && partEnded == Self.boundary.adding(milliseconds: -250))
        let notThere: [Result<ChannelFollower.ServedMedia, ChannelFollower.LookupError>?] = [
            nil, .success(Self.clockWindow(completed: 242)),
        ]
        for window in notThere {
            guard case .refuse(let error) = answer.afterWakeup(wait, window: window, millisecondsLeft: 1000) else {
                Issue.record("not refused")
                continue
            }
            #expect(error.status == .serviceUnavailable)
            #expect(error.message == "segment 60 part 2 of channel ll did not appear within 3 target durations")
        }
    }

    @Test("a relay's wake-up: an upstream gone back waits again while time is left; one without parts is answered")
    func relayWakeup() {
        let answer = Self.answer(msn: 80, part: 2)
        let wait = MediaPlaylistAnswer.Wait(target: 80 << 16 + 3, timeoutMilliseconds: 3000, waitOn: "720p")
        let behind = Self.relayWindow(last: 40, partial: 1)
        #expect(answer.afterWakeup(wait, window: .success(behind), millisecondsLeft: 10).holdsAgain)
        guard case .refuse = answer.afterWakeup(wait, window: .success(behind), millisecondsLeft: 0) else {
            Issue.record("not refused once no time is left")
            return
        }
        var withoutParts = behind
        withoutParts.relayParts = nil
        guard
            case .playlist(_, let maxAge, nil) = answer.afterWakeup(
                wait, window: .success(withoutParts), millisecondsLeft: 10)
        else {
            Issue.record("not answered")
            return
        }
        #expect(maxAge == 6)
        guard
            case .playlist = answer.afterWakeup(
                wait, window: .success(Self.relayWindow(last: 79, partial: 3)), millisecondsLeft: 10)
        else {
            Issue.record("not answered at its part")
            return
        }
    }
}
