import Hummingbird
import Metrics
import Logging
import Projector
import Schedule

/// The public playlists: multivariant and media playlists, break asset lists and the chunks of measured assets.
/// No authenticator runs for them, and a media playlist costs one lookup of what the follower already rendered.
struct PlaylistController {
    let follower: ChannelFollower
    let assets: AssetPlaylists
    let logger = Logger(label: "cueline.assets")

    static let blockedLateness = Timer(label: "cueline_blocked_reload_lateness_seconds", preferredDisplayUnit: .seconds)

    func addRoutes(to group: RouterGroup<APIRequestContext>) {
        group.get("/channels/{channel}/master.m3u8", use: multivariant)
        group.get("/channels/{channel}/{playlist}", use: media)
        group.get("/channels/{channel}/breaks/{id}/assets.json", use: assetList)
        group.get("/channels/{channel}/breaks/{id}/chunks/{file}", use: chunk)
    }

    @Sendable func multivariant(_ request: Request, context: APIRequestContext) throws -> Response {
        let channel = try context.storedChannelID()
        do {
            return Responses.playlist(try follower.rendered(channel).multivariantBody, maxAge: 30)
        } catch {
            throw APIError(error)
        }
    }

    @Sendable func media(_ request: Request, context: APIRequestContext) async throws -> Response {
        let channel = try context.storedChannelID()
        let file = try context.parameters.require("playlist")
        guard file.hasSuffix(".m3u8") else { throw APIError(.notFound, "no such resource: \(file)") }
        guard let rendition = Identifier(stored: file.dropLast(5)) else {
            throw APIError(
                .notFound, "channel \(channel) has no rendition \(file.dropLast(5).escapingControlCharacters)")
        }
        let directives = try DeliveryDirectives(request.uri.queryParameters)
        do {
            // The bytes encoded when the window was rendered: no copy, no formatting here.
            var served = try follower.servedMedia(channel, rendition: rendition, skip: directives.skip)
            // Blocking playlist reload (channels with parts; others answer at once, as a server without it must).
            if let msn = directives.msn, let plan = try directives.plan(served) {
                guard case .hold(let target) = plan else {
                    // There already: answered at once, with the current playlist (which may have changed since that part).
                    return Responses.playlist(
                        served.body, maxAge: max(1, served.targetDuration / 2), tick: served.tickText)
                }
                // A relay rendition waits for its own upstream's parts; a clock channel's renditions share their windows.
                let waitOn = served.relayParts != nil ? rendition : nil
                let deadline = ContinuousClock.now + .seconds(3 * served.targetDuration)
                while served.blockingPosition < target {
                    let left = deadline - ContinuousClock.now
                    guard left > .zero,
                        await follower.awaitWindow(
                            channel, rendition: waitOn, completedTicks: target,
                            timeoutMilliseconds: left.components.seconds * 1000 + left.components.attoseconds
                                / 1_000_000_000_000_000)
                    else {
                        throw APIError(
                            .unavailable,
                            "segment \(msn)\(directives.part.map { " part \($0)" } ?? "") of channel \(channel) did not appear within 3 target durations"
                        )
                    }
                    served = try follower.servedMedia(channel, rendition: rendition, skip: directives.skip)
                    // A relay whose upstream no longer has parts: nothing to wait for.
                    if waitOn != nil && served.relayParts == nil { break }
                }
                // How long after its part's boundary the answer was ready (the boundary of tick `target`; clock channels).
                if served.relayParts == nil, let partMilliseconds = served.partMilliseconds {
                    let boundary = served.tickBoundary.adding(
                        milliseconds: -(served.completedTicks - target) * partMilliseconds)
                    Self.blockedLateness.recordNanoseconds(
                        max(0, follower.clock().milliseconds(since: boundary)) * 1_000_000)
                }
                // The playlist published at the boundary of the part asked for: the answer every client blocked on it gets,
                // which a cache in front may give to the next ones asking (6 target durations).
                return Responses.playlist(served.body, maxAge: 6 * served.targetDuration, tick: served.tickText)
            }
            // A CDN may hold a live playlist for half a target duration: a schedule change reaches viewers
            // well within the three target durations they play behind the live edge. `Cueline-Tick`: the instant
            // these bytes were rendered for (`cueline replay --at` gives them back).
            return Responses.playlist(served.body, maxAge: max(1, served.targetDuration / 2), tick: served.tickText)
        } catch let error as ChannelFollower.LookupError {
            throw APIError(error)
        }
    }

