import FeedSigning
import Foundation
import Time

/// One encoding of one feed, ready to send: bytes and their strong entity tag.
public struct FeedRepresentation: Sendable {
    /// The bytes sent as the body.
    public let bytes: [UInt8]
    /// The strong entity tag of these bytes, quoted.
    public let entityTag: String
}

/// A feed as served: identity and gzip encodings with validators formatted once, at load.
///
/// A class, immutable: a request takes one reference to it instead of copying (and counting
/// references to) every byte array and string it holds.
public final class ServedFeed: Sendable {
    /// The feed's bytes as published.
    public let identity: FeedRepresentation
    /// The feed's gzip copy, sent with `Content-Encoding: gzip`.
    public let gzip: FeedRepresentation
    /// When these bytes were first published at their URL: what Last-Modified and If-Modified-Since compare.
    public let lastModified: Timestamp
    /// `lastModified` as IMF-fixdate.
    public let lastModifiedHeader: String
    /// The detached JWS over the identity bytes, when the revision was signed: sent as the
    /// `Catalog-Signature` header (it covers the gzip copy too, which decodes to those bytes).
    public let signature: String?

    init(
        identity: FeedRepresentation, gzip: FeedRepresentation, lastModified: Timestamp, lastModifiedHeader: String,
        signature: String?
    ) {
        self.identity = identity
        self.gzip = gzip
        self.lastModified = lastModified
        self.lastModifiedHeader = lastModifiedHeader
        self.signature = signature
    }
}

/// The two feeds of one variant.
public struct ServedVariant: Sendable {
    /// The product-identifier feed, `products.json`.
    public let products: ServedFeed
    /// The rich feed, `catalog.json`.
    public let catalog: ServedFeed
}

/// Which feed a request asks for.
public enum FeedKind: String, Sendable, CaseIterable {
    /// The array of product identifiers apps fetch.
    case products = "products.json"
    /// The rich feed: products with their details, and the known ones.
    case catalog = "catalog.json"
}

/// Everything `public/` publishes, in memory, checked against its manifests: what a server answers
/// feed requests from without touching the disk. Loaded whole and replaced whole, so a request
/// always sees one revision's body and validators together.
public struct FeedIndex: Sendable {
    /// One app's current revision.
    ///
    /// A class, immutable, for the same reason as ``ServedFeed``: looking an app up per request
    /// takes one reference instead of copying the manifest and counting references to each of
    /// its strings and arrays.
    public final class App: Sendable {
        /// The current revision's manifest, as loaded.
        public let manifest: RevisionManifest
        /// Picks a request's variant from its platform and app version.
        public let selector: VariantSelector
        /// The variants as published, then as scheduled from each moment ahead.
        public let states: [(from: Timestamp?, variants: [Variant: ServedVariant])]
        /// Every identifier the app ever published: the only ones a report is stored for.
        public let history: IdentifierHistory
        /// `variants.json`: the platforms and bands the app distinguishes, the bytes `catalog build`
        /// writes beside the static copies, with their entity tag.
        public let variantIndex: FeedRepresentation

        init(
            manifest: RevisionManifest, selector: VariantSelector, states: [(from: Timestamp?, variants: [Variant: ServedVariant])],
            history: IdentifierHistory
        ) {
            self.manifest = manifest
            self.selector = selector
            self.states = states
            self.history = history
            let index = FeedVariants(platforms: manifest.platforms.map(\.rawValue), bands: manifest.bands).encoded()
            variantIndex = FeedRepresentation(bytes: index, entityTag: ContentHash.entityTag(sha256: ContentHash.sha256Hex(index)))
        }

        /// The variants in effect at `moment`: the last state that has begun.
        public func variants(at moment: Timestamp) -> [Variant: ServedVariant] {
            states.last { ($0.from ?? moment) <= moment }?.variants ?? states[0].variants
        }
    }

    /// Each published app's current revision, by bundle identifier.
    public let apps: [String: App]

    /// An index of these apps.
    public init(apps: [String: App]) {
        self.apps = apps
    }

    /// A revision's default-variant feed, read and checked against its manifest on demand:
    /// snapshots are rarely asked for, so they are not kept in memory.
    public static func snapshot(_ app: String, revision: Int, kind: FeedKind, in tree: PublicTree) -> ServedFeed? {
        guard let manifest = try? tree.manifest(app, revision: revision), let record = manifest.record(for: .all) else {
            return nil
        }
        var refused: [String] = []
        return try? feed(
            app, revision, "", kind, kind == .products ? record.products : record.catalog, tree,
            signature: headerSafe(
                RevisionSignatures.read(tree, app: app, revision: revision, state: 0, directory: "", kind: kind), app: app,
                revision: revision, kind: kind, refused: &refused))
    }

