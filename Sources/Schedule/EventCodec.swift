import Foundation
import HLS

/// Turns schedule events into log payloads and back. JSON with sorted keys, so the same event always has the
/// same bytes.
public enum EventCodec {
    public struct Encoded: Hashable, Sendable {
        public var type: String
        public var schemaVersion: Int
        public var payload: String
    }

    public enum DecodingFailure: Error, CustomStringConvertible {
        case unknownType(String)
        case unsupportedSchema(type: String, version: Int)
        case malformed(type: String, reason: String)

        public var description: String {
            switch self {
            case .unknownType(let type): return "unknown event type \(type)"
            case .unsupportedSchema(let type, let version):
                return "\(type) schema version \(version) is newer than this build"
            case .malformed(let type, let reason): return "\(type) payload is malformed: \(reason)"
            }
        }
    }

    private struct Renditions: Codable { var renditions: [RenditionConfig] }
    private struct Limit: Codable {
        var id: BreakID
        var limitMilliseconds: Int64
        var kind: EarlyReturnKind
        var scte35In: String?
    }
    /// `kind` is written only when it is not `.cancelBreak`, so those payloads stay what they always were.
    private struct Cancelled: Codable {
        var id: BreakID
        var kind: BreakCancelKind?
    }

    public static func encode(_ event: ScheduleEvent) -> Encoded {
        let payload: String
        switch event {
        case .channelCreated(let config): payload = json(config)
        case .renditionsUpdated(let renditions): payload = json(Renditions(renditions: renditions))
        case .breakPlaced(let spec): payload = json(spec)
        case .playoutLimitSet(let id, let limit, let kind, let scte35In):
            payload = json(Limit(id: id, limitMilliseconds: limit, kind: kind, scte35In: scte35In))
        case .breakCancelled(let id, let kind):
            payload = json(Cancelled(id: id, kind: kind == .cancelBreak ? nil : kind))
        case .scte35PolicySet(let policy): payload = json(policy)
        case .scte35Received(let received): payload = json(received)
        case .adSettingsSet(let settings): payload = json(settings)
        }
        return Encoded(type: event.typeName, schemaVersion: event.writtenSchemaVersion, payload: payload)
    }

    public static func decode(type: String, schemaVersion: Int, payload: String) throws -> ScheduleEvent {
        guard schemaVersion <= ScheduleEvent.schemaVersion else {
            throw DecodingFailure.unsupportedSchema(type: type, version: schemaVersion)
        }
        let data = Data(payload.utf8)
        let decoder = JSONDecoder()
        decoder.userInfo[Identifier.storedRuleKey] = true
        do {
            switch type {
            case "ChannelCreated": return .channelCreated(try decoder.decode(ChannelConfig.self, from: data))
            case "RenditionsUpdated":
                return .renditionsUpdated(try decoder.decode(Renditions.self, from: data).renditions)
            case "BreakPlaced": return .breakPlaced(try decoder.decode(BreakSpec.self, from: data))
            case "PlayoutLimitSet":
                let limit = try decoder.decode(Limit.self, from: data)
                return .playoutLimitSet(
                    id: limit.id, limitMilliseconds: limit.limitMilliseconds, kind: limit.kind, scte35In: limit.scte35In
                )
            case "BreakCancelled":
                let cancelled = try decoder.decode(Cancelled.self, from: data)
                return .breakCancelled(id: cancelled.id, kind: cancelled.kind ?? .cancelBreak)
            case "SCTE35PolicySet": return .scte35PolicySet(try decoder.decode(SCTE35Policy.self, from: data))
            case "SCTE35Received": return .scte35Received(try decoder.decode(SCTE35Received.self, from: data))
            case "AdSettingsSet": return .adSettingsSet(try decoder.decode(AdSettings.self, from: data))
            default: throw DecodingFailure.unknownType(type)
            }
        } catch let error as DecodingFailure {
            throw error
        } catch {
            throw DecodingFailure.malformed(type: type, reason: "\(error)")
        }
    }

    /// Canonical JSON of a command, used as the idempotency request text.
    public static func canonicalRequest(_ command: ScheduleCommand) -> String {
        json(command)
    }

    static func json(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding these value types cannot fail: no floats that could be NaN, no custom throwing encoders.
        return String(decoding: try! encoder.encode(value), as: UTF8.self)
    }
}
