import Foundation
import HTTPTypes
import Hummingbird

/// Lets through to the file server only the `/media/…` paths that name a regular file inside the media directory:
/// no empty, `.` or `..` segment (so no protocol-relative redirect such as `Location: //x/`), no directory, and no
/// symbolic link that resolves outside the directory. Everything else under `/media` is 404.
struct MediaPathGuard<Context: RequestContext>: RouterMiddleware {
    let basePath: String
    /// The media directory with every symbolic link resolved.
    let root: String

    init(directory: String, basePath: String = "/media") {
        self.basePath = basePath
        root = Self.realPath(directory) ?? URL(fileURLWithPath: directory).standardizedFileURL.path
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let path = request.uri.path
        guard path == basePath || path.hasPrefix(basePath + "/") else { return try await next(request, context) }
        // Answered here, not thrown: a router-wide middleware sits outside the router's own error rendering.
        guard file(at: path) != nil else { return APIError(.notFound, "no such file").response }
        // Media is served from the console's origin: an HTML or SVG file among it (ad packages carry them) opened in
        // a signed-in tab would run as the console and read its token. `sandbox` gives such a document an opaque
        // origin and no scripts; players fetching segments and playlists are not affected.
        var response = try await next(request, context)
        response.headers[.contentSecurityPolicy] = "sandbox"
        response.headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        return response
    }

    /// The real path of the regular file the request path names, or nil when it is not one inside the directory.
    func file(at requestPath: String) -> String? {
        guard let decoded = requestPath.removingPercentEncoding, decoded.hasPrefix(basePath + "/") else { return nil }
        let relative = decoded.dropFirst(basePath.count + 1)
        let segments = relative.split(separator: "/", omittingEmptySubsequences: false)
        guard !segments.isEmpty,
            segments.allSatisfy({ segment in
                !segment.isEmpty && segment != "." && segment != ".."
                    && !segment.contains(where: { $0 == "\0" || $0 == "\\" || $0.isNewline })
            })
        else { return nil }
        guard let resolved = Self.realPath(root + "/" + relative), resolved.hasPrefix(root + "/") else { return nil }
        var status = stat()
        guard stat(resolved, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        return resolved
    }

    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