    /// `signature` when it can go into a response header as it is; nil (with the reason in
    /// `refused`) when it cannot.
    ///
    /// A `.jws` file is read from the tree, which a replica fills from store rows, and its text is
    /// written as the `Catalog-Signature` header value, on the lean path byte for byte. A compact
    /// JWS is base64url and dots only, so anything else (CR, LF and NUL above all, which would end
    /// the header and start another, such as `Set-Cookie`) means the file is not a signature:
    /// the feed is served without it, and an enforcing client keeps its last verified list.
    static func headerSafe(_ signature: String?, app: String, revision: Int, kind: FeedKind, refused: inout [String]) -> String? {
        guard let signature else { return nil }
        guard isHeaderSafeSignature(signature) else {
            refused.append(
                "\(app): the signature of revision \(revision)'s \(kind.rawValue) is not a compact JWS (it holds characters a header "
                    + "cannot carry, such as CR, LF or NUL); the feed is served without it")
            return nil
        }
        return signature
    }

    /// Whether `signature` is made of a compact JWS's characters only (base64url and dots) and
    /// not empty: what a header value can carry as it is.
    public static func isHeaderSafeSignature(_ signature: String) -> Bool {
        !signature.isEmpty
            && signature.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                    UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                    true
                default: false
                }
            }
    }

    /// Why a feed request has no feed.
    public enum LookupError: Error, Equatable, CustomStringConvertible {
        /// No app with this bundle identifier is published.
        case unknownApp(String)
        /// The `platform` parameter names no platform.
        case unknownPlatform(String)
        /// The `appVersion` parameter is not a version.
        case malformedAppVersion(String)
        /// A variant path (`variants/<platform>/<band>/`) that the app's current feeds do not
        /// have, as on a static host: 404.
        case unknownVariant(app: String, variant: String)

        public var description: String {
            switch self {
            case .unknownApp(let app): "no published app '\(app)'"
            case .unknownPlatform(let platform): "unknown platform '\(platform)'; expected ios, macos, tvos, watchos, visionos or android"
            case .malformedAppVersion(let version): "appVersion '\(version)' is not a version such as 2.3.1"
            case .unknownVariant(let app, let variant):
                "app '\(app)' publishes no variant '\(variant)'; its variants are listed at /v1/apps/\(app)/\(FeedVariants.indexName)"
            }
        }
    }

    /// Loads every published app; an app whose files do not match its manifest is left out and
    /// reported, so one damaged app does not take the others down. A signature that cannot be
    /// sent as a header (``isHeaderSafeSignature(_:)``) is reported too, and its feed served without it.
    public static func load(_ tree: PublicTree) -> (index: FeedIndex, problems: [String]) {
        var apps: [String: App] = [:]
        var problems: [String] = []
        for app in tree.publishedApps() {
            do {
                apps[app] = try loadApp(app, from: tree, refused: &problems)
            } catch {
                problems.append("\(app): \(error)")
            }
        }
        return (FeedIndex(apps: apps), problems)
    }

    static func loadApp(_ app: String, from tree: PublicTree, refused: inout [String]) throws -> App {
        guard let manifest = try tree.currentManifest(app) else {
            throw CatalogError.corruptPublication(path: tree.currentManifestURL(app).path, message: "missing")
        }
        var cache: [String: ServedVariant] = [:]  // variants that share files share their bytes
        func load(_ records: [VariantRecord], state: Int) throws -> [Variant: ServedVariant] {
            // Each state has signatures of its own, even for bytes another state serves too.
            var signatures: [String: (products: String?, catalog: String?)] = [:]
            func signed(_ directory: String) -> (products: String?, catalog: String?) {
                if let known = signatures[directory] { return known }
                func read(_ kind: FeedKind) -> String? {
                    headerSafe(
                        RevisionSignatures.read(
                            tree, app: app, revision: manifest.revision, state: state, directory: directory, kind: kind),
                        app: app, revision: manifest.revision, kind: kind, refused: &refused)
                }
                let found = (read(.products), read(.catalog))
                signatures[directory] = found
                return found
            }
            var variants: [Variant: ServedVariant] = [:]
            for record in records {
                guard let variant = Variant(platformKey: record.platform, bandKey: record.band) else {
                    throw CatalogError.corruptPublication(
                        path: tree.currentManifestURL(app).path, message: "bad variant \(record.platform)/\(record.band)")
                }
                if let shared = cache[record.directory],
                    shared.products.identity.entityTag == record.products.entityTag,
                    shared.catalog.identity.entityTag == record.catalog.entityTag
                {
                    let signature = signed(record.directory)
                    variants[variant] = ServedVariant(
                        products: shared.products.with(lastModified: record.products.lastModified, signature: signature.products),
                        catalog: shared.catalog.with(lastModified: record.catalog.lastModified, signature: signature.catalog))
                    continue
                }
                let signature = signed(record.directory)
                let served = ServedVariant(
                    products: try feed(
                        app, manifest.revision, record.directory, .products, record.products, tree, signature: signature.products),
                    catalog: try feed(
                        app, manifest.revision, record.directory, .catalog, record.catalog, tree, signature: signature.catalog))
                cache[record.directory] = served
                variants[variant] = served
            }
            return variants
        }
        var states: [(from: Timestamp?, variants: [Variant: ServedVariant])] = [(nil, try load(manifest.variants, state: 0))]
        for (index, scheduled) in (manifest.schedule ?? []).enumerated() {
            states.append((scheduled.from, try load(scheduled.variants, state: index + 1)))
        }
        return App(
            manifest: manifest, selector: manifest.selector, states: states, history: try tree.history(app, revision: manifest.revision))
    }

    private static func feed(
        _ app: String, _ revision: Int, _ directory: String, _ kind: FeedKind, _ record: FeedRecord, _ tree: PublicTree,
        signature: String?
    ) throws -> ServedFeed {
        let identity = try tree.feedBytes(app, revision: revision, directory: directory, name: kind.rawValue)
        let gzip = try tree.feedBytes(app, revision: revision, directory: directory, name: kind.rawValue + ".gz")
        // Served validators must describe the served bytes: check them once, at load.
        guard ContentHash.sha256Hex(identity) == record.sha256, ContentHash.sha256Hex(gzip) == record.gzip.sha256 else {
            throw CatalogError.corruptPublication(
                path: tree.revisionDirectory(app, revision).appendingPathComponent(directory + kind.rawValue).path,
                message: "content does not match the manifest")
        }
        return ServedFeed(
            identity: FeedRepresentation(bytes: identity, entityTag: record.entityTag),
            gzip: FeedRepresentation(bytes: gzip, entityTag: record.gzip.entityTag),
            lastModified: record.lastModified, lastModifiedHeader: record.lastModified.imfFixdate, signature: signature)
    }

    /// The feed for a request's app and query parameters (`platform`, `appVersion`; both optional),
    /// as in effect at `moment`: scheduled changes switch on time without a rebuild.
    public func feed(app: String, kind: FeedKind, platform: String?, appVersion: String?, at moment: Timestamp) -> Result<
        ServedFeed, LookupError
    > {
        guard let published = apps[app] else { return .failure(.unknownApp(app)) }
        var chosenPlatform: Platform?
        if let platform {
            guard let known = Platform(name: platform) else { return .failure(.unknownPlatform(platform)) }
            chosenPlatform = known
        }
        var version: AppVersion?
        if let appVersion {
            guard let parsed = AppVersion(appVersion) else { return .failure(.malformedAppVersion(appVersion)) }
            version = parsed
        }
        let variant = published.selector.variant(platform: chosenPlatform, appVersion: version)
        let variants = published.variants(at: moment)
        guard let served = variants[variant] ?? variants[.all] else { return .failure(.unknownApp(app)) }
        return .success(kind == .products ? served.products : served.catalog)
    }
}

