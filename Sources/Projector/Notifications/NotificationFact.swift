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
    /// The break (nil for a refused command that named none, such as `cancel-current`).
    public var breakID: BreakID?
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
    /// Refused commands: the refusal (they have no log position or version).
    public var refusal: RefusedCommand?

    /// A refused command as notified: its row in `cueline_refusals`, the command and why.
    public struct RefusedCommand: Sendable, Hashable {
        public var id: Int64
        public var command: String
        public var commandID: String
        public var reason: String
    }

    /// `X-Cueline-Delivery`: the same at every retry, on every instance, after a replay.
    public var deliveryID: String {
        if let refusal { return "\(channel.rawValue)/refusal-\(refusal.id)/\(kind.rawValue)" }
        return "\(channel.rawValue)/\(key.position)/\(kind.rawValue)"
    }

    /// The key of a refusal known at `knownAt` with id `id`: after every fact of an earlier instant, before the log's
    /// facts of the same millisecond, among refusals in id order. Log positions are positive, so the refusal's
    /// (`id - 2^62`) never equals one.
    public static func refusalKey(knownAt: Timestamp, id: Int64) -> FactKey {
        FactKey(atMilliseconds: knownAt.milliseconds, position: id &- (1 << 62), rank: NotificationKind.refused.rank)
    }

    /// The POST body: JSON with sorted keys, so that a retry sends the same bytes.
    public func body(subscription: String) -> [UInt8] {
        let payload = Payload(
            delivery: deliveryID, subscription: subscription, channel: channel.rawValue, type: kind.rawValue,
            category: kind.isTimeline ? "timeline" : "commanded", breakID: breakID?.rawValue, at: at.iso8601,
            position: refusal == nil ? key.position : nil, version: refusal == nil ? version : nil, actor: actor,
            source: source, start: start?.iso8601, plannedDuration: plannedDurationMilliseconds.map(Self.seconds),
            playoutLimit: playoutLimitMilliseconds.map(Self.seconds), how: how, refusal: refusal?.id,
            command: refusal?.command, commandID: refusal?.commandID, reason: refusal?.reason)
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
        var breakID: String?
        var at: String
        var position: Int64?
        var version: Int64?
        var actor: String?
        var source: String?
        var start: String?
        var plannedDuration: Decimal?
        var playoutLimit: Decimal?
        var how: String?
        var refusal: Int64?
        var command: String?
        var commandID: String?
        var reason: String?

        enum CodingKeys: String, CodingKey {
            case delivery, subscription, channel, type, category, at, position, version, actor, source, start, how
            case refusal, command, reason
            case commandID = "command_id"
            case breakID = "break_id"
            case plannedDuration = "planned_duration"
            case playoutLimit = "playout_limit"
        }
    }
}

extension NotificationFact {
    /// The fact of a refused command on a channel (`KnownRefusal`, read with the log up to a watermark).
    public init(refused known: KnownRefusal) {
        let refusal = known.refusal
        self.init(
            channel: refusal.channel, kind: .refused, breakID: known.breakID.flatMap { BreakID(stored: $0) },
            at: refusal.decidedAt, key: Self.refusalKey(knownAt: known.knownAt, id: known.id), version: 0,
            actor: refusal.actor, source: refusal.source)
        self.refusal = RefusedCommand(
            id: known.id, command: refusal.command, commandID: refusal.commandID, reason: refusal.reason)
    }
}
