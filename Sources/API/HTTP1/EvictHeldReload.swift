/// Sent down a connection's pipeline when the gate needs its place: the handler holding a blocking reload answers it
/// 503, closes the connection and says so here (made, sent and read on the connection's event loop only).
final class EvictHeldReload: @unchecked Sendable {
    var handled = false
}
