import HLS
import Schedule

/// Tamper evidence: every event's hash covers its content and the hash of the previous event of its channel.
///
/// The bytes hashed are `previous hash` + `\n` + a JSON array of the event's fields in a fixed order, so editing
/// any field of any event (or removing or reordering one) breaks every later link of that channel.
public enum HashChain {
    /// The "previous hash" of a channel's first event.
    public static func genesis(channel: ChannelID) -> String {
        sha256Hex("cueline-chain-v1:" + channel.rawValue)
    }

    public static func hash(previous: String, event: RecordedEvent) -> String {
        func quoted(_ text: String) -> String {
            var out = "\""
            for scalar in text.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case _ where scalar.value < 0x20:
                    out +=
                        "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
                        + String(scalar.value, radix: 16)
                default: out.unicodeScalars.append(scalar)
                }
            }
            return out + "\""
        }
        let fields = [
            quoted(event.channel.rawValue), String(event.version), quoted(event.type), String(event.schemaVersion),
            quoted(event.payload),
            quoted(event.decidedAt.iso8601), quoted(event.actor), quoted(event.source), quoted(event.commandID),
            event.reason.map(quoted) ?? "null",
        ]
        return sha256Hex(previous + "\n[" + fields.joined(separator: ",") + "]")
    }

    /// The first event of a channel whose stored hash does not match its content and predecessor.
    public struct Break: Sendable, Hashable, CustomStringConvertible {
        public var event: RecordedEvent
        public var expected: String
        public var stored: String?

        public var description: String {
            "event at position \(event.position) (channel \(event.channel), version \(event.version), \(event.type), decided \(event.decidedAt)) "
                + "does not match its hash: stored \(stored.map { String($0.prefix(16)) } ?? "none"), recomputed \(expected.prefix(16)); "
                + "it or an earlier event of the channel was altered"
        }
    }

    /// Checks a channel's events in version order. Events without a stored hash at the start (written before
    /// tamper evidence existed) are skipped; the chain starts from the genesis at the first hashed one.
    public static func verify(_ events: [RecordedEvent]) -> (checked: Int, unchained: Int, firstBreak: Break?) {
        guard let channel = events.first?.channel else { return (0, 0, nil) }
        var previous = genesis(channel: channel)
        var checked = 0
        var unchained = 0
        var started = false
        for event in events {
            guard let stored = event.hash else {
                if started {
                    return (
                        checked, unchained,
                        Break(event: event, expected: hash(previous: previous, event: event), stored: nil)
                    )
                }
                unchained += 1
                continue
            }
            started = true
            let expected = hash(previous: previous, event: event)
            guard expected == stored else {
                return (checked, unchained, Break(event: event, expected: expected, stored: stored))
            }
            previous = stored
            checked += 1
        }
        return (checked, unchained, nil)
    }
}
