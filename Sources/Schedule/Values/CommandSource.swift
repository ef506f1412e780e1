/// Where a command came from, recorded with its events and refusals as `source`.
public enum CommandSource: String, Hashable, Sendable, Codable, CaseIterable {
    /// `cueline` against the database directly.
    case cli
    /// `POST /v1/channels/{channel}/commands`, including `cueline … --server`.
    case http
    /// `POST /v1/channels/{channel}/scte35`.
    case scte35
    /// `POST /v1/hooks/{hook}`.
    case hook
}
