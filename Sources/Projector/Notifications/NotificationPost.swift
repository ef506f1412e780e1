import AsyncHTTPClient
import EventStore
import Foundation
import HLS
import NIOCore
import NIOHTTP1
import NIOPosix

/// POSTs a signed notification to a subscriber, on AsyncHTTPClient like ``UpstreamGet``: a connection pool per host,
/// redirects not followed (a delivery goes where it was subscribed, or fails), at most 64 KiB of the answer read, the
/// whole exchange within `deadline`.
///
/// Headers: `X-Cueline-Timestamp` (Unix seconds), `X-Cueline-Signature: sha256=<hex HMAC-SHA256 of
/// "<timestamp>.<body>">` under the subscription's secret (the scheme feed hooks check, `Hooks.swift`), and
/// `X-Cueline-Delivery`, the fact's id, the same at every retry.
public struct NotificationPost: Sendable {
    public enum Failure: Error, Equatable, CustomStringConvertible {
        case status(Int)
        case deadline
        case transport(String)

        public var description: String {
            switch self {
            case .status(let code): "the subscriber answered \(code)"
            case .deadline: "no answer within the deadline"
            case .transport(let reason): reason
            }
        }
    }

    let client: HTTPClient
    let connect: TimeAmount
    let idle: TimeAmount

    /// One client for every subscription, living as long as the process.
    public static let shared = NotificationPost(connect: .seconds(3), idle: .seconds(10))

    init(connect: TimeAmount, idle: TimeAmount) {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: connect, read: idle),
            connectionPool: .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: 8),
            decompression: .disabled)
        configuration.connectionPool.retryConnectionEstablishment = false
        client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
        self.connect = connect
        self.idle = idle
    }

    /// The signature header's value for `body` sent at `timestamp`.
    public static func signature(secret: String, timestamp: Int64, body: [UInt8]) -> String {
        "sha256=" + hexDigits(hmacSHA256(key: Array(secret.utf8), message: Array("\(timestamp).".utf8) + body))
    }

    /// Sends one delivery; returns when the subscriber answered 2xx.
    ///
    /// - Throws: ``Failure``; `CancellationError` when the calling task is cancelled.
    public func send(
        to url: String, body: [UInt8], secret: String, deliveryID: String, timestamp: Int64, deadline: TimeAmount
    ) async throws {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "User-Agent", value: "Cueline")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "X-Cueline-Timestamp", value: String(timestamp))
        request.headers.add(
            name: "X-Cueline-Signature", value: Self.signature(secret: secret, timestamp: timestamp, body: body))
        request.headers.add(name: "X-Cueline-Delivery", value: deliveryID)
        request.body = .bytes(ByteBuffer(bytes: body))
        let nioDeadline = NIODeadline.now() + deadline
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, deadline: nioDeadline)
        } catch let error as HTTPClientError where error == .deadlineExceeded {
            throw Failure.deadline
        } catch let error as CancellationError {
            throw error
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw Failure.transport(UpstreamGet.reason(error, connect: connect, idle: idle))
        }
        // The answer is read (so the connection can be reused) but not kept; a long one is cut off.
        do {
            var read = 0
            for try await chunk in response.body {
                read += chunk.readableBytes
                if read > 65_536 { break }
            }
        } catch {
            if Task.isCancelled { throw CancellationError() }
        }
        guard (200..<300).contains(response.status.code) else { throw Failure.status(Int(response.status.code)) }
    }
}
