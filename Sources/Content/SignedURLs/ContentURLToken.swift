import FeedSigning
import Foundation

/// What a content URL carries: the file's SHA-256, an expiry, the signing key's id and an
/// HMAC-SHA256 over all three (docs/content.md, "Signed URLs").
///
/// The URL is `/v1/content/{sha256}?exp={unix seconds}&kid={key id}&sig={base64url HMAC}`. It
/// carries everything needed to decide, with no cookie and no session, so a CDN or a cache in
/// front may serve it, and it has exactly one spelling: lower-case hex, exactly the three parameters
/// in that order, the expiry with no leading zero, the signature in canonical base64url.
public struct ContentURLToken: Sendable, Hashable {
    /// The SHA-256 of the file.
    public var digest: ContentDigest
    /// When it stops being valid, in whole seconds since 1970 (UTC).
    public var expires: Int64
    /// The id of the key that signed it.
    public var keyId: String
    /// The HMAC-SHA256, in base64url without padding (43 characters).
    public var signature: String

    /// A token of these parts, as signed elsewhere (``ContentKeyRing/sign(digest:expires:)`` makes them).
    public init(digest: ContentDigest, expires: Int64, keyId: String, signature: String) {
        self.digest = digest
        self.expires = expires
        self.keyId = keyId
        self.signature = signature
    }

    /// The path prefix of content URLs.
    public static let pathPrefix = "/v1/content/"

    /// `/v1/content/{sha256}`.
    public var path: String { Self.pathPrefix + digest.hex }
    /// `exp=…&kid=…&sig=…`.
    public var query: String { "exp=\(expires)&kid=\(keyId)&sig=\(signature)" }
    /// The path and the query: what the server answers a client with, after its origin.
    public var pathAndQuery: String { "\(path)?\(query)" }

    /// The bytes the signature covers: a fixed label (so that no other HMAC this key might make can
    /// pass for a URL's), then the digest, the expiry and the key id, one per line.
    static func message(digest: ContentDigest, expires: Int64, keyId: String) -> [UInt8] {
        Array("iap-catalog content URL v1\n\(digest.hex)\n\(expires)\n\(keyId)".utf8)
    }

    /// Whether `id` may name a key: 1 to 64 of `A-Z a-z 0-9 . _ -`, which need no escaping in a URL.
    public static func isValidKeyId(_ id: some StringProtocol) -> Bool {
        (1...64).contains(id.utf8.count)
            && id.utf8.allSatisfy { Base64URL.isAlphabet($0) || $0 == UInt8(ascii: ".") }
    }

    /// The token in a request's path and query (the query without its `?`), checked for form only:
    /// the signature is ``ContentKeyRing/verify(_:now:)``'s to check.
    public static func parse(path: some StringProtocol, query: some StringProtocol) -> Result<ContentURLToken, ContentURLRefusal> {
        guard path.hasPrefix(pathPrefix), let digest = ContentDigest(hex: path.dropFirst(pathPrefix.count)) else {
            return .failure(ContentURLRefusal(.malformed, "a content path is \(pathPrefix) and 64 lower-case hexadecimal digits"))
        }
        // A query is at most three short parameters; anything longer is refused before it is split.
        guard query.utf8.count <= 256 else { return .failure(ContentURLRefusal(.malformed, "the query is too long")) }
        // Exactly exp, kid and sig, in that order (alphabetical, so a CDN that sorts a query keeps
        // it): another order or one more parameter would be a second spelling of one URL.
        let parameters = String(query).split(separator: "&", omittingEmptySubsequences: false)
        guard parameters.count == 3, parameters[0].hasPrefix("exp="), parameters[1].hasPrefix("kid="), parameters[2].hasPrefix("sig=")
        else {
            return .failure(ContentURLRefusal(.malformed, "a content URL's query is exp=…&kid=…&sig=…: those three, in that order"))
        }
        let (exp, kid, sig) = (parameters[0].dropFirst(4), parameters[1].dropFirst(4), parameters[2].dropFirst(4))
        // No leading zero: the signature covers the number, so "0123" would be a second spelling of
        // the URL "123" (a second copy in every cache).
        guard (1...18).contains(exp.utf8.count), exp.utf8.allSatisfy({ (0x30...0x39).contains($0) }), exp == "0" || exp.first != "0",
            let expires = Int64(exp)
        else {
            return .failure(ContentURLRefusal(.malformed, "exp is whole seconds since 1970, at most 18 digits, no leading zero"))
        }
        guard isValidKeyId(kid) else { return .failure(ContentURLRefusal(.malformed, "kid is 1 to 64 of A-Z a-z 0-9 . _ -")) }
        guard sig.utf8.count == 43, let bytes = Base64URL.decode(bytes: sig.utf8), bytes.count == 32 else {
            return .failure(ContentURLRefusal(.malformed, "sig is an HMAC-SHA256 in base64url: 43 characters"))
        }
        let (keyId, signature) = (String(kid), String(sig))
        return .success(ContentURLToken(digest: digest, expires: expires, keyId: keyId, signature: signature))
    }
}

/// Why a content URL is refused: a stable ``code`` and a ``reason`` that says exactly why.
public struct ContentURLRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    /// The stable part: what a server logs and counts, and what tests assert on.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// The code as written in logs and answers.
        public var rawValue: String
        /// A code from its written form.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Not the shape of a content URL: a wrong path, a missing, repeated or unknown parameter, a
        /// truncated signature.
        public static let malformed = Code(rawValue: "malformed")
        /// Signed with a key this server does not have (never had, or removed after a rotation).
        public static let unknownKey = Code(rawValue: "unknown-key")
        /// Its expiry has passed.
        public static let expired = Code(rawValue: "expired")
        /// Its expiry is further ahead than this server ever signs.
        public static let tooFarAhead = Code(rawValue: "too-far-ahead")
        /// The signature does not cover this digest, expiry and key id: altered, or forged.
        public static let badSignature = Code(rawValue: "bad-signature")
        /// The written form.
        public var description: String { rawValue }
    }

    /// The stable code.
    public var code: Code
    /// Exactly why, for a log or a support person.
    public var reason: String

    /// A refusal with `code` for `reason`.
    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    /// `code: reason`.
    public var description: String { "\(code): \(reason)" }
}
