import Foundation

#if canImport(CryptoKit)
    import CryptoKit
#else
    import Crypto
#endif

/// What a feed's signature binds its bytes to: which app, feed and variants, which revision, and
/// from when until when it may be trusted.
///
/// The claims sit in the JWS protected header (the detached payload is the feed's SHA-256
/// digest), so that any JOSE library verifies the bytes given that digest, and ours checks the
/// binding too.
public struct FeedClaims: Codable, Sendable, Hashable {
    /// The app's bundle identifier.
    public var app: String
    /// `products.json` or `catalog.json`.
    public var feed: String
    /// The variants that serve these bytes, as `platform/band` (`any/any` is the default).
    public var variants: [String]
    /// The platforms and band lower bounds the app distinguishes, so that a client can tell which
    /// variant answers its own platform and version.
    public var platforms: [String]
    /// The version bands' lower bounds, ascending.
    public var bands: [String]
    /// The revision that published these bytes.
    public var rev: Int
    /// When these bytes take effect: the revision's time, or a scheduled change's moment. With
    /// `rev`, what orders two feeds: a client never goes back to a lower pair.
    public var from: Int64
    /// When the signature was made and when it stops being trusted: a feed frozen by an attacker
    /// becomes untrusted once it expires.
    public var iat: Int64
    /// When the signature stops being trusted, in seconds since 1970.
    public var exp: Int64

    /// Claims for a feed; `iat` and `exp` are set by ``FeedSigner/sign(_:claims:now:)``.
    public init(
        app: String, feed: String, variants: [String], platforms: [String], bands: [String], rev: Int, from: Int64, iat: Int64 = 0,
        exp: Int64 = 0
    ) {
        self.app = app
        self.feed = feed
        self.variants = variants
        self.platforms = platforms
        self.bands = bands
        self.rev = rev
        self.from = from
        self.iat = iat
        self.exp = exp
    }

    /// What orders this feed against another of the same app and kind.
    public var version: FeedVersion { FeedVersion(revision: rev, from: from) }
    /// ``exp`` as a date.
    public var expiresAt: Date { Date(timeIntervalSince1970: TimeInterval(exp)) }
    /// ``iat`` as a date.
    public var issuedAt: Date { Date(timeIntervalSince1970: TimeInterval(iat)) }

    /// Whether these bytes are what `app` serves for `feed` to a client on `platform` at
    /// `appVersion`, the way `catalog serve` picks the variant for that request.
    public func covers(app: String, feed: String, platform: String?, appVersion: String?) -> Bool {
        guard self.app == app, self.feed == feed else { return false }
        return variants.contains(variantKey(platform: platform, appVersion: appVersion))
    }

    /// The variant a request gets: a platform the app does not distinguish gets the unnarrowed
    /// feed; a version gets the highest band at or below it.
    func variantKey(platform: String?, appVersion: String?) -> String {
        FeedVariants(platforms: platforms, bands: bands).key(platform: platform, appVersion: appVersion)
    }
}

/// What orders two feeds of one app and kind: the revision, then the moment a scheduled change took effect.
public struct FeedVersion: Codable, Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The revision that published the bytes.
    public var revision: Int
    /// When they take effect, in seconds since 1970.
    public var from: Int64

    /// A version from its revision and moment.
    public init(revision: Int, from: Int64) {
        self.revision = revision
        self.from = from
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { (lhs.revision, lhs.from) < (rhs.revision, rhs.from) }
    public var description: String { "revision \(revision) (from \(from))" }
}

/// One to four dot-separated numbers, missing parts zero: the versions `catalog serve` reads.
struct VersionNumber: Comparable {
    let parts: [Int]

    init?(_ text: String) {
        let pieces = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...4).contains(pieces.count) else { return nil }
        var parts: [Int] = []
        for piece in pieces {
            guard !piece.isEmpty, piece.count <= 9, piece.utf8.allSatisfy({ (48...57).contains($0) }), let number = Int(piece) else {
                return nil
            }
            parts.append(number)
        }
        self.parts = parts
    }

    static func < (lhs: Self, rhs: Self) -> Bool {
        for index in 0..<max(lhs.parts.count, rhs.parts.count) {
            let left = index < lhs.parts.count ? lhs.parts[index] : 0
            let right = index < rhs.parts.count ? rhs.parts[index] : 0
            if left != right { return left < right }
        }
        return false
    }

    static func == (lhs: Self, rhs: Self) -> Bool { !(lhs < rhs) && !(rhs < lhs) }
}

