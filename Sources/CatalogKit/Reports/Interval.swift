/// A span of time as editors write it: a number and a unit, `90s`, `30m`, `24h`, `7d` or `2w`.
/// The command line's `--since` and the editor API's `?since=` read it alike.
public struct Interval: Sendable, Hashable, CustomStringConvertible {
    public let seconds: Int64
    public let description: String

    private static let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800]

    public init?(_ text: String) {
        guard let unit = text.last.flatMap({ Self.units[$0] }), let count = Int64(text.dropLast()), count > 0,
            count <= Int64.max / unit
        else { return nil }
        seconds = count * unit
        description = text
    }

    public var duration: Duration { .seconds(seconds) }
}
