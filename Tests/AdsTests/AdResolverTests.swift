import Foundation
import Schedule
import Synchronization
import Testing

@testable import Ads

/// Ad server answers by URL, and the URLs asked, in order.
final class FakeAdServers: Sendable {
    let answers: [String: String]
    let asked = Mutex<[String]>([])

    init(_ answers: [String: String]) {
        self.answers = answers
    }

    var fetch: AdResolver.Fetch {
        { url throws(AdResolutionFailure) in
            self.asked.withLock { $0.append(url) }
            guard let answer = self.answers[url] else {
                throw AdResolutionFailure(kind: "status", reason: "\(url) answered 404")
            }
            return Data(answer.utf8)
        }
    }
}

func inline(_ id: String, seconds: Int, sequence: Int? = nil, impression: String? = nil) -> String {
    """
    <Ad id="\(id)"\(sequence.map { " sequence=\"\($0)\"" } ?? "")><InLine>
      <Impression>\(impression ?? "https://t.example.com/imp?ad=\(id)")</Impression>
      <Creatives><Creative><Linear>
        <Duration>00:00:\(String(format: "%02d", seconds))</Duration>
        <TrackingEvents><Tracking event="start">https://t.example.com/start?ad=\(id)</Tracking></TrackingEvents>
        <MediaFiles><MediaFile type="application/x-mpegURL">https://cdn.example.com/\(id).m3u8</MediaFile></MediaFiles>
      </Linear></Creative></Creatives>
    </InLine></Ad>
    """
}

func wrapper(_ id: String, next: String, sequence: Int? = nil, follow: Bool = true, multiple: Bool = false) -> String {
    """
    <Ad id="\(id)"\(sequence.map { " sequence=\"\($0)\"" } ?? "")>
      <Wrapper followAdditionalWrappers="\(follow)" allowMultipleAds="\(multiple)">
        <VASTAdTagURI>\(next)</VASTAdTagURI>
        <Impression>https://t.example.com/imp?wrapper=\(id)</Impression>
        <Creatives><Creative><Linear><TrackingEvents>
          <Tracking event="start">https://t.example.com/start?wrapper=\(id)</Tracking>
        </TrackingEvents></Linear></Creative></Creatives>
      </Wrapper>
    </Ad>
    """
}

func vast(_ ads: String...) -> String { "<VAST version=\"4.1\">" + ads.joined() + "</VAST>" }

