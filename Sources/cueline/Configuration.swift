import API
import Foundation

/// Settings of `cueline serve` and the database commands, from one documented precedence:
/// command-line flags, then environment variables (`CUELINE_*`, `DATABASE_URL`), then the config file
/// (`--config FILE` or `CUELINE_CONFIG`), then defaults.
///
/// The file holds `key = value` lines; `#` starts a comment; strings may be quoted.
struct Configuration: Equatable {
    var databaseURL: String?
    var host = "127.0.0.1"
    var port = 8080
    var mediaDir: String?
    var logLevel = "info"
    var logFormat = "text"
    var migrations: String?
    var limits = ServerLimits()
    /// One event loop pinned to each CPU the process may use (Linux; `EventLoops`).
    var pinEventLoops = false

    /// Every key the file may hold, with its environment variable and what it accepts.
    static let keys: [(key: String, environment: String, accepts: String)] = [
        ("database_url", "DATABASE_URL", "postgresql:// URL"),
        ("host", "CUELINE_HOST", "address to listen on"),
        ("port", "CUELINE_PORT", "1-65535"),
        ("media_dir", "CUELINE_MEDIA_DIR", "directory served at /media"),
        ("log_level", "CUELINE_LOG_LEVEL", "trace, debug, info, notice, warning, error, critical"),
        ("log_format", "CUELINE_LOG_FORMAT", "text or json"),
        ("migrations", "CUELINE_MIGRATIONS", "directory of NNNN_name.sql files"),
        ("max_connections", "CUELINE_MAX_CONNECTIONS", "open connections at most (\(limitRanges["max_connections"]!))"),
        (
            "header_timeout", "CUELINE_HEADER_TIMEOUT",
            "seconds for a request head to arrive (\(limitRanges["header_timeout"]!))"
        ),
        (
            "body_timeout", "CUELINE_BODY_TIMEOUT",
            "seconds for a request body to arrive after its head (\(limitRanges["body_timeout"]!))"
        ),
        (
            "max_held_reloads", "CUELINE_MAX_HELD_RELOADS",
            "LL-HLS blocking reloads held at once (\(limitRanges["max_held_reloads"]!); default 3/4 of max_connections)"
        ),
        (
            "max_held_reloads_per_address", "CUELINE_MAX_HELD_RELOADS_PER_ADDRESS",
            "blocking reloads held at once per client address (\(limitRanges["max_held_reloads_per_address"]!); default 1/4 of max_connections)"
        ),
        (
            "max_arriving_bodies", "CUELINE_MAX_ARRIVING_BODIES",
            "requests whose body is still arriving, at once (\(limitRanges["max_arriving_bodies"]!); default 1/8 of max_connections)"
        ),
        (
            "max_arriving_bodies_per_address", "CUELINE_MAX_ARRIVING_BODIES_PER_ADDRESS",
            "requests whose body is still arriving, per client address (\(limitRanges["max_arriving_bodies_per_address"]!); default 1/4 of max_arriving_bodies)"
        ),
        (
            "idle_timeout", "CUELINE_IDLE_TIMEOUT",
            "seconds before an idle or unread connection is closed (\(limitRanges["idle_timeout"]!))"
        ),
        (
            "max_header_bytes", "CUELINE_MAX_HEADER_BYTES",
            "bytes of request line and headers (\(limitRanges["max_header_bytes"]!))"
        ),
        ("max_body_bytes", "CUELINE_MAX_BODY_BYTES", "bytes of a request body (\(limitRanges["max_body_bytes"]!))"),
        (
            "send_buffer_bytes", "CUELINE_SEND_BUFFER_BYTES",
            "bytes of each connection's kernel send buffer (\(limitRanges["send_buffer_bytes"]!))"
        ),
        (
            "max_streams_per_token", "CUELINE_MAX_STREAMS_PER_TOKEN",
            "live event streams per token (\(limitRanges["max_streams_per_token"]!))"
        ),
        ("max_streams", "CUELINE_MAX_STREAMS", "live event streams on the instance (\(limitRanges["max_streams"]!))"),
        ("pin_event_loops", "CUELINE_PIN_EVENT_LOOPS", "true or false: one event loop pinned to each CPU (Linux)"),
        (
            "trusted_proxies", "CUELINE_TRUSTED_PROXIES",
            "comma-separated addresses or networks (10.0.0.0/8, 2001:db8::/32) whose X-Forwarded-For names the client"
        ),
    ]

    /// What each limit accepts.
    static let limitRanges: [String: ClosedRange<Int>] = [
        "max_connections": 1...1_000_000, "header_timeout": 1...3600, "idle_timeout": 1...86_400,
        "max_header_bytes": 1024...1_048_576, "max_body_bytes": 1024...16_777_216,
        "send_buffer_bytes": 4096...16_777_216,
        "max_streams_per_token": 0...100_000, "max_streams": 0...100_000, "body_timeout": 1...3600,
        "max_held_reloads": 1...1_000_000, "max_held_reloads_per_address": 1...1_000_000,
        "max_arriving_bodies": 1...1_000_000, "max_arriving_bodies_per_address": 1...1_000_000,
    ]

    struct Problem: Error, CustomStringConvertible, Equatable {
        var line: Int?
        var message: String
        var description: String { (line.map { "line \($0): " } ?? "") + message }
    }

