import Foundation
import HLS
import HTTPTypes
import Hummingbird
import NIOCore
import Projector
import Schedule

/// The rules of a media playlist answer, in one place for the three paths that answer one: ``PlaylistRawPath`` (raw
/// bytes), ``PlaylistFastPath`` (the event loop) and the router (`PlaylistController.media`). From a request's LL-HLS
/// delivery directives (parsed once, ``DeliveryDirectives``) and the window the follower serves for it, it says what to
/// answer: the playlist now, a wait for a later part, or an error (400 naming the directive, 404, 500, 503); how long a
/// cache may keep a playlist; its headers; and the texts of the 503s a blocking reload can end with.
///
/// A value: no I/O and no clock. The window, and the time a held request has left, come in as values; the paths look
/// them up, hold requests and write the answers, each in its own way.
struct MediaPlaylistAnswer: Sendable {
    var channel: ChannelID
    var rendition: Identifier
    var directives: DeliveryDirectives

    /// What a request is answered with, given the window served for it.
    enum Decision {
        /// 200 with this window, which a cache may keep for `maxAge` seconds.
        case playlist(ChannelFollower.ServedMedia, maxAge: Int)
        /// A blocking reload for a part not there yet: held until the window has `Wait.target` ticks.
        case wait(Wait)
        /// An error answer: 400 naming the directive, 404 for a channel or rendition that is not there, 500 for a
        /// window that cannot be rendered, 503 for a channel not started or a relay without its upstream yet.
        case refuse(APIError)
    }

    /// What a held blocking reload waits for.
    struct Wait: Sendable, Equatable {
        /// The ticks (parts) that must have ended: the window's `blockingPosition` to reach.
        var target: Int64
        /// 3 target durations (§6.2.5.2): then 503.
        var timeoutMilliseconds: Int64
        /// A relay rendition waits for its own upstream's parts (the follower releases it per rendition); nil: a clock
        /// channel's windows, shared by its renditions.
        var waitOn: Identifier?
    }

    /// What a held request's wake-up comes to.
    enum Wakeup {
        /// Its part is there (or a relay's upstream has no parts any more): 200, cached for `maxAge`. `partEnded`: when
        /// its part ended, from which the answer's lateness is measured (clock channels).
        case playlist(ChannelFollower.ServedMedia, maxAge: Int, partEnded: Timestamp?)
        /// A relay's upstream went back (a restart) after the wake-up: held again for what is left of its time.
        case wait
        /// 503 past its deadline; the lookup's error (a rendition gone, 404; a relay that no longer renders, 500).
        case refuse(APIError)

        /// The request is held again (it keeps its place among the held reloads).
        var holdsAgain: Bool {
            if case .wait = self { true } else { false }
        }
    }

    /// The answer for `window`, the follower's lookup of `channel` and `rendition` with `directives.skip`.
    func decide(_ window: Result<ChannelFollower.ServedMedia, ChannelFollower.LookupError>) -> Decision {
        let served: ChannelFollower.ServedMedia
        switch window {
        case .success(let found): served = found
        case .failure(let error): return .refuse(APIError(error))
        }
        // Blocking playlist reload (channels with parts; others answer at once, as a server without it must).
        let plan: DeliveryDirectives.Plan?
        do {
            plan = try directives.plan(served)
        } catch {
            return .refuse(error)
        }
        guard case .hold(let target)? = plan else {
            // No _HLS_msn, no parts, or the part is there already: at once, with the current playlist (which may have
            // changed since that part, so it is not kept longer than a plain playlist).
            return .playlist(served, maxAge: Self.plainMaxAge(served))
        }
        return .wait(
            Wait(
                target: target, timeoutMilliseconds: Int64(3 * served.targetDuration) * 1000,
                waitOn: served.relayParts != nil ? rendition : nil))
    }

