import Foundation
import HLS
import Schedule
import Synchronization

/// An ad decided for a break: the HLS media of its linear creative and everything to report about it, the
/// wrappers' tracking merged with the inline ad's (wrappers first, as they were followed).
public struct DecidedAd: Hashable, Sendable {
    /// `<Ad id>`.
    public var adID: String?
    public var creativeID: String?
    public var universalAdID: String?
    /// The creative's HLS playlist.
    public var uri: String
    /// `<Duration>`, milliseconds.
    public var durationMilliseconds: Int64?
    public var skipOffset: SkipOffset?
    public var impressions: [String]
    public var tracking: [TrackingEvent]
    public var errorURLs: [String]
    public var clickThrough: String?

    public init(
        adID: String? = nil, creativeID: String? = nil, universalAdID: String? = nil, uri: String,
        durationMilliseconds: Int64?, skipOffset: SkipOffset? = nil, impressions: [String] = [],
        tracking: [TrackingEvent] = [], errorURLs: [String] = [], clickThrough: String? = nil
    ) {
        self.adID = adID
        self.creativeID = creativeID
        self.universalAdID = universalAdID
        self.uri = uri
        self.durationMilliseconds = durationMilliseconds
        self.skipOffset = skipOffset
        self.impressions = impressions
        self.tracking = tracking
        self.errorURLs = errorURLs
        self.clickThrough = clickThrough
    }

    /// How the ad is named in notes: its id, else its creative's, else its media.
    public var name: String {
        let name = adID ?? creativeID ?? uri
        return String(name.prefix(80)).debugDescription.escapingControlCharacters
    }
}

/// The first answer could not be used: the whole decision falls back.
public struct AdResolutionFailure: Error, Hashable, Sendable, CustomStringConvertible {
    /// A short machine word for metrics: `transport`, `status`, `timeout`, `too-large`, `malformed`, `empty`.
    public var kind: String
    public var reason: String

    public init(kind: String, reason: String) {
        self.kind = kind
        self.reason = reason
    }

    public var description: String { reason }
}

/// Follows an ad server's answer to the ads it decides: VAST pods in sequence order, wrappers followed (their
/// ads expanded in place, concurrently, to a bounded depth and a bounded number of requests in all), VMAP's linear
/// breaks in document order (inline VAST or an ad tag each). Pure but for `fetch`, which the caller bounds in time
/// and size; the caller's deadline bounds the whole.
public struct AdResolver: Sendable {
    /// GETs a URL: the body of a 200 answer, or throws ``AdResolutionFailure``.
    public typealias Fetch = @Sendable (String) async throws(AdResolutionFailure) -> Data

    public struct Resolution: Hashable, Sendable {
        public var ads: [DecidedAd]
        /// What was left out and why, for the log.
        public var notes: [String]
        /// Requests made, the first included.
        public var requests: Int
    }

    /// Wrappers followed in a chain at most (VAST 4.1 §2.4.1.1 asks players to allow at least 5).
    public var maximumWrapperDepth = 5
    /// Requests to ad servers for one decision at most, the first included.
    public var maximumRequests = 16

    let fetch: Fetch

    public init(fetch: @escaping Fetch) {
        self.fetch = fetch
    }

    /// The ads `url` decides. Throws when its own answer cannot be used (the caller falls back); a wrapper whose
    /// chain fails only loses its own ads (said in the notes).
    public func resolve(_ url: String) async throws(AdResolutionFailure) -> Resolution {
        let state = State()
        let response = try await fetchParsed(url, state: state)
        let ads = await expand(response, depth: 0, inherited: Inherited(chain: [url]), single: false, state: state)
        let (notes, requests) = state.finish()
        return Resolution(ads: Array(ads.prefix(Limits.maximumPodAssets)), notes: notes, requests: requests)
    }

    /// What the wrappers above an ad add to it.
    struct Inherited: Sendable {
        var chain: [String]
        var impressions: [String] = []
        var tracking: [TrackingEvent] = []
        var errorURLs: [String] = []
        /// False under a wrapper that said `followAdditionalWrappers="false"`.
        var wrappersAllowed = true

        func adding(_ ad: VASTAd) -> Inherited {
            var next = self
            next.impressions += ad.impressions
            next.tracking += ad.linear?.tracking ?? []
            next.errorURLs += ad.errorURLs
            return next
        }
    }

    final class State: Sendable {
        private let counters = Mutex<(requests: Int, notes: [String])>((0, []))

        func note(_ text: String) {
            counters.withLock { if $0.notes.count < 100 { $0.notes.append(text) } }
        }

        /// Takes one request from the budget; false when it is spent.
        func takeRequest(limit: Int) -> Bool {
            counters.withLock {
                guard $0.requests < limit else { return false }
                $0.requests += 1
                return true
            }
        }

        func finish() -> ([String], Int) { counters.withLock { ($0.notes, $0.requests) } }
    }

    func fetchParsed(_ url: String, state: State) async throws(AdResolutionFailure) -> AdResponse {
        guard state.takeRequest(limit: maximumRequests) else {
            throw AdResolutionFailure(
                kind: "request-budget", reason: "more than \(maximumRequests) requests for one break: \(url) not asked")
        }
        let body = try await fetch(url)
        do {
            return try AdResponse.parse(body)
        } catch {
            throw AdResolutionFailure(kind: "malformed", reason: "\(Self.shown(url)) answered \(error)")
        }
    }