/// The protected header of a feed signature: a detached JWS (RFC 7515 appendix F) signed with
/// EdDSA (RFC 8037), whose payload is the SHA-256 digest of the feed's exact bytes (`digest`).
///
/// The digest, not the bytes: pure Ed25519 hashes its message twice with SHA-512, which for a big
/// catalog's feeds (about 96 MB for 100,000 products) added a quarter to the build, while the
/// publisher already has each feed's SHA-256 (its ETag). A client hashes the bytes it received
/// and verifies the signature over that digest, so every byte is still covered.
struct FeedSignatureHeader: Codable {
    var alg = "EdDSA"
    var typ = FeedSignatureHeader.type
    /// What the detached payload is: always ``digestAlgorithm``.
    var digest = FeedSignatureHeader.digestAlgorithm
    var kid: String
    /// The root's certificate of the signing key.
    var cert: String
    /// The root's newest revocation statement, when the publisher has one.
    var revocations: String?
    var claims: FeedClaims

    static let type = "catalog-feed+jws"
    static let digestAlgorithm = "SHA-256"

    enum CodingKeys: String, CodingKey { case alg, typ, digest, kid, cert, revocations }

    init(kid: String, cert: String, revocations: String?, claims: FeedClaims) {
        self.kid = kid
        self.cert = cert
        self.revocations = revocations
        self.claims = claims
    }

    // The claims are header members of their own, beside the JOSE ones.
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        alg = try container.decode(String.self, forKey: .alg)
        typ = try container.decode(String.self, forKey: .typ)
        digest = try container.decode(String.self, forKey: .digest)
        kid = try container.decode(String.self, forKey: .kid)
        cert = try container.decode(String.self, forKey: .cert)
        revocations = try container.decodeIfPresent(String.self, forKey: .revocations)
        claims = try FeedClaims(from: decoder)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(alg, forKey: .alg)
        try container.encode(typ, forKey: .typ)
        try container.encode(digest, forKey: .digest)
        try container.encode(kid, forKey: .kid)
        try container.encode(cert, forKey: .cert)
        try container.encodeIfPresent(revocations, forKey: .revocations)
        try claims.encode(to: encoder)
    }
}

/// Signs feeds with a signing key the root certified.
public struct FeedSigner: Sendable {
    /// The signing key, with the root's certificate of it.
    public let key: Ed25519PrivateKey
    /// What that certificate says: the key and until when it may sign.
    public let certificate: KeyCertificate
    /// How long a signature is trusted; never past the key's certificate.
    public var lifetime: TimeInterval

    /// Seven days: long enough for a weekly refresh to be late, short enough to notice a frozen feed.
    public static let defaultLifetime: TimeInterval = 7 * 24 * 3600
    /// The response header `catalog serve` sends a feed's signature in.
    public static let httpHeader = "Catalog-Signature"

    /// A signer for a signing key's file: the key must carry the root's certificate of itself, and
    /// `lifetime` must not pass ``FeedSignatureVerifier/maximumLifetime``, which clients refuse.
    public init(key: Ed25519PrivateKey, lifetime: TimeInterval = FeedSigner.defaultLifetime) throws(SignatureError) {
        guard lifetime > 0, lifetime <= FeedSignatureVerifier.maximumLifetime else {
            throw SignatureError(
                .lifetimeTooLong,
                "a signature lifetime of \(Int(lifetime)) s is not within 1 s to \(Int(FeedSignatureVerifier.maximumLifetime / 86_400)) days, "
                    + "the longest clients trust one signature")
        }
        guard let compact = key.certificate else {
            throw SignatureError(
                .untrustedKey, "signing key '\(key.kid)' has no certificate: make it with `catalog keys create` or `catalog keys rotate`")
        }
        let certificate = try KeyCertificate.read(compact)
        guard certificate.kid == key.kid, certificate.x == Base64URL.encode(key.publicKey.raw) else {
            throw SignatureError(.untrustedKey, "the certificate in the file of signing key '\(key.kid)' is for another key")
        }
        self.key = key
        self.certificate = certificate
        self.lifetime = lifetime
    }

