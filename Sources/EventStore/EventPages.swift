import HLS
import Schedule

/// A channel's events after a version, in version order, read a page at a time as the pages are iterated: the one way
/// Cueline reads a stream to its end (folding a channel, replay, checkpoints, the CLI's whole-log reads), instead of a
/// hand-written loop at each place. Iteration ends after the first page shorter than the page size.
public struct EventPages: AsyncSequence, Sendable {
    public typealias Element = [RecordedEvent]

    let after: Int64
    let pageSize: Int
    /// Reads at most `limit` events after the version `after`, in version order.
    let read: @Sendable (_ after: Int64, _ limit: Int) async throws -> [RecordedEvent]

    public init(
        after: Int64, pageSize: Int = 1000,
        read: @escaping @Sendable (_ after: Int64, _ limit: Int) async throws -> [RecordedEvent]
    ) {
        precondition(pageSize > 0)
        self.after = after
        self.pageSize = pageSize
        self.read = read
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var after: Int64
        let pageSize: Int
        let read: @Sendable (_ after: Int64, _ limit: Int) async throws -> [RecordedEvent]
        var done = false

        public mutating func next() async throws -> [RecordedEvent]? {
            guard !done else { return nil }
            let page = try await read(after, pageSize)
            done = page.count < pageSize
            guard let last = page.last else { return nil }
            after = last.version
            return page
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(after: after, pageSize: pageSize, read: read)
    }
}

extension EventStore {
    /// The events of `channel` after `version`, a page of `pageSize` at a time (``EventPages``).
    public func pages(of channel: ChannelID, after version: Int64 = 0, pageSize: Int = 1000) -> EventPages {
        EventPages(after: version, pageSize: pageSize) { after, limit in
            try await self.readStream(channel, after: after, limit: limit)
        }
    }

    /// Every event of `channel` after `version`, in version order.
    public func events(of channel: ChannelID, after version: Int64 = 0) async throws -> [RecordedEvent] {
        var events: [RecordedEvent] = []
        for try await page in pages(of: channel, after: version) { events += page }
        return events
    }
}
