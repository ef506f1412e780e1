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
    let adDecisions: AdDecisions
    let logger = Logger(label: "cueline.assets")

    func addRoutes(to group: RouterGroup<APIRequestContext>) {
        group.get("/channels/{channel}/master.m3u8", use: multivariant)
        group.get("/channels/{channel}/{playlist}", use: media)
        group.get("/channels/{channel}/breaks/{id}/assets.json", use: assetList)
        group.get("/channels/{channel}/breaks/{id}/chunks/{file}", use: chunk)
        group.get("/channels/{channel}/prerolls/{id}/assets.json", use: prerollAssetList)
    }

    /// The asset list of a preroll decided by an ad server (`--preroll-ad-server`): per viewer, as a break's. Only for
    /// the preroll range the playlists publish now, or the one before it; an empty list when the ad server gives
    /// nothing usable (the viewer starts the programme at once).
    @Sendable func prerollAssetList(_ request: Request, context: APIRequestContext) async throws -> Response {
        let channel = try context.storedChannelID()
        let id = try context.parameters.require("id")
        guard let state = follower.state(of: channel), let config = state.config else {
            throw APIError(.unknownChannel(channel))
        }
        let timeline = Timeline(config)
        let windowStart = timeline.segmentStart(timeline.window(at: follower.clock()).lowerBound)
        guard PlaylistBuilder.isCurrentPreroll(id, state: state, windowStart: windowStart),
            case .adServer(let template, let duration)? = state.adSettings?.preroll
        else {
            throw APIError(
                .notFound,
                "channel \(channel) has no preroll decided by an ad server under the id \(id.prefix(80).escapingControlCharacters) now"
            )
        }
        return await decided(
            request, channel: channel, what: "preroll asset list", fallback: "empty", key: "preroll", id: id
        ) {
            await adDecisions.prerollAssetList(
                state: state, rangeID: id, template: template, durationMilliseconds: duration, request: $0)
        }
    }

    /// A list decided for one viewer by an ad server (or its fallback): never shared by a cache. A fallback or a note
    /// is logged once per channel and outcome every 10 s, with how many were held back.
    private func decided(
        _ request: Request, channel: ChannelID, what: String, fallback: String, key: String, id: String,
        decide: (AdDecisions.Request) async -> AdDecisions.Answer
    ) async -> Response {
        var parameters: [String: String] = [:]
        for (name, value) in request.uri.queryParameters where parameters.count < 64 {
            parameters[String(name)] = String(value)
        }
        let answer = await decide(AdDecisions.Request(primaryID: parameters["_HLS_primary_id"], parameters: parameters))
        if answer.outcome != "decided" || !answer.notes.isEmpty,
            let held = adDecisions.admitLog("\(channel) \(key) \(answer.outcome)")
        {
            let outcome = answer.outcome == "decided" ? "decided" : "\(fallback) (\(answer.outcome))"
            logger.notice(
                "\(what) \(outcome): \(answer.notes.prefix(5).joined(separator: "; "))\(held > 0 ? " (and \(held) more like it in the last 10 s)" : "")",
                metadata: ["channel": "\(channel)", "\(key)": "\(id)"])
        }
        return Responses.text(answer.body, contentType: "application/json", cacheControl: "private, no-store")
    }

    @Sendable func multivariant(_ request: Request, context: APIRequestContext) throws -> Response {
        let channel = try context.storedChannelID()
        do {
            return Responses.playlist(try follower.rendered(channel).multivariantBody, maxAge: 30)
        } catch {
            throw APIError(error)
        }
    }

    /// A media playlist, by the rules of ``MediaPlaylistAnswer``: the requests the paths before the router leave to it
    /// (errors, other queries, pipelined behind another request), and all of them on a server without those paths.
    @Sendable func media(_ request: Request, context: APIRequestContext) async throws -> Response {
        let channel = try context.storedChannelID()
        let file = try context.parameters.require("playlist")
        guard file.hasSuffix(".m3u8") else { throw APIError(.notFound, "no such resource: \(file)") }
        guard let rendition = Identifier(stored: file.dropLast(5)) else {
            throw APIError(
                .notFound, "channel \(channel) has no rendition \(file.dropLast(5).escapingControlCharacters)")
        }
        let answer = MediaPlaylistAnswer(
            channel: channel, rendition: rendition, directives: try DeliveryDirectives(request.uri.queryParameters))
        // The bytes encoded when the window was rendered: no copy, no formatting here.
        switch answer.decide(lookup(answer)) {
        case .playlist(let served, let maxAge):
            return MediaPlaylistAnswer.response(served, maxAge: maxAge)
        case .refuse(let error):
            throw error
        case .wait(let wait):
            // Blocking playlist reload: held on a task until the part is there, at most 3 target durations.
            let deadline = ContinuousClock.now + .milliseconds(wait.timeoutMilliseconds)
            while true {
                let left = Self.milliseconds(deadline - ContinuousClock.now)
                let ready =
                    left > 0
                    ? await follower.awaitWindow(
                        channel, rendition: wait.waitOn, completedTicks: wait.target, timeoutMilliseconds: left)
                    : false
                switch answer.afterWakeup(
                    wait, window: ready ? lookup(answer) : nil,
                    millisecondsLeft: Self.milliseconds(deadline - ContinuousClock.now))
                {
                case .playlist(let served, let maxAge, let partEnded):
                    PlaylistLookup.recordLateness(partEnded, follower: follower)
                    return MediaPlaylistAnswer.response(served, maxAge: maxAge)
                case .wait: continue
                case .refuse(let error): throw error
                }
            }
        }
    }

    /// Whole milliseconds of `duration` (rounded toward zero).
    private static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }

    /// The window served for `answer`'s request now.
    private func lookup(_ answer: MediaPlaylistAnswer) -> Result<
        ChannelFollower.ServedMedia, ChannelFollower.LookupError
    > {
        Result { () throws(ChannelFollower.LookupError) in
            try follower.servedMedia(answer.channel, rendition: answer.rendition, skip: answer.directives.skip)
        }
    }

    @Sendable func assetList(_ request: Request, context: APIRequestContext) async throws -> Response {
        let channel = try context.storedChannelID()
        let id = try context.storedIdentifier("id") {
            APIError(.notFound, "break \($0) does not exist on channel \(channel)")
        }
        guard let state = follower.state(of: channel) else { throw APIError(.unknownChannel(channel)) }
        // Players send _HLS_primary_id, and _HLS_start_offset when they join mid-break: the answer is the same
        // whole list either way (hls.js lays the assets out from the break's start and seeks into them itself).
        if let item = state.breakState(id), item.spec.adServer != nil, !item.isCancelled {
            // Decided per viewer by the ad server (or its fallback).
            return await decided(
                request, channel: channel, what: "asset list", fallback: "fell back", key: "break", id: id.rawValue
            ) { await adDecisions.assetList(state: state, item: item, request: $0) }
        }
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
