import EventStore
import Foundation
import HLS
import HTTPTypes
import Hummingbird
import Logging
import Projector
import Schedule
import ServiceLifecycle

/// The HTTP interface: playlists and asset lists (public), schedule and log (JSON), health.
public enum Routes {
    public static let playlistContentType = "application/vnd.apple.mpegurl"

    /// Builds the router.
    ///
    /// - Parameter mediaDirectory: when set, files under it are served at `/media/…` (demo segments and ads).
    ///   - metrics: renders the Prometheus exposition for `/metrics`.
    ///   - access: who may send commands and read the schedule, log and audit endpoints.
    ///   - eventStreams: the live event streams (`GET …/events` as Server-Sent Events), a service the caller runs.
    ///   - auditReads: how many replays, as-run reports and JSON event pages may run at once (see `AuditReads`).
    public static func router(
        follower: ChannelFollower, handler: CommandHandler, mediaDirectory: String?, metrics: (@Sendable () -> String)? = nil,
        hooks: HookSet = HookSet(), access: AccessPolicy, eventStreams: EventStreams, auditReads: AuditReads = AuditReads()
    ) -> Router<BasicRequestContext> {
        // HEAD answers like GET without the body (CDNs and players probe with it).
        let router = Router(options: .autoGenerateHeadEndpoints)
        router.middlewares.add(MetricsMiddleware())
        router.middlewares.add(CORSMiddleware(allowOrigin: .all))
        if let metrics {
            router.get("/metrics") { _, _ -> Response in
                var headers = HTTPFields()
                headers[.contentType] = "text/plain; version=0.0.4"
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: metrics())))
            }
        }
        if let mediaDirectory {
            router.middlewares.add(MediaPathGuard(directory: mediaDirectory))
            router.middlewares.add(FileMiddleware(mediaDirectory, urlBasePath: "/media", searchForIndexHtml: false))
        }

        router.get("/healthz") { _, _ in "ok\n" }
        router.get("/openapi.json") { _, _ -> Response in
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: OpenAPIDocument.json + "\n")))
        }
        router.get("/readyz") { _, _ -> Response in
            follower.isReady
                ? Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "ready\n")))
                : errorResponse(.serviceUnavailable, "not ready: the event log has not been read yet or the database is unreachable")
        }

        router.get("/channels/{channel}/master.m3u8") { _, context -> Response in
            let channel = try context.parameters.require("channel")
            do {
                let rendered = try follower.rendered(channel)
                return playlistResponse(rendered.multivariant, maxAge: 30)
            } catch let error as ChannelFollower.LookupError {
                return lookupErrorResponse(error)
            }
        }

        router.get("/channels/{channel}/{playlist}") { _, context -> Response in
            let channel = try context.parameters.require("channel")
            let file = try context.parameters.require("playlist")
            guard file.hasSuffix(".m3u8") else { return errorResponse(.notFound, "no such resource: \(file)") }
            do {
                let (text, targetDuration, tick) = try follower.mediaPlaylist(channel, rendition: String(file.dropLast(5)))
                // A CDN may hold a live playlist for half a target duration: a schedule change reaches viewers
                // well within the three target durations they play behind the live edge.
                var response = playlistResponse(text, maxAge: max(1, targetDuration / 2))
                // The instant these bytes were rendered for: `cueline replay --at` gives them back.
                response.headers[HTTPField.Name("X-Cueline-Tick")!] = tick.iso8601
                return response
            } catch let error as ChannelFollower.LookupError {
                return lookupErrorResponse(error)
            }
        }

        router.get("/channels/{channel}/breaks/{id}/assets.json") { request, context -> Response in
            let channel = try context.parameters.require("channel")
            let id = try context.parameters.require("id")
            guard let state = follower.state(of: channel) else { return lookupErrorResponse(.unknownChannel(channel)) }
            // Players send _HLS_primary_id, and _HLS_start_offset when they join mid-break: the answer is the same
            // whole list either way (hls.js lays the assets out from the break's start and seeks into them itself).
            guard let body = PlaylistBuilder.assetList(state: state, breakID: id) else {
                return lookupErrorResponse(.unknownBreak(channel: channel, id: id))
            }
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            headers[.cacheControl] = "no-cache"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
        }

        // A chunk of a measured asset: `<asset>-<chunk>.m3u8` (a VOD playlist of the asset's segments in the chunk's
        // span, or, for a multivariant asset, a multivariant playlist of its variants' chunks `<asset>-<chunk>-<variant>.m3u8`).
        let assetPlaylists = handler.assets ?? AssetPlaylists()
        let logger = Logger(label: "cueline.assets")
        router.get("/channels/{channel}/breaks/{id}/chunks/{file}") { _, context -> Response in
            let channel = try context.parameters.require("channel")
            let id = try context.parameters.require("id")
            let file = try context.parameters.require("file")
            guard let state = follower.state(of: channel) else { return lookupErrorResponse(.unknownChannel(channel)) }
            let numbers = file.hasSuffix(".m3u8") ? file.dropLast(5).split(separator: "-", omittingEmptySubsequences: false) : []
            // Plain decimal numbers without leading zeros: one name per chunk.
            let parsed = numbers.compactMap { number in
                number.count <= 6 && number.allSatisfy({ $0.isASCII && $0.isNumber }) && (number == "0" || !number.hasPrefix("0")) ? Int(number) : nil
            }
            guard (2...3).contains(numbers.count), parsed.count == numbers.count,
                let span = PlaylistBuilder.chunkSpan(state: state, breakID: id, asset: parsed[0], chunk: parsed[1])
            else { return errorResponse(.notFound, "no such chunk: \(file)") }
            do {
                let text: String?
                switch try await assetPlaylists.playlist(span.uri) {
                case .media(let media):
                    guard parsed.count == 2 else { return errorResponse(.notFound, "no such chunk: \(file)") }
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
                            case .media(let media) = try await assetPlaylists.playlist(multivariant.variants[parsed[2]].uri)
                        else { return errorResponse(.notFound, "no such chunk: \(file)") }
                        text = media.chunk(from: span.from, to: span.to)
                    }
                }
                guard let text else {
                    logger.warning("an asset changed since its break was placed: no segment in a chunk's span", metadata: [
                        "channel": "\(channel)", "break": "\(id)", "chunk": "\(file)", "asset": "\(span.uri)",
                    ])
                    return errorResponse(.badGateway, "the asset of break \(id) changed since it was placed: chunk \(file) holds no segment")
                }
                return playlistResponse(text, maxAge: 600)
            } catch {
                // The details (which may name internal addresses or signed URLs) go to the log, not to the public.
                logger.warning("cannot read an asset for a chunk", metadata: [
                    "channel": "\(channel)", "break": "\(id)", "asset": "\(span.uri)", "error": "\(error)",
                ])
                return errorResponse(.badGateway, "the asset of break \(id) cannot be read now")
            }
        }

        router.get("/channels/{channel}/schedule") { request, context -> Response in
            let channel = try context.parameters.require("channel")
            if case .failure(let refusal) = await access.authorize(request, .read(channel: channel)) { return refusal.response }
            guard let state = follower.state(of: channel), let config = state.config else {
                return lookupErrorResponse(.unknownChannel(channel))
            }
            let liveEdge = Timeline(config).liveEdge(at: follower.clock())
            return jsonResponse(ScheduleView(state: state, liveEdge: liveEdge))
        }

        router.get("/channels/{channel}/events") { request, context -> Response in
            let channel = try context.parameters.require("channel")
            let caller: Caller
            switch await access.authorize(request, .read(channel: channel)) {
            case .failure(let refusal): return refusal.response
            case .success(let found): caller = found
            }
            let after: Int64
            let limit: Int
            switch Edge.eventPage(request) {
            case .success(let page): (after, limit) = page
            case .failure(let refusal): return refusal.response
            }
            guard follower.state(of: channel) != nil else { return lookupErrorResponse(.unknownChannel(channel)) }
            if request.headers[.accept]?.contains("text/event-stream") == true || request.uri.queryParameters["stream"] != nil {
                switch eventStreams.admit(key: caller.token.map { "token \($0.name)" } ?? "an unauthenticated caller") {
                case .failure(let refusal): return refusal.response
                case .success(let ticket):
                    return eventStream(
                        channel: channel, after: after, streams: eventStreams, ticket: ticket,
                        stillAuthorized: access.recheck(request, .read(channel: channel)))
                }
            }
            let store = handler.store
            return await auditReads.run { await eventPage(channel, after: after, limit: limit, from: store) }
        }

        router.post("/channels/{channel}/commands") { request, context -> Response in
            let channel = try context.parameters.require("channel")
            // Who is asking comes first (401); what the token may do is checked once the command type is known.
            if case .failure(let refusal) = await access.authorize(request, .anyToken) { return refusal.response }
            let parsed: CommandRequest
            switch try await decodeBody(CommandRequest.self, request) {
            case .success(let value): parsed = value
            case .failure(let error): return errorResponse(.unprocessableContent, "the body is not a valid command: \(error)", field: "body")
            }
            let caller: Caller
            switch await access.authorize(request, .command(parsed.command, channel: channel)) {
            case .failure(let refusal): return refusal.response
            case .success(let found): caller = found
            }
            let command: ScheduleCommand
            do {
                command = try parsed.scheduleCommand()
            } catch let invalid as CommandRequest.Invalid {
                return errorResponse(.unprocessableContent, "\(invalid.field) \(invalid.reason)", field: invalid.field)
            }
            return await execute(
                command, channel: channel, request: request, actor: caller.actor(claimed: parsed.actor), source: "http",
                reason: parsed.reason, handler: handler, follower: follower)
        }

        addSCTE35Route(to: router, follower: follower, handler: handler, access: access)
        addHookRoute(to: router, hooks: hooks, follower: follower, handler: handler)

        router.get("/channels/{channel}/replay") { request, context -> Response in
            let channel = try context.parameters.require("channel")
            if case .failure(let refusal) = await access.authorize(request, .read(channel: channel)) { return refusal.response }
            let at: Timestamp
            switch Edge.instant(request, "at", required: true) {
            case .success(let value): at = value!
            case .failure(let refusal): return refusal.response
            }
            let rendition = request.uri.queryParameters["rendition"].map(String.init)
            let multivariant = request.uri.queryParameters["multivariant"] != nil
            let store = handler.store
            // Reads and folds the whole log: one of the audit reads, on their own threads.
            return await auditReads.run {
                do {
                    let events = try await Replay.events(channel, from: store)
                    let text = try Replay.playlist(channel, events, at: at, rendition: rendition, multivariant: multivariant)
                    var response = playlistResponse(text, maxAge: 31_536_000)
                    response.headers[HTTPField.Name("X-Cueline-Tick")!] = at.iso8601
                    return response
                } catch let failure as Replay.Failure {
                    if case .channelDidNotExist = failure { return errorResponse(.notFound, failure.description) }
                    return errorResponse(.unprocessableContent, failure.description)
                } catch {
                    return errorResponse(.serviceUnavailable, "the event log is unreachable: \(error)")
                }
            }
        }

        router.get("/channels/{channel}/as-run") { request, context -> Response in
            let channel = try context.parameters.require("channel")
            if case .failure(let refusal) = await access.authorize(request, .read(channel: channel)) { return refusal.response }
            let from: Timestamp?
            let to: Timestamp?
            switch (Edge.instant(request, "from"), Edge.instant(request, "to")) {
            case (.failure(let refusal), _), (_, .failure(let refusal)): return refusal.response
            case (.success(let first), .success(let second)): (from, to) = (first, second)
            }
            guard let state = follower.state(of: channel) else { return lookupErrorResponse(.unknownChannel(channel)) }
            let now = follower.clock()
            let csv = request.uri.queryParameters["format"] == "csv"
            return await auditReads.run {
                let entries = AsRun.entries(state: state, from: from, to: to, at: now)
                if csv {
                    var headers = HTTPFields()
                    headers[.contentType] = "text/csv"
                    return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: AsRun.csv(entries))))
                }
                return jsonResponse(AsRunReport(channel: channel, entries: entries, totals: AsRun.totals(entries)))
            }
        }

        router.get("/channels") { request, _ -> Response in
            let caller: Caller
            switch await access.authorize(request, .anyToken) {
            case .failure(let refusal): return refusal.response
            case .success(let found): caller = found
            }
            return jsonResponse(follower.channels().compactMap { $0.config.map(ChannelView.init) }.filter { caller.mayRead($0.id) })
        }
        return router
    }

    /// Runs a decided command and answers as the command API does: 201 with the events (also for a retry with the
    /// same `Idempotency-Key`), 409 for a conflict or a race lost, 422 naming the field, 404, 503.
    static func execute(
        _ command: ScheduleCommand, channel: String, request: Request, actor: String, source: String, reason: String?,
        handler: CommandHandler, follower: ChannelFollower, commandID: String? = nil
    ) async -> Response {
        let expectedText = request.headers[.ifMatch]?.trimmingCharacters(in: CharacterSet(charactersIn: "\" W/"))
        let expected = expectedText.flatMap { Int64($0) }
        if expectedText != nil, expected == nil {
            return errorResponse(.unprocessableContent, "If-Match must be the channel version, a whole number", field: "If-Match")
        }
        let key = commandID ?? request.headers[HTTPField.Name("Idempotency-Key")!] ?? UUID().uuidString.lowercased()
        if let refusal = Edge.refusal(actor: actor, reason: reason, commandID: key) { return refusal.response }
        guard Identifier.isValid(channel) else { return lookupErrorResponse(.unknownChannel(channel.escapingControlCharacters)) }
        let commandContext = CommandContext(commandID: key, actor: actor, source: source, reason: reason)
        do {
            let outcome = try await handler.handle(command, channel: channel, context: commandContext, expectedVersion: expected)
            // Show our own write before answering, whatever the state of LISTEN/NOTIFY (it reconnects
            // after a database restart). If this read fails, the follower's poll picks the event up.
            try? await follower.catchUp()
            var response = jsonResponse(CommandResponse(
                channel: channel, version: outcome.result.version, replayed: outcome.result.replayed, events: outcome.result.events,
                note: outcome.note(for: command)))
            response.status = .created
            return response
        } catch {
            switch error {
            case .refused(let refusal):
                switch refusal {
                case .alreadyLimited, .alreadyCancelled, .breakIDReused:
                    return errorResponse(.conflict, refusal.description, field: refusal.field)
                case .unknownChannel, .unknownBreak:
                    return errorResponse(.notFound, refusal.description)
                default:
                    return errorResponse(.unprocessableContent, refusal.description, field: refusal.field)
                }
            case .store(let storeError):
                switch storeError {
                case .versionConflict, .commandIDReused: return errorResponse(.conflict, storeError.description)
                case .invalidValue: return errorResponse(.unprocessableContent, storeError.description)
                case .unknownOutcome: return errorResponse(.serviceUnavailable, storeError.description)
                default: return errorResponse(.serviceUnavailable, "the event log is unavailable; nothing was written. Retry with the same Idempotency-Key")
                }
            }
        }
    }

    /// Server-Sent Events: every event of the channel after `after` (or `Last-Event-ID`), then each new one as this
    /// instance folds it in. The event id is the stream version, so a reconnecting client resumes where it left off.
    /// A stream ends after 10 minutes and at shutdown; EventSource clients reconnect by themselves. See `EventStreams`
    /// for how many there may be and how they share the work.
    static func eventStream(
        channel: String, after: Int64, streams: EventStreams, ticket: EventStreams.Ticket, stillAuthorized: (@Sendable () async -> Bool)?
    ) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-cache"
        let body = ResponseBody { writer in
            try await streams.stream(channel, after: max(0, after), ticket: ticket, stillAuthorized: stillAuthorized, to: &writer)
        }
        return Response(status: .ok, headers: headers, body: body)
    }

    /// A JSON page of events holds at most this many bytes, unless its one event is larger.
    static let eventPageBytes = 1024 * 1024

    /// `{"channel", "events", "next"}`: the events after `after`, at most `limit` of them and, past the first, at most
    /// ``eventPageBytes`` in all; `next` is the last version in the page (the `after` of the next page), absent when
    /// the page is empty. The log is read in batches sized by what its events weigh, so a page of big events never
    /// holds more than about a page's worth of them in memory.
    static func eventPage(_ channel: String, after: Int64, limit: Int, from store: any EventStore) async -> Response {
        var body = ByteBuffer()
        // A channel that exists has an identifier for its id: nothing in it needs escaping.
        body.writeString(#"{"channel":"\#(channel)","events":["#)
        var count = 0
        var next: Int64?
        var batchSize = min(limit, 100)
        do {
            reading: while count < limit {
                let requested = min(batchSize, limit - count)
                let batch = try await store.readStream(channel, after: next ?? after, limit: requested)
                for event in batch {
                    let encoded = encodeJSON(event)
                    // `]`, `,"next":` and 19 digits, `}` still to come.
                    if count > 0 && body.readableBytes + 1 + encoded.count + 32 > eventPageBytes { break reading }
                    if count > 0 { body.writeString(",") }
                    body.writeBytes(encoded)
                    count += 1
                    next = event.version
                }
                if batch.count < requested { break }
                let average = max(1, body.readableBytes / max(1, count))
                batchSize = max(1, min(100, (eventPageBytes - body.readableBytes) / average + 1))
            }
        } catch {
            return errorResponse(.serviceUnavailable, "the event log is unreachable: \(error)")
        }
        body.writeString("]")
        if let next { body.writeString(#","next":\#(next)"#) }
        body.writeString("}")
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        headers[.cacheControl] = "no-cache"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: body))
    }

    static func playlistResponse(_ text: String, maxAge: Int) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = playlistContentType
        headers[.cacheControl] = "max-age=\(maxAge)"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    static func lookupErrorResponse(_ error: ChannelFollower.LookupError) -> Response {
        switch error {
        case .unknownChannel(let channel):
            return errorResponse(.notFound, "channel \(channel) does not exist")
        case .unknownRendition(let channel, let rendition):
            return errorResponse(.notFound, "channel \(channel) has no rendition \(rendition)")
        case .notStarted(let channel, let firstSegmentEnds):
            return errorResponse(.serviceUnavailable, "channel \(channel) has not started; its first playlist is due at \(firstSegmentEnds)")
        case .unknownBreak(let channel, let id):
            return errorResponse(.notFound, "break \(id) does not exist on channel \(channel)")
        case .upstreamMissing(let channel, let rendition):
            return errorResponse(.serviceUnavailable, "channel \(channel): no usable upstream playlist for \(rendition) yet; see the server log")
        case .renderFailed(let reason):
            return errorResponse(.internalServerError, "the playlist could not be rendered (\(reason)); see the server log")
        }
    }
}

