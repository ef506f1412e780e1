import Foundation
import HLS
import Logging
import Schedule

/// A bearer token of the HTTP API, as stored (the secret itself is never stored, only its SHA-256).
public struct APIToken: Hashable, Sendable, Codable {
    public enum Role: String, Hashable, Sendable, Codable, CaseIterable {
        /// Every command and every read, on every channel or the listed ones.
        case `operator`
        /// Only the listed command types on the listed channels, and reads of those channels.
        case automation
        /// Reads only.
        case viewer
    }

    /// Command types a token may be scoped to: the `command` values of `POST …/commands`.
    public static let commandTypes = ScheduleCommand.Kind.api.map(\.rawValue)

    public var name: String
    public var role: Role
    /// Empty: every channel (not allowed for automation).
    public var channels: [ChannelID]
    /// Automation only; empty: every command type.
    public var commands: [ScheduleCommand.Kind]
    public var createdAt: String
    public var createdBy: String
    public var revokedAt: String?

    public init(
        name: String, role: Role, channels: [ChannelID] = [], commands: [ScheduleCommand.Kind] = [],
        createdAt: String = "",
        createdBy: String = "", revokedAt: String? = nil
    ) {
        self.name = name
        self.role = role
        self.channels = channels
        self.commands = commands
        self.createdAt = createdAt
        self.createdBy = createdBy
        self.revokedAt = revokedAt
    }

    public func mayRead(channel: ChannelID) -> Bool {
        channels.isEmpty || channels.contains(channel)
    }

    /// Why this token may not send `command` to `channel`, or nil when it may.
    public func refusal(command: String, channel: ChannelID) -> String? {
        switch role {
        case .viewer:
            return "token \(name) is a viewer token: it can read, not send commands"
        case .operator, .automation:
            guard mayRead(channel: channel) else { return "token \(name) is not allowed on channel \(channel)" }
            guard commands.isEmpty || commands.contains(where: { $0.rawValue == command }) else {
                return "token \(name) may send only \(commands.map(\.rawValue).joined(separator: ", ")), not \(command)"
            }
            return nil
        }
    }

    /// A token's scope from text (`cueline token create --channel … --command …`, a stored row): each channel an
    /// identifier, each command one the API takes; the field is named when one is not.
    public static func scope(channels: [String], commands: [String]) throws(TokenError) -> (
        channels: [ChannelID], commands: [ScheduleCommand.Kind]
    ) {
        var channelIDs: [ChannelID] = []
        for channel in channels {
            guard let id = ChannelID(channel) else {
                throw .invalid(field: "channel", reason: "\(channel.debugDescription) is not a channel id")
            }
            channelIDs.append(id)
        }
        var kinds: [ScheduleCommand.Kind] = []
        for command in commands {
            guard let kind = ScheduleCommand.Kind(rawValue: command), ScheduleCommand.Kind.api.contains(kind) else {
                throw .invalid(
                    field: "command",
                    reason: "\(command.debugDescription) is not one of \(commandTypes.joined(separator: ", "))")
            }
            kinds.append(kind)
        }
        return (channelIDs, kinds)
    }

    /// Checks a token's name and that its scope fits its role; the database enforces the same rules.
    public static func validate(name: String, role: Role, channels: [ChannelID], commands: [ScheduleCommand.Kind])
        throws(TokenError)
    {
        guard Identifier.isValidTokenName(name) else {
            throw .invalid(
                field: "name", reason: "\(name.debugDescription) must be 1–64 characters of a-z, 0-9, '.', '_' or '-'")
        }
        if role == .automation && channels.isEmpty {
            throw .invalid(field: "channel", reason: "an automation token needs at least one --channel")
        }
        if role != .automation && !commands.isEmpty {
            throw .invalid(field: "command", reason: "only automation tokens are scoped to command types")
        }
    }
}

public enum TokenError: Error, Hashable, Sendable, CustomStringConvertible {
    case invalid(field: String, reason: String)
    case nameTaken(String)
    case unknown(String)

    public var description: String {
        switch self {
        case .invalid(let field, let reason): return "\(field): \(reason)"
        case .nameTaken(let name): return "a token named \(name) exists already; revoke it or choose another name"
        case .unknown(let name): return "no active token is named \(name)"
        }
    }
}

/// Token secrets: `cue_` and 64 hex digits of system randomness; stored as their SHA-256.
public enum TokenSecret {
    public static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        return "cue_" + hexDigits((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    public static func digest(_ secret: String) -> String {
        sha256Hex(secret)
    }

    /// Whether `secret` has the shape `generate()` gives (`cue_` and 64 lowercase hex digits): anything else is
    /// refused before it is hashed or looked up.
    public static func isWellFormed(_ secret: some StringProtocol) -> Bool {
        let bytes = secret.utf8
        guard bytes.count == 68, secret.hasPrefix("cue_") else { return false }
        return bytes.dropFirst(4).allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}
