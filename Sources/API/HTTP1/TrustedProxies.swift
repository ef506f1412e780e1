import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// The proxies (a CDN's edge, a load balancer) whose `X-Forwarded-For` names the client, for the limits kept per
/// client address (held reloads, arriving bodies, the audit-read line's share in open mode). Behind a proxy every
/// request comes from the proxy's address: without this, all its clients share one address's places.
///
/// Only a connection from a listed network is believed, and only as far as the list goes: the header is read from the
/// right (each proxy appends the address it was reached from), skipping listed proxies, and the first address that is
/// not one is the client. What a client writes itself is at the left of that and never read, so a client cannot
/// choose its own address. A header that cannot be read there (not an address) leaves the proxy's own address.
public struct TrustedProxies: Sendable, Equatable {
    /// A network: an address's bytes (4 or 16) and how many leading bits of it count.
    struct Network: Sendable, Equatable {
        var bytes: [UInt8]
        var prefix: Int

        func contains(_ address: [UInt8]) -> Bool {
            guard address.count == bytes.count else { return false }
            var bits = prefix
            for index in bytes.indices where bits > 0 {
                let mask: UInt8 = bits >= 8 ? 0xFF : ~(0xFF >> UInt8(bits))
                guard address[index] & mask == bytes[index] & mask else { return false }
                bits -= 8
            }
            return true
        }
    }

    let networks: [Network]
    /// At most this many addresses of a header are read (a longer chain is cut, from the left).
    static let maximumHops = 16

    public static let none = TrustedProxies(networks: [])

    init(networks: [Network]) { self.networks = networks }

    /// - Parameter list: addresses or networks, `203.0.113.7`, `10.0.0.0/8`, `2001:db8::/32`.
    /// - Throws: naming the entry and why it is not one.
    public init(_ list: [String]) throws(TrustedProxyError) {
        networks = try list.map { entry throws(TrustedProxyError) in
            let parts = entry.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            guard let bytes = Self.bytes(of: parts[0]) else {
                throw TrustedProxyError(entry: entry, reason: "not an IPv4 or IPv6 address")
            }
            var prefix = bytes.count * 8
            if parts.count == 2 {
                guard let bits = Int(parts[1]), (0...bytes.count * 8).contains(bits) else {
                    throw TrustedProxyError(
                        entry: entry, reason: "the prefix length must be 0…\(bytes.count * 8) for this address")
                }
                prefix = bits
            }
            return Network(bytes: bytes, prefix: prefix)
        }
    }

    public var isEmpty: Bool { networks.isEmpty }

    func trusts(_ bytes: [UInt8]) -> Bool { networks.contains { $0.contains(bytes) } }

    /// The key per-address limits count `peer`'s request by: the client `forwardedFor` names when `peer` is a listed
    /// proxy, else `peer`'s own (``GateState/addressKey(_:)``).
    /// - Parameter forwardedFor: the request's `X-Forwarded-For` values, in the order they came.
    func clientKey(peer: SocketAddress?, forwardedFor: [Substring]) -> Substring {
        let own = GateState.addressKey(peer)
        guard !networks.isEmpty, !forwardedFor.isEmpty, let peerBytes = Self.bytes(of: peer), trusts(peerBytes)
        else { return own }
        var hops = 0
        for value in forwardedFor.reversed() {
            for item in value.split(separator: ",").reversed() {
                hops += 1
                guard hops <= Self.maximumHops,
                    let bytes = Self.bytes(of: Self.withoutPort(item.trimmingCharacters(in: " \t")))
                else { return own }
                if trusts(bytes) { continue }
                return Self.key(bytes)
            }
        }
        return own
    }

    /// An entry of `X-Forwarded-For` without the port some proxies add: `203.0.113.7:5555` and `[2001:db8::1]:443`
    /// are their addresses (a bare IPv6 address has several colons and no brackets, and is left whole).
    static func withoutPort(_ item: Substring) -> Substring {
        if item.first == "[", let close = item.firstIndex(of: "]") {
            return item[item.index(after: item.startIndex)..<close]
        }
        if let colon = item.firstIndex(of: ":"), item[item.index(after: colon)...].allSatisfy(\.isNumber),
            item[..<colon].contains(".")
        {
            return item[..<colon]
        }
        return item
    }

    /// An address's bytes: 4 for IPv4, 16 for IPv6 (an IPv4-mapped IPv6 address is its IPv4 address).
    static func bytes(of text: Substring) -> [UInt8]? {
        guard text.utf8.count <= 45 else { return nil }
        let string = String(text)
        var v4 = in_addr()
        if inet_pton(AF_INET, string, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, string, &v6) == 1 else { return nil }
        return unmapped(withUnsafeBytes(of: &v6) { Array($0) })
    }

    static func bytes(of address: SocketAddress?) -> [UInt8]? {
        switch address {
        case .v4(let v4)?:
            var storage = v4.address.sin_addr
            return withUnsafeBytes(of: &storage) { Array($0) }
        case .v6(let v6)?:
            var storage = v6.address.sin6_addr
            return unmapped(withUnsafeBytes(of: &storage) { Array($0) })
        default:
            return nil
        }
    }

    private static func unmapped(_ bytes: [UInt8]) -> [UInt8] {
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF { return Array(bytes[12..<16]) }
        return bytes
    }

    /// The per-address key of an address's bytes: an IPv4 address, or an IPv6 address's /64.
    static func key(_ bytes: [UInt8]) -> Substring {
        if bytes.count == 4 { return Substring(bytes.map(String.init).joined(separator: ".")) }
        let groups = (0..<4).map { String(UInt16(bytes[2 * $0]) << 8 | UInt16(bytes[2 * $0 + 1]), radix: 16) }
        return Substring(groups.joined(separator: ":") + "::/64")
    }
}

public struct TrustedProxyError: Error, Sendable, Equatable, CustomStringConvertible {
    public var entry: String
    public var reason: String
    public var description: String { "trusted_proxies: \"\(entry)\" is not an address or network: \(reason)" }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: String) -> Substring {
        var result = self
        while let first = result.first, set.contains(first) { result = result.dropFirst() }
        while let last = result.last, set.contains(last) { result = result.dropLast() }
        return result
    }
}
