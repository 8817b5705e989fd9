/// The platforms an app's products are sold on: Apple's, where the App Store sells, and Android,
/// where Google Play does. Names match case-insensitively; URLs use lower case.
public enum Platform: String, CaseIterable, Sendable, Hashable, Comparable, Codable {
    /// iOS; `ios` in URLs and manifests.
    case iOS = "ios"
    /// macOS; `macos` in URLs and manifests.
    case macOS = "macos"
    /// tvOS; `tvos` in URLs and manifests.
    case tvOS = "tvos"
    /// watchOS; `watchos` in URLs and manifests.
    case watchOS = "watchos"
    /// visionOS; `visionos` in URLs and manifests.
    case visionOS = "visionos"
    /// Android, where Google Play sells; `android` in URLs and manifests. Its feeds list products
    /// by their Google Play ids (docs/google-play.md).
    case android

    /// Apple's spelling, as editors write it.
    public var name: String {
        switch self {
        case .iOS: "iOS"
        case .macOS: "macOS"
        case .tvOS: "tvOS"
        case .watchOS: "watchOS"
        case .visionOS: "visionOS"
        case .android: "Android"
        }
    }

    /// The platform named `name` in any case (`iOS`, `ios`, `IOS`); nil for an unknown name.
    public init?(name: String) {
        // Apple's spellings are by far the most common; avoid lowercasing them.
        switch name {
        case "iOS": self = .iOS
        case "macOS": self = .macOS
        case "tvOS": self = .tvOS
        case "watchOS": self = .watchOS
        case "visionOS": self = .visionOS
        case "Android": self = .android
        default: self.init(rawValue: name.lowercased())
        }
    }

    public static func < (lhs: Platform, rhs: Platform) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    /// Whether the App Store sells there.
    public var isApple: Bool { self != .android }

    static let expectedList = "iOS, macOS, tvOS, watchOS, visionOS or Android"
}

/// The four kinds of in-app purchase.
public enum ProductType: String, CaseIterable, Sendable, Hashable, Codable {
    /// Used once and bought again, such as game currency.
    case consumable
    /// Bought once and kept, such as a level or a feature.
    case nonConsumable = "non-consumable"
    /// A subscription that renews until cancelled; needs a ``Product/subscription``.
    case autoRenewable = "auto-renewable"
    /// Access for a limited time that does not renew by itself.
    case nonRenewing = "non-renewing"

    static let expectedList = "consumable, non-consumable, auto-renewable or non-renewing"
}

/// Where a product stands; only `cleared` products are sold.
public enum ProductStatus: String, CaseIterable, Sendable, Hashable, Codable {
    /// Being prepared: in no feed.
    case draft
    /// For sale, inside its sale window.
    case cleared
    /// Off sale for now; listed as known in the rich feed, so that apps can restore its purchases.
    case removed
    /// Off sale for good; listed as known, and once published as retired never sold again.
    case retired

    static let expectedList = "draft, cleared, removed or retired"
}
