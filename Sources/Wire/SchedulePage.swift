import Foundation
import HLS
import Schedule

/// One page of a channel's schedule, as `GET /channels/{channel}/schedule` answers it: the breaks that start in
/// [`from`, `to`) after the cursor `after`, in order of start then id, at most `limit` of them and at most
/// ``maximumBytes`` of JSON, with `next` when more follow. Its cost is a binary search and the breaks it holds,
/// however many the channel has.
public struct SchedulePage: Sendable {
    /// Breaks in a page when the request names no `limit`.
    public static let defaultLimit = 100
    /// The most breaks a request may ask for.
    public static let maximumLimit = 1000
    /// The most bytes the breaks of a page take in its JSON answer. One break takes at most about 0.5 MiB (a pod of
    /// 100 URIs of 2048 bytes, each byte escaped), so every answer stays under this and its few hundred bytes of
    /// envelope, however large the breaks.
    public static let maximumBytes = 1024 * 1024

    public struct Window: Hashable, Sendable {
        public var from: Timestamp?
        public var to: Timestamp?
        public var after: ScheduleCursor?
        public var limit: Int

        public init(
            from: Timestamp? = nil, to: Timestamp? = nil, after: ScheduleCursor? = nil,
            limit: Int = SchedulePage.defaultLimit
        ) {
            self.from = from
            self.to = to
            self.after = after
            self.limit = limit
        }
    }

    /// The page as a value.
    public var view: ScheduleView
    /// The page as wire JSON (what ``WireJSON/encode(_:pretty:)`` writes for ``view``), each break encoded once.
    public var json: Data

    /// - Parameter maximumBytes: tests only; ``maximumBytes`` otherwise.
    public init(state: ChannelState, liveEdge: Timestamp, window: Window, maximumBytes: Int = SchedulePage.maximumBytes)
    {
        let encoder = WireJSON.encoder()
        let breaks = state.breaks
        var lowest = window.from ?? Timestamp(milliseconds: .min)
        if let after = window.after { lowest = max(lowest, after.start) }
        var index = state.firstIndex(startingAtOrAfter: lowest)
        var views: [BreakView] = []
        var encoded: [Data] = []
        var bytes = 0
        var next: ScheduleCursor?
        paging: while index < breaks.endIndex {
            let start = breaks[index].start
            if let to = window.to, start >= to { break }
            var end = index + 1
            while end < breaks.endIndex && breaks[end].start == start { end += 1 }
            // Breaks that start together (a cancelled one and the one placed in its stead) in order of id, which a
            // cursor can name.
            let group =
                end - index == 1 ? [breaks[index]] : breaks[index..<end].sorted { $0.id.rawValue < $1.id.rawValue }
            index = end
            for item in group where window.after?.precedes(item) ?? true {
                if views.count >= window.limit {
                    next = views.last.map { ScheduleCursor(start: $0.startDate, id: $0.id) }
                    break paging
                }
                let view = BreakView(item, liveEdge: liveEdge)
                let data = (try? encoder.encode(view)) ?? Data()
                // One comma between breaks; the first break of a page always comes, whatever its size.
                if !views.isEmpty && bytes + 1 + data.count > maximumBytes {
                    next = views.last.map { ScheduleCursor(start: $0.startDate, id: $0.id) }
                    break paging
                }
                bytes += data.count + (views.isEmpty ? 0 : 1)
                views.append(view)
                encoded.append(data)
            }
        }
        view = ScheduleView(
            channel: state.channel, version: state.version, liveEdge: liveEdge, breaks: views, next: next?.description)
        json =
            Self.splice(
                ScheduleView(
                    channel: view.channel, version: view.version, liveEdge: liveEdge, breaks: [], next: view.next),
                encoded, encoder)
            ?? (try? encoder.encode(view)) ?? Data()
    }

    /// The envelope encoded with no breaks, the encoded breaks put into its empty array: keys are sorted, so the
    /// envelope starts with `{"breaks":[]`. Nil if it does not.
    private static func splice(_ envelope: ScheduleView, _ breaks: [Data], _ encoder: JSONEncoder) -> Data? {
        let prefix = Data(#"{"breaks":["#.utf8)
        guard let empty = try? encoder.encode(envelope), empty.starts(with: prefix + Data("]".utf8)) else { return nil }
        var json = Data(capacity: empty.count + breaks.reduce(0) { $0 + $1.count + 1 })
        json.append(prefix)
        for (index, item) in breaks.enumerated() {
            if index > 0 { json.append(UInt8(ascii: ",")) }
            json.append(item)
        }
        json.append(empty[prefix.count...])
        return json
    }
}
