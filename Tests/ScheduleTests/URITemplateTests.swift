import HLS
import Schedule
import Testing

@Suite("URI templates compiled once")
struct URITemplateTests {
    static let templates = [
        "seg{n}.ts", "{rendition}/{n%1000}/{n}.ts", "a{n}b{n}c{n%7}", "", "plain.ts", "{", "}{n}", "{n", "{{n}}",
        "{n%0}", "{n%-1}", "{n%x}", "{x}{rendition}{n}", "é/{rendition}/ü{n}.ts", "{n%3}{n%3}",
        "https://cdn.example.com/{rendition}/{n}.m4s?x={n%2}",
    ]

    @Test("expands to exactly what RenditionConfig.segmentURI builds from the template text", arguments: templates)
    func sameAsSegmentURI(_ text: String) {
        let rendition = RenditionConfig(name: "720p", bandwidth: 1, uriTemplate: text)
        let template = URITemplate(text, substitutions: ["rendition": "720p"])
        for n: Int64 in [0, 1, 9, 10, 999, 1000, 1001, 123_456_789, -5, Int64.max] {
            #expect(template.expand(n) == rendition.segmentURI(n), "template \(text), n \(n)")
        }
    }

    @Test("the tokens are replaced")
    func replaced() {
        #expect(
            URITemplate("{rendition}/{n%1000}/{n}.ts", substitutions: ["rendition": "hd"]).expand(12_345)
                == "hd/345/12345.ts")
        #expect(URITemplate("{n%0}-{n}").expand(4) == "{n%0}-4")
        // An unclosed brace is kept as written, once (the text before it was written twice).
        #expect(URITemplate("seg{n}/a{b").expand(7) == "seg7/a{b")
        #expect(RenditionConfig(name: "720p", bandwidth: 1, uriTemplate: "seg{n}/a{b").segmentURI(7) == "seg7/a{b")
        #expect(URITemplate("x{n").expand(1) == "x{n")
    }
}
