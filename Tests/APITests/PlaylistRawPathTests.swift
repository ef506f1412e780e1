import NIOCore
import TestSupport
import Testing

@testable import API

/// Issue 14: players' requests read from raw bytes (`PlaylistRawPath.parse`). Only the forms read completely and
/// strictly are taken; everything else is the HTTP codec's, and no input traps.
@Suite("Playlist requests read on raw bytes")
struct PlaylistRawPathTests {
    typealias Request = PlaylistRawPath.Request

    func parse(_ text: String, max: Int = 16_384) -> PlaylistRawPath.Parsed {
        PlaylistRawPath.parse(ByteBuffer(string: text), maxHeadBytes: max)
    }

    @Test("a player's GET or HEAD, plain or with directives, with the headers browsers send")
    func taken() {
        let plain = "GET /channels/one/720p.m3u8 HTTP/1.1\r\nHost: x\r\n\r\n"
        #expect(parse(plain) == .request(Request(head: false, target: "/channels/one/720p.m3u8", origin: false, length: plain.utf8.count)))
        // What a browser sends, Origin among it, and the next request already behind it: only this one's length.
        let browser = "GET /channels/one/720p.m3u8?_HLS_msn=12&_HLS_part=3 HTTP/1.1\r\nHost: cdn.example:8080\r\n"
            + "Connection: keep-alive\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64)\r\nAccept: */*\r\n"
            + "Origin: https://player.example\r\nSec-Fetch-Mode: cors\r\nAccept-Encoding: gzip, deflate\r\n"
            + "Accept-Language: en-GB,en;q=0.9\r\nX-Tab:\tvalue \t\r\n\r\n"
        #expect(parse(browser + plain) == .request(Request(
            head: false, target: "/channels/one/720p.m3u8?_HLS_msn=12&_HLS_part=3", origin: true, length: browser.utf8.count)))
        let head = "HEAD /channels/one/720p.m3u8 HTTP/1.1\r\nhost: x\r\nORIGIN: y\r\nCONNECTION: Keep-Alive\r\n\r\n"
        #expect(parse(head) == .request(Request(head: true, target: "/channels/one/720p.m3u8", origin: true, length: head.utf8.count)))
        // No header at all is still HTTP/1.1 the codec accepts.
        #expect(parse("GET /channels/a/b.m3u8 HTTP/1.1\r\n\r\n") == .request(Request(head: false, target: "/channels/a/b.m3u8", origin: false, length: 35)))
    }

    @Test("a head not all there yet waits, unless its first bytes already rule it out")
    func incomplete() {
        let full = Array("GET /channels/one/720p.m3u8 HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        for cut in 1..<full.count {
            #expect(PlaylistRawPath.parse(ByteBuffer(bytes: full.prefix(cut)), maxHeadBytes: 16_384) == .incomplete, "\(cut)")
        }
        for start in ["P", "POST /", "GET /h", "GET /healthz", "HEAD /x", "\r\n", "get /channels/"] {
            #expect(parse(start) == .other, "\(start)")
        }
        // Past the head limit without its end: the codec answers it (431).
        #expect(parse("GET /channels/one/720p.m3u8 HTTP/1.1\r\nX-Big: " + String(repeating: "a", count: 200), max: 128) == .other)
    }

    @Test(
        "anything not read completely and strictly is the codec's",
        arguments: [
            "GET /channels/one/720p.m3u8 HTTP/1.0\r\nHost: x\r\n\r\n",  // HTTP/1.0: its own keep-alive rules
            "GET /channels/one/720p.m3u8 HTTP/1.1 \r\nHost: x\r\n\r\n",
            "GET  /channels/one/720p.m3u8 HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /channels/one/720p.m3u8\tHTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /channels/one/7\u{7F}20p.m3u8 HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nConnection: keep-alive, Upgrade\r\n\r\n",
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nexpect: 100-continue\r\n\r\n",
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nUpgrade: h2c\r\n\r\n",
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n",  // obsolete line folding
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nHost : x\r\n\r\n",  // space before the colon
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\n: x\r\n\r\n",
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nHost x\r\n\r\n",
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nHost: x\ry\r\n\r\n",  // a bare CR
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nHost: x\ny: z\r\n\r\n",  // a bare LF
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nHost: x\0\r\n\r\n",
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nHost: caf\u{E9}\r\n\r\n",  // not ASCII
            "GET /channels/one/720p.m3u8 HTTP/1.1\nHost: x\n\n",  // bare LFs: ruled out at once, not waited on
            "GET /channels/one/720p.m3u8 HTTP/1.1\nHost: x",
            "GET /channels/one/720p.m3u8 HTTP/1.1\r\nHost: x\rz",
        ])
    func other(_ text: String) {
        #expect(parse(text) == .other)
    }

    @Test("more than 100 header fields are the codec's to refuse")
    func fieldCount() {
        let fields = (0..<101).map { "X-\($0): y\r\n" }.joined()
        #expect(parse("GET /channels/a/b.m3u8 HTTP/1.1\r\n" + fields + "\r\n") == .other)
        let hundred = (0..<100).map { "X-\($0): y\r\n" }.joined()
        guard case .request = parse("GET /channels/a/b.m3u8 HTTP/1.1\r\n" + hundred + "\r\n") else {
            Issue.record("100 fields are taken")
            return
        }
    }

    @Test("random and mutated bytes never trap, and a request taken never extends past what was read")
    func hostileBytes() {
        var generator = SplitMix64(seed: 14)
        let base = Array("GET /channels/one/720p.m3u8?_HLS_msn=1 HTTP/1.1\r\nHost: x\r\nOrigin: y\r\n\r\n".utf8)
        let alphabet = Array("\r\n :GET/HEADchannels.m3u8?\t\0\u{7F}".utf8) + [0xFF, 0x80]
        var taken = 0
        for round in 0..<20_000 {
            var bytes = round % 2 == 0 ? base : (0..<Int(generator.next() % 90)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            for _ in 0..<Int(generator.next() % 4) where !bytes.isEmpty {
                let at = Int(generator.next() % UInt64(bytes.count))
                switch generator.next() % 3 {
                case 0: bytes[at] = alphabet[Int(generator.next() % UInt64(alphabet.count))]
                case 1: bytes.remove(at: at)
                default: bytes.insert(alphabet[Int(generator.next() % UInt64(alphabet.count))], at: at)
                }
            }
            let parsed = PlaylistRawPath.parse(ByteBuffer(bytes: bytes), maxHeadBytes: 64 + Int(generator.next() % 64))
            if case .request(let request) = parsed {
                taken += 1
                #expect(request.length <= bytes.count && Array(bytes[request.length - 4..<request.length]) == Array("\r\n\r\n".utf8))
                #expect(request.target.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F })
            }
        }
        #expect(taken > 1_000, "the mutations leave many requests intact: \(taken)")
    }
}
