import EventStore
import HLS
import Schedule

/// Reads a channel's events and folds them.
public enum ChannelLoader {
    /// - Parameters:
    ///   - known: a state of this channel to continue from; only later events are read.
    ///   - retention: which breaks the state keeps (`.window`: what the follower serves from; `.all`: audit folds).
    public static func load(
        _ channel: ChannelID, from store: any EventStore, startingFrom known: ChannelState? = nil,
        retention: ChannelState.Retention = .all
    ) async throws -> ChannelState {
        var state = known ?? ChannelState(channel: channel, retention: retention)
        for try await page in store.pages(of: channel, after: state.version) {
            for event in page { fold(event, into: &state) }
        }
        return state
    }

    /// Folds a stored event. One this build cannot read (a newer type, or a payload that does not decode) only moves
    /// the version on, as the follower and replay do: one bad event cannot block a channel, and what is served
    /// stays what replay gives. `cueline verify` reports such events.
    public static func fold(_ event: RecordedEvent, into state: inout ChannelState) {
        if let decoded = try? decode(event) {
            state.apply(decoded)
        } else {
            state.version = event.version
            state.position = max(state.position, event.position)
        }
    }

    /// The events of a batch this build can read, in order, and those it cannot with the reason.
    public static func decodeReadable(_ events: [RecordedEvent]) -> (
        readable: [RecordedScheduleEvent], unreadable: [(RecordedEvent, String)]
    ) {
        var readable: [RecordedScheduleEvent] = []
        var unreadable: [(RecordedEvent, String)] = []
        for event in events {
            do {
                readable.append(try decode(event))
            } catch {
                unreadable.append((event, "\(error)"))
            }
        }
        return (readable, unreadable)
    }

    public static func decode(_ event: RecordedEvent) throws -> RecordedScheduleEvent {
        RecordedScheduleEvent(
            event: try EventCodec.decode(type: event.type, schemaVersion: event.schemaVersion, payload: event.payload),
            version: event.version, position: event.position,
            attribution: Attribution(at: event.decidedAt, actor: event.actor, source: event.source))
    }
}
