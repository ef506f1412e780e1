import Foundation
import HLS
import Schedule

/// A subscriber to signed notifications: where the facts of which channels are POSTed, and the secret that signs them
/// (`cueline subscription create`, Migrations/0015_subscriptions.sql, docs/notifications.md).
public struct Subscription: Sendable, Hashable, Codable {
    public var name: String
    public var url: String
    /// Empty: every channel.
    public var channels: [ChannelID]
    /// Empty: every kind.
    public var events: [NotificationKind]
    /// Not encoded: `list --json` never prints it (only `create` does, once).
    public var secret: String
    public var createdAt: Timestamp
    public var createdBy: String

    public init(
        name: String, url: String, channels: [ChannelID], events: [NotificationKind], secret: String,
        createdAt: Timestamp, createdBy: String
    ) {
        self.name = name
        self.url = url
        self.channels = channels
        self.events = events
        self.secret = secret
        self.createdAt = createdAt
        self.createdBy = createdBy
    }

    enum CodingKeys: String, CodingKey {
        case name, url, channels, events, createdAt, createdBy
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            name: try container.decode(String.self, forKey: .name),
            url: try container.decode(String.self, forKey: .url),
            channels: try container.decode([ChannelID].self, forKey: .channels),
            events: try container.decode([NotificationKind].self, forKey: .events), secret: "",
            createdAt: try container.decode(Timestamp.self, forKey: .createdAt),
            createdBy: try container.decode(String.self, forKey: .createdBy))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(url, forKey: .url)
        try container.encode(channels, forKey: .channels)
        try container.encode(events, forKey: .events)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(createdBy, forKey: .createdBy)
    }

    /// Whether facts of `kind` on `channel` go to this subscriber.
    public func wants(_ kind: NotificationKind, on channel: ChannelID) -> Bool {
        (channels.isEmpty || channels.contains(channel)) && (events.isEmpty || events.contains(kind))
    }

    /// Where a channel's delivery starts when it has no cursor yet: after every fact ordered at or before creation.
    public var initialCursor: FactKey { FactKey(atMilliseconds: createdAt.milliseconds, position: .max, rank: .max) }

    /// Checks what `create` is given; every mistake names the field.
    public static func validate(name: String, url: String) throws(SubscriptionError) {
        guard Identifier.isValidTokenName(name) else {
            throw .invalid(
                field: "name", reason: "\(name.debugDescription) must be 1–64 characters of a-z, 0-9, '.', '_' or '-'")
        }
        guard url.utf8.count <= 2048, url.hasPrefix("http://") || url.hasPrefix("https://"),
            let parsed = URL(string: url), parsed.host?.isEmpty == false
        else {
            throw .invalid(
                field: "url", reason: "\(url.debugDescription) must be an absolute http(s) URL (≤ 2048 bytes)")
        }
    }

    /// A new signing secret: `whsec_` and 64 hex digits of system randomness.
    public static func generateSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        return "whsec_" + hexDigits((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }
}

/// What a notification tells: what was commanded, and what happened on the timeline.
public enum NotificationKind: String, Sendable, Hashable, Codable, CaseIterable {
    case placed, limited, cancelled, refused
    case onAir = "on-air"
    case endedEarly = "ended-early"
    case aired, removed

    /// Commanded facts come from one event each; timeline facts from the log and the clock.
    public var isTimeline: Bool {
        switch self {
        case .placed, .limited, .cancelled, .refused: false
        case .onAir, .endedEarly, .aired, .removed: true
        }
    }

    /// Orders facts with the same instant and position: the command before what it made happen.
    public var rank: Int {
        switch self {
        case .placed, .limited, .cancelled, .refused: 0
        case .onAir: 1
        case .endedEarly, .aired: 2
        case .removed: 3
        }
    }

    /// Every kind, as written on the command line and in payloads.
    public static var names: String { allCases.map(\.rawValue).joined(separator: ", ") }
}

/// The order of a channel's facts, and a subscription's cursor on a channel: the instant the fact became final
/// (milliseconds), the log position it comes from, and its kind's rank.
public struct FactKey: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public var atMilliseconds: Int64
    public var position: Int64
    public var rank: Int

    public init(atMilliseconds: Int64, position: Int64, rank: Int) {
        self.atMilliseconds = atMilliseconds
        self.position = position
        self.rank = rank
    }

    public static func < (lhs: FactKey, rhs: FactKey) -> Bool {
        (lhs.atMilliseconds, lhs.position, lhs.rank) < (rhs.atMilliseconds, rhs.position, rhs.rank)
    }

    public var description: String { "\(atMilliseconds)/\(position)/\(rank)" }
}

public enum SubscriptionError: Error, Hashable, Sendable, CustomStringConvertible {
    case invalid(field: String, reason: String)
    case nameTaken(String)
    case unknown(String)

    public var description: String {
        switch self {
        case .invalid(let field, let reason): return "\(field): \(reason)"
        case .nameTaken(let name):
            return "a subscription named \(name) exists already; delete it or choose another name"
        case .unknown(let name): return "no subscription is named \(name)"
        }
    }
}
