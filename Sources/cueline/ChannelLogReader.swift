import API
import EventStore
import Foundation
import Schedule

/// A channel's log and its refused commands, read a page at a time from the database or from a server's API
/// (`--server`), in the API's forms, so that `log` and `replay` print the same either way.
struct ChannelLogReader {
    /// A page of events after a version (empty at the end of the stream).
    let events: (_ afterVersion: Int64) async throws -> [RecordedEvent]
    /// A page of refusals after a cursor, and the cursor of its last one (nil at the end).
    let refusals: (_ after: Int64) async throws -> (refusals: [RefusalView], next: Int64?)

    static let pageSize = 1000

    /// The database of `database`, or the API of `--server`/CUELINE_SERVER when given. A channel that does not exist
    /// is an error on both paths, worded as the API words it.
    static func open(_ channel: ChannelID, database: DatabaseOptions, server: String?, token: String?) async throws
        -> ChannelLogReader
    {
        if let remote = RemoteAPI.configured(server: server, token: token) {
            return ChannelLogReader(
                events: { after in
                    try await remote.events(channel, after: after, limit: pageSize).events.map(RecordedEvent.init)
                },
                refusals: { after in
                    let page = try await remote.refusals(channel, after: after, limit: pageSize)
                    return (page.refusals, page.next)
                })
        }
        let store = try await openStore(database)
        guard try await store.version(of: channel) > 0 else {
            throw CLIError(message: "channel \(channel) does not exist")
        }
        let refusals = PostgresRefusalStore(pool: store.pool)
        return ChannelLogReader(
            events: { after in try await store.readStream(channel, after: after, limit: pageSize) },
            refusals: { after in
                let batch = try await refusals.refusals(of: channel, breakID: nil, after: after, limit: pageSize)
                return (batch.refusals.map(RefusalView.init), batch.next)
            })
    }

    /// Every event after `version`, in version order.
    func events(after version: Int64) async throws -> [RecordedEvent] {
        var all: [RecordedEvent] = []
        var after = version
        while true {
            let page = try await events(after)
            guard let last = page.last else { return all }
            all += page
            after = last.version
        }
    }

    /// Every refusal after the cursor, and the cursor of the last one.
    func refusals(after cursor: Int64) async throws -> (refusals: [RefusalView], next: Int64) {
        var all: [RefusalView] = []
        var after = cursor
        while true {
            let page = try await refusals(after)
            guard let next = page.next, !page.refusals.isEmpty else { return (all, after) }
            all += page.refusals
            after = next
        }
    }
}

extension RecordedEvent {
    /// An event as the API showed it.
    init(_ view: EventView) {
        self.init(
            position: view.position, channel: view.channel, version: view.version, type: view.type,
            schemaVersion: view.schemaVersion,
            payload: view.payload, decidedAt: view.decidedAt, actor: view.actor, source: view.source,
            commandID: view.commandId,
            reason: view.reason, hash: view.hash)
    }
}