extension FeedIndex {
    /// The feed at a variant path, `v1/apps/<app>/variants/<platform>/<band>/<feed>`, as in effect
    /// at `moment`: the very feed (bytes, validators, signature) the query form answers for a
    /// request that selects this variant, and a 404 for a variant the app does not have, as a static
    /// host answers. The default variant's path is the app's own (`v1/apps/<app>/<feed>`).
    public func feed(app: String, kind: FeedKind, platformKey: String, bandKey: String, at moment: Timestamp) -> Result<
        ServedFeed, LookupError
    > {
        guard let published = apps[app] else { return .failure(.unknownApp(app)) }
        guard let variant = Variant(platformKey: platformKey, bandKey: bandKey), variant != .all,
            variant.platformKey == platformKey, variant.bandKey == bandKey,
            let served = published.variants(at: moment)[variant]
        else { return .failure(.unknownVariant(app: app, variant: "\(platformKey)/\(bandKey)")) }
        return .success(kind == .products ? served.products : served.catalog)
    }
}

extension ServedFeed {
    fileprivate func with(lastModified: Timestamp, signature: String?) -> ServedFeed {
        ServedFeed(
            identity: identity, gzip: gzip, lastModified: lastModified, lastModifiedHeader: lastModified.imfFixdate,
            signature: signature)
    }
}

extension Variant {
    /// The variant a manifest record names (`any` or a platform; `any` or a band's lower bound).
    init?(platformKey: String, bandKey: String) {
        var platform: Platform?
        if platformKey != "any" {
            guard let known = Platform(rawValue: platformKey) else { return nil }
            platform = known
        }
        var band: AppVersion?
        if bandKey != "any" {
            guard let version = AppVersion(bandKey) else { return nil }
            band = version
        }
        self.init(platform: platform, band: band)
    }
}
