import Foundation

/// Where a URL an ad server chose (a wrapper's or a VMAP break's ad tag, a redirect, a creative, a tracking URL) may
/// point: not at the plant's own network unless the operator's ad server is there itself. An ad server on the
/// internet cannot send Cueline to `127.0.0.1`, `10.x`, `169.254.169.254` (cloud metadata) or `localhost`; one in a
/// lab or the plant's own network can send it to its neighbours.
///
/// Host names are not resolved here: a public name that resolves to a private address is not caught (that needs a
/// check at connect time, in the HTTP client's resolver).
public enum HostPolicy {
    /// Whether `host` (a URL's host, brackets around IPv6 allowed) is a loopback, private, link-local, shared (CGNAT)
    /// or unspecified address literal, or `localhost`.
    public static func isPrivate(host: String) -> Bool {
        var host = host.lowercased()
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "localhost" || host.hasSuffix(".localhost") { return true }
        if let v4 = ipv4(host) { return isPrivate(v4) }
        guard host.contains(":") else { return false }
        if host == "::1" || host == "::" { return true }
        // IPv4-mapped (::ffff:a.b.c.d) and the unique-local (fc00::/7) and link-local (fe80::/10) ranges.
        if host.hasPrefix("::ffff:"), let v4 = ipv4(String(host.dropFirst(7))) { return isPrivate(v4) }
        let first = host.split(separator: ":", omittingEmptySubsequences: false).first ?? ""
        guard let word = UInt16(first, radix: 16) else { return false }
        return word & 0xFE00 == 0xFC00 || word & 0xFFC0 == 0xFE80
    }

    /// Whether `url`'s host is private (`isPrivate(host:)`); false for what is not a URL with a host.
    public static func isPrivate(url: String) -> Bool {
        guard let host = URL(string: url)?.host else { return false }
        return isPrivate(host: host)
    }

    static func ipv4(_ text: String) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        let bytes = parts.compactMap { UInt8($0) }
        return bytes.count == 4 ? bytes : nil
    }

    static func isPrivate(_ b: [UInt8]) -> Bool {
        switch (b[0], b[1]) {
        case (0, _), (10, _), (127, _): return true
        case (169, 254), (192, 168): return true
        case (172, 16...31): return true
        case (100, 64...127): return true
        default: return false
        }
    }
}
