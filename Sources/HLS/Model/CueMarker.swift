/// The segment-level ad markers a downstream SSAI or packager reads (AWS Elemental's "Elemental" and "SCTE-35
/// enhanced" styles, which MediaTailor, MediaPackage and Google DAI read): not in the HLS draft, so players ignore
/// them.
///
/// - `#EXT-X-CUE-OUT:DURATION=30.000` before the break's first segment;
/// - `#EXT-X-CUE-OUT-CONT:ElapsedTime=6.000,Duration=30.000` before each following segment of the break;
/// - `#EXT-X-CUE-IN` before the first segment after it.
///
/// Only these shapes are modelled; another spelling (`#EXT-X-CUE-OUT:30`, `ElapsedTime/Duration`, an `SCTE35=`
/// attribute) is kept as an unknown tag, verbatim, so a parsed playlist renders back to its own bytes.
public enum CueMarker: Hashable, Sendable {
    case out(duration: DecimalNumber)
    case cont(elapsed: DecimalNumber, duration: DecimalNumber)
    case `in`

    /// The marker a whole tag line spells in one of the modelled shapes, or nil.
    public init?(line: some StringProtocol) {
        let line = Substring(line)
        if line == "#EXT-X-CUE-IN" {
            self = .in
            return
        }
        if let value = Self.value(of: line, prefix: "#EXT-X-CUE-OUT:DURATION=") {
            guard let duration = DecimalNumber(value), duration.mantissa >= 0 else { return nil }
            self = .out(duration: duration)
            return
        }
        if let value = Self.value(of: line, prefix: "#EXT-X-CUE-OUT-CONT:ElapsedTime=") {
            let parts = value.split(separator: ",", omittingEmptySubsequences: false)
            guard parts.count == 2, let elapsed = DecimalNumber(parts[0]), elapsed.mantissa >= 0,
                let durationText = Self.value(of: parts[1], prefix: "Duration="),
                let duration = DecimalNumber(durationText), duration.mantissa >= 0
            else { return nil }
            self = .cont(elapsed: elapsed, duration: duration)
            return
        }
        return nil
    }

    private static func value(of line: Substring, prefix: String) -> Substring? {
        line.hasPrefix(prefix) ? line.dropFirst(prefix.count) : nil
    }

    public var isOut: Bool { if case .out = self { true } else { false } }

    /// The tag line without its newline.
    public var line: String {
        switch self {
        case .out(let duration): "#EXT-X-CUE-OUT:DURATION=\(duration)"
        case .cont(let elapsed, let duration): "#EXT-X-CUE-OUT-CONT:ElapsedTime=\(elapsed),Duration=\(duration)"
        case .in: "#EXT-X-CUE-IN"
        }
    }
}
