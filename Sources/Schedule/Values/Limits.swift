import HLS

/// The bounds every value from outside is checked against, once, where it enters (HTTP, CLI, hooks, SCTE-35).
/// The README's "Limits" section and the OpenAPI document state the same numbers.
public enum Limits {
    /// The earliest instant a request may name (a break start, a channel epoch, a replay or as-run instant).
    public static let earliestInstant = Timestamp(milliseconds: 946_684_800_000)  // 2000-01-01T00:00:00Z
    /// The latest instant a request may name.
    public static let latestInstant = Timestamp(milliseconds: 7_258_118_400_000)  // 2200-01-01T00:00:00Z
    public static var instants: ClosedRange<Timestamp> { earliestInstant...latestInstant }

    /// How far ahead of the moment it is decided a break may start (7 days).
    public static let breakStartHorizonMilliseconds: Int64 = 7 * 86_400_000
    /// The longest `in` delay (24 hours), and the longest duration any request field may give.
    public static let maximumDelayMilliseconds: Int64 = 86_400_000
    /// The longest planned break (1 hour).
    public static let maximumBreakMilliseconds: Int64 = 3_600_000
    /// The most assets in one pod.
    public static let maximumPodAssets = 100
    /// The most breaks a channel may hold that have not aired yet (scheduled, not cancelled): a break beyond it is
    /// refused (``ScheduleError/tooManyFutureBreaks(channel:limit:)``). Every read of the schedule and every check of
    /// a new break walks them. Decided on new commands only: a log that already holds more still folds.
    public static let maximumFutureBreaks = 1000

    /// Reasons and client attribute values, in UTF-8 bytes.
    public static let textBytes = 1024
    /// Actors and command ids (`Idempotency-Key`), in UTF-8 bytes.
    public static let labelBytes = 200
    /// URIs, in bytes.
    public static let uriBytes = 2048

    /// `instant` if it lies in `instants`, else an error naming `field`.
    @discardableResult
    public static func check(instant: Timestamp, field: String) throws(ScheduleError) -> Timestamp {
        guard instants.contains(instant) else {
            throw .invalidField(field, "\(instant) is outside \(earliestInstant) … \(latestInstant)")
        }
        return instant
    }

    /// Parses an ISO 8601 instant with a time zone and checks it lies in `instants`.
    public static func instant(_ text: some StringProtocol, field: String) throws(ScheduleError) -> Timestamp {
        guard let parsed = Timestamp(iso8601: String(text)) else {
            let shown =
                text.utf8.count > 64 ? String(text.prefix(64)).debugDescription + "…" : String(text).debugDescription
            throw .invalidField(
                field,
                "\(shown.escapingControlCharacters) is not an ISO 8601 date-time with a time zone (2026-03-01T20:15:00Z)"
            )
        }
        return try check(instant: parsed, field: field)
    }

    /// Seconds given as a JSON number to milliseconds, refusing NaN, negatives and anything over `maximum`.
    public static func milliseconds(seconds: Double, field: String, maximum: Int64 = maximumDelayMilliseconds)
        throws(ScheduleError) -> Int64
    {
        guard seconds.isFinite, seconds >= 0, let value = DecimalNumber.milliseconds(exactly: seconds), value <= maximum
        else {
            throw .invalidField(field, "must be seconds between 0 and \(DecimalNumber(milliseconds: maximum))")
        }
        return value
    }
}
