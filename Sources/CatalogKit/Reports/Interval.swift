import Time

/// A span of time as editors write it: a number and a unit, `90s`, `30m`, `24h`, `7d` or `2w`.
/// The command line's `--since` and the editor API's `?since=` read it alike.
public struct Interval: Sendable, Hashable, CustomStringConvertible {
    /// The span's length, in seconds.
    public let seconds: Int64
    /// The span as written, such as `24h`.
    public let description: String

    private static let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800]

    /// Nil unless `text` is a positive whole number and a unit, of at most `Int64.max` seconds.
    public init?(_ text: String) {
        guard let unit = text.last.flatMap({ Self.units[$0] }), let count = Int64(text.dropLast()), count > 0,
            count <= Int64.max / unit
        else { return nil }
        seconds = count * unit
        description = text
    }

    /// The span as a `Duration`.
    public var duration: Duration { .seconds(seconds) }

    /// The moment this long before `now`; a span reaching before 1970 means all of time, which
    /// is where every report and every date this catalog writes begins.
    public func before(_ now: Timestamp) -> Timestamp {
        let (start, overflow) = now.secondsSince1970.subtractingReportingOverflow(seconds)
        return Timestamp(secondsSince1970: overflow ? 0 : max(0, start))
    }
}
