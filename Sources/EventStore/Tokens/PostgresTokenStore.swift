import Logging
import Postgres
import Schedule

/// Tokens in `cueline_tokens` (Migrations/0004_tokens.sql).
public struct PostgresTokenStore: TokenStore {
    let pool: PostgresPool
    let logger: Logger

    public init(pool: PostgresPool, logger: Logger = Logger(label: "cueline.tokens")) {
        self.pool = pool
        self.logger = logger
    }

    static let columns = """
        name, role, array_to_string(channels, ','), array_to_string(commands, ','), \
        to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), created_by, \
        to_char(revoked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
        """

    public func token(digest: String) async throws -> APIToken? {
        try await storeErrors {
            try await pool.withConnection { connection in
                try await connection.query(
                    "SELECT \(unescaped: Self.columns) FROM cueline_tokens WHERE token_sha256 = \(digest) AND revoked_at IS NULL"
                ).rows.first.flatMap(Self.readable)
            }
        }
    }

    public func activeTokens() async throws -> [String: APIToken] {
        try await storeErrors {
            try await pool.withConnection { connection in
                let rows = try await connection.query(
                    "SELECT token_sha256, \(unescaped: Self.columns) FROM cueline_tokens WHERE revoked_at IS NULL"
                ).rows
                var tokens: [String: APIToken] = [:]
                for row in rows {
                    if let token = Self.readable(Array(row.dropFirst())) {
                        tokens[try row.string(0, "token_sha256")] = token
                    }
                }
                return tokens
            }
        }
    }

    public func create(
        name: String, role: APIToken.Role, channels: [ChannelID], commands: [ScheduleCommand.Kind], createdBy: String
    ) async throws -> String {
        try APIToken.validate(name: name, role: role, channels: channels, commands: commands)
        let secret = TokenSecret.generate()
        try await storeErrors {
            do {
                try await pool.withConnection { connection in
                    try await connection.query(
                        """
                        INSERT INTO cueline_tokens (name, role, channels, commands, token_sha256, created_by) VALUES \
                        (\(name), \(role.rawValue), string_to_array(\(channels.map(\.rawValue).joined(separator: ",")), ','), \
                        string_to_array(\(commands.map(\.rawValue).joined(separator: ",")), ','), \(TokenSecret.digest(secret)), \(createdBy))
                        """)
                }
            } catch let error as PostgresError
                where error.isUniqueViolation && error.constraint == "cueline_tokens_pkey"
            {
                throw TokenError.nameTaken(name)
            }
        }
        return secret
    }

    public func list() async throws -> [APIToken] {
        try await storeErrors {
            try await pool.withConnection { connection in
                try await connection.query("SELECT \(unescaped: Self.columns) FROM cueline_tokens ORDER BY name").rows
                    .compactMap(Self.readable)
            }
        }
    }

    public func revoke(name: String) async throws {
        let revoked = try await storeErrors {
            try await pool.withConnection { connection in
                try await connection.query(
                    "UPDATE cueline_tokens SET revoked_at = clock_timestamp() WHERE name = \(name) AND revoked_at IS NULL RETURNING name"
                ).rows.count
            }
        }
        guard revoked == 1 else { throw TokenError.unknown(name) }
    }

    /// A row as a token, or nil (logged) when this build cannot read it: that token is refused (401) and left out of
    /// lists, and every other token keeps working; `cueline token revoke NAME` still revokes it by name.
    static func readable(_ row: [String?]) -> APIToken? {
        do {
            return try decode(row)
        } catch {
            Logger(label: "cueline.tokens").error(
                "token not accepted; revoke it or use a newer build", metadata: ["error": "\(error)"])
            return nil
        }
    }

    static func decode(_ row: [String?]) throws -> APIToken {
        func list(_ index: Int) -> [String] {
            (row.optionalString(index) ?? "").split(separator: ",").map(String.init)
        }
        let name = try row.string(0, "name")
        // A scope this build cannot read (a command type of a newer build) makes the token unusable here, never
        // wider: an automation token whose commands were dropped would be allowed every command.
        let scope: (channels: [ChannelID], commands: [ScheduleCommand.Kind])
        do {
            scope = try APIToken.scope(channels: list(2), commands: list(3))
        } catch {
            throw StoreError.database("token \(name) has a scope this build cannot read (\(error)); it is not accepted")
        }
        return APIToken(
            name: name, role: APIToken.Role(rawValue: try row.string(1, "role")) ?? .viewer,
            channels: scope.channels, commands: scope.commands, createdAt: try row.string(4, "created_at"),
            createdBy: try row.string(5, "created_by"), revokedAt: row.optionalString(6))
    }

    private func storeErrors<T>(_ body: () async throws -> T) async throws -> T {
        try await StoreErrors.map(logger: logger, body)
    }
}
