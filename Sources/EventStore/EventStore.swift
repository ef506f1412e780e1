import HLS
import Schedule

/// The append-only event log as a message store: one stream per channel, one global order (message-db's surface).
///
/// Append with an expected version, read a stream, read everything by position, a stream's version, the head.
/// Nothing else lives here: refused commands (`RefusalStore`), render samples (`RenderSampleStore`) and API tokens
/// (`TokenStore`) have small stores of their own.
///
/// Implementations: `PostgresEventStore` (production) and `InMemoryEventStore` (tests, tools). Both pass the
/// same contract tests.
public protocol EventStore: Sendable {
    /// Appends the events of one command atomically.
    ///
    /// - Throws: `StoreError.versionConflict` when the stream is not at `expectedVersion`;
    ///   `StoreError.commandIDReused` when the command id was used for a different request.
    ///   A retry of an applied command (same id, same request) returns the original result with `replayed`.
    func append(_ request: AppendRequest) async throws -> AppendResult

    /// The result `append` stored for this command id, so that a retry is answered before it is decided again.
    ///
    /// Part of append's contract, not a store of its own: the record is written by the append, in its transaction,
    /// and judged by the same rule (same id and request: the original result; same id, other request: reused).
    /// A separate lookup could be paired with a store whose appends it does not see.
    ///
    /// - Returns: nil when the command id is unknown.
    /// - Throws: `StoreError.commandIDReused` when the id was used for a different request.
    func previousResult(of request: AppendRequest) async throws -> AppendResult?

    /// Events with a global position greater than `position` and at most `head`, in position order, at most `limit`.
    ///
    /// Positions are unique and grow with each channel's versions, but appends of different channels commit in any
    /// order and a rolled-back append leaves a hole: only positions at or below a watermark's `head` are final, so a
    /// reader that moves a cursor reads up to one (`watermark()`), never past it.
    func read(after position: Int64, through head: Int64, limit: Int) async throws -> [RecordedEvent]

    /// Events of one channel with a version greater than `version`, in order, at most `limit`.
    func readStream(_ channel: ChannelID, after version: Int64, limit: Int) async throws -> [RecordedEvent]

    /// The channel's current version (0 for a channel with no events).
    func version(of channel: ChannelID) async throws -> Int64

    /// The highest committed global position (0 for an empty log); a lower position may still commit after it (use
    /// `watermark()` to read up to a final one).
    func headPosition() async throws -> Int64

    /// The log head and the instant up to which the log is complete (see `Watermark`).
    ///
    /// Kept beside `headPosition` because the follower needs both at once: a head alone does not say whether an
    /// event decided before some instant may still commit below it, and serving a tick before that is known would
    /// make replay differ from what was served (design.md, rule 2).
    func watermark() async throws -> Watermark
}

/// What the appender believes the stream's version to be.
public enum ExpectedVersion: Sendable, Hashable, CustomStringConvertible {
    /// Append whatever the version is.
    case any
    /// The stream must have no events yet.
    case noStream
    /// The stream must be at exactly this version.
    case exactly(Int64)

    func admits(_ actual: Int64) -> Bool {
        switch self {
        case .any: return true
        case .noStream: return actual == 0
        case .exactly(let expected): return actual == expected
        }
    }

    public var description: String {
        switch self {
        case .any: return "any"
        case .noStream: return "no stream"
        case .exactly(let version): return String(version)
        }
    }
}

/// An event about to be written.
public struct NewEvent: Sendable, Hashable {
    /// Past tense, e.g. `BreakPlaced`.
    public var type: String
    /// The version of the payload's schema, so old events stay readable after the payload evolves.
    public var schemaVersion: Int
    /// JSON text, stored exactly as given.
    public var payload: String

    public init(type: String, schemaVersion: Int = 1, payload: String) {
        self.type = type
        self.schemaVersion = schemaVersion
        self.payload = payload
    }
}

/// Who asked for the events, when the decision was made, and the request that identifies a retry.
public struct CommandMetadata: Sendable, Hashable {
    /// Client-supplied or generated; unique across the whole log.
    public var commandID: String
    /// A canonical rendering of the request; its hash is stored to tell a retry from a reuse of the id.
    public var request: String
    public var actor: String
    /// `cli`, `http`, `hook:<name>`, `scte35`…
    public var source: String
    public var reason: String?
    /// The time `decide` used; written into every event so replay never needs a clock.
    public var decidedAt: Timestamp

    public init(
        commandID: String, request: String, actor: String, source: String, reason: String? = nil,
        decidedAt: Timestamp
    ) {
        self.commandID = commandID
        self.request = request
        self.actor = actor
        self.source = source
        self.reason = reason
        self.decidedAt = decidedAt
    }
}

public struct AppendRequest: Sendable, Hashable {
    public var channel: ChannelID
    public var expectedVersion: ExpectedVersion
    public var events: [NewEvent]
    public var command: CommandMetadata

    public init(channel: ChannelID, expectedVersion: ExpectedVersion, events: [NewEvent], command: CommandMetadata) {
        self.channel = channel
        self.expectedVersion = expectedVersion
        self.events = events
        self.command = command
    }