    /// Parses a config file; every problem is reported, each naming its line and key.
    static func parseFile(_ text: String) -> (values: [String: String], problems: [Problem]) {
        var values: [String: String] = [:]
        var problems: [Problem] = []
        let known = Set(keys.map(\.key))
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = index + 1
            let content = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let trimmed = content.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { continue }
            guard let equals = trimmed.firstIndex(of: "=") else {
                problems.append(Problem(line: line, message: "expected key = value, got \(trimmed.debugDescription)"))
                continue
            }
            let key = trimmed[..<equals].trimmingCharacters(in: .whitespaces)
            var value = trimmed[trimmed.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = String(value.dropFirst().dropLast())
            }
            guard known.contains(key) else {
                let normalized = key.lowercased().replacingOccurrences(of: "-", with: "_")
                let suggestion = keys.map(\.key).first { editDistance($0, normalized) <= 2 }
                problems.append(
                    Problem(
                        line: line,
                        message: "unknown key \(key.debugDescription)"
                            + (suggestion.map { "; did you mean \($0)?" }
                                ?? "; known keys: \(keys.map(\.key).joined(separator: ", "))")))
                continue
            }
            if values[key] != nil { problems.append(Problem(line: line, message: "\(key) is set twice")) }
            values[key] = value
            if let problem = validate(key: key, value: value) { problems.append(Problem(line: line, message: problem)) }
        }
        return (values, problems)
    }

    static func validate(key: String, value: String) -> String? {
        switch key {
        case "port":
            guard let port = Int(value), (1...65_535).contains(port) else {
                return "port: \(value.debugDescription) is not a port number (1-65535)"
            }
        case "log_level":
            guard ["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(value) else {
                return
                    "log_level: \(value.debugDescription) is not one of trace, debug, info, notice, warning, error, critical"
            }
        case "log_format":
            guard value == "text" || value == "json" else {
                return "log_format: \(value.debugDescription) is not text or json"
            }
        case "database_url":
            guard value.hasPrefix("postgresql://") || value.hasPrefix("postgres://") else {
                return "database_url: must start with postgresql://"
            }
        case let key where limitRanges[key] != nil:
            let range = limitRanges[key]!
            guard let number = Int(value), range.contains(number) else {
                return
                    "\(key): \(value.debugDescription) is not a whole number in \(range.lowerBound)...\(range.upperBound)"
            }
        case "pin_event_loops":
            guard value == "true" || value == "false" else {
                return "pin_event_loops: \(value.debugDescription) is not true or false"
            }
        case "trusted_proxies":
            do { _ = try TrustedProxies(Self.list(value)) } catch { return error.description }
        case "host", "media_dir", "migrations":
            guard !value.isEmpty else { return "\(key): must not be empty" }
        default:
            break
        }
        return nil
    }

    /// Resolves file, environment and flags (in that order of increasing precedence).
    static func resolve(file: String?, environment: [String: String], flags: [String: String?]) throws -> Configuration
    {
        var merged: [String: String] = [:]
        if let path = file ?? environment["CUELINE_CONFIG"] {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CLIError(message: "cannot read the config file \(path)")
            }
            let (values, problems) = parseFile(String(decoding: data, as: UTF8.self))
            if let first = problems.first {
                throw CLIError(message: "\(path): \(first) (`cueline config check \(path)` lists every problem)")
            }
            merged = values
        }
        for (key, variable, _) in keys {
            if let value = environment[variable], !value.isEmpty { merged[key] = value }
        }
        for (key, value) in flags {
            if let value { merged[key] = value }
        }
        for (key, value) in merged {
            if let problem = validate(key: key, value: value) { throw CLIError(message: problem) }
        }
        var configuration = Configuration()
        configuration.databaseURL = merged["database_url"]
        configuration.host = merged["host"] ?? configuration.host
        configuration.port = merged["port"].flatMap(Int.init) ?? configuration.port
        configuration.mediaDir = merged["media_dir"]
        configuration.logLevel = merged["log_level"] ?? configuration.logLevel
        configuration.logFormat = merged["log_format"] ?? configuration.logFormat
        configuration.migrations = merged["migrations"]
        func limit(_ key: String, _ keyPath: WritableKeyPath<ServerLimits, Int>) {
            if let value = merged[key].flatMap(Int.init) { configuration.limits[keyPath: keyPath] = value }
        }
        limit("max_connections", \.maxConnections)
        limit("header_timeout", \.headerTimeoutSeconds)
        limit("body_timeout", \.bodyTimeoutSeconds)
        func optionalLimit(_ key: String, _ keyPath: WritableKeyPath<ServerLimits, Int?>) {
            if let value = merged[key].flatMap(Int.init) { configuration.limits[keyPath: keyPath] = value }
        }
        optionalLimit("max_held_reloads", \.maxHeldReloads)
        optionalLimit("max_held_reloads_per_address", \.maxHeldReloadsPerAddress)
        optionalLimit("max_arriving_bodies", \.maxArrivingBodies)
        optionalLimit("max_arriving_bodies_per_address", \.maxArrivingBodiesPerAddress)
        limit("idle_timeout", \.idleTimeoutSeconds)
        limit("max_header_bytes", \.maxHeaderBytes)
        limit("max_body_bytes", \.maxBodyBytes)
        limit("send_buffer_bytes", \.sendBufferBytes)
        limit("max_streams_per_token", \.maxStreamsPerToken)
        limit("max_streams", \.maxStreams)
        configuration.pinEventLoops = merged["pin_event_loops"] == "true"
        if let proxies = merged["trusted_proxies"] {
            configuration.limits.trustedProxies = try TrustedProxies(list(proxies))
        }
        return configuration
    }

    /// A comma-separated value's items, trimmed; empty items left out.
    static func list(_ value: String) -> [String] {
        value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}

/// Levenshtein distance, for "did you mean" hints.
func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a), b = Array(b)
    var row = Array(0...b.count)
    for i in 1...max(1, a.count) where !a.isEmpty {
        var previous = row[0]
        row[0] = i
        for j in 1...max(1, b.count) where !b.isEmpty {
            let current = row[j]
            row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
            previous = current
        }
    }
    return row[b.count]
}
