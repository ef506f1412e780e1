import HLS

/// Decides what a command does to a channel at `now`: the events to append, or why not. Pure.
///
/// Breaks that have retired (`ChannelState.isRetired`: planned end or cancellation more than a window, a segment and
/// `ChannelState.retentionMarginMilliseconds` before the later of `now` and the latest decision folded) are gone for commands, whatever the
/// state's retention, so the hot state of the follower and the full state of a log fold decide alike: a limit, a
/// return or a cancel naming one is refused as an unknown break, and its id may be placed again (DATERANGE ids must be
/// unique within a playlist, and no window from now on holds the retired one; the as-run report then lists both).
///
/// - Parameters:
///   - now: when the command arrived; break starts given relative to it and the live edge come from it.
public func decide(_ command: ScheduleCommand, state: ChannelState, now: Timestamp) throws(ScheduleError)
    -> [ScheduleEvent]
{
    if case .createChannel(let config) = command {
        guard state.config == nil else { throw .channelExists(state.channel) }
        guard config.id == state.channel else {
            throw .invalidField("channel", "the configuration is for \(config.id), not \(state.channel)")
        }
        try config.validate()
        return [.channelCreated(config)]
    }
    guard let config = state.config else { throw .unknownChannel(state.channel) }
    let timeline = Timeline(config)
    let liveEdge = timeline.liveEdge(at: now)

    switch command {
    case .createChannel:
        preconditionFailure("handled above")

    case .updateRenditions(let renditions):
        var updated = config
        updated.renditions = renditions
        try updated.validate()
        return [.renditionsUpdated(renditions)]

    case .placeBreak(let request):
        let id: BreakID
        if let requested = request.id {
            // Only today's rule places a break (an id of the earlier rule is read back from the log, never placed).
            guard requested.isCurrent else {
                throw .invalidField(
                    "id", "\(requested.rawValue.debugDescription.escapingControlCharacters) must be \(Identifier.rule)")
            }
            id = requested
        } else {
            id = try generatedBreakID(state, now: now)
        }
        guard state.liveBreak(id, now: now) == nil else { throw .breakIDReused(id) }
        guard (1...Limits.maximumBreakMilliseconds).contains(request.plannedDurationMilliseconds) else {
            throw .invalidField(
                "duration",
                "must be more than 0 and at most \(DecimalNumber(milliseconds: Limits.maximumBreakMilliseconds)) seconds"
            )
        }
        let requested: Timestamp
        switch request.start {
        case .at(let time):
            requested = try Limits.check(instant: time, field: "start")
        case .inMilliseconds(let delay):
            guard (0...Limits.maximumDelayMilliseconds).contains(delay) else {
                throw .invalidField(
                    "in",
                    "must be between 0 and \(DecimalNumber(milliseconds: Limits.maximumDelayMilliseconds)) seconds")
            }
            requested = now.adding(milliseconds: delay)
        }
        // On a segment boundary hls.js plays a break the same way every time (see `PlaceBreak.StartAlignment`). Relay
        // segments come from upstream, with boundaries this clock does not know: their breaks keep the exact start.
        let start =
            config.source == .clock && request.alignment == .segment
            ? timeline.boundary(atOrAfter: requested) : requested
        if case .at = request.start {
            let horizon = now.adding(milliseconds: Limits.breakStartHorizonMilliseconds)
            guard start <= horizon else {
                let snapped = start == requested ? "" : " (\(requested) moved to the next segment boundary)"
                throw .invalidField(
                    "start", "\(start)\(snapped) is more than 7 days ahead (latest \(horizon)); place it closer to air")
            }
        }
        guard start >= liveEdge, start >= config.epoch else {
            throw .startBehindLiveEdge(start: start, liveEdge: liveEdge)
        }
        guard state.countsFewerFutureBreaks(than: Limits.maximumFutureBreaks, liveEdge: liveEdge, now: now) else {
            throw .tooManyFutureBreaks(channel: state.channel, limit: Limits.maximumFutureBreaks)
        }
        // The channel's ad server fills a break that names none of its own, unless the break brings its own asset
        // list (an external SSAI's): that one is asked as it always was.
        let isList = if case .list = request.asset { true } else { false }
        let channelAdServer = isList ? nil : state.adSettings?.adServer
        try validateAsset(request.asset, decided: request.adServer != nil || channelAdServer != nil)
        // Durations as the media has them (within a tolerance; refused beyond it), where the assets could be read.
        let (planned, asset, media) = try BreakMedia.reconcile(
            plannedDurationMilliseconds: request.plannedDurationMilliseconds, asset: request.asset,
            measured: request.measured,
            chunked: !request.wholeAssets)
        guard planned <= Limits.maximumBreakMilliseconds else {
            throw .invalidField(
                "duration",
                "the media is \(DecimalNumber(milliseconds: planned)) s long: a break lasts at most \(DecimalNumber(milliseconds: Limits.maximumBreakMilliseconds)) s"
            )
        }
        let end = start.adding(milliseconds: planned)
        var index = state.firstIndex(coveringOrAfter: start)
        while index < state.breaks.endIndex, state.breaks[index].start < end {
            let other = state.breaks[index]
            index += 1
            if !other.isCancelled && start < other.end && !state.isRetired(other, now: now) {
                throw .overlap(id: id, otherID: other.id, otherStart: other.start, otherEnd: other.end)
            }
        }
        try validateOptions(request.options)
        if let skip = request.options.skipControl { try skip.validate(breakMilliseconds: planned) }
        if let template = request.adServer, let problem = AdServerTemplate.problem(in: template.value) {
            throw .invalidField("ad_server", problem)
        }
        // The break's ad server, else the channel's as it is now: decided once, here, and kept with the break.
        let adServer = request.adServer ?? channelAdServer
        if adServer != nil, config.signalling?.markers.interstitials == false {
            throw .invalidField(
                "ad_server",
                "channel \(config.id) marks breaks for a downstream SSAI only (markers scte35): players never ask Cueline for its asset list, so no ad server is asked either"
            )
        }
        var spec = BreakSpec(
            id: id, start: start, plannedDurationMilliseconds: planned, asset: asset, options: request.options,
            media: media, adServer: adServer)
        // The channel's preload length as it is now, kept with the break: its range never moves afterwards.
        if let preload = state.adSettings?.preloadMilliseconds, preload > 0,
            config.signalling?.markers.interstitials ?? true
        {
            spec.preloadMilliseconds = preload
        }
        return [.breakPlaced(spec)]

    case .setPlayoutLimit(let id, let limit):
        let current = try breakToEnd(id, state: state, liveEdge: liveEdge, now: now, timeline: timeline)
        let played = liveEdge.milliseconds(since: current.start)
        guard limit >= played else {
            throw .limitBelowPlayed(
                id: id, limit: DecimalNumber(milliseconds: limit), played: DecimalNumber(milliseconds: played))
        }
        guard limit < current.spec.plannedDurationMilliseconds else {
            throw .limitNotBelowPlanned(
                id: id, limit: DecimalNumber(milliseconds: limit),
                planned: DecimalNumber(milliseconds: current.spec.plannedDurationMilliseconds))
        }
        return [.playoutLimitSet(id: id, limitMilliseconds: limit, kind: .playoutLimit)]

    case .cancelCurrentEvent:
        // The break on air is the one whose effective end (its limit, if any) is still ahead of the live edge: an
        // earlier break ended early may still cover the live edge with its planned span.
        // Only breaks starting within the longest break before the live edge can cover it (breaks are sorted by start).
        let covering = state.breaks[
            state.firstIndex(coveringOrAfter: liveEdge)..<state.firstIndex(startingAtOrAfter: liveEdge)]
        let onAir = covering.first { $0.phase(liveEdge: liveEdge) == .onAir && !state.isRetired($0, now: now) }
        // A break that started on the clock while the live edge is still at or before its start: no published segment
        // holds it, so ending it now is removing it (a limit of 0 s would publish a range that ends where it starts).
        if onAir == nil,
            let pending = state.breaks[state.firstIndex(startingAtOrAfter: liveEdge)...].prefix(while: {
                $0.start <= now
            })
            .first(where: { $0.hasStartedUnserved(now: now, liveEdge: liveEdge) && !state.isRetired($0, now: now) })
        {
            return [.breakCancelled(id: pending.id, kind: .cancelCurrent)]
        }
        // Nothing on air, but a break whose planned span covers the live edge was ended early (another operator
        // just ended it at this live edge): that is "already limited", not "nothing on air".
        let endedEarly = covering.last {
            !$0.isCancelled && !state.isRetired($0, now: now) && $0.playoutLimitMilliseconds != nil
                && $0.start < liveEdge && liveEdge < $0.spec.plannedEnd
        }
        guard let current = onAir ?? endedEarly else {
            throw .nothingOnAir(channel: state.channel, liveEdge: liveEdge)
        }
        guard current.playoutLimitMilliseconds == nil else {
            throw .alreadyLimited(id: current.id, limit: DecimalNumber(milliseconds: current.playoutLimitMilliseconds!))
        }
        // Return at the live edge: viewers play about three target durations behind it, so the limit reaches
        // them before their playhead does.
        return [
            .playoutLimitSet(
                id: current.id, limitMilliseconds: liveEdge.milliseconds(since: current.start), kind: .cancelCurrent)
        ]

    case .returnFromBreak(let id, let scte35In):
        let current = try breakToEnd(id, state: state, liveEdge: liveEdge, now: now, timeline: timeline)
        return [
            .playoutLimitSet(
                id: id, limitMilliseconds: liveEdge.milliseconds(since: current.start), kind: .scte35Return,
                scte35In: scte35In)
        ]

    case .cancelBreak(let id):
        guard let current = state.liveBreak(id, now: now) else { throw unknownBreak(id, state: state) }
        switch current.phase(liveEdge: liveEdge) {
        case .cancelled: throw .alreadyCancelled(id: id)
        case .onAir: throw .cancelOnAir(id: id, start: current.start)
        case .aired, .endedEarly: throw .alreadyEnded(id: id, end: current.end)
        case .scheduled: return [.breakCancelled(id: id)]
        }

    case .setSCTE35Policy(let policy):
        try policy.validate()
        return [.scte35PolicySet(policy)]

    case .ingestSCTE35(let ingest):
        let (received, events) = try decideIngest(
            ingest, policy: state.scte35Policy ?? .standard, state: state, now: now)
        return [.scte35Received(received)] + events

    case .setAdSettings(let change):
        guard !change.isEmpty else { throw .invalidField("ads", "names no setting to change") }
        // A channel created before ad settings starts from none at all: its first change gives it the defaults too.
        let settings = change.applied(to: state.adSettings ?? .defaults)
        try settings.validate()
        try settings.check(markers: config.signalling?.markers)
        return [.adSettingsSet(settings)]
    }
}

