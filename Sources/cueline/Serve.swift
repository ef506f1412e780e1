import API
import ArgumentParser
import EventStore
import Foundation
import Hummingbird
import Logging
import Metrics
import Postgres
import Projector
import ServiceLifecycle
import Synchronization

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the channels' playlists over HTTP, following the event log.")

    @Option(help: "Address to listen on (CUELINE_HOST; default 127.0.0.1).")
    var host: String?

    @Option(help: "Port to listen on (CUELINE_PORT; default 8080).")
    var port: Int?

    @Option(name: .customLong("media-dir"), help: "Serve the files under this directory at /media (CUELINE_MEDIA_DIR).")
    var mediaDir: String?

    @Option(name: .customLong("log-level"), help: "trace … critical (CUELINE_LOG_LEVEL; default info).")
    var logLevel: String?

    @Option(name: .customLong("log-format"), help: "text or json (CUELINE_LOG_FORMAT; default text).")
    var logFormat: String?

    @Flag(
        name: .customLong("unauthenticated-commands"),
        help:
            "No tokens: accept commands and JSON reads from anyone who can reach the port (closed networks and demos only)."
    )
    var unauthenticatedCommands = false

    @Option(
        name: .customLong("max-connections"),
        help:
            "Open connections at most; beyond, the longest idle one is closed, or the new one gets 503 (CUELINE_MAX_CONNECTIONS; default 4096, lowered to fit the file descriptor limit)."
    )
    var maxConnections: Int?

    @Option(
        name: .customLong("header-timeout"),
        help: "Seconds for a request head to arrive (CUELINE_HEADER_TIMEOUT; default 10).")
    var headerTimeout: Int?

    @Option(
        name: .customLong("body-timeout"),
        help: "Seconds for a request body to arrive after its head; 408 beyond (CUELINE_BODY_TIMEOUT; default 5).")
    var bodyTimeout: Int?

    @Option(
        name: .customLong("max-held-reloads"),
        help:
            "LL-HLS blocking reloads held at once; beyond, the oldest is answered 503 (CUELINE_MAX_HELD_RELOADS; default 3/4 of max-connections)."
    )
    var maxHeldReloads: Int?

    @Option(
        name: .customLong("max-held-reloads-per-address"),
        help:
            "Blocking reloads held at once for one client address (an IPv6 /64); 503 beyond (CUELINE_MAX_HELD_RELOADS_PER_ADDRESS; default 1/4 of max-connections)."
    )
    var maxHeldReloadsPerAddress: Int?

    @Option(
        name: .customLong("max-arriving-bodies"),
        help:
            "Requests whose body is still arriving, at once; 503 beyond (CUELINE_MAX_ARRIVING_BODIES; default 1/8 of max-connections)."
    )
    var maxArrivingBodies: Int?

    @Option(
        name: .customLong("max-arriving-bodies-per-address"),
        help:
            "Requests whose body is still arriving, at once, from one client address; 503 beyond (CUELINE_MAX_ARRIVING_BODIES_PER_ADDRESS; default 1/4 of max-arriving-bodies)."
    )
    var maxArrivingBodiesPerAddress: Int?

    @Option(
        name: .customLong("idle-timeout"),
        help:
            "Seconds before a connection with no request in progress, or whose client reads nothing, is closed (CUELINE_IDLE_TIMEOUT; default 60)."
    )
    var idleTimeout: Int?

    @Option(
        name: .customLong("max-header-bytes"),
        help: "Request line and headers at most, in bytes; 431 beyond (CUELINE_MAX_HEADER_BYTES; default 16384).")
    var maxHeaderBytes: Int?

    @Option(
        name: .customLong("max-body-bytes"),
        help: "Request body at most, in bytes; 413 beyond (CUELINE_MAX_BODY_BYTES; default 65536).")
    var maxBodyBytes: Int?

    @Option(
        name: .customLong("send-buffer-bytes"),
        help:
            "Each connection's kernel send buffer, in bytes: what a client that does not read can make the host hold (CUELINE_SEND_BUFFER_BYTES; default 65536)."
    )
    var sendBufferBytes: Int?

    @Option(
        name: .customLong("max-streams-per-token"),
        help: "Live event streams per token; 429 beyond (CUELINE_MAX_STREAMS_PER_TOKEN; default 16).")
    var maxStreamsPerToken: Int?

    @Option(
        name: .customLong("max-streams"),
        help: "Live event streams on this instance; 503 beyond (CUELINE_MAX_STREAMS; default 256).")
    var maxStreams: Int?

    @Flag(
        name: .customLong("pin-event-loops"), inversion: .prefixedNo,
        help:
            "One event loop pinned to each CPU this process may use, Linux (CUELINE_PIN_EVENT_LOOPS; default off): answers at an LL-HLS part boundary come sooner on a host that runs little else."
    )
    var pinEventLoops: Bool?

    @Option(
        name: .customLong("trusted-proxy"),
        help:
            "The address or network of a proxy in front (its own: 198.51.100.0/28, not the network its clients come from), repeatable: its X-Forwarded-For names the client that per-address limits count (CUELINE_TRUSTED_PROXIES, comma-separated; default none)."
    )
    var trustedProxies: [String] = []

    @OptionGroup var database: DatabaseOptions

    func configuration() throws -> Configuration {
        try database.configuration(flags: [
            "host": host, "port": port.map(String.init), "media_dir": mediaDir, "log_level": logLevel,
            "log_format": logFormat,
            "max_connections": maxConnections.map(String.init), "header_timeout": headerTimeout.map(String.init),
            "body_timeout": bodyTimeout.map(String.init), "max_held_reloads": maxHeldReloads.map(String.init),
            "max_held_reloads_per_address": maxHeldReloadsPerAddress.map(String.init),
            "max_arriving_bodies": maxArrivingBodies.map(String.init),
            "max_arriving_bodies_per_address": maxArrivingBodiesPerAddress.map(String.init),
            "idle_timeout": idleTimeout.map(String.init), "max_header_bytes": maxHeaderBytes.map(String.init),
            "max_body_bytes": maxBodyBytes.map(String.init), "send_buffer_bytes": sendBufferBytes.map(String.init),
            "max_streams_per_token": maxStreamsPerToken.map(String.init),
            "max_streams": maxStreams.map(String.init), "pin_event_loops": pinEventLoops.map { $0 ? "true" : "false" },
            "trusted_proxies": trustedProxies.isEmpty ? nil : trustedProxies.joined(separator: ","),
        ])
    }

    @Option(
        help: "Feed hooks file (JSON): the rules that turn signed feed payloads into commands at POST /hooks/{name}.")
    var hooks: String?

    func run() async throws {
        let settings = try configuration()
        let (host, port, url) = (settings.host, settings.port, settings.databaseURL ?? "")
        let logger = Logger(label: "cueline.serve")
        // The connection cap, not the operating system, decides who is served: raise the descriptor limit to the
        // hard limit, and keep the cap below it with room for the database, the log and the media files.
        var limits = settings.limits
        let descriptors = FileDescriptorLimit.raiseToHardLimit()
        if descriptors - 256 < limits.maxConnections {
            limits.maxConnections = max(16, descriptors - 256)
            logger.warning(
                "max_connections lowered to fit the file descriptor limit",
                metadata: [
                    "max_connections": "\(limits.maxConnections)", "descriptors": "\(descriptors)",
                ])
        }
        var server = ServerSettings(databaseURL: url, clock: wallClock)
        (server.host, server.port, server.limits, server.mediaDirectory) = (host, port, limits, settings.mediaDir)
        server.hooks =
            try hooks.map { try HookSet(file: $0, environment: ProcessInfo.processInfo.environment) } ?? HookSet()
        server.unauthenticatedCommands = unauthenticatedCommands
        let loops = await EventLoops.group(pinned: settings.pinEventLoops, logger: logger)
        let app = try await buildApplication(
            server, metrics: { Cueline.metrics.emitToString() }, eventLoopGroupProvider: loops.provider,
            logger: logger)
        try await app.runService()
        try await loops.own?.shutdownGracefully()
    }
}

/// The process's limit on open file descriptors.
enum FileDescriptorLimit {
    /// Raises the soft limit to the hard limit and returns the soft limit now in force.
    static func raiseToHardLimit() -> Int {
        var limit = rlimit()
        #if os(Linux)
            let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        #else
            let resource = RLIMIT_NOFILE
        #endif
        guard getrlimit(resource, &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(resource, &raised) == 0 { limit = raised }
        }
        return limit.rlim_cur > rlim_t(Int.max) ? Int.max : Int(limit.rlim_cur)
    }
}
