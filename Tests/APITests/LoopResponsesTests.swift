@testable import API
import NIOCore
import Testing

/// The whole answers an event loop keeps (`LoopResponses`): made once per window body, variant and second.
@Suite("Whole answers kept per event loop")
struct LoopResponsesTests {
    @Test(
        "the same body and variant in the same second reuse one answer; any other variant, body or second makes its own"
    )
    func keyedByBodyVariantAndSecond() {
        let responses = LoopResponses()
        var made = 0
        func answer(_ body: ByteBuffer, maxAge: Int = 6, origin: Bool = false, head: Bool = false, date: String = "d1")
            -> ByteBuffer
        {
            responses.response(for: body, maxAge: maxAge, origin: origin, head: head, date: date) {
                made += 1
                return ByteBuffer(string: "answer \(made)")
            }
        }
        let window = ByteBuffer(string: "#EXTM3U\n…window 1")
        // The same bytes in another buffer (another window with equal bytes) is another key: bodies are told apart by
        // their storage, never by comparing bytes.
        let sameBytes = ByteBuffer(string: "#EXTM3U\n…window 1")
        #expect(String(buffer: answer(window)) == "answer 1")
        #expect(String(buffer: answer(window)) == "answer 1")
        #expect(String(buffer: answer(sameBytes)) == "answer 2")
        #expect(String(buffer: answer(window, maxAge: 1)) == "answer 3")
        #expect(String(buffer: answer(window, origin: true)) == "answer 4")
        #expect(String(buffer: answer(window, head: true)) == "answer 5")
        #expect(String(buffer: answer(window, origin: true)) == "answer 4")
        // A new second: the Date header differs, everything is made again.
        #expect(String(buffer: answer(window, date: "d2")) == "answer 6")
        #expect(String(buffer: answer(window, date: "d2")) == "answer 6")
    }

    @Test("no more than the byte limit is kept: past it, the loop starts again")
    func boundedByBytes() {
        let responses = LoopResponses()
        let big = LoopResponses.limit / 4 + 1
        var made = 0
        let bodies = (0..<6).map { ByteBuffer(string: "window \($0)") }
        for body in bodies {
            _ = responses.response(for: body, maxAge: 6, origin: false, head: false, date: "d") {
                made += 1
                return ByteBuffer(repeating: 0, count: big)
            }
        }
        // The fifth answer found four kept past the limit, so the first is made again.
        _ = responses.response(for: bodies[0], maxAge: 6, origin: false, head: false, date: "d") {
            made += 1
            return ByteBuffer(repeating: 0, count: 1)
        }
        #expect(made == 7)
    }
}