/// The break `id`, if it can still be ended early: on air at the live edge, not cancelled, not limited already.
private func breakToEnd(_ id: BreakID, state: ChannelState, liveEdge: Timestamp, now: Timestamp, timeline: Timeline)
    throws(ScheduleError) -> BreakState
{
    guard let current = state.liveBreak(id, now: now) else { throw unknownBreak(id, state: state) }
    guard !current.isCancelled else { throw .alreadyCancelled(id: id) }
    guard current.playoutLimitMilliseconds == nil else {
        throw .alreadyLimited(id: id, limit: DecimalNumber(milliseconds: current.playoutLimitMilliseconds!))
    }
    guard liveEdge > current.start else {
        if current.start <= now {
            throw .notServedYet(
                id: id, start: current.start, liveEdge: liveEdge,
                servedFrom: timeline.boundary(atOrAfter: current.start))
        }
        throw .notOnAir(id: id, start: current.start, liveEdge: liveEdge)
    }
    guard liveEdge < current.end else { throw .alreadyEnded(id: id, end: current.end) }
    return current
}

extension ChannelState {
    /// Whether fewer than `limit` breaks have yet to air at `liveEdge` (scheduled: not cancelled, not reached by the
    /// live edge). Stops counting at `limit`, so a log that already holds many more costs no more than the limit.
    func countsFewerFutureBreaks(than limit: Int, liveEdge: Timestamp, now: Timestamp) -> Bool {
        var count = 0
        for item in breaks[firstIndex(startingAtOrAfter: liveEdge)...]
        where item.phase(liveEdge: liveEdge) == .scheduled && !isRetired(item, now: now) {
            count += 1
            if count >= limit { return false }
        }
        return true
    }
}

