import Foundation
import HLS
import Metrics
import NIOCore
import Projector
import Schedule

/// The follower's side of a media playlist answered before the router (``PlaylistRawPath`` and ``PlaylistFastPath``):
/// the window looked up and ``MediaPlaylistAnswer`` asked what to do with it, a held request registered and its
/// wake-up looked up again. The router does the same with a task (`PlaylistController.media`).
enum PlaylistLookup {
    /// How long after its part's boundary a held request's answer was ready (clock channels), on all three paths.
    static let blockedLateness = Timer(label: "cueline_blocked_reload_lateness_seconds", preferredDisplayUnit: .seconds)

    /// Records the lateness of a held request's answer whose part ended at `partEnded`.
    static func recordLateness(_ partEnded: Timestamp?, follower: ChannelFollower) {
        guard let partEnded else { return }
        blockedLateness.recordNanoseconds(max(0, follower.clock().milliseconds(since: partEnded)) * 1_000_000)
    }

    /// What a path before the router does with a media playlist request.
    enum Decision {
        /// Answer at once with this window.
        case answer(ChannelFollower.ServedMedia, maxAge: Int)
        /// A blocking reload for a part not there yet.
        case hold(HeldReload)
    }

    /// What to do with a `GET` or `HEAD` of `path` answered before the router, or nil to leave it to the router.
    static func decide(follower: ChannelFollower, path: String, origin: Bool, head: Bool, started: UInt64) -> Decision?
    {
        let (plain, query) = MediaPlaylistTarget.split(path)
        guard let (channel, rendition) = MediaPlaylistTarget.mediaPlaylistPath(plain) else { return nil }
        return decide(
            follower: follower, channel: channel, rendition: rendition, query: query, origin: origin, head: head,
            started: started)
    }

    /// The same for a path already split into its channel, rendition and query. The router answers what is not taken
    /// here, by the same rules: every error (``MediaPlaylistAnswer/Decision/refuse(_:)``), a query other than the
    /// directives in their valid forms, and directives on a channel without parts.
    static func decide(
        follower: ChannelFollower, channel: ChannelID, rendition: Identifier, query: Substring?, origin: Bool,
        head: Bool, started: UInt64
    ) -> Decision? {
        var directives = DeliveryDirectives()
        if let query {
            guard let parsed = DeliveryDirectives(query: query) else { return nil }
            directives = parsed
        }
        let answer = MediaPlaylistAnswer(channel: channel, rendition: rendition, directives: directives)
        guard let served = try? follower.servedMedia(channel, rendition: rendition, skip: directives.skip),
            query == nil || served.partsPerSegment != nil || served.relayParts != nil
        else { return nil }
        switch answer.decide(.success(served)) {
        case .playlist(let served, let maxAge): return .answer(served, maxAge: maxAge)
        case .wait(let wait):
            return .hold(HeldReload(answer: answer, wait: wait, origin: origin, head: head, started: started))
        case .refuse: return nil
        }
    }

    /// A held request's wake-up, on either path: the refusal its handler decided (`instead`), else what
    /// ``released(follower:_:ready:memo:)`` says; the request's place among the gate's held reloads is given back
    /// unless it is held again.
    static func wakeup(
        instead: APIError?, tracker: ConnectionTracker?, counted: inout Bool,
        released: () -> MediaPlaylistAnswer.Wakeup
    ) -> MediaPlaylistAnswer.Wakeup {
        let wakeup = instead.map { MediaPlaylistAnswer.Wakeup.refuse($0) } ?? released()
        if let tracker, counted, !wakeup.holdsAgain {
            counted = false
            tracker.gate.endHold(tracker.id)
        }
        return wakeup
    }

    /// What the follower's word `ready` on a held request comes to; the lateness of a held answer is recorded here.
    ///
    /// - Parameter memo: the loop's answers (`HeldWakeups.responses`): within one batch of the loop's wake-up, a window
    ///   found for one held request is reused for the others on the same channel, rendition and delta form that it
    ///   satisfies.
    static func released(follower: ChannelFollower, _ held: HeldReload, ready: Bool, memo: LoopResponses? = nil)
        -> MediaPlaylistAnswer.Wakeup
    {
        var window: Result<ChannelFollower.ServedMedia, ChannelFollower.LookupError>?
        if ready {
            if let known = memo?.servedInWakeup(held), known.blockingPosition >= held.target {
                window = .success(known)
            } else {
                do throws(ChannelFollower.LookupError) {
                    let served = try follower.servedMedia(held.channel, rendition: held.rendition, skip: held.skip)
                    memo?.keepInWakeup(served, for: held)
                    window = .success(served)
                } catch {
                    window = .failure(error)
                }
            }
        }
        let wakeup = held.answer.afterWakeup(held.wait, window: window, millisecondsLeft: held.millisecondsLeft)
        if case .playlist(_, _, let partEnded) = wakeup { recordLateness(partEnded, follower: follower) }
        return wakeup
    }

    /// Registers a held request with the follower for what is left of its time; `release` is called once, on the
    /// connection's event loop, with the follower's word. Nil: the follower takes no more (shutting down).
    static func register<Handler: AnyObject>(
        follower: ChannelFollower, _ held: HeldReload, handler: Handler, context: ChannelHandlerContext,
        wakeups: HeldWakeups? = nil, release: @escaping (Handler, ChannelHandlerContext, Bool) -> Void
    ) -> UInt64? {
        let bound = NIOLoopBound((handler, context, release), eventLoop: context.eventLoop)
        let wakeups = wakeups ?? HeldWakeups.on(context.eventLoop)
        return follower.whenWindow(
            held.channel, rendition: held.waitOn, completedTicks: held.target,
            timeoutMilliseconds: max(1, held.millisecondsLeft),
            batch: wakeups
        ) { ready in
            wakeups.add {
                let (handler, context, release) = bound.value
                release(handler, context, ready)
            }
        }
    }
}
