/// An app version such as `2.3.1`: one to four dot-separated numbers, compared numerically
/// with missing parts as zero (`2` = `2.0` = `2.0.0`).
public struct AppVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The numbers without trailing zeros, so that equal versions have equal components.
    public let components: [Int]

    /// Parses one to four dot-separated numbers of at most nine digits each; nil for anything else.
    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...4).contains(parts.count) else { return nil }
        var numbers: [Int] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 9, part.allSatisfy({ $0.isASCII && $0.isNumber }),
                let number = Int(part)
            else { return nil }
            numbers.append(number)
        }
        while numbers.last == 0 { numbers.removeLast() }
        components = numbers
    }

    /// The version below every other one: the lower bound of the first band.
    public static let zero = AppVersion(components: [])

    private init(components: [Int]) {
        self.components = components
    }

    public static func < (lhs: AppVersion, rhs: AppVersion) -> Bool {
        for index in 0..<max(lhs.components.count, rhs.components.count) {
            let left = index < lhs.components.count ? lhs.components[index] : 0
            let right = index < rhs.components.count ? rhs.components[index] : 0
            if left != right { return left < right }
        }
        return false
    }

    /// At least two parts: `2.0`, `2.3`, `2.3.1`, `0.0`.
    public var description: String {
        var parts = components
        while parts.count < 2 { parts.append(0) }
        return parts.map(String.init).joined(separator: ".")
    }
}