extension BreakState {
    /// Started on the clock (`start <= now`) but not yet reached by the live edge: no published segment holds it.
    func hasStartedUnserved(now: Timestamp, liveEdge: Timestamp) -> Bool {
        !isCancelled && start <= now && liveEdge <= start
    }
}

/// No break has this id: "unknown" when it could be one, else why it cannot (so a hostile id is never echoed as a
/// lookup that merely failed).
private func unknownBreak(_ id: BreakID, state: ChannelState) -> ScheduleError {
    id.isCurrent
        ? .unknownBreak(channel: state.channel, id: id)
        : .invalidField("id", "\(id.rawValue.debugDescription.escapingControlCharacters) must be \(Identifier.rule)")
}

/// `brk-<next version>`, which no earlier generated id can equal; skips ids callers chose themselves.
func generatedBreakID(_ state: ChannelState, now: Timestamp) throws(ScheduleError) -> BreakID {
    var candidate = state.version + 1
    while state.liveBreak(try BreakID("brk-\(candidate)", field: "id"), now: now) != nil { candidate += 1 }
    return try BreakID("brk-\(candidate)", field: "id")
}

private func validateURI(_ uri: String, field: String) throws(ScheduleError) {
    _ = try AbsoluteURI(uri, field: field)
}

/// `decided`: an ad server fills the break, and the asset is its fallback: it may be none (an empty pod), and not an
/// external asset list (the break's `X-ASSET-LIST` is Cueline's own, which asks the ad server).
private func validateAsset(_ asset: BreakAsset, decided: Bool = false) throws(ScheduleError) {
    switch asset {
    case .uri(let uri): try validateURI(uri, field: "asset_uri")
    case .list(let uri):
        try validateURI(uri, field: "asset_list")
        if decided {
            throw .invalidField(
                "asset_list",
                "a break filled by an ad server falls back to assets (asset_uri or pod), not to another asset list")
        }
    case .pod(let assets):
        guard !assets.isEmpty || decided else {
            throw .invalidField(
                "asset_uri",
                "give one of asset_uri, asset_list or pod (with at least one asset): a break without assets needs an ad server to fill it (its ad_server, or the channel's)"
            )
        }
        guard assets.count <= Limits.maximumPodAssets else {
            throw .invalidField("pod", "a pod holds at most \(Limits.maximumPodAssets) assets")
        }
        for asset in assets {
            try validateURI(asset.uri, field: "pod")
            guard (1...Limits.maximumBreakMilliseconds).contains(asset.durationMilliseconds) else {
                throw .invalidField(
                    "pod",
                    "asset durations must be positive and at most \(DecimalNumber(milliseconds: Limits.maximumBreakMilliseconds)) seconds"
                )
            }
        }
    }
}

