import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Schedule

/// The operator console (`/console`): static HTML, CSS and JavaScript modules from one directory, each served with a
/// Content-Security-Policy that allows scripts from this origin only (the console has no inline script), and
/// `GET /console/session`, which tells the console who its token is (name and role), so a viewer gets no command
/// controls. Everything else the console does goes through the ordinary API with the token in an `Authorization`
/// header; the token is never part of a URL.
///
/// Files: only names of letters, digits, `.`, `_` and `-` with a known extension, directly in the directory (one
/// path segment, no leading dot, no `..`), that are regular files; anything else is 404. The directory is, in order:
/// `CUELINE_CONSOLE_DIR`, the SwiftPM resource bundle next to the executable (`Cueline_API.resources/Console`), an
/// install prefix's `share/cueline/console`, then the source tree this file was built from. hls.js for the player
/// pane is not shipped: `CUELINE_HLSJS` names an ES module exporting `Hls` (as `scripts/lib/demo.sh` extracts it),
/// served at `/console/vendor/hls.mjs`; without it the console works without a player.
struct ConsoleController {
    let access: AccessPolicy
    let directory: String?
    let hlsjs: String?

    /// The console's pages hold the token: they reach this server alone (an injected or compromised script cannot
    /// send the token elsewhere) and frame only the player.
    static let contentSecurityPolicy = [
        "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "connect-src 'self'",
        "frame-src 'self'", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
    ].joined(separator: "; ")

    /// The player's frame (`player.html`, sandboxed by the console without `allow-same-origin`: an opaque origin that
    /// cannot read the token): hls.js there fetches playlists, segments and interstitial assets from any https origin.
    static let playerContentSecurityPolicy = [
        "default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self' https:",
        "media-src 'self' blob: https:", "worker-src 'self' blob:", "base-uri 'none'", "form-action 'none'",
        "frame-ancestors 'self'",
    ].joined(separator: "; ")

    static let contentTypes = [
        "html": "text/html; charset=utf-8", "css": "text/css; charset=utf-8", "js": "text/javascript; charset=utf-8",
        "mjs": "text/javascript; charset=utf-8", "png": "image/png", "svg": "image/svg+xml", "json": "application/json",
    ]

    init(
        access: AccessPolicy, directory: String? = Self.locateDirectory(),
        hlsjs: String? = ProcessInfo.processInfo.environment["CUELINE_HLSJS"]
    ) {
        self.access = access
        self.directory = directory
        self.hlsjs = hlsjs
    }

    func addRoutes(to router: Router<APIRequestContext>) {
        let files = router.group("/console")
        files.get { _, _ in try self.file("index.html") }  // `/console` and `/console/` alike
        files.get("/vendor/hls.mjs") { _, _ in try self.vendorHlsjs() }
        files.get("/{file}") { _, context in try self.file(context.parameters.require("file")) }
        router.group("/console").add(middleware: TokenAuthenticator(policy: access)).get("/session", use: session)
    }

    /// Who the token is: `{"name", "role", "channels"}`; in open mode `{"open": true, "role": "operator"}`.
    @Sendable func session(_ request: Request, context: APIRequestContext) throws -> Response {
        let caller = try context.caller(for: .anyToken)
        guard let token = caller.token else {
            return jsonResponse(Session(name: nil, role: "operator", channels: [], open: true))
        }
        return jsonResponse(Session(name: token.name, role: token.role.rawValue, channels: token.channels, open: false))
    }

    struct Session: Encodable {
        var name: String?
        var role: String
        var channels: [ChannelID]
        var open: Bool
    }

    /// The file `name` of the console directory, or 404.
    func file(_ name: String) throws -> Response {
        guard let directory else {
            throw APIError(
                .unavailable, "the console's files were not found; set CUELINE_CONSOLE_DIR to the console directory")
        }
        guard let type = Self.contentType(name) else { throw APIError(.notFound, "no such console file") }
        guard let data = Self.regularFile(directory + "/" + name, followingLinks: false) else {
            throw APIError(.notFound, "no such console file")
        }
        return Self.response(data, contentType: type, player: name == "player.html")
    }

    func vendorHlsjs() throws -> Response {
        guard let hlsjs, let data = Self.regularFile(hlsjs) else {
            throw APIError(.notFound, "no hls.js on this server: set CUELINE_HLSJS to an ES module exporting Hls")
        }
        return Self.response(data, contentType: "text/javascript; charset=utf-8")
    }

    /// The content type of an allowed file name, or nil for a name that is not one.
    static func contentType(_ name: String) -> String? {
        guard let first = name.unicodeScalars.first, first != ".", name.count <= 64, !name.contains(".."),
            name.unicodeScalars.allSatisfy({
                ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)))
                    || "._-".unicodeScalars.contains($0)
            }),
            let dot = name.lastIndex(of: ".")
        else { return nil }
        return contentTypes[String(name[name.index(after: dot)...]).lowercased()]
    }

    /// The bytes of the regular file at `path`; nil for anything else (a symbolic link too, unless `followingLinks`).
    static func regularFile(_ path: String, followingLinks: Bool = true) -> Data? {
        var status = stat()
        guard (followingLinks ? stat(path, &status) : lstat(path, &status)) == 0, status.st_mode & S_IFMT == S_IFREG
        else { return nil }
        return FileManager.default.contents(atPath: path)
    }

    static func response(_ data: Data, contentType: String, player: Bool = false) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = contentType
        headers[.cacheControl] = "no-cache"
        headers[.contentSecurityPolicy] = player ? playerContentSecurityPolicy : contentSecurityPolicy
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        headers[HTTPField.Name("X-Frame-Options")!] = player ? "SAMEORIGIN" : "DENY"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// The console directory (see the type's documentation), or nil when none holds `index.html`.
    static func locateDirectory() -> String? {
        var candidates: [String] = []
        if let explicit = ProcessInfo.processInfo.environment["CUELINE_CONSOLE_DIR"] { candidates.append(explicit) }
        let executable = URL(fileURLWithPath: CommandLine.arguments.first ?? ".").resolvingSymlinksInPath()
            .deletingLastPathComponent()
        candidates.append(executable.appendingPathComponent("Cueline_API.resources/Console").path)
        candidates.append(executable.deletingLastPathComponent().appendingPathComponent("share/cueline/console").path)
        candidates.append(
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("Console").path)
        return candidates.first { regularFile($0 + "/index.html") != nil }
    }
}
