import NIOCore
import Testing

@testable import API

/// Issue 34: behind a CDN or a load balancer every request comes from the proxy's address, so all its clients shared
/// one address's places; `X-Forwarded-For` is believed from configured proxies only, read from the right.
@Suite("Trusted proxies: the client a request counts against")
struct TrustedProxiesTests {
    static let proxy = try! SocketAddress(ipAddress: "10.1.2.3", port: 40_000)
    static let stranger = try! SocketAddress(ipAddress: "198.51.100.9", port: 40_000)

    @Test(
        "from a trusted proxy, the rightmost address that is not a listed proxy; a client's own entries further left are never read",
        arguments: [
            (["203.0.113.7"], "203.0.113.7"),
            // The client wrote 1.2.3.4 itself; the edge appended the address it was reached from.
            (["1.2.3.4, 203.0.113.7"], "203.0.113.7"),
            // Two proxies of ours: the inner one appended the edge's address, which is skipped.
            (["1.2.3.4, 203.0.113.7, 10.9.9.9"], "203.0.113.7"),
            // Several header lines are one list, in order.
            (["1.2.3.4", "203.0.113.7, 10.0.0.5"], "203.0.113.7"),
            (["2001:db8:aa:bb:1::5"], "2001:db8:aa:bb::/64"),
            (["::ffff:203.0.113.7"], "203.0.113.7"),
            (["  203.0.113.7  "], "203.0.113.7"),
            // Not an address where the client's should be: the proxy's own address.
            (["203.0.113.7, garbage"], "10.1.2.3"),
            (["unknown"], "10.1.2.3"),
            // Only proxies: the proxy's own address.
            (["10.0.0.1, 10.0.0.2"], "10.1.2.3"),
        ] as [([String], String)])
    func fromATrustedProxy(_ forwarded: [String], _ expected: String) throws {
        let proxies = try TrustedProxies(["10.0.0.0/8", "2001:db8:ff::/48"])
        #expect(proxies.clientKey(peer: Self.proxy, forwardedFor: forwarded.map { Substring($0) }) == expected)
    }

    @Test("from any other peer, or with no proxies configured, the header is ignored")
    func fromAnyoneElse() throws {
        let proxies = try TrustedProxies(["10.0.0.0/8"])
        #expect(proxies.clientKey(peer: Self.stranger, forwardedFor: ["203.0.113.7"]) == "198.51.100.9")
        #expect(TrustedProxies.none.clientKey(peer: Self.proxy, forwardedFor: ["203.0.113.7"]) == "10.1.2.3")
        // A chain longer than 16 is cut: the proxy's own address rather than reading on.
        let long = Array(repeating: Substring("10.0.0.1"), count: 20) + ["203.0.113.7"]
        #expect(proxies.clientKey(peer: Self.proxy, forwardedFor: Array(long.reversed())) == "10.1.2.3")
    }

    @Test(
        "entries are checked, naming the entry and the reason",
        arguments: [
            ("10.0.0.0/33", "the prefix length must be 0…32 for this address"),
            ("2001:db8::/129", "the prefix length must be 0…128 for this address"),
            ("example.com", "not an IPv4 or IPv6 address"),
            ("10.0.0.0/x", "the prefix length must be 0…32 for this address"),
            ("", "not an IPv4 or IPv6 address"),
        ])
    func invalidEntries(_ entry: String, _ reason: String) {
        #expect(throws: TrustedProxyError(entry: entry, reason: reason)) { try TrustedProxies([entry]) }
    }

    @Test("networks match by their prefix, in both families")
    func networks() throws {
        let proxies = try TrustedProxies(["192.168.4.0/22", "2001:db8::/32", "127.0.0.1"])
        for (address, trusted) in [
            ("192.168.4.1", true), ("192.168.7.255", true), ("192.168.8.0", false), ("127.0.0.1", true),
            ("127.0.0.2", false), ("2001:db8:1234::1", true), ("2001:db9::1", false), ("::ffff:192.168.5.5", true),
        ] {
            #expect(proxies.trusts(TrustedProxies.bytes(of: Substring(address))!) == trusted, "\(address)")
        }
    }

    @Test("the gate counts a held reload or an arriving body against the client a trusted proxy names")
    func gateCountsTheClient() {
        var gate = GateState(
            limits: GateState.Limits(
                connections: 10, heldReloads: 6, heldReloadsPerAddress: 1, arrivingBodies: 4,
                arrivingBodiesPerAddress: 1))
        var ids: [UInt64] = []
        for _ in 0..<4 {
            guard case .admitted(let id) = gate.admit(address: "10.1.2.3") else { Issue.record("refused"); return }
            gate.setBusy(id, true)
            ids.append(id)
        }
        // Two clients behind one proxy each hold their own reload; a second one of the same client is refused.
        let first = gate.beginHold(ids[0], client: "203.0.113.7")
        let other = gate.beginHold(ids[1], client: "203.0.113.8")
        let again = gate.beginHold(ids[2], client: "203.0.113.7")
        #expect([first, other, again] == [.hold, .hold, .refuse])
        gate.endHold(ids[0])
        let afterEnd = gate.beginHold(ids[2], client: "203.0.113.7")
        #expect(afterEnd == .hold)
        let body = gate.beginReceiving(ids[3], client: "203.0.113.9")
        #expect(body)
        #expect(gate.heldCount == 2)
    }

    @Test(
        "a place is given back under the key it was taken under, whatever the connection's next request names: the counts return to zero"
    )
    func placesGivenBackUnderTheirKey() {
        var gate = GateState(
            limits: GateState.Limits(
                connections: 4, heldReloads: 3, heldReloadsPerAddress: 1, arrivingBodies: 3,
                arrivingBodiesPerAddress: 1))
        guard case .admitted(let id) = gate.admit(address: "10.1.2.3") else { Issue.record("refused"); return }
        gate.setBusy(id, true)
        let body = gate.beginReceiving(id, client: "203.0.113.7")
        gate.endReceiving(id)
        let held = gate.beginHold(id, client: "203.0.113.8")
        gate.endHold(id)
        // A request with no client named counts against the connection's own address, not the last client's.
        let own = gate.beginHold(id)
        gate.endHold(id)
        #expect(body && held == .hold && own == .hold)
        // Every key's share is whole again: one each, at once, on other connections.
        var results: [Bool] = []
        for key in ["203.0.113.7", "203.0.113.8", "10.1.2.3"] {
            guard case .admitted(let other) = gate.admit(address: "10.1.2.3") else { continue }
            gate.setBusy(other, true)
            let decision = gate.beginHold(other, client: Substring(key))
            results.append(decision == .hold)
        }
        #expect(results == [true, true, true])
    }

    @Test(
        "entries with a port, as some proxies write them, are read as their address",
        arguments: [
            ("203.0.113.7:5555", "203.0.113.7"), ("[2001:db8:aa:bb::1]:443", "2001:db8:aa:bb::/64"),
            ("2001:db8:aa:bb::1", "2001:db8:aa:bb::/64"), ("[::ffff:203.0.113.9]", "203.0.113.9"),
        ])
    func ports(_ entry: String, _ expected: String) throws {
        let proxies = try TrustedProxies(["10.0.0.0/8"])
        #expect(proxies.clientKey(peer: Self.proxy, forwardedFor: [Substring(entry)]) == expected)
    }
}
