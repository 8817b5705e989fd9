/// One published combination of platform and app-version band; nil means "not narrowed".
///
/// The default variant (no platform, no band) is what a request without parameters gets
/// and what the static tree holds at `v1/apps/<app>/products.json`.
public struct Variant: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The platform the variant serves; nil for every platform.
    public var platform: Platform?
    /// The lower bound of the band: versions from it up to the next band's bound.
    public var band: AppVersion?

    /// The variant of `platform` and the band starting at `band`; nil for either means not narrowed.
    public init(platform: Platform?, band: AppVersion?) {
        self.platform = platform
        self.band = band
    }

    /// The default variant: not narrowed by platform or app version.
    public static let all = Variant(platform: nil, band: nil)

    /// The platform as manifests and folder names write it: its lower-case name, or `any`.
    public var platformKey: String { platform?.rawValue ?? "any" }
    /// The band as manifests and folder names write it: its lower bound (such as `2.0`), or `any`.
    public var bandKey: String { band?.description ?? "any" }

    /// Where the variant's feeds sit inside a revision folder: the default at the top.
    public var relativeDirectory: String {
        self == .all ? "" : "variants/\(platformKey)/\(bandKey)/"
    }

    public static func < (lhs: Variant, rhs: Variant) -> Bool {
        switch (lhs.platform, rhs.platform) {
        case (nil, .some): return true
        case (.some, nil): return false
        case (.some(let left), .some(let right)) where left != right: return left < right
        default: break
        }
        switch (lhs.band, rhs.band) {
        case (nil, .some): return true
        case (.some, nil): return false
        case (.some(let left), .some(let right)): return left < right
        default: return false
        }
    }

    public var description: String { "\(platformKey)/\(bandKey)" }
}

/// The variants an app's definitions distinguish, and which one answers a request.
public struct VariantSelector: Sendable, Hashable {
    /// Platforms with a feed of their own; empty when no definition names a platform.
    public var platforms: [Platform]
    /// Band lower bounds in ascending order, starting at 0.0; empty when no product has a minimum version.
    public var bands: [AppVersion]

    /// A selector with these platforms and band lower bounds (ascending, starting at 0.0).
    public init(platforms: [Platform], bands: [AppVersion]) {
        self.platforms = platforms
        self.bands = bands
    }

    /// The selector `catalog`'s definitions call for: its platforms, and bands from 0.0 and from each distinct minimum app version.
    public init(catalog: AppCatalog) {
        platforms = catalog.platforms
        let minimums = Set(catalog.products.indices.compactMap { catalog.products[$0].minimumAppVersion }).subtracting([AppVersion.zero])
        bands = minimums.isEmpty ? [] : [AppVersion.zero] + minimums.sorted()
    }

    /// Every published variant, the default first.
    public var variants: [Variant] {
        let platformChoices: [Platform?] = [nil] + platforms.map(Optional.some)
        let bandChoices: [AppVersion?] = [nil] + bands.map(Optional.some)
        return platformChoices.flatMap { platform in bandChoices.map { Variant(platform: platform, band: $0) } }
    }

    /// The variant that serves a request; a platform the app does not distinguish gets the unnarrowed feed.
    public func variant(platform: Platform?, appVersion: AppVersion?) -> Variant {
        let chosenPlatform = platform.flatMap { platforms.contains($0) ? $0 : nil }
        let chosenBand = appVersion.flatMap { version in bands.last { $0 <= version } }
        return Variant(platform: chosenPlatform, band: chosenBand)
    }
}