/// `{"error": "...", "field": "..."}` with the status.
func errorResponse(_ status: HTTPResponse.Status, _ message: String, field: String? = nil) -> Response {
    struct Body: Encodable {
        var error: String
        var field: String?
    }
    var response = jsonResponse(Body(error: message, field: field))
    response.status = status
    return response
}

/// A JSON request body (snake_case keys, at most 64 KiB), or why it does not decode.
func decodeBody<T: Decodable>(_ type: T.Type, _ request: Request) async throws -> Result<T, any Error> {
    let body = try await request.body.collect(upTo: 64 * 1024)
    return decodeJSON(type, Data(buffer: body))
}

func decodeJSON<T: Decodable>(_ type: T.Type, _ data: Data) -> Result<T, any Error> {
    let decoder = JSONDecoder()
    decoder.keyDecodingStrategy = .convertFromSnakeCase
    return Result { try decoder.decode(type, from: data) }
}

/// The API's JSON: sorted keys, snake_case.
func encodeJSON(_ value: some Encodable) -> Data {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    encoder.keyEncodingStrategy = .convertToSnakeCase
    return (try? encoder.encode(value)) ?? Data(#"{"error":"encoding failed"}"#.utf8)
}

func jsonResponse(_ value: some Encodable) -> Response {
    let data = encodeJSON(value)
    var headers = HTTPFields()
    headers[.contentType] = "application/json"
    headers[.cacheControl] = "no-cache"
    return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
}
