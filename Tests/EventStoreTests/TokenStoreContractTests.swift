import EventStore
import Foundation
import Schedule
import TestSupport
import Testing

/// The token stores every contract test runs against.
enum TokenStoreKind: String, CustomStringConvertible, Sendable {
    case memory, postgres

    static var available: [TokenStoreKind] { TestDatabase.isConfigured ? [.memory, .postgres] : [.memory] }

    func make() -> any TokenStore {
        switch self {
        case .memory: return InMemoryTokenStore()
        case .postgres: return PostgresTokenStore(pool: TestDatabase.makeStore().pool)
        }
    }

    var description: String { rawValue }
}

/// A token name no other test uses.
private func uniqueTokenName() -> String {
    "tok-" + UUID().uuidString.prefix(8).lowercased()
}

@Suite("TokenStore contract (in-memory and PostgreSQL)")
struct TokenStoreContractTests {
    @Test("a created token is found by the digest of its secret, field for field", arguments: TokenStoreKind.available)
    func createAndFind(kind: TokenStoreKind) async throws {
        let store = kind.make()
        let name = uniqueTokenName()
        let secret = try await store.create(
            name: name, role: .automation, channels: ["news", "sport"], commands: [.placeBreak, .cancelBreak],
            createdBy: "alice")
        #expect(TokenSecret.isWellFormed(secret))

        let found = try #require(try await store.token(digest: TokenSecret.digest(secret)))
        #expect(found.name == name)
        #expect(found.role == .automation)
        #expect(found.channels.map(\.rawValue) == ["news", "sport"])
        #expect(found.commands == [.placeBreak, .cancelBreak])
        #expect(found.createdBy == "alice")
        #expect(found.revokedAt == nil)
        #expect(found.createdAt.count == 20 && found.createdAt.hasSuffix("Z"), "\(found.createdAt)")

        #expect(try await store.activeTokens()[TokenSecret.digest(secret)] == found)
        #expect(try await store.list().first { $0.name == name } == found)
        #expect(try await store.token(digest: TokenSecret.digest(TokenSecret.generate())) == nil)
    }

    @Test(
        "a revoked token is no longer active but stays listed, and its name stays taken",
        arguments: TokenStoreKind.available)
    func revoke(kind: TokenStoreKind) async throws {
        let store = kind.make()
        let name = uniqueTokenName()
        let secret = try await store.create(name: name, role: .viewer, channels: [], commands: [], createdBy: "bob")
        let other = try await store.create(
            name: uniqueTokenName(), role: .operator, channels: [], commands: [], createdBy: "bob")

        try await store.revoke(name: name)
        #expect(try await store.token(digest: TokenSecret.digest(secret)) == nil)
        #expect(try await store.activeTokens()[TokenSecret.digest(secret)] == nil)
        #expect(try await store.activeTokens()[TokenSecret.digest(other)]?.role == .operator)
        let listed = try #require(try await store.list().first { $0.name == name })
        #expect(listed.revokedAt != nil)

        await #expect(throws: TokenError.unknown(name)) { try await store.revoke(name: name) }
        await #expect(throws: TokenError.unknown("no-such-token")) { try await store.revoke(name: "no-such-token") }
        await #expect(throws: TokenError.nameTaken(name)) {
            _ = try await store.create(name: name, role: .viewer, channels: [], commands: [], createdBy: "bob")
        }
    }

    @Test("invalid tokens are refused naming the field, and nothing is stored", arguments: TokenStoreKind.available)
    func invalid(kind: TokenStoreKind) async throws {
        let store = kind.make()
        let before = try await store.list().count
        await #expect(throws: TokenError.self) {
            _ = try await store.create(name: "Bad Name", role: .viewer, channels: [], commands: [], createdBy: "x")
        }
        do {
            _ = try await store.create(
                name: uniqueTokenName(), role: .automation, channels: [], commands: [], createdBy: "x")
            Issue.record("an automation token without channels was created")
        } catch let error as TokenError {
            guard case .invalid(let field, _) = error else { Issue.record("\(error)"); return }
            #expect(field == "channel")
        }
        do {
            _ = try await store.create(
                name: uniqueTokenName(), role: .operator, channels: [], commands: [.placeBreak], createdBy: "x")
            Issue.record("an operator token scoped to commands was created")
        } catch let error as TokenError {
            guard case .invalid(let field, _) = error else { Issue.record("\(error)"); return }
            #expect(field == "command")
        }
        #expect(try await store.list().count == before)
    }

    @Test("a scope from text names the field it refuses: a channel that is not an id, a command the API does not take")
    func scopeFromText() throws {
        let scope = try APIToken.scope(channels: ["news"], commands: ["cancel_break"])
        #expect(scope.channels.map(\.rawValue) == ["news"] && scope.commands == [.cancelBreak])
        for (channels, commands, field) in [
            (["_news"], [String](), "channel"), (["News"], [], "channel"), ([], ["create_channel"], "command"),
            ([], ["nope"], "command"),
        ] {
            #expect(throws: TokenError.self) { try APIToken.scope(channels: channels, commands: commands) }
            do {
                _ = try APIToken.scope(channels: channels, commands: commands)
            } catch {
                guard case .invalid(let named, _) = error else { Issue.record("\(error)"); continue }
                #expect(named == field, "\(channels) \(commands)")
            }
        }
    }

    @Test("the in-memory store starts from given secrets")
    func seeded() async throws {
        let token = APIToken(name: "ops", role: .operator)
        let secret = TokenSecret.generate()
        let store = InMemoryTokenStore([secret: token])
        #expect(try await store.token(digest: TokenSecret.digest(secret)) == token)
        #expect(try await store.list() == [token])
    }
}
