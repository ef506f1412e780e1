import Crypto
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
        public var name: String
        var secret: [UInt8]
        public var toleranceSeconds: Int
        var rules: [Rule]
        /// The dotted path (without `$.`) of the payload's delivery id, if the sender puts one in the signed body.
        var deliveryIDPath: String?
    }

    struct Rule: @unchecked Sendable {
        var when: [String: Any]
        var channel: String
        var command: [String: Any]
    }

    public struct Invalid: Error, CustomStringConvertible {
        public var description: String
    }

    public var hooks: [String: Hook]

    public init() { hooks = [:] }

    /// Reads a hooks file; every mistake names the hook, the rule and the field.
    public init(file: String, environment: [String: String]) throws {
        guard let data = FileManager.default.contents(atPath: file) else { throw Invalid(description: "cannot read hooks file \(file)") }
        try self.init(json: data, environment: environment, origin: file)
    }

    public init(json data: Data, environment: [String: String], origin: String = "hooks") throws {
        guard let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any], let list = root["hooks"] as? [[String: Any]] else {
            throw Invalid(description: "\(origin): expected {\"hooks\": [ … ]}")
        }
        hooks = [:]
        for (index, entry) in list.enumerated() {
            guard let name = entry["name"] as? String, Identifier.isValid(name) else {
                throw Invalid(description: "\(origin): hook \(index + 1): name must be \(Identifier.rule)")
            }
            let secret: String
            if let direct = entry["secret"] as? String {
                secret = direct
            } else if let variable = entry["secret_env"] as? String {
                guard let value = environment[variable], !value.isEmpty else {
                    throw Invalid(description: "\(origin): hook \(name): environment variable \(variable) (secret_env) is not set")
                }
                secret = value
            } else {
                throw Invalid(description: "\(origin): hook \(name): give secret_env (or secret)")
            }
            guard secret.utf8.count >= 16 else { throw Invalid(description: "\(origin): hook \(name): the secret must be at least 16 bytes") }
            let tolerance = entry["tolerance_seconds"] as? Int ?? 300
            guard (1...3600).contains(tolerance) else { throw Invalid(description: "\(origin): hook \(name): tolerance_seconds must be 1…3600") }
            guard let rules = entry["rules"] as? [[String: Any]], !rules.isEmpty else {
                throw Invalid(description: "\(origin): hook \(name): rules must be a non-empty list")
            }
            var parsed: [Rule] = []
            for (number, rule) in rules.enumerated() {
                let at = "\(origin): hook \(name) rule \(number + 1)"
                guard let when = rule["when"] as? [String: Any], !when.isEmpty else { throw Invalid(description: "\(at): when must be a non-empty object") }
                guard let channel = rule["channel"] as? String else { throw Invalid(description: "\(at): channel is required") }
                guard Identifier.isValid(channel) else { throw Invalid(description: "\(at): channel must be \(Identifier.rule)") }
                guard let command = rule["command"] as? [String: Any], let type = command["command"] as? String else {
                    throw Invalid(description: "\(at): command must be an object with a command field")
                }
                guard ["place_break", "set_playout_limit", "cancel_current_event", "cancel_break"].contains(type) else {
                    throw Invalid(description: "\(at): command \(type.debugDescription) is not a schedule command")
                }
                parsed.append(Rule(when: when, channel: channel, command: command))
            }
            var deliveryIDPath: String?
            if let path = entry["delivery_id"] {
                guard let text = path as? String, text.hasPrefix("$."), text.count > 2 else {
                    throw Invalid(description: "\(origin): hook \(name): delivery_id must be a payload path such as \"$.id\"")
                }
                deliveryIDPath = String(text.dropFirst(2))
            }
            guard hooks[name] == nil else { throw Invalid(description: "\(origin): hook \(name) is defined twice") }
            hooks[name] = Hook(
                name: name, secret: Array(secret.utf8), toleranceSeconds: tolerance, rules: parsed, deliveryIDPath: deliveryIDPath)
        }
    }
}

