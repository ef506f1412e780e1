import HLS

/// The as-run record: per break, what was planned and what aired, with who did what through which door.
/// Modelled on broadcast as-run logs, with the columns a traffic or billing department reconciles against.
public struct AsRunEntry: Hashable, Sendable, Codable {
    public var breakID: BreakID
    /// scheduled, on-air, aired, ended-early, cancelled.
    public var status: String
    public var plannedStart: Timestamp
    public var plannedDuration: DecimalNumber
    /// When it went on air; nil when it never did (cancelled, or still scheduled).
    public var actualStart: Timestamp?
    /// When it ended; nil while it is on air or when it never aired.
    public var actualEnd: Timestamp?
    /// Seconds aired so far (up to `at`).
    public var airedDuration: DecimalNumber
    public var asset: String
    public var placedBy: String
    public var placedVia: String
    public var placedAt: Timestamp
    public var endedEarlyBy: String?
    public var endedEarlyVia: String?
    public var endedEarlyAt: Timestamp?
    public var endedEarlyHow: String?
    public var cancelledBy: String?
    public var cancelledVia: String?
    public var cancelledAt: Timestamp?
    /// `cancel-break` (withdrawn ahead of air) or `cancel-current (before its first segment was served)`: ended by
    /// `event cancel-current` after its start on the clock, but before any published segment held it.
    public var cancelledHow: String?

    /// `breakId`, so that the wire's `break_id` (snake_case of either spelling) reads back into `breakID`.
    enum CodingKeys: String, CodingKey {
        case breakID = "breakId"
        case status, plannedStart, plannedDuration, actualStart, actualEnd, airedDuration, asset, placedBy, placedVia,
            placedAt
        case endedEarlyBy, endedEarlyVia, endedEarlyAt, endedEarlyHow, cancelledBy, cancelledVia, cancelledAt,
            cancelledHow
    }
}

public struct AsRunTotals: Hashable, Sendable, Codable {
    public var breaksPlanned: Int
    public var breaksAired: Int
    public var breaksEndedEarly: Int
    public var breaksCancelled: Int
    public var secondsPlanned: DecimalNumber
    public var secondsAired: DecimalNumber
}

public enum AsRun {
    /// The entries for breaks planned to start in [from, to), as known at `at` (the live edge of the channel then).
    public static func entries(state: ChannelState, from: Timestamp?, to: Timestamp?, at: Timestamp) -> [AsRunEntry] {
        guard let config = state.config else { return [] }
        let liveEdge = Timeline(config).liveEdge(at: at)
        return state.breaks.filter { item in
            (from.map { item.start >= $0 } ?? true) && (to.map { item.start < $0 } ?? true)
        }.map { item in
            let phase = item.phase(liveEdge: liveEdge)
            let started = phase == .onAir || phase == .aired || phase == .endedEarly
            let ended = phase == .aired || phase == .endedEarly
            let aired = started ? min(liveEdge, item.end).milliseconds(since: item.start) : 0
            let asset: String
            switch item.spec.asset {
            case .uri(let uri): asset = uri
            case .list(let uri): asset = uri
            case .pod(let pod): asset = pod.map(\.uri).joined(separator: " ")
            }
            return AsRunEntry(
                breakID: item.id, status: phase.rawValue, plannedStart: item.start,
                plannedDuration: DecimalNumber(milliseconds: item.spec.plannedDurationMilliseconds),
                actualStart: started ? item.start : nil, actualEnd: ended ? item.end : nil,
                airedDuration: DecimalNumber(milliseconds: aired), asset: asset,
                placedBy: item.placed.actor, placedVia: item.placed.source, placedAt: item.placed.at,
                endedEarlyBy: item.limited?.actor, endedEarlyVia: item.limited?.source, endedEarlyAt: item.limited?.at,
                endedEarlyHow: item.limitKind?.rawValue, cancelledBy: item.cancelled?.actor,
                cancelledVia: item.cancelled?.source,
                cancelledAt: item.cancelled?.at,
                cancelledHow: item.cancelled == nil ? nil : (item.cancelKind ?? .cancelBreak).asRunDescription)
        }
    }

    public static func totals(_ entries: [AsRunEntry]) -> AsRunTotals {
        AsRunTotals(
            breaksPlanned: entries.count,
            breaksAired: entries.filter { $0.actualStart != nil }.count,
            breaksEndedEarly: entries.filter { $0.status == BreakState.Phase.endedEarly.rawValue }.count,
            breaksCancelled: entries.filter { $0.status == BreakState.Phase.cancelled.rawValue }.count,
            secondsPlanned: DecimalNumber(
                milliseconds: entries.filter { $0.cancelledAt == nil }.reduce(0) {
                    $0 + $1.plannedDuration.milliseconds
                }),
            secondsAired: DecimalNumber(milliseconds: entries.reduce(0) { $0 + $1.airedDuration.milliseconds }))
    }

    static let columns = [
        "break_id", "status", "planned_start", "planned_duration", "actual_start", "actual_end", "aired_duration",
        "asset",
        "placed_by", "placed_via", "placed_at", "ended_early_by", "ended_early_via", "ended_early_at",
        "ended_early_how",
        "cancelled_by", "cancelled_via", "cancelled_at", "cancelled_how",
    ]

    /// RFC 4180 CSV with a header row.
    ///
    /// - Parameter escapingControlCharacters: write control characters in values as `\u{1B}`, for a terminal.
    public static func csv(_ entries: [AsRunEntry], escapingControlCharacters: Bool = false) -> String {
        func field(_ text: String?) -> String {
            guard let raw = text else { return "" }
            let text = escapingControlCharacters ? raw.escapingControlCharacters : raw
            return text.contains(where: { $0 == "," || $0 == "\"" || $0.isNewline })
                ? "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : text
        }
        var out = columns.joined(separator: ",") + "\r\n"
        for e in entries {
            let row: [String?] = [
                e.breakID.rawValue, e.status, e.plannedStart.iso8601, e.plannedDuration.description,
                e.actualStart?.iso8601, e.actualEnd?.iso8601,
                e.airedDuration.description, e.asset, e.placedBy, e.placedVia, e.placedAt.iso8601, e.endedEarlyBy,
                e.endedEarlyVia,
                e.endedEarlyAt?.iso8601, e.endedEarlyHow, e.cancelledBy, e.cancelledVia, e.cancelledAt?.iso8601,
                e.cancelledHow,
            ]
            out += row.map(field).joined(separator: ",") + "\r\n"
        }
        return out
    }
}
