import NIOCore
import Testing

@testable import API

/// The connection cap's rules by class, without sockets (issue 34: held reloads and arriving bodies never take the
/// players' places).
@Suite("Connection gate: capacity reserved by class")
struct GateStateTests {
    static func limits(
        connections: Int = 10, held: Int = 6, heldPerAddress: Int = 4, bodies: Int = 3, bodiesPerAddress: Int = 2
    ) -> GateState.Limits {
        GateState.Limits(
            connections: connections, heldReloads: held, heldReloadsPerAddress: heldPerAddress, arrivingBodies: bodies,
            arrivingBodiesPerAddress: bodiesPerAddress)
    }

    static func admitted(_ admission: GateState.Admission) -> UInt64? {
        switch admission {
        case .admitted(let id), .admittedClosing(let id, _), .admittedEvictingHeld(let id, _): id
        case .refused: nil
        }
    }

    @Test(
        "at the cap a new connection takes the longest idle one's place, then the oldest held reload's, and only then is refused"
    )
    func admissionOrder() throws {
        var gate = GateState(limits: Self.limits(connections: 3, held: 2, heldPerAddress: 2))
        let a = try #require(Self.admitted(gate.admit(address: "10.0.0.1")))
        let b = try #require(Self.admitted(gate.admit(address: "10.0.0.1")))
        let c = try #require(Self.admitted(gate.admit(address: "10.0.0.2")))
        gate.setBusy(a, true)
        do {
            let result = gate.beginHold(b)
            #expect(result == .hold)
        }
        // c is the only idle one: it makes room.
        let d = gate.admit(address: "10.0.0.3")
        guard case .admittedClosing(let dID, victim: c) = d else { Issue.record("\(d)"); return }
        #expect(gate.kind(of: c) == nil)
        gate.setBusy(dID, true)
        // None idle now: the held reload (b) makes room, answered by the caller.
        let e = gate.admit(address: "10.0.0.4")
        guard case .admittedEvictingHeld(let eID, victim: b) = e else { Issue.record("\(e)"); return }
        #expect(gate.heldCount == 0)
        gate.setBusy(eID, true)
        // Every connection is busy with a request in progress: refused.
        do {
            let result = gate.admit(address: "10.0.0.5")
            #expect(result == .refused)
        }
        gate.setBusy(a, false)
        #expect(Self.admitted(gate.admit(address: "10.0.0.5")) != nil)
    }

    @Test(
        "at the cap the connection with nothing in progress the longest goes first, between requests or before its first"
    )
    func freshConnectionsLast() throws {
        var gate = GateState(limits: Self.limits(connections: 3))
        let second: UInt64 = 1_000_000_000
        gate.now = 10 * second
        let poller = try #require(Self.admitted(gate.admit(address: "10.0.0.1")))
        gate.setBusy(poller, true)
        let flood = try #require(Self.admitted(gate.admit(address: "10.0.0.2")))  // sends nothing
        gate.now = 12 * second
        gate.setBusy(poller, false)  // polled just now
        let player = try #require(Self.admitted(gate.admit(address: "10.0.0.3")))  // its request on its way
        // The connection that has sent nothing for 2 s goes, not the poller active a moment ago nor the new player.
        do {
            let result = gate.admit(address: "10.0.0.4")
            guard case .admittedClosing(let newest, victim: flood) = result else { Issue.record("\(result)"); return }
            gate.setBusy(newest, true)
        }
        // A keep-alive connection quiet for a second or more goes before a new one whose request is on its way.
        gate.now = 13 * second + 1
        do {
            let result = gate.admit(address: "10.0.0.5")
            guard case .admittedClosing(_, victim: poller) = result else { Issue.record("\(result)"); return }
        }
        #expect(gate.kind(of: player) == .fresh)
        // With every quiet connection recent, the one quiet the longest goes.
        do {
            let result = gate.admit(address: "10.0.0.6")
            guard case .admittedClosing(_, victim: player) = result else { Issue.record("\(result)"); return }
        }
    }

    @Test("held reloads: an address past its share is refused, the instance past its share answers its oldest held one")
    func heldShares() throws {
        var gate = GateState(limits: Self.limits(connections: 20, held: 3, heldPerAddress: 2))
        let ids = (0..<6).map { Self.admitted(gate.admit(address: $0 < 3 ? "10.0.0.1" : "10.0.0.2"))! }
        do {
            let result = gate.beginHold(ids[0])
            #expect(result == .hold)
        }
        do {
            let result = gate.beginHold(ids[1])
            #expect(result == .hold)
        }
        #expect(gate.beginHold(ids[2]) == .refuse)  // its address holds 2
        #expect(gate.beginHold(ids[3]) == .hold)  // 3 held in all now
        #expect(gate.beginHold(ids[4]) == .holdEvicting(victim: ids[0]))  // the oldest answered to make room
        #expect(gate.heldCount == 3)
        #expect(gate.kind(of: ids[0]) == .busy)
        // Its address gave one back: it may hold again (taking the next oldest's place overall).
        do {
            let result = gate.beginHold(ids[2])
            #expect(result == .holdEvicting(victim: ids[1]))
        }
        gate.endHold(ids[3])
        gate.remove(ids[4])
        #expect(gate.heldCount == 1)
        // A connection answered (busy) then idle again is evictable as idle, not as held.
        gate.setBusy(ids[3], false)
        #expect(gate.kind(of: ids[3]) == .idle)
    }

