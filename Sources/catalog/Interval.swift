import ArgumentParser

/// A span of time on the command line: a number and a unit, `90s`, `30m`, `24h`, `7d` or `2w`.
struct Interval: ExpressibleByArgument, CustomStringConvertible {
    let seconds: Int64
    let description: String

    private static let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800]

    init?(argument: String) {
        guard let unit = argument.last.flatMap({ Self.units[$0] }), let count = Int64(argument.dropLast()), count > 0,
            count <= Int64.max / unit
        else { return nil }
        seconds = count * unit
        description = argument
    }

    static var defaultCompletionKind: CompletionKind { .default }

    var duration: Duration { .seconds(seconds) }
}
