@_exported import FeedSigning
import Foundation

extension CatalogClient {
    /// How the client treats the signatures `catalog build --signing-key` puts on every feed.
    ///
    /// With ``Mode-swift.enum/enforce``, a feed is used only if it is signed by a signing key the
    /// pinned root certified and nobody revoked, for this app, feed kind and variant, not expired
    /// beyond ``grace``, and not older than a feed already accepted from the same URL; otherwise the
    /// client keeps its last verified list (stale) and says why. Verification happens before the
    /// feed is parsed or cached.
    public struct SignaturePolicy: Sendable {
        /// What the client does with signatures.
        public enum Mode: String, Sendable, CaseIterable {
            /// Signatures are not looked at.
            case off
            /// Signatures are checked and problems logged (``ProductList/signatureIssue``), but an
            /// unverified feed is still used: for rolling signing out.
            case report
            /// Only verified feeds are used.
            case enforce
        }

        /// Whether signatures are ignored, checked and reported, or required.
        public var mode: Mode
        /// The root public keys the app pins (the `root.pub.jwk` that `catalog keys create` wrote).
        public var rootKeys: [Ed25519PublicKey]
        /// How long past its expiry a signature is still accepted.
        public var grace: TimeInterval
        /// How far ahead of ``clock`` a feed's `from` may lie before it is refused as not yet
        /// valid (`FeedSignatureVerifier.defaultClockSkew`, five minutes, by default).
        public var clockSkew: TimeInterval = FeedSignatureVerifier.defaultClockSkew
        /// Signing keys known to be revoked, besides those the root's revocation statements name.
        public var revokedKeys: Set<String>
        /// The time expiry is checked against: the system clock, unless a test moves it.
        public var clock: @Sendable () -> Date = { Date() }

        /// A policy in `mode` with the app's pinned root keys; see the properties for the rest.
        public init(mode: Mode, rootKeys: [Ed25519PublicKey] = [], grace: TimeInterval = 24 * 3600, revokedKeys: Set<String> = []) {
            self.mode = mode
            self.rootKeys = rootKeys
            self.grace = grace
            self.revokedKeys = revokedKeys
        }

        /// Signatures are not looked at.
        public static let off = SignaturePolicy(mode: .off)
    }

    /// A signed feed the app ships (`products.json` and its `products.json.jws` from `public/`), used
    /// when there is neither a server answer nor a cache, after the same checks as a download (but
    /// expiry and revision: it is a floor, not news).
    public struct BundledFeed: Sendable, Hashable {
        /// The feed's bytes, as published.
        public var body: Data
        /// Its detached JWS (the `.jws` beside it), if it was signed.
        public var signature: String?

        /// A bundled feed from its bytes and its signature.
        public init(body: Data, signature: String?) {
            self.body = body
            self.signature = signature
        }

        /// Reads a feed file and the `.jws` beside it, if there is one.
        public static func load(at url: URL) throws -> BundledFeed {
            let body = try Data(contentsOf: url)
            let signature = (try? Data(contentsOf: url.appendingPathExtension("jws"))).map {
                String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            }
            return BundledFeed(body: body, signature: signature)
        }
    }
}

/// The platform and app version a feed must serve: what its signature's binding is checked against.
struct RequestedVariant: Sendable, Hashable {
    var platform: String?
    var appVersion: String?

    init(platform: String?, appVersion: String?) {
        self.platform = platform
        self.appVersion = appVersion
    }

    /// Those a URL names: its `platform` and `appVersion` query, or its variant path
    /// (`variants/ios/2.0/`: the band's lower bound selects that band; `any` names none).
    init(url: URL) {
        let query = URLComponents(url: url, resolvingAgainstBaseURL: true)?.queryItems ?? []
        platform = query.first { $0.name == "platform" }?.value
        appVersion = query.first { $0.name == "appVersion" }?.value
        if let named = FeedLocation(path: url.path)?.variant {
            let parts = named.split(separator: "/").map(String.init)
            platform = parts.first.flatMap { $0 == "any" ? nil : $0 }
            appVersion = parts.last.flatMap { $0 == "any" ? nil : $0 }
        }
    }
}

