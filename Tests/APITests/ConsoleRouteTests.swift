@testable import API
import Foundation
import HTTPTypes
import Hummingbird
import Testing

@Suite("The operator console's routes, in process")
struct ConsoleRouteTests {
    static let csp = HTTPField.Name.contentSecurityPolicy

    @Test("/console serves the page and its modules with their content types, a CSP without inline script, nosniff")
    func files() async throws {
        let fixture = try await APIFixture()
        try await fixture.test { client in
            for path in ["/console", "/console/", "/console/index.html"] {
                let page = try await client.get(path)
                #expect(page.status == .ok, "\(path)")
                #expect(page.headers[.contentType] == "text/html; charset=utf-8")
                let policy = try #require(page.headers[Self.csp])
                #expect(policy.contains("script-src 'self'") && policy.contains("default-src 'none'"))
                #expect(!policy.contains("unsafe-inline") && !policy.contains("unsafe-eval"))
                #expect(page.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
                // No inline script: every script element names its source.
                let scripts = page.text.components(separatedBy: "<script").dropFirst()
                #expect(!scripts.isEmpty && scripts.allSatisfy { $0.hasPrefix(#" type="module" src="/console/"#) })
            }
            for (file, type) in [
                ("console.js", "text/javascript; charset=utf-8"), ("api.js", "text/javascript; charset=utf-8"),
                ("timeline.js", "text/javascript; charset=utf-8"), ("console.css", "text/css; charset=utf-8"),
            ] {
                let answer = try await client.get("/console/\(file)")
                #expect(answer.status == .ok && answer.headers[.contentType] == type, "\(file)")
                #expect(answer.headers[Self.csp] == ConsoleController.contentSecurityPolicy)
                #expect(!answer.text.isEmpty)
            }
            // The console's pages reach their server alone; only the sandboxed player frame may fetch elsewhere.
            #expect(
                ConsoleController.contentSecurityPolicy.contains("connect-src 'self';")
                    && !ConsoleController.contentSecurityPolicy.contains("https:"))
            let player = try await client.get("/console/player.html")
            #expect(player.status == .ok && player.headers[Self.csp] == ConsoleController.playerContentSecurityPolicy)
            #expect(
                player.headers[HTTPField.Name("X-Frame-Options")!] == "SAMEORIGIN"
                    && player.headers[Self.csp]?.contains("frame-ancestors 'self'") == true)
            let index = try await client.get("/console/")
            #expect(
                index.text.contains(#"<iframe id="player-frame" sandbox="allow-scripts""#)
                    && !index.text.contains("allow-same-origin"))
            // The token goes in a header, never in a URL.
            let api = try await client.get("/console/api.js")
            #expect(api.text.contains("Authorization = `Bearer ${session.token}`") && !api.text.contains("?token="))
        }
    }

    @Test(
        "unknown files, other extensions, hidden names, subpaths and traversal attempts are 404 (or 400), never a file outside"
    )
    func noTraversal() async throws {
        let fixture = try await APIFixture()
        try await fixture.test { client in
            for path in [
                "/console/nope.js", "/console/.hidden.js", "/console/index.html.bak", "/console/index",
                "/console/../Package.swift",
                "/console/..%2F..%2F..%2FPackage.swift", "/console/%2e%2e/%2e%2e/Package.swift",
                "/console/a/../../Routes.swift",
                "/console/ConsoleController.swift", "/console/%2Fetc%2Fpasswd", "/console/..",
                "/console/vendor/../index.html.bak",
            ] {
                let answer = try await client.get(path)
                #expect(answer.status == .notFound || answer.status == .badRequest, "\(path): \(answer.status)")
                #expect(!answer.text.contains("PackageDescription") && !answer.text.contains("root:"), "\(path)")
            }
            let missing = try await client.get("/console/nope.js")
            #expect(missing.error?.message == "no such console file")
        }
        #expect(ConsoleController.contentType("console.js") == "text/javascript; charset=utf-8")
        for name in [
            "", ".js", "..", "a/b.js", "a\\b.js", "x..js", "index.HTML~", "%2e%2e", "a b.js", "é.js",
            String(repeating: "a", count: 70) + ".js",
        ] {
            #expect(ConsoleController.contentType(name) == nil, "\(name)")
        }
    }

    @Test(
        "a symbolic link in the console directory is not followed; without a directory the console says where to point it"
    )
    func directoryRules() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("console-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "<!doctype html>".write(toFile: directory + "/index.html", atomically: true, encoding: .utf8)
        try "export const Hls = 1;".write(toFile: directory + "/hls-source.mjs", atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: directory + "/passwd.js", withDestinationPath: "/etc/passwd")
        let router = Router(context: APIRequestContext.self)
        ConsoleController(access: .open, directory: directory, hlsjs: directory + "/hls-source.mjs").addRoutes(
            to: router)
        try await withRouterClient(router) { client in
            #expect(try await client.get("/console").text == "<!doctype html>")
            #expect(try await client.get("/console/passwd.js").status == .notFound)
            let hls = try await client.get("/console/vendor/hls.mjs")
            #expect(
                hls.status == .ok && hls.text == "export const Hls = 1;"
                    && hls.headers[.contentType] == "text/javascript; charset=utf-8")
            let session = try await client.get("/console/session")
            #expect(
                session.status == .ok && session.json["open"] as? Bool == true
                    && session.json["role"] as? String == "operator")
        }
        let bare = Router(context: APIRequestContext.self)
        ConsoleController(access: .open, directory: nil, hlsjs: nil).addRoutes(to: bare)
        try await withRouterClient(bare) { client in
            let page = try await client.get("/console")
            #expect(page.status == .serviceUnavailable && page.error?.message.contains("CUELINE_CONSOLE_DIR") == true)
            let hls = try await client.get("/console/vendor/hls.mjs")
            #expect(hls.status == .notFound && hls.error?.message.contains("CUELINE_HLSJS") == true)
        }
    }

    @Test("/console/session: 401 without a token; the token's name and role (a viewer is a viewer)")
    func session() async throws {
        let fixture = try await APIFixture()
        try await fixture.test { [fixture] client in
            let none = try await client.get("/console/session")
            #expect(none.status == .unauthorized && none.error?.field == "Authorization")
            let viewer = try await client.get("/console/session", fixture.auth("wall"))
            #expect(
                viewer.status == .ok && viewer.json["name"] as? String == "wall"
                    && viewer.json["role"] as? String == "viewer")
            #expect(viewer.json["open"] as? Bool == false)
            let desk = try await client.get("/console/session", fixture.auth("desk"))
            #expect(desk.json["role"] as? String == "operator")
            let scoped = try await client.get("/console/session", fixture.auth("news"))
            #expect(scoped.json["channels"] as? [String] == ["news"])
        }
    }
}