extension HookSet.Hook {
    /// Why this delivery is not authentic or too old, or nil when it is good.
    func rejection(body: [UInt8], timestamp: String?, signature: String?, now: Timestamp) -> String? {
        guard let timestamp, let seconds = Int64(timestamp) else {
            return "X-Cueline-Timestamp (Unix seconds) is missing or not a number"
        }
        guard let signature, signature.hasPrefix("sha256=") else {
            return "X-Cueline-Signature must be sha256=<hex HMAC-SHA256 of timestamp.body>"
        }
        let expected = HMAC<SHA256>.authenticationCode(for: Array(timestamp.utf8) + [UInt8(ascii: ".")] + body, using: SymmetricKey(data: secret))
        let given = Array(signature.dropFirst(7).utf8)
        let wanted = Array(expected.map { $0 < 16 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined().utf8)
        // Constant time: the comparison does not stop at the first differing byte.
        guard given.count == wanted.count, zip(given, wanted).reduce(UInt8(0), { $0 | ($1.0 ^ $1.1) }) == 0 else {
            return "the signature does not match the body under hook \(name)'s secret"
        }
        // In whole seconds and checked: a signed timestamp of Int64.max must be refused, not multiplied into a trap.
        let (skew, overflow) = (now.milliseconds / 1000).subtractingReportingOverflow(seconds)
        guard !overflow, skew.magnitude <= UInt64(toleranceSeconds) else {
            return "the timestamp is \(overflow ? "far" : "\(skew) s") from the server clock; deliveries more than \(toleranceSeconds) s off are refused (replay protection)"
        }
        return nil
    }

    /// The command id of an authentic delivery, from signed material only: the payload's delivery id when the hook
    /// names one, else the signed timestamp and body. A replay of a captured delivery, whatever headers it adds, is
    /// the same command.
    func commandID(payload: Any, timestamp: String, body: [UInt8]) throws(CommandRequest.Invalid) -> String {
        guard let path = deliveryIDPath else {
            return "hook:\(name):\(sha256Hex(Array(timestamp.utf8) + [UInt8(ascii: ".")] + body))"
        }
        let id: String
        switch value(at: path, in: payload) {
        case let text as String where !text.isEmpty: id = text
        case let number as NSNumber: id = number.stringValue
        default: throw CommandRequest.Invalid(field: "$." + path, reason: "is not in the payload (the hook's delivery_id)")
        }
        return "hook:\(name):id:\(sha256Hex(id))"
    }

    /// The first matching rule's channel and command body, with `$.path` values filled in from the payload.
    func match(_ payload: Any) throws(CommandRequest.Invalid) -> (channel: String, command: Data)? {
        for rule in rules where rule.when.allSatisfy({ same(value(at: $0.key, in: payload), $0.value) }) {
            let filled = try fill(rule.command, from: payload)
            guard let data = try? JSONSerialization.data(withJSONObject: filled, options: [.sortedKeys]) else { return nil }
            return (rule.channel, data)
        }
        return nil
    }

    private func fill(_ object: [String: Any], from payload: Any) throws(CommandRequest.Invalid) -> [String: Any] {
        var out: [String: Any] = [:]
        for (key, template) in object {
            if let text = template as? String, text.hasPrefix("$.") {
                guard let found = value(at: String(text.dropFirst(2)), in: payload) else {
                    throw CommandRequest.Invalid(field: text, reason: "is not in the payload (needed for \(key))")
                }
                out[key] = found
            } else {
                out[key] = template
            }
        }
        return out
    }
}

private func value(at path: String, in payload: Any) -> Any? {
    var current: Any? = payload
    for part in path.split(separator: ".") {
        current = (current as? [String: Any])?[String(part)]
    }
    return current
}

private func same(_ lhs: Any?, _ rhs: Any) -> Bool {
    switch (lhs, rhs) {
    case (let a as String, let b as String): return a == b
    case (let a as NSNumber, let b as NSNumber): return a == b
    default: return false
    }
}

extension Routes {
    static func addHookRoute(to router: Router<BasicRequestContext>, hooks: HookSet, follower: ChannelFollower, handler: CommandHandler) {
        router.post("/hooks/{name}") { request, context -> Response in
            let name = try context.parameters.require("name")
            guard let hook = hooks.hooks[name] else { return errorResponse(.notFound, "no hook is named \(name)") }
            let body = Array(buffer: try await request.body.collect(upTo: 64 * 1024))
            let timestamp = request.headers[HTTPField.Name("X-Cueline-Timestamp")!]
            let signature = request.headers[HTTPField.Name("X-Cueline-Signature")!]
            if let rejection = hook.rejection(body: body, timestamp: timestamp, signature: signature, now: follower.clock()) {
                return errorResponse(.unauthorized, rejection, field: "X-Cueline-Signature")
            }
            guard let payload = try? JSONSerialization.jsonObject(with: Data(body)) else {
                return errorResponse(.unprocessableContent, "the payload is not JSON", field: "body")
            }
            let matched: (channel: String, command: Data)?
            let parsed: CommandRequest
            let command: ScheduleCommand
            let commandID: String
            do {
                commandID = try hook.commandID(payload: payload, timestamp: timestamp ?? "", body: body)
                matched = try hook.match(payload)
                guard let matched else {
                    return jsonResponse(HookIgnored(hook: name, ignored: "no rule of hook \(name) matches this payload"))
                }
                parsed = try decodeJSON(CommandRequest.self, matched.command).get()
                command = try parsed.scheduleCommand()
            } catch let invalid as CommandRequest.Invalid {
                return errorResponse(.unprocessableContent, "\(invalid.field) \(invalid.reason)", field: invalid.field)
            } catch {
                return errorResponse(.unprocessableContent, "the rule's command does not decode with this payload: \(error)", field: "body")
            }
            // Replays inside the window are harmless: the same signed delivery is one command.
            return await execute(
                command, channel: matched!.channel, request: request, actor: "hook:\(name)", source: "hook", reason: parsed.reason,
                handler: handler, follower: follower, commandID: commandID)
        }
    }
}

struct HookIgnored: Encodable {
    var hook: String
    var ignored: String
}