    /// What a wake-up of a request held for `wait` comes to: `window` is the follower's lookup after its word that the
    /// window is there (nil: it said the deadline passed, or the server is shutting down), `millisecondsLeft` what is
    /// left of the request's time.
    func afterWakeup(
        _ wait: Wait, window: Result<ChannelFollower.ServedMedia, ChannelFollower.LookupError>?,
        millisecondsLeft: Int64
    ) -> Wakeup {
        guard let window else { return .refuse(timedOut) }
        let served: ChannelFollower.ServedMedia
        switch window {
        case .success(let found): served = found
        case .failure(let error): return .refuse(APIError(error))
        }
        if wait.waitOn != nil {
            // A relay whose upstream no longer has parts: nothing to wait for.
            if served.relayParts == nil || served.blockingPosition >= wait.target {
                return .playlist(served, maxAge: Self.heldMaxAge(served), partEnded: nil)
            }
            return millisecondsLeft > 0 ? .wait : .refuse(timedOut)
        }
        guard served.completedTicks >= wait.target, let partMilliseconds = served.partMilliseconds else {
            return .refuse(timedOut)
        }
        // The boundary of tick `target`.
        let partEnded = served.tickBoundary.adding(
            milliseconds: -(served.completedTicks - wait.target) * partMilliseconds)
        return .playlist(served, maxAge: Self.heldMaxAge(served), partEnded: partEnded)
    }

    // MARK: Cache lifetimes

    /// A playlist answered at once: a CDN may hold a live playlist for half a target duration, so a schedule change
    /// reaches viewers well within the three target durations they play behind the live edge.
    static func plainMaxAge(_ served: ChannelFollower.ServedMedia) -> Int {
        max(1, served.targetDuration / 2)
    }

    /// The playlist published at the boundary of the part a blocking reload asked for: the answer every client blocked
    /// on it gets, which a cache in front may give to the next ones asking (6 target durations).
    static func heldMaxAge(_ served: ChannelFollower.ServedMedia) -> Int {
        6 * served.targetDuration
    }

    // MARK: The 503 texts

    /// The 503 of a held request whose part did not come within 3 target durations.
    var timedOut: APIError {
        APIError(
            .unavailable,
            "segment \(directives.msn ?? 0)\(directives.part.map { " part \($0)" } ?? "") of channel \(channel) did not appear within 3 target durations"
        )
    }

    /// The 503 of a blocking reload the gate keeps no place for (``GateState``): its client address holds its share of
    /// held reloads already, or (`evicted`) a newer request took its place.
    static func notHeld(evicted: Bool) -> APIError {
        let message =
            evicted
            ? "this server holds as many blocking playlist reloads as it keeps places for, and a newer request took this one's place; retry"
            : "this client address holds as many blocking playlist reloads at once as it may (max_held_reloads_per_address); retry shortly"
        return APIError(.unavailable, message).with(.retryAfter, "1").with(.connection, "close")
    }

    // MARK: Headers

    /// The router's answer: the playlist's own headers (`Content-Type`, `Cache-Control`, the tick); Hummingbird adds
    /// `Content-Length`, CORS, `Date` and `Server`. `Cueline-Tick`: the instant these bytes were rendered for
    /// (`cueline replay --at` gives them back).
    static func response(_ served: ChannelFollower.ServedMedia, maxAge: Int) -> Response {
        Responses.playlist(served.body, maxAge: maxAge, tick: served.tickText)
    }

    /// The headers of a playlist answer written before the router, in the order the router's answer has them
    /// (``response(_:maxAge:)``, CORS for a request with an Origin, and the `Date` and `Server` headers Hummingbird
    /// adds).
    static func playlistFields(
        _ served: ChannelFollower.ServedMedia, maxAge: Int, origin: Bool, date: String,
        _ field: (HTTPField.Name, String) -> Void
    ) {
        field(.contentType, Responses.playlistContentType)
        field(.cacheControl, Responses.maxAge(maxAge))
        field(.cuelineTick, served.tickText)
        field(.contentLength, String(served.body.readableBytes))
        if origin { field(.accessControlAllowOrigin, "*") }
        field(.date, date)
        field(.server, "cueline")
    }

    /// An error answer to a held request written before the router: its status, headers (the router's JSON answer's,
    /// CORS for a request with an Origin, `Date` and `Server`) and body.
    static func errorAnswer(_ error: APIError, origin: Bool, date: String) -> (
        HTTPResponse.Status, HTTPFields, ByteBuffer
    ) {
        let body = ByteBuffer(bytes: encodeJSON(ErrorBody(error: error.message, field: error.field)))
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        fields[.cacheControl] = "no-cache"
        for field in error.headers { fields.append(field) }
        fields[.contentLength] = String(body.readableBytes)
        if origin { fields[.accessControlAllowOrigin] = "*" }
        fields[.date] = date
        fields[.server] = "cueline"
        return (error.status, fields, body)
    }
}
