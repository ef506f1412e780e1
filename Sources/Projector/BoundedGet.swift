import Dispatch
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// GET over http(s) from servers Cueline does not control (ad servers' asset playlists, relay upstreams): at most
/// `limit` bytes are kept and the whole answer must arrive before `deadline`. A server that sends an endless answer
/// is cut off at the size, one that drips it at the deadline; what arrives after that is dropped, never buffered,
/// and the caller is answered at once, whatever the transfer still does. The request's `timeoutInterval` stays an
/// idle time-out.
///
/// One session per kind of use, with this object as its delegate: URLSession calls it on the session's queue, the
/// transfers live in a `Mutex`, and tasks are cancelled from another queue (cancelling inside the session's own
/// callback can deadlock it).
final class BoundedGet: NSObject, URLSessionDataDelegate, Sendable {
    struct Answer: Sendable {
        var body: Data
        var status: Int
        /// Where the answer came from, after redirects.
        var finalURL: String?
    }

    enum Failure: Error, Equatable {
        case tooLarge(limit: Int)
        case deadline(Duration)
    }

    private struct Transfer {
        var data = Data()
        let limit: Int
        var status = 0
        var finalURL: String?
        var continuation: CheckedContinuation<Answer, any Error>?
        /// The outcome, when it came before the caller waited for it.
        var outcome: Result<Answer, any Error>?
    }

    private let transfers = Mutex<[Int: Transfer]>([:])
    private let session = Mutex<URLSession?>(nil)

    /// For ad servers: a session of its own, nothing kept between requests, and room for a pod's assets at once (up to
    /// 100 per break, usually from one ad server: the default of 6 per host would queue them past their 3 s).
    static let assets: BoundedGet = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 128
        return BoundedGet(configuration: configuration)
    }()
    /// For relay upstreams: many connections to one host (each rendition followed part by part keeps a request held
    /// upstream, and the default of 6 per host would queue the seventh behind a part).
    static let relays: BoundedGet = {
        let configuration = URLSessionConfiguration.default
        configuration.httpMaximumConnectionsPerHost = 1024
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        return BoundedGet(configuration: configuration)
    }()

    private init(configuration: URLSessionConfiguration) {
        super.init()
        // The session keeps its delegate for as long as it lives; these live as long as the process.
        session.withLock { $0 = URLSession(configuration: configuration, delegate: self, delegateQueue: nil) }
    }

    func get(_ request: URLRequest, limit: Int, deadline: Duration) async throws -> Answer {
        guard let session = session.withLock({ $0 }) else { throw CancellationError() }
        let task = session.dataTask(with: request)
        let id = task.taskIdentifier
        transfers.withLock { $0[id] = Transfer(limit: limit) }
        let seconds = Double(deadline.components.seconds) + Double(deadline.components.attoseconds) / 1e18
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [self] in
            end(id, task, with: .failure(Failure.deadline(deadline)))
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let early = transfers.withLock { transfers -> Result<Answer, any Error>?? in
                    guard transfers[id] != nil else { return .some(nil) }
                    if let outcome = transfers[id]?.outcome {
                        transfers[id] = nil
                        return outcome
                    }
                    transfers[id]?.continuation = continuation
                    return nil
                }
                switch early {
                case nil: task.resume()
                case let outcome??: continuation.resume(with: outcome)
                case .some(nil): continuation.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            end(id, task, with: .failure(CancellationError()))
        }
    }

    /// Ends a transfer once: answers its caller (or keeps the outcome for it), forgets its data, and cancels the task
    /// from another queue if it is still running.
    private func end(_ id: Int, _ task: URLSessionTask?, with outcome: Result<Answer, any Error>) {
        let waiting = transfers.withLock { transfers -> CheckedContinuation<Answer, any Error>?? in
            guard var transfer = transfers[id], transfer.outcome == nil else { return nil }
            guard let continuation = transfer.continuation else {
                transfer.outcome = outcome
                transfer.data = Data()
                transfers[id] = transfer
                return .some(nil)
            }
            transfers[id] = nil
            return continuation
        }
        guard let waiting else { return }
        waiting?.resume(with: outcome)
        if let task, task.state == .running || task.state == .suspended {
            DispatchQueue.global().async { task.cancel() }
        }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        transfers.withLock { transfers in
            transfers[dataTask.taskIdentifier]?.status = (response as? HTTPURLResponse)?.statusCode ?? 200
            transfers[dataTask.taskIdentifier]?.finalURL = response.url?.absoluteString
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive received: Data) {
        let over = transfers.withLock { transfers -> Int? in
            // Ended already (answered, cut off, cancelled): what still arrives is dropped.
            guard var transfer = transfers[dataTask.taskIdentifier], transfer.outcome == nil else { return nil }
            guard transfer.data.count + received.count <= transfer.limit else { return transfer.limit }
            transfers[dataTask.taskIdentifier] = nil
            transfer.data.append(received)
            transfers[dataTask.taskIdentifier] = transfer
            return nil
        }
        if let over { end(dataTask.taskIdentifier, dataTask, with: .failure(Failure.tooLarge(limit: over))) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let answer = transfers.withLock { transfers -> Answer? in
            transfers[task.taskIdentifier].map { Answer(body: $0.data, status: $0.status, finalURL: $0.finalURL) }
        }
        if let error {
            end(task.taskIdentifier, nil, with: .failure(error))
        } else if let answer {
            end(task.taskIdentifier, nil, with: .success(answer))
        }
        // A transfer ended before its caller waited keeps its outcome until then; one whose caller was answered is gone.
    }
}
