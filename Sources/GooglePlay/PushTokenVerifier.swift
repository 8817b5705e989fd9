import Crypto
import FeedSigning
import Foundation
import Ledger
import _CryptoExtras

/// Google's signing keys for the tokens Pub/Sub puts on a push (a JWKS, such as
/// `https://www.googleapis.com/oauth2/v3/certs`, fetched and refreshed by the operator into a
/// file): RS256 keys by `kid`.
public struct GoogleKeySet: Sendable {
    let keys: [String: _RSA.Signing.PublicKey]

    /// The RSA keys of `json` (`{"keys": [{"kty": "RSA", "kid", "n", "e", ...}]}`); keys of another
    /// type are ignored, a malformed RSA key is an error.
    public init(json: Data) throws(PlayConfigurationError) {
        struct Document: Decodable {
            struct Key: Decodable {
                var kty: String?
                var kid: String?
                var n: String?
                var e: String?
                var alg: String?
                var use: String?
            }
            var keys: [Key]
        }
        let document: Document
        do {
            document = try JSONDecoder().decode(Document.self, from: json)
        } catch {
            throw PlayConfigurationError("the key set is not a JWKS ({\"keys\": [...]})")
        }
        var keys: [String: _RSA.Signing.PublicKey] = [:]
        for key in document.keys where key.kty == "RSA" && (key.alg == nil || key.alg == "RS256") && key.use != "enc" {
            guard let kid = key.kid, let n = key.n.flatMap(Base64URL.decode), let e = key.e.flatMap(Base64URL.decode) else {
                throw PlayConfigurationError("an RSA key of the key set has no kid, n or e")
            }
            guard let rsa = try? _RSA.Signing.PublicKey(n: n, e: e), rsa.keySizeInBits >= 2048 else {
                throw PlayConfigurationError("the key set's key \(kid) is not an RSA key of at least 2048 bits")
            }
            keys[kid] = rsa
        }
        guard !keys.isEmpty else { throw PlayConfigurationError("the key set has no RS256 key") }
        self.keys = keys
    }

    /// The key ids, for logs.
    public var keyIds: [String] { keys.keys.sorted() }
}

/// Verifies the OpenID Connect token Pub/Sub puts in `Authorization: Bearer` on a push
/// (docs/google-play.md, "Notifications"): the only thing that authenticates a Real-time Developer
/// Notification, whose payload is unsigned. RS256 only (`none`, `HS256` and any other algorithm are
/// refused before a key is looked at), a `kid` of the key set (an unknown one fails closed), issuer
/// Google's, audience and service account the app's, the email verified, and the time inside
/// `iat`...`exp` by the injected clock, with `leeway` either side.
public struct PushTokenVerifier: Sendable {
    /// The audience the push subscription was given.
    public let audience: String
    /// The push subscription's service account.
    public let serviceAccount: String
    let keys: GoogleKeySet
    /// Clock skew allowed either side.
    public let leeway: TimeInterval

    /// A verifier for one push subscription.
    public init(audience: String, serviceAccount: String, keys: GoogleKeySet, leeway: TimeInterval = 60) {
        self.audience = audience
        self.serviceAccount = serviceAccount
        self.keys = keys
        self.leeway = leeway
    }

    /// A token longer than this is refused before parsing: Google's are about 1 KiB.
    public static let maximumBytes = 8 * 1024

    /// Checks `token` (the compact JWT after `Bearer `) at `now`.
    public func verify(_ token: String, now: Date) throws(PurchaseRefusal) {
        let bytes = Array(token.utf8)
        guard bytes.count <= Self.maximumBytes else { throw PurchaseRefusal(.malformed, "the token is over \(Self.maximumBytes) bytes") }
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(bytes: parts[0]), let claimBytes = Base64URL.decode(bytes: parts[1]),
            let signature = Base64URL.decode(bytes: parts[2])
        else { throw PurchaseRefusal(.malformed, "not a compact JWT") }
        struct Header: Decodable {
            var alg: String?
            var kid: String?
        }
        struct Claims: Decodable {
            var iss: String?
            var aud: String?
            var email: String?
            var email_verified: Bool?
            var iat: Double?
            var exp: Double?
        }
        guard let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes)) else {
            throw PurchaseRefusal(.malformed, "the token's header is not JSON")
        }
        guard header.alg == "RS256" else {
            throw PurchaseRefusal(.notAuthenticated, "the token's algorithm is \(header.alg ?? "none"), not RS256")
        }
        guard let kid = header.kid, let key = keys.keys[kid] else {
            throw PurchaseRefusal(
                .notAuthenticated, "the token's key \(header.kid ?? "(none)") is not in the key set: refresh it from Google")
        }
        let signingInput = bytes[..<(parts[0].count + 1 + parts[1].count)]
        guard
            key.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature), for: SHA256.hash(data: signingInput), padding: .insecurePKCS1v1_5)
        else { throw PurchaseRefusal(.notAuthenticated, "the token's signature is not Google's") }
        guard let claims = try? JSONDecoder().decode(Claims.self, from: Data(claimBytes)) else {
            throw PurchaseRefusal(.malformed, "the token's claims are not JSON of the expected shape")
        }
        guard claims.iss == "https://accounts.google.com" || claims.iss == "accounts.google.com" else {
            throw PurchaseRefusal(.wrongApp, "the token was issued by \(claims.iss ?? "no one"), not Google")
        }
        guard claims.aud == audience else {
            throw PurchaseRefusal(.wrongApp, "the token is for \(claims.aud ?? "no audience"), not \(audience)")
        }
        guard claims.email == serviceAccount, claims.email_verified == true else {
            throw PurchaseRefusal(.wrongApp, "the token is not the push subscription's service account's, verified")
        }
        guard let issued = claims.iat, let expires = claims.exp else { throw PurchaseRefusal(.malformed, "the token has no iat or exp") }
        let at = now.timeIntervalSince1970
        guard issued - leeway <= at, at < expires + leeway else {
            throw PurchaseRefusal(.notAuthenticated, "the token is valid from \(Int(issued)) to \(Int(expires)), not at \(Int(at))")
        }
    }
}