    /// The hash stored with the command id: covers the channel and the request text.
    var requestHash: String {
        sha256Hex(channel.rawValue + "\n" + command.request)
    }
}

/// An event as stored in the log.
public struct RecordedEvent: Sendable, Hashable, Codable {
    /// Global, gap-free, visible in order.
    public var position: Int64
    public var channel: ChannelID
    /// Per channel, gap-free, starting at 1.
    public var version: Int64
    public var type: String
    public var schemaVersion: Int
    public var payload: String
    public var decidedAt: Timestamp
    public var actor: String
    public var source: String
    public var commandID: String
    public var reason: String?
    /// Chained to the previous event of the channel (`HashChain`); nil for events written before it existed.
    public var hash: String?

    public init(
        position: Int64, channel: ChannelID, version: Int64, type: String, schemaVersion: Int, payload: String,
        decidedAt: Timestamp, actor: String, source: String, commandID: String, reason: String?, hash: String? = nil
    ) {
        self.position = position
        self.channel = channel
        self.version = version
        self.type = type
        self.schemaVersion = schemaVersion
        self.payload = payload
        self.decidedAt = decidedAt
        self.actor = actor
        self.source = source
        self.commandID = commandID
        self.reason = reason
        self.hash = hash
    }
}

public struct AppendResult: Sendable, Hashable {
    public var channel: ChannelID
    /// The events this command produced (the original ones, on a retry).
    public var events: [RecordedEvent]
    /// The stream's version right after this command was applied.
    public var version: Int64
    /// True when this answer is the stored result of an earlier identical request.
    public var replayed: Bool

    public init(channel: ChannelID, events: [RecordedEvent], version: Int64, replayed: Bool) {
        self.channel = channel
        self.events = events
        self.version = version
        self.replayed = replayed
    }
}

/// Why an append or a read did not happen.
public enum StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Someone else appended first: re-read the schedule and decide again.
    case versionConflict(channel: ChannelID, expected: ExpectedVersion, actual: Int64)
    /// The command id was already used for a different request.
    case commandIDReused(commandID: String)
    /// The database schema is older than this build needs.
    case schemaOutdated(applied: Int, required: Int)
    /// The database could not be reached or refused the statement.
    case database(String)
    /// The database is unreachable right now; retrying later may work.
    case unavailable(String)
    /// The decision time was not ahead of the database clock when the append took the log head (a slow commit
    /// or a clock behind the database's): nothing was written; decide again with a later time.
    case lateDecision(decidedAt: Timestamp, databaseClock: Timestamp)
    /// The connection broke after the append was sent and the database could not be asked whether it committed:
    /// the command may have been written. A retry with the same command id answers with the original result.
    case unknownOutcome(String)
    /// The log head stayed locked longer than the watermark waits (a commit held open): the log is reachable but
    /// not known past the previous watermark.
    case logHeadBusy(String)
    /// Another transaction held the channel's row in the log past the append's 2 s wait, or the log head past its
    /// 5 s (Migrations/0013): nothing was written. Retrying later may work.
    case streamLocked(channel: String)
    /// A value the log cannot hold as given (a NUL or control character, an over-long text): nothing was written.
    case invalidValue(String)

    public var description: String {
        switch self {
        case .versionConflict(let channel, let expected, let actual):
            return "channel \(channel) changed meanwhile: expected version \(expected), it is at \(actual); "
                + "reload the schedule and try again"
        case .commandIDReused(let id):
            return "command id \(id) was already used for a different request; use a new id for a new command"
        case .schemaOutdated(let applied, let required):
            return "the database schema is at migration \(migrationNumber(applied)) but this build needs "
                + "\(migrationNumber(required)); run `cueline migrate`"
        case .database(let message):
            return message
        case .unavailable(let message):
            return message
        case .lateDecision(let decidedAt, let clock):
            return "the decision time \(decidedAt) was not ahead of the database clock \(clock) when the append ran "
                + "(the database is slow or this machine's clock is behind it); nothing was written"
        case .invalidValue(let message):
            return "\(message); nothing was written"
        case .logHeadBusy(let message):
            return "the log head has been locked for over 5 s by a transaction that does not commit (\(message))"
        case .streamLocked(let channel):
            return "channel \(channel)'s row in the log (2 s), or the log head (5 s), was held by another transaction "
                + "past the append's wait (pg_locks names the holder); nothing was written: retry shortly"
        case .unknownOutcome(let message):
            return "the connection to the database broke while the command was being written (\(message)); it may have "
                + "been written: retry with the same Idempotency-Key (command id), which answers with the original result"
        }
    }
}

/// A migration number as it appears in file names: `0001`.
func migrationNumber(_ value: Int) -> String {
    let digits = String(value)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}

/// What a follower may rely on: every event decided at or before `knownUntil` is at or below position `head`.
///
/// A follower that has read the log up to `head` can serve any tick up to `knownUntil` knowing that no event it
/// has not seen could change that tick's playlist, so replay gives back exactly what it served.
public struct Watermark: Sendable, Hashable {
    public var head: Int64
    public var knownUntil: Timestamp

    public init(head: Int64, knownUntil: Timestamp) {
        self.head = head
        self.knownUntil = knownUntil
    }
}
