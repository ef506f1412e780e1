import EventStore
import Foundation
import HLS
import Schedule

/// One thing a subscriber is told: what was commanded on a channel, or what happened on its timeline.
///
/// Every field comes from the log and the channel's timeline arithmetic, never from the clock of the instance that
/// derived it, so every instance and a replay derive the same facts with the same ids and bodies.
public struct NotificationFact: Sendable, Hashable {
    public var channel: ChannelID
    public var kind: NotificationKind
    public var breakID: BreakID
    /// The instant the fact is about: the decision for commanded facts; the break's start (on air), its end (aired,
    /// ended early), the cancellation (removed) for timeline facts.
    public var at: Timestamp
    /// Where the fact stands in its channel's order; also the point a subscription's cursor stops at.
    public var key: FactKey
    /// The version of the event the fact comes from (`key.position` is its log position).
    public var version: Int64
    /// Commanded facts: who, through which door.
    public var actor: String?
    public var source: String?
    /// Placed and timeline facts: the break's start and planned duration.
    public var start: Timestamp?
    public var plannedDurationMilliseconds: Int64?
    /// Limited and ended early: the playout limit; how it was limited or cancelled.
    public var playoutLimitMilliseconds: Int64?
    public var how: String?

    /// `X-Cueline-Delivery`: the same at every retry, on every instance, after a replay.
    public var deliveryID: String { "\(channel.rawValue)/\(key.position)/\(kind.rawValue)" }

    /// The POST body: JSON with sorted keys, so that a retry sends the same bytes.
    public func body(subscription: String) -> [UInt8] {
        let payload = Payload(
            delivery: deliveryID, subscription: subscription, channel: channel.rawValue, type: kind.rawValue,
            category: kind.isTimeline ? "timeline" : "commanded", breakID: breakID.rawValue, at: at.iso8601,
            position: key.position, version: version, actor: actor, source: source, start: start?.iso8601,
            plannedDuration: plannedDurationMilliseconds.map(Self.seconds),
            playoutLimit: playoutLimitMilliseconds.map(Self.seconds), how: how)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Strings and integers only: encoding cannot fail.
        return Array((try? encoder.encode(payload)) ?? Data())
    }

    /// Seconds with milliseconds, as the rest of the API writes durations (`30`, `12.5`).
    static func seconds(_ milliseconds: Int64) -> Decimal {
        Decimal(milliseconds) / 1000
    }

    struct Payload: Encodable {
        var delivery: String
        var subscription: String
        var channel: String
        var type: String
        var category: String
        var breakID: String
        var at: String
        var position: Int64
        var version: Int64
        var actor: String?
        var source: String?
        var start: String?
        var plannedDuration: Decimal?
        var playoutLimit: Decimal?
        var how: String?

        enum CodingKeys: String, CodingKey {
            case delivery, subscription, channel, type, category, at, position, version, actor, source, start, how
            case breakID = "break_id"
            case plannedDuration = "planned_duration"
            case playoutLimit = "playout_limit"
        }
    }
}
