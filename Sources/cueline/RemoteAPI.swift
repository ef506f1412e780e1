import API
import Foundation
import HLS
import Schedule
import Wire

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `--server URL --token T`: the same commands through the HTTP API instead of the database, for operators who
/// have a token but no database access. Requests and answers are the `Wire` types the server decodes and encodes;
/// what is printed is printed by the same code as in the database path. Retries on connection failures and 503
/// reuse the Idempotency-Key, so a command is never applied twice.
struct RemoteAPI {
    var server: String
    var token: String?

    /// The API of `--server` (else CUELINE_SERVER) with `--token` (else CUELINE_TOKEN); nil for the database path.
    static func configured(server: String?, token: String?) -> RemoteAPI? {
        let environment = ProcessInfo.processInfo.environment
        guard let server = server ?? environment["CUELINE_SERVER"] else { return nil }
        return RemoteAPI(server: server, token: token ?? environment["CUELINE_TOKEN"])
    }

    struct Answer {
        var status: Int
        var body: Data
    }

    func send(_ method: String, _ path: String, body: Data? = nil, idempotencyKey: String? = nil) async throws -> Answer
    {
        guard let url = URL(string: server.hasSuffix("/") ? String(server.dropLast()) + path : server + path),
            url.scheme?.hasPrefix("http") == true
        else {
            throw CLIError(
                message: "--server must be an http(s) URL, not \(server.debugDescription)", exitCode: ExitStatus.usage)
        }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.timeoutInterval = 10
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let idempotencyKey { request.setValue(idempotencyKey, forHTTPHeaderField: "Idempotency-Key") }
        if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        var lastError = ""
        for attempt in 1...3 {
            do {
                let (data, response) = try await URLSession.shared.data(for: request)
                let status = (response as? HTTPURLResponse)?.statusCode ?? 0
                // 503: the server could not reach the database and wrote nothing; the same key makes a retry safe.
                if status == 503 && attempt < 3 && idempotencyKey != nil {
                    lastError = Self.message(data) ?? "503"
                } else {
                    return Answer(status: status, body: data)
                }
            } catch {
                lastError = "\(error.localizedDescription)"
                // Without an idempotency key only a failure to connect is safe to retry; with one, anything is.
                if idempotencyKey == nil && method != "GET" { break }
            }
            try await Task.sleep(for: .milliseconds(500 * attempt))
        }
        throw CLIError(
            message: "cannot reach \(server): \(lastError)"
                + (idempotencyKey.map { "; retry with --command-id \($0) to be safe" } ?? ""))
    }

    /// The `error` of an error answer.
    static func message(_ data: Data) -> String? {
        try? WireJSON.decode(ErrorBody.self, from: data).error
    }

    /// An error answer as the CLI reports it: the server's message (a refusal reads as it does from the database) and
    /// the exit code of its category (`ErrorCategory`, the server's own map: 3 for a conflict); an authorization
    /// failure says which HTTP status it was.
    static func failure(_ answer: Answer) -> CLIError {
        let message = message(answer.body) ?? "HTTP \(answer.status)"
        let category = ErrorCategory(status: answer.status)
        let exitCode = category?.exitCode ?? ExitStatus.failure
        switch category {
        case .unauthenticated?, .forbidden?:
            return CLIError(message: "\(message) (HTTP \(answer.status))", exitCode: exitCode)
        default: return CLIError(message: message, exitCode: exitCode)
        }
    }

    /// Sends a schedule command: the server's answer, or the error it refused it with.
    func send(_ command: ScheduleCommand, channel: ChannelID, options: CommandOptions) async throws -> CommandResponse {
        let request: CommandRequest
        do {
            request = try CommandRequest(command, reason: options.reason)
        } catch {
            switch error.field {
            case "options":
                throw CLIError(
                    message:
                        "--timeline-occupies, --timeline-style and --content-may-vary need the database; leave out --server",
                    exitCode: ExitStatus.usage)
            case "attributes":
                throw CLIError(
                    message: "attribute \(error.reason); leave out --server for others", exitCode: ExitStatus.usage)
            default:
                throw CLIError(
                    message: "\(command.name) needs the database; leave out --server", exitCode: ExitStatus.usage)
            }
        }
        let key = options.commandID ?? UUID().uuidString.lowercased()
        let answer = try await send(
            "POST", "/channels/\(channel)/commands", body: try WireJSON.encode(request), idempotencyKey: key)
        guard answer.status == 201 else { throw Self.failure(answer) }
        return try Self.decode(CommandResponse.self, answer)
    }

