import Foundation

/// The platforms and app-version bands an app's feeds distinguish, and the path of each variant's
/// feeds: what `catalog build` publishes as `v1/apps/<app>/variants.json`, what `catalog serve`
/// answers there, and what a client reads to pick its variant's path on any host.
///
/// Every variant has a path of its own, which a static host serves as it is:
/// `v1/apps/<app>/products.json` for the default (`any/any`), and
/// `v1/apps/<app>/variants/<platform|any>/<band|any>/products.json` for the others (the same for
/// `catalog.json`, with `.gz` and `.jws` beside each). The variant of a platform and app version is
/// chosen exactly as `catalog serve` chooses it for the query form, and as a signature's binding is
/// checked (``FeedClaims/covers(app:feed:platform:appVersion:)``), so the three always agree.
public struct FeedVariants: Codable, Sendable, Hashable {
    /// Platforms with feeds of their own, lower case (`ios`); empty when the app names none.
    public var platforms: [String]
    /// Band lower bounds, ascending, from `0.0`; empty when no product sets a minimum app version.
    public var bands: [String]

    /// The variants of an app with these platforms and band lower bounds.
    public init(platforms: [String], bands: [String]) {
        self.platforms = platforms
        self.bands = bands
    }

    /// The name of the index beside an app's feeds: `v1/apps/<app>/variants.json`.
    public static let indexName = "variants.json"

    /// The variant (`platform/band`) a client on `platform` at `appVersion` gets: a platform the
    /// app does not distinguish gets `any`; a version gets the highest band at or below it, no
    /// version (or one that is not a version) gets `any`.
    public func key(platform: String?, appVersion: String?) -> String {
        let chosenPlatform = platform.map { $0.lowercased() }.flatMap { platforms.contains($0) ? $0 : nil } ?? "any"
        var chosenBand = "any"
        if let version = appVersion.flatMap(VersionNumber.init) {
            chosenBand = bands.last { VersionNumber($0).map { $0 <= version } ?? false } ?? "any"
        }
        return "\(chosenPlatform)/\(chosenBand)"
    }

    /// Where the feeds of variant `key` (`platform/band`) sit below `v1/apps/<app>/`, and below
    /// a revision's folder: `""` for the default, `variants/<platform>/<band>/` for the others.
    public static func directory(key: String) -> String {
        key == "any/any" ? "" : "variants/\(key)/"
    }

    /// The index as published: compact JSON with sorted keys, so that the same variants always
    /// make the same bytes (and the same entity tag).
    public func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array((try? encoder.encode(self)) ?? Data()) + [0x0A]
    }

    /// An index read from its bytes; nil unless every platform and band is a plain name or version,
    /// since they become path segments.
    public init?(json: Data) {
        guard let decoded = try? JSONDecoder().decode(FeedVariants.self, from: json),
            decoded.platforms.allSatisfy({ !$0.isEmpty && $0.count <= 16 && $0.utf8.allSatisfy { (97...122).contains($0) } }),
            decoded.bands.allSatisfy({ VersionNumber($0) != nil })
        else { return nil }
        self = decoded
    }
}

/// Where a feed URL or file path points: `…/v1/apps/<app>/<feed>` or
/// `…/v1/apps/<app>/variants/<platform>/<band>/<feed>`, and the variant its path names.
public struct FeedLocation: Sendable, Hashable {
    /// The app's bundle identifier.
    public var app: String
    /// `products.json` or `catalog.json`.
    public var feed: String
    /// The variant the path names (`ios/2.0`), nil for the app's own feed path (the default, or
    /// the variant its query asks for from `catalog serve`).
    public var variant: String?

    /// The location a path names, nil for any other path (a revision snapshot's included).
    public init?(path: String) {
        let parts = path.split(separator: "/").map(String.init)
        guard let feed = parts.last, ["products.json", "catalog.json"].contains(feed) else { return nil }
        if parts.count >= 4, parts[parts.count - 4] == "v1", parts[parts.count - 3] == "apps" {
            (app, self.feed, variant) = (parts[parts.count - 2], feed, nil)
        } else if parts.count >= 7, parts[parts.count - 7] == "v1", parts[parts.count - 6] == "apps",
            parts[parts.count - 4] == "variants"
        {
            (app, self.feed, variant) = (parts[parts.count - 5], feed, "\(parts[parts.count - 3])/\(parts[parts.count - 2])")
        } else {
            return nil
        }
    }
}