    /// A detached JWS over `bytes`: `header..signature`, published as `<feed>.jws` and sent as
    /// the `Catalog-Signature` header.
    public func sign(_ bytes: some ContiguousBytes, claims: FeedClaims, now: Date) throws(SignatureError) -> String {
        try sign(sha256: Self.sha256(of: bytes), claims: claims, now: now)
    }

    /// The same signature, from the SHA-256 digest of the feed's bytes (32 bytes): for a publisher
    /// that has hashed them already.
    public func sign(sha256 digest: Data, claims: FeedClaims, now: Date) throws(SignatureError) -> String {
        guard digest.count == 32 else { throw SignatureError(.malformed, "a SHA-256 digest is 32 bytes, not \(digest.count)") }
        let issued = Int64(now.timeIntervalSince1970)
        guard issued < certificate.exp else {
            throw SignatureError(
                .untrustedKey, "the certificate of signing key '\(key.kid)' expired at \(certificate.expiresAt): rotate it")
        }
        var claims = claims
        claims.iat = issued
        claims.exp = min(issued + Int64(lifetime), certificate.exp)
        let header = Base64URL.encode(
            JSON.encode(FeedSignatureHeader(kid: key.kid, cert: key.certificate ?? "", revocations: key.revocations, claims: claims)))
        let signature = key.signature(for: Self.signingInput(header, sha256: digest))
        return "\(header)..\(Base64URL.encode(signature))"
    }
}

extension FeedSigner {
    /// The SHA-256 digest of a feed's bytes: the signature's detached payload.
    static func sha256(of bytes: some ContiguousBytes) -> Data {
        bytes.withUnsafeBytes { Data(SHA256.hash(data: $0)) }
    }

    /// What EdDSA signs (RFC 7515 §5.1): the encoded header, a dot, the encoded payload.
    static func signingInput(_ encodedHeader: some StringProtocol, sha256 digest: Data) -> Data {
        Data("\(encodedHeader).\(Base64URL.encode(digest))".utf8)
    }
}

/// A feed signature that verified: what it binds the bytes to, and the revocation statement it
/// carried, if any (for the client to keep).
public struct VerifiedFeedSignature: Sendable, Hashable {
    /// What the signature binds the bytes to.
    public var claims: FeedClaims
    /// The signing key that made it.
    public var kid: String
    /// The root's revocation statement the signature carried, verified, if any.
    public var revocations: KeyRevocations?
}

/// Checks feed signatures against pinned root keys.
///
/// In the order a careful client uses: the shape and size first, then the key's certificate and
/// revocation (cheap), then the signature over the bytes, then expiry. Binding and version are the
/// caller's, who knows what was asked for and what was accepted before.
public struct FeedSignatureVerifier: Sendable {
    /// The root public keys the app pins.
    public var roots: [Ed25519PublicKey]
    /// How long past its expiry a signature is still accepted: clocks drift, and a server may be
    /// late refreshing.
    public var grace: TimeInterval

    /// How far ahead of the verifier's clock a feed's `from` may lie: clocks drift, and a server
    /// switches to a scheduled change by its own clock.
    public var clockSkew: TimeInterval

    /// Signatures longer than this are refused before anything is decoded.
    public static let maximumLength = 32 * 1024
    /// The longest one signature may be trusted, `exp - iat`: 31 days. Signatures are re-issued
    /// (7 days by default), so that a feed frozen by a mirror is noticed; a longer one, even
    /// within its key's certificate, would hide a frozen feed for that long, and only a leaked
    /// signing key makes one.
    public static let maximumLifetime: TimeInterval = 31 * 86_400
    /// Five minutes: the default ``clockSkew``.
    public static let defaultClockSkew: TimeInterval = 300

    /// A verifier for `roots`, with a grace of a day and a clock skew of five minutes by default.
    public init(roots: [Ed25519PublicKey], grace: TimeInterval = 24 * 3600, clockSkew: TimeInterval = defaultClockSkew) {
        self.roots = roots
        self.grace = grace
        self.clockSkew = clockSkew
    }