/// What the client has trusted so far, kept in the data directory (the cache may be purged; this
/// must not be, or a replay of an old feed would be accepted again).
struct TrustState: Codable, Sendable, Hashable {
    /// The highest version accepted per feed of the app (`products.json`, `catalog.json`): revisions
    /// count up per app, so a lower one from any host, mirror or variant is a replay.
    var highest: [String: FeedVersion] = [:]
    /// The newest revocation statement the root signed that the client has seen.
    var revocations: KeyRevocations?
}

/// The checks of ``CatalogClient/SignaturePolicy`` and the state they keep.
struct FeedTrust: Sendable {
    let policy: CatalogClient.SignaturePolicy
    let app: String
    let file: URL
    private(set) var state: TrustState

    init(configuration: CatalogClient.Configuration) {
        policy = configuration.signatures
        app = configuration.app
        file = configuration.dataDirectory.appendingPathComponent("signatures.json")
        state = (try? Data(contentsOf: file)).flatMap { try? JSONDecoder().decode(TrustState.self, from: $0) } ?? TrustState()
    }

    var isEnabled: Bool { policy.mode != .off }

    /// Verifies `signature` over `body` as the feed at `url`: key chain, revocation, bytes, expiry,
    /// binding, then that it is not older than what was accepted from `url` before.
    ///
    /// - Parameters:
    ///   - bundled: a feed the app ships: expiry, variant and revision are not checked.
    ///   - ignoringExpiry: for the cached copy of a feed, the last verified list even once expired.
    ///   - variant: the platform and app version the feed must serve; nil: those the URL names.
    func check(
        _ signature: String?, body: Data, url: URL, variant: RequestedVariant? = nil, now: Date, bundled: Bool = false,
        ignoringExpiry: Bool = false
    ) throws(SignatureError) -> VerifiedFeedSignature {
        guard let signature else { throw SignatureError(.missing, "\(url.absoluteString) came without a signature") }
        // A bundled feed and the cached copy were judged on time already (or are a floor): their
        // age is not news, and a clock set back must not drop the last verified list.
        let timeless = bundled || ignoringExpiry
        let verifier = FeedSignatureVerifier(
            roots: policy.rootKeys, grace: timeless ? .greatestFiniteMagnitude : policy.grace,
            clockSkew: timeless ? .greatestFiniteMagnitude : policy.clockSkew)
        let revoked = policy.revokedKeys.union(state.revocations?.revoked ?? [])
        let verified = try verifier.verify(signature, over: body, now: now, revoked: revoked)
        let claims = verified.claims
        let kind = FeedKind(url: url).rawValue
        let requested = variant ?? RequestedVariant(url: url)
        if bundled
            ? (claims.app != app || claims.feed != kind)
            : !claims.covers(app: app, feed: kind, platform: requested.platform, appVersion: requested.appVersion)
        {
            throw SignatureError(
                .wrongBinding,
                "signed for \(claims.app) \(claims.feed) (\(claims.variants.joined(separator: ", "))), not for \(app) \(kind) at \(url.absoluteString)"
            )
        }
        if !bundled, let highest = state.highest[kind], claims.version < highest {
            throw SignatureError(.rollback, "\(claims.version) is older than \(highest), already accepted for \(app) \(kind)")
        }
        return verified
    }

    /// Whether `verified` is the version already accepted: an equal version is a no-op.
    func isCurrent(_ verified: VerifiedFeedSignature) -> Bool {
        state.highest[verified.claims.feed] == verified.claims.version
    }

    /// Records what a feed that passed every check and was stored taught: its version, and the
    /// root's revocation statement it carried when newer than the one kept.
    mutating func commit(_ verified: VerifiedFeedSignature) throws(CatalogClientError) {
        var next = state
        let key = verified.claims.feed
        next.highest[key] = max(next.highest[key] ?? verified.claims.version, verified.claims.version)
        if let statement = verified.revocations, statement.version > (next.revocations?.version ?? 0) {
            next.revocations = statement
        }
        guard next != state else { return }
        try DurableFile.makeDirectory(file.deletingLastPathComponent())
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(next) else { return }
        try DurableFile.write(data, to: file)
        state = next
    }
}
