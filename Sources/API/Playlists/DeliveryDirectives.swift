import Projector
import Schedule

/// The LL-HLS delivery directives of a media playlist request (§6.2.5): `_HLS_msn`, `_HLS_part`, `_HLS_skip`. A
/// malformed one is a 400 naming it; other query parameters are ignored.
struct DeliveryDirectives: Sendable {
    var msn: Int64?
    var part: Int64?
    var skip: PlaylistBuilder.DeltaUpdate?

    /// No directives: a plain request.
    init() {}

    init(_ query: some Sequence<(key: Substring, value: Substring)>) throws(APIError) {
        for (key, value) in query {
            switch key {
            case "_HLS_msn":
                guard let number = Self.number(value, digits: 18) else {
                    throw APIError(
                        .badRequest, "_HLS_msn must be a media sequence number (digits only)", field: "_HLS_msn")
                }
                msn = number
            case "_HLS_part":
                guard let number = Self.number(value, digits: 6) else {
                    throw APIError(.badRequest, "_HLS_part must be a part index (at most 6 digits)", field: "_HLS_part")
                }
                part = number
            case "_HLS_skip":
                guard let update = PlaylistBuilder.DeltaUpdate(rawValue: String(value)) else {
                    throw APIError(.badRequest, "_HLS_skip must be YES or v2", field: "_HLS_skip")
                }
                skip = update
            default:
                continue
            }
        }
        if part != nil && msn == nil {
            throw APIError(.badRequest, "_HLS_part needs _HLS_msn", field: "_HLS_part")
        }
    }

    /// The same from a raw query (the paths before the router): only these three keys, each once; nil for anything else. Read on
    /// the query's bytes (it is parsed for every blocked player's every part).
    init?(query: Substring) {
        var pairs: [(key: Substring, value: Substring)] = []
        pairs.reserveCapacity(3)
        var seen: [Bool] = [false, false, false]
        var rest = query
        while true {
            let end = rest.utf8.firstIndex(of: UInt8(ascii: "&")) ?? rest.endIndex
            let pair = rest[..<end]
            guard let equals = pair.utf8.firstIndex(of: UInt8(ascii: "=")) else { return nil }
            let key = pair[..<equals]
            guard let which = Self.keys.firstIndex(where: { key.utf8.elementsEqual($0.utf8) }), !seen[which] else {
                return nil
            }
            seen[which] = true
            pairs.append((key, pair[pair.utf8.index(after: equals)...]))
            guard end < rest.endIndex else { break }
            rest = rest[rest.utf8.index(after: end)...]
        }
        guard let parsed = try? Self(pairs) else { return nil }
        self = parsed
    }

    private static let keys = ["_HLS_msn", "_HLS_part", "_HLS_skip"]

    /// What a blocking reload does with `served`, the playlist now.
    enum Plan: Equatable {
        /// The part (or segment) asked for is there: answer at once.
        case now
        /// Hold the request until `target` ticks (parts) have ended.
        case hold(target: Int64)
    }

    /// The plan for this request on a channel with parts; nil without `_HLS_msn` or parts (answered at once, as a
    /// server without blocking reload must).
    ///
    /// - Throws: 400 (§6.2.5.2) for a segment more than two after the last complete one, or a part more than the
    ///   Advance Part Limit (3 s of parts, or 3 parts when they last a second or more) after the last part.
    func plan(_ served: ChannelFollower.ServedMedia) throws(APIError) -> Plan? {
        guard let msn else { return nil }
        if let relay = served.relayParts { return try plan(msn: msn, relay: relay) }
        guard let parts = served.partsPerSegment, let partMilliseconds = served.partMilliseconds else { return nil }
        let lastSegment = served.completedTicks / parts - 1
        try checkAhead(msn: msn, lastSegment: lastSegment)
        let advanceLimit = Self.advancePartLimit(partMilliseconds: partMilliseconds)
        if let part, msn * parts + part > served.completedTicks - 1 + advanceLimit {
            throw Self.partTooFar(msn: msn, part: part, limit: advanceLimit)
        }
        // Part p of segment msn has ended once msn·parts + p + 1 parts have; a whole segment, once all its parts. A part
        // index past the segment's last counts on into the next segment (§6.2.5.2: the last part + 1 is part 0 of the
        // next one), bounded by the limit above.
        let target = msn * parts + (part ?? (parts - 1)) + 1
        return served.completedTicks < target ? .hold(target: target) : .now
    }

    /// A relay rendition with parts: the same rules against where its upstream stands (parts per segment are the
    /// upstream's: a part two segments ahead is counted as if the segment in progress had as many as the last one).
    private func plan(msn: Int64, relay: RelayDecorator.PartsPosition) throws(APIError) -> Plan {
        try checkAhead(msn: msn, lastSegment: relay.lastSegment)
        let advanceLimit = Self.advancePartLimit(partMilliseconds: relay.partTargetMilliseconds)
        if let part {
            // Two segments ahead: the rest of the segment in progress (as many parts as the last one had) and then these.
            let ahead =
                msn <= relay.lastSegment
                ? 0
                : msn == relay.lastSegment + 1
                    ? part + 1 - relay.partial
                    : part + 1 + max(0, relay.lastSegmentParts - relay.partial)
            if ahead > advanceLimit { throw Self.partTooFar(msn: msn, part: part, limit: advanceLimit) }
        }
        // A part index past the last part of a segment is part 0 of the next one (§6.2.5.2); known for the last complete
        // segment (older ones are long complete, and the next one is there too).
        var target = RelayDecorator.PartsPosition.ordinal(segment: msn, part: part)
        if let part, msn == relay.lastSegment, relay.lastSegmentParts > 0, part >= relay.lastSegmentParts {
            target = RelayDecorator.PartsPosition.ordinal(segment: msn + 1, part: 0)
        }
        return relay.ordinal < target ? .hold(target: target) : .now
    }

    private func checkAhead(msn: Int64, lastSegment: Int64) throws(APIError) {
        guard msn <= lastSegment + 2 else {
            throw APIError(
                .badRequest,
                "_HLS_msn \(msn) is more than two segments after the last one in the playlist (\(lastSegment))",
                field: "_HLS_msn")
        }
    }

    /// The Advance Part Limit (§6.2.5.2): 3 s of parts, or 3 parts when they last a second or more.
    static func advancePartLimit(partMilliseconds: Int64) -> Int64 {
        partMilliseconds < 1000 ? (3000 + partMilliseconds - 1) / partMilliseconds : 3
    }

    private static func partTooFar(msn: Int64, part: Int64, limit: Int64) -> APIError {
        APIError(
            .badRequest,
            "_HLS_part \(part) of segment \(msn) is more than \(limit) parts after the last one in the playlist",
            field: "_HLS_part")
    }

    private static func number(_ text: Substring, digits: Int) -> Int64? {
        guard (1...digits).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            return nil
        }
        return Int64(text)
    }
}