    @Sendable func assetList(_ request: Request, context: APIRequestContext) throws -> Response {
        let channel = try context.storedChannelID()
        let id = try context.storedIdentifier("id") {
            APIError(.notFound, "break \($0) does not exist on channel \(channel)")
        }
        guard let state = follower.state(of: channel) else { throw APIError(.unknownChannel(channel)) }
        // Players send _HLS_primary_id, and _HLS_start_offset when they join mid-break: the answer is the same
        // whole list either way (hls.js lays the assets out from the break's start and seeks into them itself).
        guard let body = PlaylistBuilder.assetList(state: state, breakID: id) else {
            throw APIError(.unknownBreak(channel: channel, id: id))
        }
        return Responses.text(body, contentType: "application/json", cacheControl: "no-cache")
    }

    /// A chunk of a measured asset: `<asset>-<chunk>.m3u8` (a VOD playlist of the asset's segments in the chunk's
    /// span, or, for a multivariant asset, a multivariant playlist of its variants' chunks `<asset>-<chunk>-<variant>.m3u8`).
    @Sendable func chunk(_ request: Request, context: APIRequestContext) async throws -> Response {
        let channel = try context.storedChannelID()
        let id = try context.storedIdentifier("id") {
            APIError(.notFound, "break \($0) does not exist on channel \(channel)")
        }
        let file = try context.parameters.require("file")
        guard let state = follower.state(of: channel) else { throw APIError(.unknownChannel(channel)) }
        let numbers =
            file.hasSuffix(".m3u8") ? file.dropLast(5).split(separator: "-", omittingEmptySubsequences: false) : []
        // Plain decimal numbers without leading zeros: one name per chunk.
        let parsed = numbers.compactMap { number in
            number.count <= 6 && number.allSatisfy({ $0.isASCII && $0.isNumber })
                && (number == "0" || !number.hasPrefix("0")) ? Int(number) : nil
        }
        let noSuchChunk = APIError(.notFound, "no such chunk: \(file)")
        guard (2...3).contains(numbers.count), parsed.count == numbers.count,
            let span = PlaylistBuilder.chunkSpan(state: state, breakID: id, asset: parsed[0], chunk: parsed[1])
        else { throw noSuchChunk }
        let text: String?
        do {
            switch try await assets.playlist(span.uri) {
            case .media(let media):
                guard parsed.count == 2 else { throw noSuchChunk }
                text = media.chunk(from: span.from, to: span.to)
            case .multivariant(let multivariant):
                if parsed.count == 2 {
                    var lines = ["#EXTM3U"] + multivariant.header
                    for (index, variant) in multivariant.variants.enumerated() {
                        lines += [variant.streamInf, "\(parsed[0])-\(parsed[1])-\(index).m3u8"]
                    }
                    text = lines.joined(separator: "\n") + "\n"
                } else {
                    guard parsed[2] < multivariant.variants.count,
                        case .media(let media) = try await assets.playlist(multivariant.variants[parsed[2]].uri)
                    else { throw noSuchChunk }
                    text = media.chunk(from: span.from, to: span.to)
                }
            }
        } catch let error as APIError {
            throw error
        } catch {
            // The details (which may name internal addresses or signed URLs) go to the log, not to the public.
            logger.warning(
                "cannot read an asset for a chunk",
                metadata: [
                    "channel": "\(channel)", "break": "\(id)", "asset": "\(span.uri)", "error": "\(error)",
                ])
            throw APIError(.badGateway, "the asset of break \(id) cannot be read now")
        }
        guard let text else {
            logger.warning(
                "an asset changed since its break was placed: no segment in a chunk's span",
                metadata: [
                    "channel": "\(channel)", "break": "\(id)", "chunk": "\(file)", "asset": "\(span.uri)",
                ])
            throw APIError(
                .badGateway, "the asset of break \(id) changed since it was placed: chunk \(file) holds no segment")
        }
        return Responses.playlist(text, maxAge: 600)
    }
}

/// The LL-HLS delivery directives of a media playlist request (§6.2.5): `_HLS_msn`, `_HLS_part`, `_HLS_skip`. A
/// malformed one is a 400 naming it; other query parameters are ignored.
struct DeliveryDirectives {
    var msn: Int64?
    var part: Int64?
    var skip: PlaylistBuilder.DeltaUpdate?

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

    /// The same from a raw query (`PlaylistFastPath`): only these three keys, each once; nil for anything else. Read on
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
