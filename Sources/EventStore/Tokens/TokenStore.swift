import Schedule

/// The API tokens: what `cueline token …` writes and what the server's token cache reads.
///
/// Its own small store, apart from the event log: tokens are mutable rows (revocation), not events.
/// Implementations: `PostgresTokenStore` (`cueline_tokens`) and `InMemoryTokenStore` (tests, in-process servers);
/// both pass the same contract tests.
public protocol TokenStore: Sendable {
    /// The active (not revoked) token with this SHA-256, or nil.
    func token(digest: String) async throws -> APIToken?

    /// Every active (not revoked) token by the SHA-256 of its secret, read at once: the server holds this small
    /// table in memory, so that checking a bearer token never queries the database.
    func activeTokens() async throws -> [String: APIToken]

    /// Creates a token and returns its secret, which is not stored and cannot be shown again.
    ///
    /// - Throws: `TokenError.invalid` naming the field, `TokenError.nameTaken` when the name was ever used
    ///   (revoked names stay taken, so the actor names in the log stay explained).
    func create(
        name: String, role: APIToken.Role, channels: [ChannelID], commands: [ScheduleCommand.Kind], createdBy: String
    )
        async throws -> String

    /// Every token, revoked ones included, by name.
    func list() async throws -> [APIToken]

    /// Revokes the active token with this name.
    ///
    /// - Throws: `TokenError.unknown` when no active token has this name.
    func revoke(name: String) async throws
}

/// The name the server's `TokenCache` reads tokens through.
public typealias TokenDirectory = TokenStore