private func validateOptions(_ request: InterstitialOptions) throws(ScheduleError) {
    if let restrict = request.restrict, Set(restrict).count != restrict.count {
        throw .invalidField("restrict", "lists a value twice")
    }
    if let snap = request.snap, Set(snap).count != snap.count { throw .invalidField("snap", "lists a value twice") }
    if let cue = request.cue, cue.contains(.pre) && cue.contains(.post) {
        throw .invalidField("cue", "cannot be both PRE and POST")
    }
    var names: Set<String> = []
    guard request.clientAttributes.count <= 32 else { throw .invalidField("attr", "at most 32 client attributes") }
    for attribute in request.clientAttributes {
        let name = attribute.name
        guard name.hasPrefix("X-"), name.count > 2, name.utf8.count <= 64,
            name.utf8.allSatisfy({ ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D })
        else {
            throw .invalidField(
                "attr",
                "\(name.debugDescription.escapingControlCharacters) must be X- followed by at most 62 of A-Z, 0-9 or '-'"
            )
        }
        guard !reservedClientAttributes.contains(name) else {
            throw .invalidField("attr", "\(name) is set by Cueline itself; use the dedicated option")
        }
        guard names.insert(name).inserted else { throw .invalidField("attr", "\(name) is given twice") }
        if case .string(let value) = attribute.value {
            if let problem = PlainText.problem(in: value) {
                throw .invalidField("attr", "\(name): the value \(problem)")
            }
            guard !value.contains("\"") else {
                throw .invalidField("attr", "\(name): a value cannot hold a double quote")
            }
        }
    }
}

let reservedClientAttributes: Set<String> = [
    "X-ASSET-URI", "X-ASSET-LIST", "X-RESUME-OFFSET", "X-PLAYOUT-LIMIT", "X-SNAP", "X-RESTRICT", "X-CONTENT-MAY-VARY",
    "X-TIMELINE-OCCUPIES", "X-TIMELINE-STYLE", "X-SKIP-CONTROL-OFFSET", "X-SKIP-CONTROL-DURATION",
    "X-SKIP-CONTROL-LABEL-ID",
]