    func expand(_ response: AdResponse, depth: Int, inherited: Inherited, single: Bool, state: State) async
        -> [DecidedAd]
    {
        switch response {
        case .vast(let document):
            return await expand(document, depth: depth, inherited: inherited, single: single, state: state)
        case .vmap(let breaks):
            // A VMAP answer lays out a programme's breaks (pre-, mid-, post-roll); a live break is one of them: its
            // first linear break with ads, the others left out (and said).
            guard let index = breaks.firstIndex(where: { $0.source != nil }) else {
                state.note("the VMAP answer has no linear break with ads")
                return []
            }
            let adBreak = breaks[index]
            if breaks.count > index + 1 {
                state.note(
                    "the VMAP answer's other \(breaks.count - index - 1) linear break(s) left out: a live break plays one"
                )
            }
            switch adBreak.source {
            case .vast(let document):
                return await expand(document, depth: depth, inherited: inherited, single: false, state: state)
            case .tagURI(let tag):
                // Followed as a wrapper is: within the depth, and never back to where it came from.
                guard depth < maximumWrapperDepth, !inherited.chain.contains(tag) else {
                    state.note("VMAP break \(Self.shown(adBreak.breakID ?? "?")): its ad tag is a loop or too deep")
                    return []
                }
                do throws(AdResolutionFailure) {
                    let next = try await fetchParsed(tag, state: state)
                    var chained = inherited
                    chained.chain.append(tag)
                    return await expand(next, depth: depth + 1, inherited: chained, single: false, state: state)
                } catch {
                    state.note("VMAP break \(Self.shown(adBreak.breakID ?? "?")): \(error.reason)")
                    return []
                }
            case nil:
                return []
            }
        }
    }

    func expand(_ document: VASTDocument, depth: Int, inherited: Inherited, single: Bool, state: State) async
        -> [DecidedAd]
    {
        let ads = Array(document.playOrder(single: single).prefix(Limits.maximumPodAssets))
        if ads.isEmpty {
            state.note("\(Self.shown(inherited.chain.last ?? "?")) answered no ad")
            return []
        }
        // Each ad to its decided ads, concurrently (a wrapper waits on its own chain), kept in pod order.
        return await withTaskGroup(of: (Int, [DecidedAd]).self) { group in
            for (index, ad) in ads.enumerated() {
                group.addTask {
                    (index, await self.decide(ad, depth: depth, inherited: inherited, state: state))
                }
            }
            var decided = [[DecidedAd]](repeating: [], count: ads.count)
            for await (index, ads) in group { decided[index] = ads }
            return decided.flatMap { $0 }
        }
    }

    func decide(_ ad: VASTAd, depth: Int, inherited: Inherited, state: State) async -> [DecidedAd] {
        let merged = inherited.adding(ad)
        let name = Self.shown(ad.id ?? "?")
        switch ad.kind {
        case .inline:
            guard let linear = ad.linear else {
                state.note("ad \(name) has no linear creative")
                return []
            }
            guard let media = linear.hlsMedia else {
                let types = Set(linear.mediaFiles.map(\.type)).sorted().joined(separator: ", ")
                state.note("ad \(name) has no HLS media file (only \(types.isEmpty ? "none" : types))")
                return []
            }
            if let problem = AbsoluteURI.problem(in: media.uri) {
                state.note("ad \(name): its HLS media file \(problem)")
                return []
            }
            // Only absolute http(s) URLs reach players and beacons (no javascript: or data: click-throughs).
            let usable = { (url: String) in AbsoluteURI.problem(in: url) == nil }
            return [
                DecidedAd(
                    adID: ad.id, creativeID: linear.creativeID ?? linear.adID, universalAdID: linear.universalAdID,
                    uri: media.uri, durationMilliseconds: linear.durationMilliseconds, skipOffset: linear.skipOffset,
                    impressions: merged.impressions.filter(usable), tracking: merged.tracking.filter { usable($0.url) },
                    errorURLs: merged.errorURLs.filter(usable),
                    clickThrough: linear.clickThrough.flatMap { usable($0) ? $0 : nil })
            ]
        case .wrapper(let tag, let followAdditional, let allowMultiple):
            guard inherited.wrappersAllowed else {
                state.note("wrapper ad \(name) under a wrapper that allows no further wrappers: dropped")
                return []
            }
            guard depth < maximumWrapperDepth else {
                state.note("wrapper ad \(name): a chain deeper than \(maximumWrapperDepth) wrappers: dropped")
                return []
            }
            guard !tag.isEmpty else {
                state.note("wrapper ad \(name) has no VASTAdTagURI")
                return []
            }
            guard !inherited.chain.contains(tag) else {
                state.note("wrapper ad \(name) leads back to \(Self.shown(tag)): a loop, dropped")
                return []
            }
            let next: AdResponse
            do {
                next = try await fetchParsed(tag, state: state)
            } catch {
                state.note("wrapper ad \(name): \(error.reason)")
                return []
            }
            var chained = merged
            chained.chain.append(tag)
            chained.wrappersAllowed = followAdditional
            return await expand(next, depth: depth + 1, inherited: chained, single: !allowMultiple, state: state)
        }
    }

    /// A URL or name from an ad server as a note shows it: at most 120 characters, quoted, control characters escaped.
    public static func shown(_ text: String) -> String {
        (text.count > 120 ? String(text.prefix(120)) + "…" : text).debugDescription.escapingControlCharacters
    }
}
