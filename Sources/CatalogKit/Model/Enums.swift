/// The platforms the App Store sells on. Names match case-insensitively; URLs use lower case.
public enum Platform: String, CaseIterable, Sendable, Hashable, Comparable, Codable {
    case iOS = "ios"
    case macOS = "macos"
    case tvOS = "tvos"
    case watchOS = "watchos"
    case visionOS = "visionos"

    /// Apple's spelling, as editors write it.
    public var name: String {
        switch self {
        case .iOS: "iOS"
        case .macOS: "macOS"
        case .tvOS: "tvOS"
        case .watchOS: "watchOS"
        case .visionOS: "visionOS"
        }
    }

    public init?(name: String) {
        // Apple's spellings are by far the most common; avoid lowercasing them.
        switch name {
        case "iOS": self = .iOS
        case "macOS": self = .macOS
        case "tvOS": self = .tvOS
        case "watchOS": self = .watchOS
        case "visionOS": self = .visionOS
        default: self.init(rawValue: name.lowercased())
        }
    }

    public static func < (lhs: Platform, rhs: Platform) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    static let expectedList = "iOS, macOS, tvOS, watchOS or visionOS"
}

/// The four kinds of in-app purchase.
public enum ProductType: String, CaseIterable, Sendable, Hashable, Codable {
    case consumable
    case nonConsumable = "non-consumable"
    case autoRenewable = "auto-renewable"
    case nonRenewing = "non-renewing"

    static let expectedList = "consumable, non-consumable, auto-renewable or non-renewing"
}

/// Where a product stands; only `cleared` products are sold.
public enum ProductStatus: String, CaseIterable, Sendable, Hashable, Codable {
    case draft
    case cleared
    case removed
    case retired

    static let expectedList = "draft, cleared, removed or retired"
}
