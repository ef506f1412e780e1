import HLS
import Schedule

/// Where a page of the schedule ended: the start and id of its last break (`2026-03-01T20:15:00.000Z,brk-42`). The
/// next page holds the breaks after it in the schedule's order (start, then id), so pages neither repeat nor skip a
/// break while the schedule changes between them (a break placed meanwhile appears in a later page if it comes after).
public struct ScheduleCursor: Hashable, Sendable, LosslessStringConvertible {
    public var start: Timestamp
    public var id: BreakID

    public init(start: Timestamp, id: BreakID) {
        self.start = start
        self.id = id
    }

    /// A cursor as ``description`` writes it; nil for anything else.
    public init?(_ text: String) {
        guard let comma = text.lastIndex(of: ","), let start = Timestamp(iso8601: String(text[..<comma])),
            let id = BreakID(stored: text[text.index(after: comma)...])
        else { return nil }
        self.init(start: start, id: id)
    }

    public var description: String { "\(start.iso8601),\(id.rawValue)" }

    /// Whether `item` comes after the cursor in the schedule's order.
    func precedes(_ item: BreakState) -> Bool {
        start < item.start || (start == item.start && id.rawValue < item.id.rawValue)
    }
}
