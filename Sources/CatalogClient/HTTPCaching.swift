import Foundation

/// What a response's `Cache-Control` (and `Age`) allow a private cache to do with it (RFC 9111).
struct CachePolicy: Sendable, Hashable {
    /// Seconds the response stays fresh after it was received; nil: revalidate every time.
    var freshnessLifetime: TimeInterval?
    /// `no-store`: keep nothing on disk.
    var noStore = false

    /// Reads `max-age`, `no-cache` and `no-store`; `Age` (set by CDNs and proxies) is time the
    /// response already spent in a cache, so it shortens what is left. Without `max-age` there is no
    /// heuristic freshness: a feed without one is revalidated at every call, which is always correct.
    ///
    /// Any value a proxy may send parses without trapping: empty members, a bare `=` (which
    /// trapped before), quotes, a `max-age` that is not delta-seconds or that appears twice (both
    /// make the response stale: RFC 9111 §4.2.1 calls them invalid), or one too large (capped).
    init(cacheControl: String?, age: String?) {
        var maxAges: [TimeInterval] = []
        var noCache = false
        for directive in (cacheControl ?? "").split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard let name = parts.first?.lowercased(), !name.isEmpty else { continue }
            switch name {
            case "max-age":
                // A malformed max-age makes the response stale, not fresh forever.
                maxAges.append(parts.count == 2 ? Self.deltaSeconds(parts[1]) ?? 0 : 0)
            case "no-cache": noCache = true
            case "no-store": noStore = true
            default: break
            }
        }
        guard let maxAge = maxAges.count == 1 ? maxAges[0] : (maxAges.isEmpty ? nil : 0), !noCache, !noStore else { return }
        let alreadyCached = age.flatMap { Self.deltaSeconds($0) } ?? 0
        freshnessLifetime = max(maxAge - alreadyCached, 0)
    }

    /// RFC 9111 §1.2.2 delta-seconds: digits only (quotes tolerated around them), and a value too
    /// large is 2^31, "infinity enough". nil for anything else.
    static func deltaSeconds(_ text: String) -> TimeInterval? {
        var digits = text.trimmingCharacters(in: .whitespaces)
        if digits.count >= 2, digits.hasPrefix("\""), digits.hasSuffix("\"") { digits = String(digits.dropFirst().dropLast()) }
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        let cap: TimeInterval = 2_147_483_648
        return digits.count > 10 ? cap : min(TimeInterval(digits) ?? cap, cap)
    }
}

enum HTTPHeaderDate {
    /// The three forms RFC 9110 §5.6.7 has recipients accept: IMF-fixdate, which servers send,
    /// and the obsolete RFC 850 and asctime forms.
    static let formats = ["EEE, dd MMM yyyy HH:mm:ss 'GMT'", "EEEE, dd-MMM-yy HH:mm:ss 'GMT'", "EEE MMM d HH:mm:ss yyyy"]

    static func parse(_ text: String) -> Date? {
        // asctime pads a one-digit day with a space: "Sun Nov  6 08:49:37 1994".
        let trimmed = text.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "  ", with: " ")
        for format in formats {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: trimmed) { return date }
        }
        return nil
    }
}

/// How long a 429 or 503 asks the client to wait: delay-seconds or an HTTP-date in any of its
/// three forms (RFC 9110 §10.2.3).
func retryAfterDelay(_ value: String?, now: Date) -> TimeInterval? {
    guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
    if let seconds = CachePolicy.deltaSeconds(value) { return seconds }
    return HTTPHeaderDate.parse(value).map { max($0.timeIntervalSince(now), 0) }
}

/// Exponential backoff with jitter, so that many clients failing together do not retry together.
public struct Backoff: Sendable, Hashable {
    /// The delay before the first retry; each further retry doubles it.
    public var initial: TimeInterval
    /// No retry waits longer than this.
    public var maximum: TimeInterval

    /// A backoff starting at `initial` seconds and doubling up to `maximum`.
    public init(initial: TimeInterval, maximum: TimeInterval) {
        self.initial = initial
        self.maximum = maximum
    }

    /// The delay before retry number `retry` (0 for the first): between half and all of the
    /// doubled delay, so it still grows while spreading clients apart.
    func delay(retry: Int) -> TimeInterval {
        let ceiling = min(maximum, initial * pow(2, Double(min(retry, 32))))
        return ceiling / 2 + Double.random(in: 0...(ceiling / 2))
    }
}
