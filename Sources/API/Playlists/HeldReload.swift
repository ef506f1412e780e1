import Foundation
import Projector
import Schedule

/// A blocking reload held before the router (``PlaylistRawPath``, ``PlaylistFastPath``): the request's answer rules,
/// what it waits for, and what its answer needs once its part exists (or 503 at its deadline).
struct HeldReload {
    var answer: MediaPlaylistAnswer
    var wait: MediaPlaylistAnswer.Wait
    var origin: Bool
    var head: Bool
    /// When the request was read (`DispatchTime` uptime nanoseconds).
    var started: UInt64

    var channel: ChannelID { answer.channel }
    var rendition: Identifier { answer.rendition }
    var skip: PlaylistBuilder.DeltaUpdate? { answer.directives.skip }
    var target: Int64 { wait.target }
    var waitOn: Identifier? { wait.waitOn }

    /// What is left of its 3 target durations (none left: 503).
    var millisecondsLeft: Int64 {
        wait.timeoutMilliseconds - Int64(clamping: (DispatchTime.now().uptimeNanoseconds &- started) / 1_000_000)
    }
}
