import Foundation
import HLS
import Projector
import Schedule
import Synchronization
import Testing

/// Reading interstitial assets' playlists: cached, failures remembered briefly. (Slow, huge and failing asset servers
/// against the real fetch: scripts/faults/fault-slow-assets.sh.)
@Suite("Asset playlists: cached, failures remembered")
struct AssetPlaylistsTests {
    static let ad = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.002,\na.ts\n#EXTINF:2.002,\nb.ts\n#EXT-X-ENDLIST\n"

    @Test(
        "concurrent reads of one asset share one fetch; a failure is answered again for a few seconds without a fetch")
    func caching() async throws {
        let fetches = Mutex(0)
        let failing = Mutex(true)
        let assets = AssetPlaylists(fetch: { url in
            fetches.withLock { $0 += 1 }
            try await Task.sleep(for: .milliseconds(100))
            if url.contains("flaky"), failing.withLock({ $0 }) {
                throw UpstreamGet.Failure.transport("the connection was refused")
            }
            return (AssetPlaylistsTests.ad, url)
        })
        try await withThrowingTaskGroup(of: Int64.self) { group in
            for _ in 0..<20 {
                group.addTask { try await assets.media("https://ads.example/a.m3u8").media.durationMilliseconds }
            }
            for try await duration in group { #expect(duration == 4004) }
        }
        #expect(fetches.withLock { $0 } == 1)
        for _ in 0..<5 {
            do {
                _ = try await assets.measure("https://ads.example/flaky.m3u8")
                Issue.record("a failing fetch succeeded")
            } catch {
                #expect(error.description.contains("the connection was refused"), "\(error)")
            }
        }
        #expect(fetches.withLock { $0 } == 2, "the failure was remembered, not fetched again")
    }
}
