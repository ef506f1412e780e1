import Foundation
import Metrics

/// The series Hummingbird's MetricsMiddleware keeps for the media playlist route, method and status 200, so that a
/// dashboard's request rate and duration by route count the playlists answered before the router (``PlaylistRawPath``,
/// ``PlaylistFastPath``) with those the router answered.
struct PlaylistRouteMetrics {
    let counter: Counter
    let timer: Timer

    init(method: String) {
        let dimensions = [
            ("http.route", "/channels/{channel}/{playlist}"), ("http.request.method", method),
            ("http.response.status_code", "200"),
        ]
        counter = Counter(label: "hb.requests", dimensions: dimensions)
        timer = Timer(label: "http.server.request.duration", dimensions: dimensions, preferredDisplayUnit: .seconds)
    }

    func record(since started: UInt64) {
        counter.increment()
        timer.recordNanoseconds(Int64(clamping: DispatchTime.now().uptimeNanoseconds &- started))
    }

    static let get = PlaylistRouteMetrics(method: "GET")
    static let head = PlaylistRouteMetrics(method: "HEAD")

    /// The series of a `HEAD` (`head`) or `GET` answered with 200.
    static func served(head: Bool) -> PlaylistRouteMetrics { head ? Self.head : Self.get }
}
