import EventStore
import Foundation
import HLS
import HTTPTypes
import Hummingbird
import Projector
import Schedule

/// Feed hooks: `POST /hooks/{name}` turns a signed JSON payload from a scoring or news feed into a command,
/// by rules an engineer writes in a hooks file (`serve --hooks FILE`):
///
///     {"hooks": [{"name": "scores", "secret_env": "CUELINE_HOOK_SCORES_SECRET", "tolerance_seconds": 300,
///       "rules": [
///         {"when": {"event": "goal"}, "channel": "match-1", "command": {"command": "cancel_current_event"}},
///         {"when": {"event": "timeout"}, "channel": "match-1",
///          "command": {"command": "place_break", "in": 10, "duration": "$.seconds", "asset_list": "https://ads.example/x"}}
///       ]}]}
///
/// A delivery carries `X-Cueline-Timestamp` (Unix seconds) and `X-Cueline-Signature: sha256=<hex>`, the
/// HMAC-SHA256 of `<timestamp>.<body>` under the hook's secret. The first rule whose `when` fields all equal the
/// payload's (dotted paths) is applied on its channel; `"$.path"` values in the command are taken from the payload.
///
/// A delivery is applied once: its command id comes only from signed material, the payload's delivery id when the
/// hook names one (`"delivery_id": "$.id"`, for senders that re-sign a retry with a new timestamp), else the
/// signed timestamp and body. An `Idempotency-Key` header is not signed, so it is ignored.
public struct HookSet: Sendable {
    public struct Hook: Sendable {
        public var name: Identifier
        var secret: [UInt8]
        public var toleranceSeconds: Int
        var rules: [Rule]
        /// The dotted path (without `$.`) of the payload's delivery id, if the sender puts one in the signed body.
        var deliveryIDPath: String?
    }

    /// A rule: when every `when` path of a payload equals its value, `command` (with `$.path` values filled in from
    /// the payload) is sent to `channel`.
    struct Rule: Sendable, Decodable {
        var when: [String: JSONValue]
        /// Decoded by today's rule: a file naming an id off it is refused at load, naming where.
        var channel: ChannelID
        var command: [String: JSONValue]
    }

    /// The hooks file as written (snake_case keys).
    struct File: Decodable {
        var hooks: [Entry]

        struct Entry: Decodable {
            var name: String
            var secret: String?
            var secretEnv: String?
            var toleranceSeconds: Int?
            var rules: [Rule]
            var deliveryID: String?

            enum CodingKeys: String, CodingKey {
                case name, secret, rules
                case secretEnv = "secret_env"
                case toleranceSeconds = "tolerance_seconds"
                case deliveryID = "delivery_id"
            }
        }
    }

    public struct Invalid: Error, CustomStringConvertible {
        public var description: String
    }

    public var hooks: [Identifier: Hook]

    public init() { hooks = [:] }

    /// Reads a hooks file; every mistake names the hook, the rule and the field.
    public init(file: String, environment: [String: String]) throws {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw Invalid(description: "cannot read hooks file \(file)")
        }
        try self.init(json: data, environment: environment, origin: file)
    }

    public init(json data: Data, environment: [String: String], origin: String = "hooks") throws {
        let file: File
        do {
            // Keys as written: a strategy would rename the keys of `when` and `command` too.
            file = try JSONDecoder().decode(File.self, from: data)
        } catch let error as DecodingError {
            throw Invalid(description: "\(origin): \(Self.describe(error))")
        } catch {
            throw Invalid(description: "\(origin): expected {\"hooks\": [ … ]}: \(error)")
        }
        hooks = [:]
        for (index, entry) in file.hooks.enumerated() {
            guard let name = Identifier(entry.name) else {
                throw Invalid(description: "\(origin): hook \(index + 1): name must be \(Identifier.rule)")
            }
            let secret: String
            if let direct = entry.secret {
                secret = direct
            } else if let variable = entry.secretEnv {
                guard let value = environment[variable], !value.isEmpty else {
                    throw Invalid(
                        description: "\(origin): hook \(name): environment variable \(variable) (secret_env) is not set"
                    )
                }
                secret = value
            } else {
                throw Invalid(description: "\(origin): hook \(name): give secret_env (or secret)")
            }
            guard secret.utf8.count >= 16 else {
                throw Invalid(description: "\(origin): hook \(name): the secret must be at least 16 bytes")
            }
            let tolerance = entry.toleranceSeconds ?? 300
            guard (1...3600).contains(tolerance) else {
                throw Invalid(description: "\(origin): hook \(name): tolerance_seconds must be 1…3600")
            }
            guard !entry.rules.isEmpty else {
                throw Invalid(description: "\(origin): hook \(name): rules must be a non-empty list")
            }
            for (number, rule) in entry.rules.enumerated() {
                let at = "\(origin): hook \(name) rule \(number + 1)"
                guard !rule.when.isEmpty else { throw Invalid(description: "\(at): when must be a non-empty object") }
                guard case .string(let type)? = rule.command["command"] else {
                    throw Invalid(description: "\(at): command must be an object with a command field")
                }
                guard APIToken.commandTypes.contains(type) else {
                    throw Invalid(description: "\(at): command \(type.debugDescription) is not a schedule command")
                }
            }
            var deliveryIDPath: String?
            if let path = entry.deliveryID {
                guard path.hasPrefix("$."), path.count > 2 else {
                    throw Invalid(
                        description: "\(origin): hook \(name): delivery_id must be a payload path such as \"$.id\"")
                }
                deliveryIDPath = String(path.dropFirst(2))
            }
            guard hooks[name] == nil else { throw Invalid(description: "\(origin): hook \(name) is defined twice") }
            hooks[name] = Hook(
                name: name, secret: Array(secret.utf8), toleranceSeconds: tolerance, rules: entry.rules,
                deliveryIDPath: deliveryIDPath)
        }
    }

    /// A decoding mistake, named by where it is in the file (`hooks[0].rules[1].channel is required`).
    private static func describe(_ error: DecodingError) -> String {
        let problem = DecodingProblem(error, snakeCase: false)
        return problem.field == "body"
            ? problem.reason.replacingOccurrences(of: "is not valid JSON", with: "not JSON")
            : "\(problem.field) \(problem.reason)"
    }
}

