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
    init(cacheControl: String?, age: String?) {
        var maxAge: TimeInterval?
        var noCache = false
        for directive in (cacheControl ?? "").split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            switch parts[0].lowercased() {
            case "max-age" where parts.count == 2:
                // A malformed max-age makes the response stale (RFC 9111 §4.2.1), not fresh forever.
                maxAge = TimeInterval(parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))).map { max($0, 0) } ?? 0
            case "no-cache": noCache = true
            case "no-store": noStore = true
            default: break
            }
        }
        guard let maxAge, !noCache, !noStore else { return }
        let alreadyCached = age.flatMap { TimeInterval($0.trimmingCharacters(in: .whitespaces)) } ?? 0
        freshnessLifetime = max(maxAge - max(alreadyCached, 0), 0)
    }
}

enum HTTPHeaderDate {
    /// IMF-fixdate, the form servers send (RFC 9110 §5.6.7).
    static func parse(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.date(from: text.trimmingCharacters(in: .whitespaces))
    }
}

/// How long a 429 or 503 asks the client to wait: delay-seconds or an HTTP-date (RFC 9110 §10.2.3).
func retryAfterDelay(_ value: String?, now: Date) -> TimeInterval? {
    guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
    if let seconds = Int(value) { return TimeInterval(max(seconds, 0)) }
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
