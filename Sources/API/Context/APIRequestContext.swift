import EventStore
import HLS
import Hummingbird
import NIOCore
import Projector
import Schedule

/// The request context of every route: Hummingbird's core storage and the caller, which ``TokenAuthenticator`` puts
/// here once for the routes that need one. Handlers ask the context, never the headers, who is calling and whether
/// they may (``caller(for:)``).
public struct APIRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// Who is calling; nil on the public routes (playlists, health, hooks), which no authenticator runs for.
    var identity: Caller?
    /// The connection the request came on, for its client address (asked only by the few routes that need it).
    let connection: any Channel

    public init(source: Source) {
        coreContext = .init(source: source)
        identity = nil
        connection = source.channel
    }

    /// Who an audit read belongs to, for its fair share of the audit-read line (``AuditReads``): the token's name,
    /// else (open mode) the client address: this connection's, or the one a trusted proxy names for the request.
    func auditCaller(_ request: Request, proxies: TrustedProxies) -> String {
        if let token = identity?.token { return "token \(token.name)" }
        let forwarded = request.headers[values: .xForwardedFor].map { Substring($0) }
        if !proxies.isEmpty, !forwarded.isEmpty {
            return "address \(proxies.clientKey(peer: connection.remoteAddress, forwardedFor: forwarded))"
        }
        return "address \(GateState.addressKey(connection.remoteAddress))"
    }

    /// The caller, once it may do `access`.
    ///
    /// - Throws: 403 when the token's role, channels or command types do not allow it; 401 on a route that has no
    ///   authenticator (a wiring mistake: refused rather than let through).
    func caller(for access: Access) throws(APIError) -> Caller {
        guard let identity else {
            throw .unauthenticated("send Authorization: Bearer <token>; create one with cueline token create")
        }
        if let refusal = identity.refusal(of: access) { throw APIError(.forbidden, refusal) }
        return identity
    }

    /// The caller, once it may do at least one of `accesses`; else the refusal of the first.
    func caller(forAnyOf accesses: [Access]) throws(APIError) -> Caller {
        var first: APIError?
        for access in accesses {
            do {
                return try caller(for: access)
            } catch {
                first = first ?? error
            }
        }
        throw first ?? .unauthenticated("nothing to authorize")
    }
}

extension APIRequestContext {
    /// The path parameter `name` parsed once into an ``Identifier``. Nothing that takes commands has an id off the
    /// rule (see ``Identifier`` on channels created before it), so such a path is answered by `notFound`, which gets
    /// the text with its control characters escaped.
    ///
    /// The read routes (schedule, events, replay, as-run, playlists) keep the parameter as given: channels created
    /// under the old rule (`_news`) must still serve them.
    func identifier(_ name: String, notFound: (String) -> APIError) throws -> Identifier {
        let text = try parameters.require(name)
        guard let id = Identifier(text) else { throw notFound(text.escapingControlCharacters) }
        return id
    }

    /// `{channel}` of a route that takes commands; 404 naming the channel when it is off the rule.
    func channelID() throws -> ChannelID {
        try identifier("channel") { APIError.noChannel($0) }
    }

    /// The path parameter `name` of a read route: an id of today's rule or of the earlier one (`Identifier(stored:)`),
    /// which a channel or break created before the rule may still have; anything else names nothing (`notFound`).
    func storedIdentifier(_ name: String, notFound: (String) -> APIError) throws -> Identifier {
        let text = try parameters.require(name)
        guard let id = Identifier(stored: text) else { throw notFound(text.escapingControlCharacters) }
        return id
    }

    /// `{channel}` of a read route (schedule, events, replay, as-run, playlists).
    func storedChannelID() throws -> ChannelID {
        try storedIdentifier("channel") { APIError.noChannel($0) }
    }
}