    /// What a signature says it binds, without checking anything: for a publisher deciding
    /// whether to re-issue it, and for display.
    public static func unverifiedClaims(_ signature: String) throws(SignatureError) -> FeedClaims {
        try parse(signature).header.claims
    }

    private static func parse(_ signature: String) throws(SignatureError) -> (
        header: FeedSignatureHeader, encodedHeader: Substring, signature: Data
    ) {
        let parts = signature.split(separator: ".", omittingEmptySubsequences: false)
        guard signature.utf8.count <= maximumLength, parts.count == 3, parts[1].isEmpty,
            let headerBytes = Base64URL.decode(parts[0]), let signatureBytes = Base64URL.decode(parts[2])
        else { throw SignatureError(.malformed, "not a detached compact JWS (header..signature)") }
        let header = try JSON.decode(FeedSignatureHeader.self, from: headerBytes, what: "the signature header")
        guard header.alg == "EdDSA", header.typ == FeedSignatureHeader.type, header.digest == FeedSignatureHeader.digestAlgorithm else {
            throw SignatureError(
                .malformed, "expected a \(FeedSignatureHeader.type) with alg EdDSA and digest \(FeedSignatureHeader.digestAlgorithm)")
        }
        return (header, parts[0], signatureBytes)
    }

    /// - Parameter revoked: signing keys already known to be revoked (the client's kept list).
    public func verify(
        _ signature: String, over bytes: some ContiguousBytes, now: Date, revoked: Set<String> = []
    ) throws(SignatureError) -> VerifiedFeedSignature {
        let (header, encodedHeader, signatureBytes) = try Self.parse(signature)
        let (certificate, key) = try KeyCertificate.verify(header.cert, roots: roots)
        guard certificate.kid == header.kid else {
            throw SignatureError(
                .untrustedKey, "the signature names key '\(header.kid)' but carries the certificate of '\(certificate.kid)'")
        }
        let claims = header.claims
        guard claims.iat >= certificate.iat, claims.exp <= certificate.exp else {
            throw SignatureError(.untrustedKey, "signed outside the validity of signing key '\(key.kid)'s certificate")
        }
        // Overflow-checked: the dates are the signer's, and this runs before the signature is.
        let (lifetime, overflow) = claims.exp.subtractingReportingOverflow(claims.iat)
        guard !overflow, lifetime >= 0, TimeInterval(lifetime) <= Self.maximumLifetime else {
            throw SignatureError(
                .lifetimeTooLong,
                "the signature claims a lifetime (exp - iat) of \(overflow ? "more than any" : "\(lifetime) s"), "
                    + "not within the \(Int(Self.maximumLifetime / 86_400)) days a signature may be trusted")
        }
        let statement = try header.revocations.map { (compact: String) throws(SignatureError) in
            try KeyRevocations.verify(compact, roots: roots)
        }
        if revoked.contains(key.kid) || statement?.revoked.contains(key.kid) == true {
            throw SignatureError(.revokedKey, "signing key '\(key.kid)' was revoked by the root")
        }

        let signingInput = FeedSigner.signingInput(encodedHeader, sha256: FeedSigner.sha256(of: bytes))
        guard key.isValidSignature(signatureBytes, for: signingInput) else {
            throw SignatureError(.badSignature, "the bytes do not match the signature of key '\(key.kid)'")
        }

        if now.timeIntervalSince1970 > TimeInterval(claims.exp) + grace {
            throw SignatureError(.expired, "the signature expired at \(claims.expiresAt) (grace \(Int(grace)) s): the feed may be frozen")
        }
        // A feed that takes effect later (a scheduled change served early) would raise the
        // client's highest (rev, from) and make the feed in force now look like a rollback.
        if TimeInterval(claims.from) > now.timeIntervalSince1970 + clockSkew {
            throw SignatureError(
                .notYetValid,
                "the feed takes effect at \(Date(timeIntervalSince1970: TimeInterval(claims.from))), later than now "
                    + "(\(now)) by more than the clock skew of \(Int(clockSkew)) s")
        }
        return VerifiedFeedSignature(claims: claims, kid: key.kid, revocations: statement)
    }
}
