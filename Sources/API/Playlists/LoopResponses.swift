import NIOCore
import Projector
import Schedule

/// Whole playlist answers (head and body in one buffer) kept on one event loop, by the window's body and the variant
/// (cache lifetime, CORS, HEAD) and for the second of their `Date`: the requests a part boundary releases on a loop
/// are mostly the same few windows, each then one write of bytes already made.
///
/// Touched on its event loop only (hence unchecked): `HeldWakeups.on(loop).responses`.
final class LoopResponses: @unchecked Sendable {
    private struct Key: Hashable {
        /// The body's bytes, by address: a window's bodies are never written again, and the entry keeps the body alive,
        /// so an address is not reused while it is a key.
        var body: UInt
        var length: Int
        var maxAge: Int
        var origin: Bool
        var head: Bool
    }

    private var date = ""
    private var kept: [Key: (body: ByteBuffer, response: ByteBuffer)] = [:]
    /// The `Date` header's text, once per second for the whole loop (not per connection: a thousand connections
    /// answered four times a second would each format it once a second).
    private var dateText = HTTPDateText()

    /// The `Date` header's text now.
    func dateNow() -> String { dateText.now() }

    private struct Wanted: Hashable {
        var channel: ChannelID
        var rendition: Identifier
        var skip: PlaylistBuilder.DeltaUpdate?
    }

    /// Windows looked up during the current batch of the loop's wake-up (`HeldWakeups.run`), by what was asked: the requests
    /// a part boundary releases are mostly the same few windows. Empty, and not kept, outside a wake-up.
    private var servedNow: [Wanted: ChannelFollower.ServedMedia] = [:]
    private var inWakeup = false

    func beginWakeup() { inWakeup = true }

    func endWakeup() {
        inWakeup = false
        servedNow.removeAll(keepingCapacity: true)
    }

    func servedInWakeup(_ held: HeldReload) -> ChannelFollower.ServedMedia? {
        guard inWakeup else { return nil }
        return servedNow[Wanted(channel: held.channel, rendition: held.rendition, skip: held.skip)]
    }

    func keepInWakeup(_ served: ChannelFollower.ServedMedia, for held: HeldReload) {
        guard inWakeup else { return }
        servedNow[Wanted(channel: held.channel, rendition: held.rendition, skip: held.skip)] = served
    }
    /// The bytes of the answers kept (their bodies are the windows', shared with the follower while current).
    private var bytes = 0
    /// At most this many bytes of answers are kept (a loop busy with more windows than that starts again more often).
    static let limit = 8 << 20

    func response(for body: ByteBuffer, maxAge: Int, origin: Bool, head: Bool, date: String, make: () -> ByteBuffer)
        -> ByteBuffer
    {
        if date != self.date || bytes >= Self.limit {
            // A new second (the Date header), or many windows: start again.
            self.date = date
            kept.removeAll(keepingCapacity: bytes < Self.limit)
            bytes = 0
        }
        let address = body.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }
        let key = Key(body: address, length: body.readableBytes, maxAge: maxAge, origin: origin, head: head)
        if let known = kept[key] { return known.response }
        let made = make()
        kept[key] = (body, made)
        bytes += made.readableBytes
        return made
    }
}
