import AsyncHTTPClient
import Foundation
import HLS
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix

/// GET over http(s) from servers Cueline does not control (ad servers' asset playlists, relay upstreams), on
/// AsyncHTTPClient: a connection pool per host, the body streamed with back-pressure (nothing is read from the
/// socket faster than it is kept), at most `limit` bytes kept, and the whole answer, body included, within
/// `deadline`. A server that sends an endless answer is cut off at the size, one that drips it at the deadline; the
/// connection is closed then, and nothing more is read from it. A server's idle time (no byte for `idle`) ends the
/// request too.
///
/// One client per kind of use, each living as long as the process (an `HTTPClient` must be shut down before it is
/// released; these never are).
public struct UpstreamGet: Sendable {
    public struct Answer: Sendable {
        public var body: ByteBuffer
        public var status: Int
        /// Where the answer came from, after redirects.
        public var finalURL: String
        /// The `Location` of a redirect (a client that does not follow them).
        public var location: String?

        public var text: String { String(buffer: body) }
    }

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case notHTTP(String)
        case tooLarge(limit: Int)
        case deadline(TimeAmount)
        /// The request failed before a whole answer came; in words an operator can act on.
        case transport(String)

        public var description: String {
            switch self {
            case .notHTTP(let url): "\(url) is not an http(s) URL"
            case .tooLarge(let limit): "the answer is larger than \(limit) bytes"
            case .deadline(let deadline): "no whole answer within \(UpstreamGet.seconds(deadline)) s"
            case .transport(let reason): reason
            }
        }
    }

    let client: HTTPClient
    let connect: TimeAmount
    let idle: TimeAmount

    /// For ad servers: room for a pod's assets at once (up to 100 per break, usually from one ad server).
    public static let assets = UpstreamGet(connectionsPerHost: 128, connect: .milliseconds(1500), idle: .seconds(3))
    /// For ad decision servers: as many connections to one host as viewers ask at once (each channel's
    /// `ad_concurrency` bounds its own), a short connect time (the viewer's deadline is 1.5 s by default).
    /// Redirects are not followed by the client: `AdDecisions` follows them itself, checking each hop's host.
    public static let adServers = UpstreamGet(
        connectionsPerHost: 1024, connect: .milliseconds(1000), idle: .seconds(2), followRedirects: false)
    /// For tracking beacons fired by the server.
    public static let beacons = UpstreamGet(connectionsPerHost: 64, connect: .seconds(2), idle: .seconds(3))
    /// For relay upstreams: many connections to one host (each rendition followed part by part keeps a request held
    /// upstream). A blocking reload is held upstream for up to 3 target durations with no byte sent: the caller's
    /// deadline, not an idle time, ends it.
    public static let relays = UpstreamGet(connectionsPerHost: 1024, connect: .seconds(3), idle: .seconds(60))

    /// - Parameters:
    ///   - connect: how long a connection (and its TLS handshake) may take; shorter than the caller's deadline, so that
    ///     the reason given is the real one.
    init(connectionsPerHost: Int, connect: TimeAmount, idle: TimeAmount, followRedirects: Bool = true) {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: followRedirects ? .follow(max: 5, allowCycles: false) : .disallow,
            timeout: .init(connect: connect, read: idle),
            connectionPool: .init(
                idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: connectionsPerHost),
            decompression: .disabled)
        // A host that does not resolve or refuses is said at once, not retried until `connect` runs out: the callers
        // ask again themselves (a relay's next poll), and an operator placing a break waits for nothing.
        configuration.connectionPool.retryConnectionEstablishment = false
        client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
        self.connect = connect
        self.idle = idle
    }

    /// GETs `url`: at most `limit` bytes of body, all of it within `deadline` of the call.
    ///
    /// - Throws: ``Failure``; `CancellationError` when the calling task is cancelled.
    public func get(_ url: String, limit: Int, deadline: TimeAmount) async throws -> Answer {
        guard url.hasPrefix("http://") || url.hasPrefix("https://"), URL(string: url) != nil else {
            throw Failure.notHTTP(url)
        }
        let client = self.client
        // The client's own deadline covers the request until the answer's head; the body is raced against the
        // rest of it here. Whichever ends first cancels the other: a cancelled body stream closes its connection.
        let nioDeadline = NIODeadline.now() + deadline
        return try await withThrowingTaskGroup(of: Answer?.self) { group in
            group.addTask {
                var request = HTTPClientRequest(url: url)
                request.method = .GET
                request.headers.add(name: "User-Agent", value: "Cueline")
                let response: HTTPClientResponse
                do {
                    response = try await client.execute(request, deadline: nioDeadline)
                } catch let error as HTTPClientError where error == .deadlineExceeded {
                    throw Failure.deadline(deadline)
                } catch let error as CancellationError {
                    throw error
                } catch {
                    throw Failure.transport(Self.reason(error, connect: self.connect, idle: self.idle))
                }
                if let length = response.headers.first(name: "content-length").flatMap(Int.init), length > limit {
                    throw Failure.tooLarge(limit: limit)
                }
                let body: ByteBuffer
                do {
                    body = try await Self.collect(response.body, limit: limit)
                } catch let failure as Failure {
                    throw failure
                } catch let error as CancellationError {
                    throw error
                } catch {
                    if Task.isCancelled { throw CancellationError() }
                    throw Failure.transport(Self.reason(error, connect: self.connect, idle: self.idle))
                }
                return Answer(
                    body: body, status: Int(response.status.code), finalURL: response.url?.absoluteString ?? url,
                    location: response.headers.first(name: "location"))
            }
            group.addTask {
                try await Task.sleep(for: .nanoseconds(deadline.nanoseconds))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw CancellationError() }
            guard let answer = first else {
                if Task.isCancelled { throw CancellationError() }
                throw Failure.deadline(deadline)
            }
            return answer
        }
    }

    /// The body's chunks kept as they came (NIO's read buffers) and joined once, when the answer is whole: a buffer
    /// grown by doubling would take up to twice the limit, and the allocator keeps such large blocks.
    static func collect(_ body: HTTPClientResponse.Body, limit: Int) async throws -> ByteBuffer {
        var chunks: [ByteBuffer] = []
        var total = 0
        for try await chunk in body {
            total += chunk.readableBytes
            guard total <= limit else { throw Failure.tooLarge(limit: limit) }
            chunks.append(chunk)
        }
        if chunks.count == 1 { return chunks[0] }
        var joined = ByteBufferAllocator().buffer(capacity: total)
        for chunk in chunks { joined.writeImmutableBuffer(chunk) }
        return joined
    }

    /// A transport error in words an operator can act on.
    static func reason(_ error: any Error, connect: TimeAmount, idle: TimeAmount) -> String {
        switch error {
        case let error as HTTPClientError:
            switch error {
            case .connectTimeout: return "no connection within \(seconds(connect)) s"
            case .readTimeout: return "no byte for \(seconds(idle)) s"
            case .remoteConnectionClosed: return "the connection was closed before the whole answer"
            case .invalidURL, .emptyHost, .emptyScheme: return "the URL is not supported"
            case .redirectLimitReached, .redirectCycleDetected: return "too many redirects"
            default: return "\(error)"
            }
        case let error as NIOConnectionError:
            if error.dnsAError != nil || error.dnsAAAAError != nil, error.connectionErrors.isEmpty {
                return "its host name does not resolve"
            }
            if error.connectionErrors.contains(where: { ($0.error as? IOError)?.errnoCode == ECONNREFUSED }) {
                return "the connection was refused"
            }
            return "it could not be connected to"
        case let error as IOError where error.errnoCode == ECONNREFUSED:
            return "the connection was refused"
        case is ChannelError:
            return "the connection was lost (\(error))"
        case let error as HTTPParserError:
            return "the answer is not valid HTTP (\(error))"
        default:
            return "\(error)"
        }
    }

    /// `1.5`, `3`: as the rest of Cueline writes seconds (`DecimalNumber`).
    static func seconds(_ amount: TimeAmount) -> DecimalNumber {
        DecimalNumber(milliseconds: amount.nanoseconds / 1_000_000)
    }
}
