/// One thing the lint found: which rule, where, what is wrong and how to fix it.
public struct Finding: Hashable, Sendable, Codable, CustomStringConvertible {
    public enum Severity: String, Hashable, Sendable, Codable {
        case error, warning
    }

    /// A stable id such as `daterange.attribute-changed`.
    public var rule: String
    public var severity: Severity
    /// 1-based line in the playlist checked (the current one, for update checks), when one applies.
    public var line: Int?
    public var message: String
    public var fix: String
    /// The file or URL, filled in by whoever knows it.
    public var source: String?

    public init(
        rule: String, severity: Severity = .error, line: Int?, message: String, fix: String? = nil,
        source: String? = nil
    ) {
        self.rule = rule
        self.severity = severity
        self.line = line
        self.message = message
        self.fix = fix ?? LintRules.fix(for: rule)
        self.source = source
    }

    public var description: String {
        let place: String
        switch (source, line) {
        case let (source?, line?): place = "\(source):\(line)"
        case let (source?, nil): place = source
        case let (nil, line?): place = "line \(line)"
        case (nil, nil): place = ""
        }
        return "\(place.isEmpty ? "" : place + ": ")\(severity.rawValue): \(message) [\(rule)]\n  fix: \(fix)"
    }
}

/// The catalogue of rule ids with the fix each one suggests.
public enum LintRules {
    public static let catalogue: [(id: String, fix: String)] = [
        ("syntax.extm3u", "start the playlist with #EXTM3U on its own first line"),
        ("syntax.attribute-list", "write attributes as NAME=VALUE separated by commas; quote strings"),
        ("syntax.extinf", "write EXTINF:<decimal seconds>,<title>"),
        ("syntax.segment-uri", "follow every EXTINF with the segment's URI line"),
        ("syntax.orphan-uri", "put EXTINF (or EXT-X-STREAM-INF) before every URI line"),
        ("syntax.integer", "write a non-negative decimal integer"),
        ("syntax.decimal", "write a decimal number such as 6 or 6.006"),
        ("syntax.byterange", "write the byte range as length[@offset]"),
        ("syntax.missing-attribute", "add the attribute the tag requires"),
        ("syntax.playlist-type", "use EVENT or VOD, or leave the tag out for live"),
        (
            "syntax.control-character",
            "remove control characters (C0, DEL, C1) from URI lines and attribute values; percent-encode them in URIs"
        ),
        ("targetduration.missing", "add EXT-X-TARGETDURATION with an integer of at least 1"),
        ("targetduration.exceeded", "raise EXT-X-TARGETDURATION for the whole stream, or cut shorter segments"),
        ("targetduration.changed", "keep EXT-X-TARGETDURATION constant for the life of the stream"),
        ("version.too-low", "raise EXT-X-VERSION to the value the features in use need"),
        ("version.not-lowest", "lower EXT-X-VERSION to the lowest value that covers what is used"),
        ("live.playlist-type", "remove EXT-X-PLAYLIST-TYPE from a live playlist"),
        ("live.window-too-short", "keep at least three target durations of segments in a live playlist"),
        ("live.empty", "publish a live playlist only once it has segments"),
        ("pdt.missing", "put EXT-X-PROGRAM-DATE-TIME on the segments: date ranges are placed by it"),
        ("pdt.every-segment", "put EXT-X-PROGRAM-DATE-TIME on every segment, in UTC with milliseconds"),
        ("pdt.format", "write EXT-X-PROGRAM-DATE-TIME as 2026-03-01T12:00:06.000Z"),
        ("pdt.mapping-changed", "never change the date of a segment once published"),
        ("daterange.id-missing", "give every EXT-X-DATERANGE a quoted ID"),
        ("daterange.start-date-missing", "give the first tag of every date range a START-DATE"),
        ("daterange.augment-shape", "repeat ID, CLASS and START-DATE with identical values in augmenting tags"),
        ("daterange.duplicate-attribute", "write each attribute once per tag"),
        ("daterange.attribute-type", "use the attribute's type: quoted string, unquoted decimal or 0x hex"),
        ("daterange.date-format", "write dates as quoted ISO 8601 with a time zone"),
        ("daterange.unknown-attribute", "prefix client-defined attributes with X-"),
        ("daterange.end-on-next", "write END-ON-NEXT=YES or leave it out"),
        ("daterange.conflict", "keep one value per attribute across all tags of an ID"),
        ("daterange.end-date-mismatch", "make END-DATE equal START-DATE plus DURATION, or drop one of them"),
        ("daterange.negative-duration", "end date ranges after they start"),
        ("daterange.stale", "drop every tag of a date range once it ends before the first segment of the window"),
        ("daterange.not-closed", "add a tag with DURATION once the live edge passes the planned end"),
        ("daterange.attribute-changed", "never change a published attribute: cancel and place a new ID instead"),
        ("daterange.attribute-removed", "keep every published attribute until the whole range leaves the window"),
        ("daterange.removed-early", "remove a date range only before it starts, or after it ends before the window"),
        ("interstitial.asset", "give each interstitial exactly one of X-ASSET-URI or X-ASSET-LIST"),
        ("interstitial.asset-uri-absolute", "use an absolute http(s) URI for X-ASSET-URI and X-ASSET-LIST"),
        (
            "interstitial.class",
            "set CLASS=\"com.apple.hls.interstitial\" on ranges that carry X-ASSET-URI or X-ASSET-LIST"
        ),
        ("interstitial.cue", "use PRE or POST, not both"),
        ("interstitial.preroll-many", "publish one CUE=PRE interstitial at a time in a live playlist"),
        ("interstitial.enumerated-value", "use one of the values the Interstitials appendix defines"),
        ("interstitial.resume-offset-live", "leave X-RESUME-OFFSET out on live so players rejoin at the live offset"),
        ("interstitial.playout-limit-duration", "add DURATION equal to X-PLAYOUT-LIMIT when ending a break early"),
        (
            "interstitial.skip-control",
            "write X-SKIP-CONTROL-OFFSET and -DURATION as whole seconds, -LABEL-ID with a-z, A-Z, '-' and '_' only"
        ),
        ("interstitial.skip-never-shown", "offer the skip button before the interstitial ends"),
        ("preload.attribute-missing", "give a preload range X-URI, X-TARGET-ID and X-TARGET-CLASS"),
        ("preload.no-end", "give a preload range a DURATION or an END-DATE"),
        ("preload.cue", "leave CUE and END-ON-NEXT off a preload range"),
        ("preload.target-class", "make X-TARGET-CLASS the CLASS of the range X-TARGET-ID names"),
        ("preload.uri-mismatch", "make X-URI the target's X-ASSET-LIST (or X-ASSET-URI), query included"),
        ("preload.after-target", "end a preload range at or before its target's START-DATE"),
        ("scte35.hex", "write SCTE35-* as 0x followed by the hex of the whole splice_info_section"),
        ("server-control.hold-back", "set HOLD-BACK to at least three target durations"),
        ("server-control.can-skip-until", "set CAN-SKIP-UNTIL to at least six target durations"),
        ("server-control.part-hold-back", "set PART-HOLD-BACK to at least twice PART-TARGET"),
        ("parts.part-inf-missing", "add EXT-X-PART-INF:PART-TARGET=… when the playlist has parts"),
        ("parts.over-target", "cut parts no longer than PART-TARGET, or raise PART-TARGET for the whole stream"),
        ("parts.under-target", "make every part but a segment's last at least 85 % of PART-TARGET"),
        ("parts.segment-sum", "make a segment's parts add up to its EXTINF duration"),
        (
            "parts.far-from-edge",
            "list parts only for the segments within 3 target durations of the end of the playlist"
        ),
        (
            "parts.blocking-reload",
            "support blocking playlist reload and say so (EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES) when serving parts"
        ),
        (
            "server-control.part-hold-back-missing",
            "add PART-HOLD-BACK (at least 3 × PART-TARGET) to EXT-X-SERVER-CONTROL"
        ),
        ("preload-hint.duplicate", "give at most one EXT-X-PRELOAD-HINT of each TYPE"),
        ("preload-hint.listed", "hint the part after the last one listed, not one already in the playlist"),
        ("preload-hint.without-parts", "add EXT-X-PART-INF, or drop the preload hint"),
        ("skip.not-advertised", "advertise CAN-SKIP-UNTIL in EXT-X-SERVER-CONTROL before answering delta updates"),
        ("delta.no-skip", "answer _HLS_skip with EXT-X-SKIP:SKIPPED-SEGMENTS=n in place of the segments left out"),
        (
            "delta.sequence",
            "keep the full playlist's EXT-X-MEDIA-SEQUENCE and EXT-X-DISCONTINUITY-SEQUENCE in its delta update"
        ),
        ("delta.segment-count", "make SKIPPED-SEGMENTS plus the segments listed equal the full playlist's segments"),
        ("delta.segment-differs", "list the full playlist's last segments unchanged after EXT-X-SKIP"),
        (
            "delta.skipped-too-much",
            "skip only segments that end at least CAN-SKIP-UNTIL before the end of the playlist"
        ),
        (
            "delta.trailing-differs",
            "end the delta update with the full playlist's parts, preload hint and rendition reports"
        ),
        ("delta.daterange-skipped", "with _HLS_skip=YES keep every EXT-X-DATERANGE; skip date ranges only for v2"),
        ("delta.removed-listed", "list in RECENTLY-REMOVED-DATERANGES only ids no longer in the playlist"),
        (
            "delta.daterange-still-running",
            "skip only date ranges that ended before the first segment kept: a running one may still change"
        ),
        ("mediasequence.decreased", "never decrease EXT-X-MEDIA-SEQUENCE"),
        ("mediasequence.uri-changed", "a media sequence number always names the same URI"),
        ("segment.changed", "never change a published segment's duration"),
        ("playlist.shrunk", "only remove segments from the head of a live playlist"),
        ("playlist.endlist-removed", "never remove EXT-X-ENDLIST once published"),
        ("discontinuity-sequence.wrong", "raise EXT-X-DISCONTINUITY-SEQUENCE by the discontinuities that slid out"),
        ("renditions.targetduration-mismatch", "use the same EXT-X-TARGETDURATION in every rendition"),
        ("renditions.daterange-mismatch", "render every rendition's date ranges from one schedule snapshot"),
        ("renditions.pdt-mismatch", "give the same media sequence number the same date in every rendition"),
        ("renditions.cue-mismatch", "render every rendition's CUE markers from one schedule snapshot"),
        (
            "cue.unmatched",
            "open each break with one EXT-X-CUE-OUT, close it with EXT-X-CUE-IN, and mark only segments inside it with EXT-X-CUE-OUT-CONT"
        ),
        (
            "cue.cont-mismatch",
            "write ElapsedTime as the sum of the break's segment durations since its EXT-X-CUE-OUT, and repeat its Duration"
        ),
        ("cue.past-duration", "put EXT-X-CUE-IN before the first segment at or after the break's end"),
        ("cue.missing-cont", "put EXT-X-CUE-OUT-CONT before every segment of a break after the first"),
        ("cue.changed", "never change the CUE markers of a published segment; end a break early with a later CUE-IN"),
        ("variant.bandwidth-missing", "give every variant a BANDWIDTH"),
        ("variant.codecs-missing", "list CODECS on every variant so players can choose without downloading"),
        ("variant.group-undefined", "define an EXT-X-MEDIA for every group a variant names"),
        ("variant.video-range", "use SDR, HLG or PQ"),
        ("variant.none", "list at least one variant"),
    ]

    private static let fixes: [String: String] = Dictionary(uniqueKeysWithValues: catalogue.map { ($0.id, $0.fix) })

    public static func fix(for rule: String) -> String { fixes[rule] ?? "see hls-rules.md" }
}