    @Test(
        "arriving bodies: refused past the address's share or the instance's, and the places come back when the body ends or the connection closes"
    )
    func bodyShares() throws {
        var gate = GateState(limits: Self.limits(connections: 20, bodies: 3, bodiesPerAddress: 2))
        let ids = (0..<5).map { Self.admitted(gate.admit(address: Substring($0 < 3 ? "10.0.0.1" : "10.0.0.\($0)")))! }
        do {
            let result = gate.beginReceiving(ids[0])
            #expect(result)
        }
        do {
            let result = gate.beginReceiving(ids[1])
            #expect(result)
        }
        do {
            let result = gate.beginReceiving(ids[2])
            #expect(!result, "a third body from one address")
        }
        do {
            let result = gate.beginReceiving(ids[3])
            #expect(result)
        }
        do {
            let result = gate.beginReceiving(ids[4])
            #expect(!result, "a fourth body in all")
        }
        gate.endReceiving(ids[0])
        do {
            let result = gate.beginReceiving(ids[2])
            #expect(result)
        }
        gate.remove(ids[3])
        do {
            let result = gate.beginReceiving(ids[4])
            #expect(result)
        }
        #expect(gate.receivingCount == 3)
        // A connection whose body is arriving is never closed to make room, nor one holding a reload.
        var full = GateState(
            limits: Self.limits(connections: 2, held: 1, heldPerAddress: 1, bodies: 1, bodiesPerAddress: 1))
        let receiving = Self.admitted(full.admit(address: "a"))!
        let other = Self.admitted(full.admit(address: "b"))!
        do {
            let result = full.beginReceiving(receiving)
            #expect(result)
        }
        full.setBusy(receiving, true)
        full.setBusy(other, true)
        do {
            let result = full.admit(address: "c")
            #expect(result == .refused)
        }
    }

    @Test(
        "a body answered before it arrived (an early 401 or 404) gives its place back as idle once it ends: evictable, not busy for good"
    )
    func bodyAnsweredEarly() throws {
        var gate = GateState(limits: Self.limits(connections: 2, bodies: 2, bodiesPerAddress: 2))
        let early = try #require(Self.admitted(gate.admit(address: "10.0.0.1")))
        let receiving = gate.beginReceiving(early)
        #expect(receiving)
        gate.setBusy(early, true)
        gate.setBusy(early, false)  // answered; the body still arriving
        #expect(gate.kind(of: early) == .receiving)
        gate.endReceiving(early)
        #expect(gate.kind(of: early) == .idle)
        let other = try #require(Self.admitted(gate.admit(address: "10.0.0.2")))
        gate.setBusy(other, true)
        let result = gate.admit(address: "10.0.0.3")
        guard case .admittedClosing(_, victim: early) = result else { Issue.record("\(result)"); return }
    }

    @Test(
        "timeouts: a request answered before its body arrived is between requests once the body ends, with the idle deadline; a late body of an answered request gets no second answer"
    )
    func answeredBeforeItsBody() {
        let start = NIODeadline.now()
        var timeouts = ConnectionTimeouts(
            header: .seconds(10), body: .seconds(5), idle: .seconds(60), acceptedAt: start)
        timeouts.bytesRead(at: start)
        timeouts.headRead(at: start)
        #expect(timeouts.mayAnswerRaw, "a request whose body is arriving, unanswered: a 408 may be written")
        timeouts.responseBegan()
        timeouts.responseEnded(at: start + .seconds(1))
        #expect(!timeouts.mayAnswerRaw && timeouts.isReadingBody)
        #expect(timeouts.timeoutFired(at: start + .seconds(6)) == .close, "no 408 after the 404")
        timeouts.requestEnded(at: start + .seconds(2))
        #expect(!timeouts.isBusy && timeouts.deadline == start + .seconds(62))
    }

    @Test("an IPv4 client of a dual-stack listener counts by its IPv4 address, an IPv6 one by its /64")
    func addressKeys() throws {
        #expect(GateState.addressKey(try SocketAddress(ipAddress: "::ffff:192.0.2.7", port: 1)) == "192.0.2.7")
        #expect(GateState.addressKey(try SocketAddress(ipAddress: "192.0.2.7", port: 1)) == "192.0.2.7")
        #expect(
            GateState.addressKey(try SocketAddress(ipAddress: "2001:db8:1:2:3:4:5:6", port: 1)) == "2001:db8:1:2::/64")
        #expect(GateState.addressKey(nil) == "local")
    }

    @Test("the places kept for the classes are below the connection cap, derived from it unless set")
    func derivedLimits() {
        var limits = ServerLimits()
        limits.maxConnections = 300
        #expect(
            limits.gateLimits
                == Self.limits(connections: 300, held: 225, heldPerAddress: 75, bodies: 37, bodiesPerAddress: 9))
        limits.maxHeldReloads = 5_000
        limits.maxArrivingBodies = 1
        #expect(limits.gateLimits.heldReloads == 299 && limits.gateLimits.arrivingBodies == 1)
        #expect(limits.gateLimits.arrivingBodiesPerAddress == 1, "a share per address is never more than the total")
    }
}
