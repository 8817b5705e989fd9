import Foundation

/// An item a customer may download, as the content endpoint will answer it: its version, and each
/// file with its size, digest and signed URL (docs/content.md, "What a customer is answered").
public struct ContentDownload: Sendable, Hashable, Codable {
    /// The item's id.
    public var item: String
    /// The item's version in the manifest: a client holding an older one knows a newer exists.
    public var version: Int
    /// The item's files, by path.
    public var files: [File]

    /// One file and where to fetch it.
    public struct File: Sendable, Hashable, Codable {
        /// Its path inside the item.
        public var path: String
        /// Its size in bytes.
        public var size: Int64
        /// The SHA-256 of its bytes, which the client checks before using them.
        public var sha256: ContentDigest
        /// The signed URL's path and query, to be joined to the server's origin.
        public var url: String
        /// When the URL expires, in seconds since 1970.
        public var expires: Int64
    }

    /// How finely URL expiries are rounded by default: five minutes.
    public static let defaultExpiryGranularity: TimeInterval = 300

    /// The downloads of the items `grants` names that `manifest` holds, by item id, each file with a
    /// URL signed by `keyRing`'s current key.
    ///
    /// A URL lives `lifetime` (at most the ring's maximum lifetime) from `now`, its expiry rounded
    /// up to a multiple of `granularity`: every URL for one file issued in the same window is the
    /// same URL, so a cache in front keyed on the whole URL serves the second download of it. The
    /// rounding never takes an expiry past the ring's maximum lifetime.
    public static func list(
        grants: [ContentGrant], manifest: ContentManifest, keyRing: ContentKeyRing, now: Date, lifetime: TimeInterval,
        granularity: TimeInterval = defaultExpiryGranularity
    ) -> [ContentDownload] {
        let granted = Set(grants.map(\.itemId))
        let nowSeconds = now.timeIntervalSince1970
        var expiry = nowSeconds + min(max(lifetime, 0), keyRing.maximumLifetime)
        if granularity > 0 {
            let rounded = (expiry / granularity).rounded(.up) * granularity
            if rounded - nowSeconds <= keyRing.maximumLifetime { expiry = rounded }
        }
        let expires = Date(timeIntervalSince1970: expiry)
        return manifest.items.filter { granted.contains($0.id) }.map { item in
            ContentDownload(
                item: item.id, version: item.version,
                files: item.files.map { file in
                    let token = keyRing.sign(digest: file.sha256, expires: expires)
                    return File(path: file.path, size: file.size, sha256: file.sha256, url: token.pathAndQuery, expires: token.expires)
                })
        }
    }
}