extension HookSet.Hook {
    /// Why this delivery is not authentic or too old, with the header to look at, or nil when it is good.
    func rejection(body: [UInt8], timestamp: String?, signature: String?, now: Timestamp) -> (
        field: String, reason: String
    )? {
        guard let signature, signature.hasPrefix("sha256=") else {
            return ("X-Cueline-Signature", "X-Cueline-Signature must be sha256=<hex HMAC-SHA256 of timestamp.body>")
        }
        guard let timestamp, let seconds = Int64(timestamp) else {
            return ("X-Cueline-Timestamp", "X-Cueline-Timestamp (Unix seconds) is missing or not a number")
        }
        let expected = hmacSHA256(key: Array(secret), message: Array(timestamp.utf8) + [UInt8(ascii: ".")] + body)
        let given = Array(signature.dropFirst(7).utf8)
        let wanted = Array(hexDigits(expected).utf8)
        // Constant time: the comparison does not stop at the first differing byte.
        guard given.count == wanted.count, zip(given, wanted).reduce(UInt8(0), { $0 | ($1.0 ^ $1.1) }) == 0 else {
            return ("X-Cueline-Signature", "the signature does not match the body under hook \(name)'s secret")
        }
        // In whole seconds and checked: a signed timestamp of Int64.max must be refused, not multiplied into a trap.
        let (skew, overflow) = (now.milliseconds / 1000).subtractingReportingOverflow(seconds)
        guard !overflow, skew.magnitude <= UInt64(toleranceSeconds) else {
            return (
                "X-Cueline-Timestamp",
                "the timestamp is \(overflow ? "far" : "\(skew) s") from the server clock; deliveries more than \(toleranceSeconds) s off are refused (replay protection)"
            )
        }
        return nil
    }

    /// The command id of an authentic delivery, from signed material only: the payload's delivery id when the hook
    /// names one, else the signed timestamp and body. A replay of a captured delivery, whatever headers it adds, is
    /// the same command.
    func commandID(payload: JSONValue, timestamp: String, body: [UInt8]) throws(CommandRequest.Invalid) -> String {
        guard let path = deliveryIDPath else {
            return "hook:\(name):\(sha256Hex(Array(timestamp.utf8) + [UInt8(ascii: ".")] + body))"
        }
        let id: String
        switch payload[path: path] {
        case .string(let text)? where !text.isEmpty: id = text
        case .integer(let number)?: id = String(number)
        case .number(let number)?: id = "\(number)"
        default:
            throw CommandRequest.Invalid(field: "$." + path, reason: "is not in the payload (the hook's delivery_id)")
        }
        return "hook:\(name):id:\(sha256Hex(id))"
    }

    /// The first matching rule's channel and command, with `$.path` values filled in from the payload.
    ///
    /// - Throws: when a `$.path` the command needs is not in the payload; the command itself is not decoded here.
    func match(_ payload: JSONValue) throws(CommandRequest.Invalid) -> (channel: ChannelID, command: JSONValue)? {
        for rule in rules where rule.when.allSatisfy({ payload[path: $0.key]?.sameValue(as: $0.value) == true }) {
            var filled: [String: JSONValue] = [:]
            for (key, template) in rule.command {
                guard case .string(let text) = template, text.hasPrefix("$.") else {
                    filled[key] = template
                    continue
                }
                guard let found = payload[path: String(text.dropFirst(2))] else {
                    throw CommandRequest.Invalid(field: text, reason: "is not in the payload (needed for \(key))")
                }
                filled[key] = found
            }
            return (rule.channel, .object(filled))
        }
        return nil
    }
}

struct HookIgnored: Encodable {
    var hook: String
    var ignored: String
}
