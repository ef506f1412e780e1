import Foundation
import Schedule
import Synchronization

/// Tokens held in memory: for tests and in-process servers over the in-memory event store.
public final class InMemoryTokenStore: TokenStore {
    private struct Entry {
        var digest: String
        var token: APIToken
    }

    /// By name, in creation order.
    private let entries: Mutex<[Entry]>

    public init() {
        entries = Mutex([])
    }

    /// - Parameter tokens: secret → token, as if created with these secrets.
    public init(_ tokens: [String: APIToken]) {
        entries = Mutex(tokens.map { Entry(digest: TokenSecret.digest($0.key), token: $0.value) })
    }

    public func token(digest: String) async throws -> APIToken? {
        entries.withLock { entries in
            entries.first { $0.digest == digest && $0.token.revokedAt == nil }?.token
        }
    }

    public func activeTokens() async throws -> [String: APIToken] {
        entries.withLock { entries in
            var tokens: [String: APIToken] = [:]
            for entry in entries where entry.token.revokedAt == nil { tokens[entry.digest] = entry.token }
            return tokens
        }
    }

    public func create(
        name: String, role: APIToken.Role, channels: [ChannelID], commands: [ScheduleCommand.Kind], createdBy: String
    ) async throws -> String {
        try APIToken.validate(name: name, role: role, channels: channels, commands: commands)
        let secret = TokenSecret.generate()
        let token = APIToken(
            name: name, role: role, channels: channels, commands: commands, createdAt: Self.now(),
            createdBy: createdBy)
        try entries.withLock { entries throws(TokenError) in
            guard !entries.contains(where: { $0.token.name == name }) else { throw .nameTaken(name) }
            entries.append(Entry(digest: TokenSecret.digest(secret), token: token))
        }
        return secret
    }

    public func list() async throws -> [APIToken] {
        entries.withLock { $0.map(\.token) }.sorted { $0.name < $1.name }
    }

    public func revoke(name: String) async throws {
        let now = Self.now()
        try entries.withLock { entries throws(TokenError) in
            guard let index = entries.firstIndex(where: { $0.token.name == name && $0.token.revokedAt == nil }) else {
                throw .unknown(name)
            }
            entries[index].token.revokedAt = now
        }
    }

    /// The time in the format `PostgresTokenStore` reads it in (`2026-03-01T12:00:00Z`).
    private static func now() -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: Date())
    }
}
