import EventStore
import Foundation
import HLS
import Schedule

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `--server URL --token T`: the same commands through the HTTP API instead of the database, for operators who
/// have a token but no database access. Retries on connection failures and 503 reuse the Idempotency-Key, so a
/// command is never applied twice.
struct RemoteAPI {
    var server: String
    var token: String?

    /// The API body of a schedule command (the inverse of the server's CommandRequest).
    static func body(_ command: ScheduleCommand) throws -> [String: Any] {
        func seconds(_ milliseconds: Int64) -> Double { Double(milliseconds) / 1000 }
        switch command {
        case .placeBreak(let request):
            var body: [String: Any] = ["command": "place_break", "duration": seconds(request.plannedDurationMilliseconds)]
            body["id"] = request.id
            body["align"] = request.alignment.rawValue
            if request.wholeAssets { body["chunked"] = false }
            switch request.start {
            case .at(let time): body["start"] = time.iso8601
            case .inMilliseconds(let delay): body["in"] = seconds(delay)
            }
            switch request.asset {
            case .uri(let uri): body["asset_uri"] = uri
            case .list(let uri): body["asset_list"] = uri
            case .pod(let assets): body["pod"] = assets.map { ["uri": $0.uri, "duration": seconds($0.durationMilliseconds)] as [String: Any] }
            }
            let options = request.options
            if let restrict = options.restrict { body["restrict"] = restrict.map(\.rawValue) }
            if let snap = options.snap { body["snap"] = snap.map(\.rawValue) }
            if let cue = options.cue { body["cue"] = cue.map(\.rawValue) }
            if options.timelineOccupies != nil || options.timelineStyle != nil || options.contentMayVary != nil {
                throw CLIError(message: "--timeline-occupies, --timeline-style and --content-may-vary need the database; leave out --server", exitCode: ExitStatus.usage)
            }
            var attributes: [String: String] = [:]
            for attribute in options.clientAttributes {
                guard case .string(let value) = attribute.value else {
                    throw CLIError(message: "attribute \(attribute.name): only string attributes go through --server", exitCode: ExitStatus.usage)
                }
                attributes[attribute.name] = value
            }
            if !attributes.isEmpty { body["attributes"] = attributes }
            return body
        case .setPlayoutLimit(let id, let limit):
            return ["command": "set_playout_limit", "id": id, "playout_limit": seconds(limit)]
        case .cancelCurrentEvent:
            return ["command": "cancel_current_event"]
        case .cancelBreak(let id):
            return ["command": "cancel_break", "id": id]
        case .createChannel, .updateRenditions, .returnFromBreak:
            throw CLIError(message: "\(command.name) needs the database; leave out --server", exitCode: ExitStatus.usage)
        }
    }

    struct Answer {
        var status: Int
        var body: Data
    }

    func send(_ method: String, _ path: String, json: [String: Any]? = nil, idempotencyKey: String? = nil) async throws -> Answer {
        guard let url = URL(string: server.hasSuffix("/") ? String(server.dropLast()) + path : server + path), url.scheme?.hasPrefix("http") == true else {
            throw CLIError(message: "--server must be an http(s) URL, not \(server.debugDescription)", exitCode: ExitStatus.usage)
        }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.timeoutInterval = 10
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let idempotencyKey { request.setValue(idempotencyKey, forHTTPHeaderField: "Idempotency-Key") }
        if let json {
            request.httpBody = try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys])
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
        throw CLIError(message: "cannot reach \(server): \(lastError)" + (idempotencyKey.map { "; retry with --command-id \($0) to be safe" } ?? ""))
    }

    static func message(_ data: Data) -> String? {
        (try? JSONSerialization.jsonObject(with: data) as? [String: Any])?["error"] as? String
    }

    /// Sends a schedule command; prints like the database path does; exits 3 on a conflict.
    func run(_ command: ScheduleCommand, channel: String, options: CommandOptions) async throws {
        var body = try Self.body(command)
        body["reason"] = options.reason
        let key = options.commandID ?? UUID().uuidString.lowercased()
        let answer = try await send("POST", "/channels/\(channel)/commands", json: body, idempotencyKey: key)
        guard answer.status == 201 else {
            let message = Self.message(answer.body) ?? "HTTP \(answer.status)"
            switch answer.status {
            case 409: throw CLIError(message: message, exitCode: ExitStatus.conflict)
            case 401, 403: throw CLIError(message: "\(message) (HTTP \(answer.status))")
            default: throw CLIError(message: message)
            }
        }
        if options.json {
            FileHandle.standardOutput.write(answer.body + Data("\n".utf8))
            return
        }
        let result = try JSONSerialization.jsonObject(with: answer.body) as? [String: Any] ?? [:]
        let events = (result["events"] as? [[String: Any]] ?? []).compactMap { $0["type"] as? String }
        let replayed = result["replayed"] as? Bool == true
        print("\(command.name) on \(channel): \(events.joined(separator: ", ")) (version \(result["version"] ?? "?"))"
            + (replayed ? " (already applied: this is the original result)" : ""))
        if let note = result["note"] as? String { print(note.escapingControlCharacters) }
    }
}