    /// `GET /channels/{channel}/schedule`, every page of it (following `next`): the whole schedule, as the database
    /// path reads it. Pages of the default size, which the server answers at once, never queued among audit reads.
    func schedule(_ channel: ChannelID) async throws -> ScheduleView {
        var view = try await schedulePage(channel, after: nil)
        var next = view.next
        while let after = next {
            let page = try await schedulePage(channel, after: after)
            view.breaks += page.breaks
            // A cursor only moves forward; one that does not would be a server fault, not a reason to loop.
            next = page.next == after ? nil : page.next
        }
        view.next = nil
        return view
    }

    /// One page of `GET /channels/{channel}/schedule` after the cursor `after`.
    func schedulePage(_ channel: ChannelID, after: String?) async throws -> ScheduleView {
        // A cursor is an instant and an id: only its '+' (none is written) and ',' could need escaping; escape all.
        let query =
            after.map { "?after=" + ($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0) } ?? ""
        let answer = try await send("GET", "/channels/\(channel)/schedule" + query)
        guard answer.status == 200 else { throw Self.failure(answer) }
        return try Self.decode(ScheduleView.self, answer)
    }

    /// `GET /channels/{channel}/as-run` as JSON.
    func asRun(_ channel: ChannelID, from: Timestamp?, to: Timestamp?) async throws -> AsRunReport {
        let query = [from.map { "from=\($0.iso8601)" }, to.map { "to=\($0.iso8601)" }].compactMap { $0 }.joined(
            separator: "&")
        let answer = try await send("GET", "/channels/\(channel)/as-run" + (query.isEmpty ? "" : "?" + query))
        guard answer.status == 200 else { throw Self.failure(answer) }
        return try Self.decode(AsRunReport.self, answer)
    }

    /// `GET /channels`: the channels the token may read.
    func channels() async throws -> [ChannelView] {
        let answer = try await send("GET", "/channels")
        guard answer.status == 200 else { throw Self.failure(answer) }
        return try Self.decode([ChannelView].self, answer)
    }

    /// `GET /channels/{channel}/events`: a page of the channel's log after `after` (a version).
    func events(_ channel: ChannelID, after: Int64, limit: Int) async throws -> EventPage {
        let answer = try await send("GET", "/channels/\(channel)/events?after=\(after)&limit=\(limit)")
        guard answer.status == 200 else { throw Self.failure(answer) }
        return try Self.decode(EventPage.self, answer)
    }

    /// `GET /channels/{channel}/refusals`: a page of the channel's refused commands after the cursor `after`.
    func refusals(_ channel: ChannelID, after: Int64, limit: Int) async throws -> RefusalPage {
        let answer = try await send("GET", "/channels/\(channel)/refusals?after=\(after)&limit=\(limit)")
        guard answer.status == 200 else { throw Self.failure(answer) }
        return try Self.decode(RefusalPage.self, answer)
    }

    /// `GET /channels/{channel}/replay`: the playlist served at `at`, as text.
    func replay(
        _ channel: ChannelID, at: Timestamp, rendition: Identifier?, multivariant: Bool,
        skip: PlaylistBuilder.DeltaUpdate? = nil
    ) async throws -> String {
        var query = "at=\(at.iso8601)"
        if let skip { query += "&skip=\(skip.rawValue)" }
        if let rendition { query += "&rendition=\(rendition)" }  // an id: nothing to escape in a query
        if multivariant { query += "&multivariant=1" }
        let answer = try await send("GET", "/channels/\(channel)/replay?" + query)
        guard answer.status == 200 else { throw Self.failure(answer) }
        return String(decoding: answer.body, as: UTF8.self)
    }

    private static func decode<T: Decodable>(_ type: T.Type, _ answer: Answer) throws -> T {
        do {
            return try WireJSON.decode(type, from: answer.body, answers: true)
        } catch {
            throw CLIError(message: "the server's answer is not a \(type) (HTTP \(answer.status)): \(error)")
        }
    }
}