@Suite("Ad resolution: wrappers followed, pods kept in order, every bound held")
struct AdResolverTests {
    @Test("a pod of an inline ad and a wrapped one, in sequence order; the wrapper's tracking comes first")
    func wrappedPod() async throws {
        let servers = FakeAdServers([
            "https://ads.example.com/pod": vast(
                wrapper("w", next: "https://other.example.com/inner", sequence: 2),
                inline("a", seconds: 10, sequence: 1)),
            "https://other.example.com/inner": vast(inline("b", seconds: 15)),
        ])
        let resolution = try await AdResolver(fetch: servers.fetch).resolve("https://ads.example.com/pod")
        #expect(resolution.ads.map(\.adID) == ["a", "b"])
        #expect(
            resolution.ads[1].impressions == ["https://t.example.com/imp?wrapper=w", "https://t.example.com/imp?ad=b"])
        #expect(
            resolution.ads[1].tracking.map(\.url) == [
                "https://t.example.com/start?wrapper=w", "https://t.example.com/start?ad=b",
            ])
        #expect(resolution.ads[1].durationMilliseconds == 15_000)
        #expect(resolution.requests == 2)
        #expect(resolution.notes.isEmpty)
    }

    @Test("a chain of 5 wrappers is followed; a sixth is not, and the note says so")
    func depth() async throws {
        var answers: [String: String] = [:]
        for level in 0..<6 {
            answers["https://ads.example.com/\(level)"] = vast(
                wrapper("w\(level)", next: "https://ads.example.com/\(level + 1)"))
        }
        answers["https://ads.example.com/5"] = vast(inline("deep", seconds: 6))
        let five = try await AdResolver(fetch: FakeAdServers(answers).fetch).resolve("https://ads.example.com/0")
        #expect(five.ads.map(\.adID) == ["deep"])
        #expect(five.ads[0].impressions.count == 6)
        answers["https://ads.example.com/5"] = vast(wrapper("w5", next: "https://ads.example.com/6"))
        answers["https://ads.example.com/6"] = vast(inline("deeper", seconds: 6))
        let six = try await AdResolver(fetch: FakeAdServers(answers).fetch).resolve("https://ads.example.com/0")
        #expect(six.ads.isEmpty)
        #expect(six.notes.contains { $0.contains("deeper than 5 wrappers") })
    }

    @Test("a wrapper that leads back to itself is a loop, not followed again")
    func loop() async throws {
        let servers = FakeAdServers([
            "https://ads.example.com/a": vast(wrapper("a", next: "https://ads.example.com/b")),
            "https://ads.example.com/b": vast(wrapper("b", next: "https://ads.example.com/a")),
        ])
        let resolution = try await AdResolver(fetch: servers.fetch).resolve("https://ads.example.com/a")
        #expect(resolution.ads.isEmpty)
        #expect(resolution.requests == 2)
        #expect(resolution.notes.contains { $0.contains("a loop") })
    }

    @Test("followAdditionalWrappers=false: the next answer's wrappers are dropped, its inline ads kept")
    func noFurtherWrappers() async throws {
        let servers = FakeAdServers([
            "https://ads.example.com/a": vast(
                wrapper("a", next: "https://ads.example.com/b", follow: false, multiple: true)),
            "https://ads.example.com/b": vast(
                inline("kept", seconds: 5, sequence: 1),
                wrapper("dropped", next: "https://ads.example.com/c", sequence: 2)),
            "https://ads.example.com/c": vast(inline("never", seconds: 5)),
        ])
        let resolution = try await AdResolver(fetch: servers.fetch).resolve("https://ads.example.com/a")
        #expect(resolution.ads.map(\.adID) == ["kept"])
        #expect(!servers.asked.withLock { $0 }.contains("https://ads.example.com/c"))
    }

    @Test("allowMultipleAds=false (the default): only the first ad of the wrapped answer")
    func singleAd() async throws {
        let servers = FakeAdServers([
            "https://ads.example.com/a": vast(wrapper("a", next: "https://ads.example.com/b")),
            "https://ads.example.com/b": vast(
                inline("one", seconds: 5, sequence: 1), inline("two", seconds: 5, sequence: 2)),
        ])
        let resolution = try await AdResolver(fetch: servers.fetch).resolve("https://ads.example.com/a")
        #expect(resolution.ads.map(\.adID) == ["one"])
    }

    @Test("a wrapper whose chain fails loses only its own ads")
    func deadWrapper() async throws {
        let servers = FakeAdServers([
            "https://ads.example.com/pod": vast(
                inline("a", seconds: 5, sequence: 1), wrapper("w", next: "https://ads.example.com/404", sequence: 2),
                inline("c", seconds: 5, sequence: 3))
        ])
        let resolution = try await AdResolver(fetch: servers.fetch).resolve("https://ads.example.com/pod")
        #expect(resolution.ads.map(\.adID) == ["a", "c"])
        #expect(resolution.notes.contains { $0.contains("404") })
    }

    @Test("the first answer failing is the decision failing (the caller falls back)")
    func firstFails() async {
        await #expect(throws: AdResolutionFailure.self) {
            try await AdResolver(fetch: FakeAdServers([:]).fetch).resolve("https://ads.example.com/none")
        }
        let servers = FakeAdServers(["https://ads.example.com/html": "<html>oops</html>"])
        do {
            _ = try await AdResolver(fetch: servers.fetch).resolve("https://ads.example.com/html")
            Issue.record("an HTML answer resolved")
        } catch {
            #expect(error.kind == "malformed")
        }
    }

    @Test("VMAP: a live break plays the first linear break's ads; the others are left out and said")
    func vmap() async throws {
        let servers = FakeAdServers([
            "https://ads.example.com/vmap": String(decoding: try fixture("vmap.xml"), as: UTF8.self),
            "https://ads.example.com/midroll?n=2": vast(inline("m1", seconds: 10, sequence: 1)),
            "https://ads.example.com/tagged": """
            <vmap:VMAP xmlns:vmap="http://www.iab.net/videosuite/vmap" version="1.0">
              <vmap:AdBreak timeOffset="start" breakType="linear" breakId="pre"><vmap:AdSource>
                <vmap:AdTagURI templateType="vast4"><![CDATA[https://ads.example.com/midroll?n=2]]></vmap:AdTagURI>
              </vmap:AdSource></vmap:AdBreak>
            </vmap:VMAP>
            """,
            "https://ads.example.com/self": """
            <vmap:VMAP xmlns:vmap="http://www.iab.net/videosuite/vmap" version="1.0">
              <vmap:AdBreak breakType="linear"><vmap:AdSource>
                <vmap:AdTagURI><![CDATA[https://ads.example.com/self]]></vmap:AdTagURI>
              </vmap:AdSource></vmap:AdBreak>
            </vmap:VMAP>
            """,
        ])
        let resolution = try await AdResolver(fetch: servers.fetch).resolve("https://ads.example.com/vmap")
        #expect(resolution.ads.map(\.adID) == ["vmap-inline"])
        #expect(resolution.notes.contains { $0.contains("other 1 linear break(s) left out") })
        #expect(servers.asked.withLock { $0 } == ["https://ads.example.com/vmap"])
        let tagged = try await AdResolver(fetch: servers.fetch).resolve("https://ads.example.com/tagged")
        #expect(tagged.ads.map(\.adID) == ["m1"])
        // A VMAP whose ad tag leads back to itself is a loop: asked once.
        let loop = try await AdResolver(fetch: servers.fetch).resolve("https://ads.example.com/self")
        #expect(loop.ads.isEmpty && loop.requests == 1)
        #expect(loop.notes.contains { $0.contains("a loop or too deep") })
    }

    @Test("at most 16 requests for one break: a pod of 30 wrappers asks 16 servers, no more")
    func requestBudget() async throws {
        var answers: [String: String] = [:]
        var pod: [String] = []
        for index in 1...30 {
            pod.append(wrapper("w\(index)", next: "https://ads.example.com/ad\(index)", sequence: index))
            answers["https://ads.example.com/ad\(index)"] = vast(inline("ad\(index)", seconds: 5))
        }
        answers["https://ads.example.com/pod"] = "<VAST version=\"4.1\">" + pod.joined() + "</VAST>"
        let servers = FakeAdServers(answers)
        let resolution = try await AdResolver(fetch: servers.fetch).resolve("https://ads.example.com/pod")
        #expect(servers.asked.withLock { $0.count } == 16)
        #expect(resolution.ads.count == 15)
        #expect(resolution.notes.contains { $0.contains("more than 16 requests") })
    }

    @Test("an ad without HLS media, or whose media URI is not absolute http(s), is dropped and said")
    func unusableMedia() async throws {
        let noHLS = """
            <VAST version="4.1"><Ad id="mp4"><InLine><Creatives><Creative><Linear><Duration>00:00:05</Duration>
            <MediaFiles><MediaFile type="video/mp4">https://cdn.example.com/a.mp4</MediaFile></MediaFiles>
            </Linear></Creative></Creatives></InLine></Ad>
            <Ad id="relative"><InLine><Creatives><Creative><Linear><Duration>00:00:05</Duration>
            <MediaFiles><MediaFile type="application/x-mpegURL">ads/a.m3u8</MediaFile></MediaFiles>
            </Linear></Creative></Creatives></InLine></Ad></VAST>
            """
        let servers = FakeAdServers(["https://ads.example.com/x": noHLS])
        let resolution = try await AdResolver(fetch: servers.fetch).resolve("https://ads.example.com/x")
        #expect(resolution.ads.isEmpty)
        #expect(resolution.notes.contains { $0.contains("no HLS media file (only video/mp4)") })
        #expect(resolution.notes.contains { $0.contains("absolute http") })
    }
}
