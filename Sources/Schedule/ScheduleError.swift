import HLS

/// Why a command was refused. Messages say what to do instead.
public enum ScheduleError: Error, Hashable, Sendable, CustomStringConvertible {
    case invalidField(String, String)
    case channelExists(ChannelID)
    case unknownChannel(ChannelID)
    case unknownBreak(channel: ChannelID, id: BreakID)
    case breakIDReused(BreakID)
    case startBehindLiveEdge(start: Timestamp, liveEdge: Timestamp)
    case overlap(id: BreakID, otherID: BreakID, otherStart: Timestamp, otherEnd: Timestamp)
    case notOnAir(id: BreakID, start: Timestamp, liveEdge: Timestamp)
    /// Started on the clock, but the live edge has not reached it: no published segment holds it until `servedFrom`.
    case notServedYet(id: BreakID, start: Timestamp, liveEdge: Timestamp, servedFrom: Timestamp)
    case alreadyEnded(id: BreakID, end: Timestamp)
    case alreadyLimited(id: BreakID, limit: DecimalNumber)
    case limitBelowPlayed(id: BreakID, limit: DecimalNumber, played: DecimalNumber)
    case limitNotBelowPlanned(id: BreakID, limit: DecimalNumber, planned: DecimalNumber)
    case cancelOnAir(id: BreakID, start: Timestamp)
    case alreadyCancelled(id: BreakID)
    case nothingOnAir(channel: ChannelID, liveEdge: Timestamp)
    case renditionsChangeIncompatible(String)
    /// The channel already holds `limit` breaks that have not aired (``Limits/maximumFutureBreaks``).
    case tooManyFutureBreaks(channel: ChannelID, limit: Int)

    /// The request field the error is about, for HTTP 422 bodies.
    public var field: String? {
        switch self {
        case .invalidField(let field, _): return field
        case .startBehindLiveEdge, .overlap: return "start"
        case .limitBelowPlayed, .limitNotBelowPlanned: return "playout_limit"
        case .breakIDReused: return "id"
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case .invalidField(let field, let reason):
            return "\(field): \(reason)"
        case .channelExists(let id):
            return "channel \(id) already exists; use a new id, or update its renditions"
        case .unknownChannel(let id):
            return "channel \(id) does not exist; `cueline channel list` shows the channels"
        case .unknownBreak(let channel, let id):
            return
                "break \(id) does not exist on channel \(channel) (a break leaves the schedule about 10 minutes after it ended; `cueline as-run \(channel)` lists every break); `cueline schedule \(channel)` lists the breaks"
        case .breakIDReused(let id):
            return "break id \(id) was already used on this channel; ids are never reused, choose another"
        case .startBehindLiveEdge(let start, let liveEdge):
            return "start \(start) is behind the live edge (\(liveEdge)); place breaks ahead of the live edge"
        case .overlap(let id, let otherID, let otherStart, let otherEnd):
            return
                "break \(id) would overlap break \(otherID) (\(otherStart) to \(otherEnd)); start it at or after \(otherEnd)"
        case .notOnAir(let id, let start, let liveEdge):
            return
                "break \(id) is not on air yet (starts \(start), live edge \(liveEdge)); cancel it with `cueline break cancel` instead"
        case .notServedYet(let id, let start, let liveEdge, let servedFrom):
            return
                "break \(id) started at \(start) but no segment holds it yet (live edge \(liveEdge) until \(servedFrom)), so it cannot "
                + "be ended early; `cueline event cancel-current` or `cueline break cancel \(id)` removes it now, or set the limit after \(servedFrom)"
        case .alreadyEnded(let id, let end):
            return "break \(id) already ended at \(end)"
        case .alreadyLimited(let id, let limit):
            return "break \(id) already has a playout limit of \(limit) s; a published limit cannot change"
        case .limitBelowPlayed(let id, let limit, let played):
            return
                "playout limit \(limit) s for break \(id) is below the \(played) s already played; use at least \(played) s or `cueline event cancel-current`"
        case .limitNotBelowPlanned(let id, let limit, let planned):
            return
                "playout limit \(limit) s for break \(id) is not below its planned duration \(planned) s; leave it to end by itself"
        case .cancelOnAir(let id, let start):
            return
                "break \(id) is already on air since \(start); use `cueline break limit` or `cueline event cancel-current` to end it early"
        case .alreadyCancelled(let id):
            return "break \(id) is already cancelled"
        case .nothingOnAir(let channel, let liveEdge):
            return "no break is on air on channel \(channel) at the live edge \(liveEdge)"
        case .renditionsChangeIncompatible(let reason):
            return "renditions: \(reason)"
        case .tooManyFutureBreaks(let channel, let limit):
            return
                "channel \(channel) already has \(limit) breaks that have not aired, the limit of future breaks per channel; "
                + "cancel one with `cueline break cancel`, or place this one once some have aired"
        }
    }
}
