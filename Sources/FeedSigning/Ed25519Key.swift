import Foundation

#if canImport(CryptoKit)
    import CryptoKit
#else
    import Crypto
#endif

/// An Ed25519 public key with its key id, read from and written as a JWK (RFC 8037 §2:
/// `{"kty":"OKP","crv":"Ed25519","kid":…,"x":…}`): what an app pins for the root key.
public struct Ed25519PublicKey: Sendable, Hashable {
    /// The key id (`kid`), as JWS headers and revocations name the key.
    public let kid: String
    /// The 32 bytes of the key (CryptoKit's key types are not `Sendable`; these are).
    public let raw: Data

    /// A key from its id and its 32 raw bytes; other bytes are refused.
    public init(kid: String, raw: Data) throws(SignatureError) {
        guard raw.count == 32, (try? Curve25519.Signing.PublicKey(rawRepresentation: raw)) != nil else {
            throw SignatureError(.malformed, "key '\(kid)' is not a 32-byte Ed25519 public key")
        }
        self.init(kid: kid, validRaw: raw)
    }

    /// The public half of a key this process holds: its bytes need no check.
    init(kid: String, validRaw raw: Data) {
        self.kid = kid
        self.raw = raw
    }

    /// A public JWK's JSON (a private one's public half is read the same way).
    public init(jwk: Data) throws(SignatureError) {
        let fields = try JWK.decode(jwk)
        guard let x = fields.x.flatMap(Base64URL.decode) else { throw SignatureError(.malformed, "the JWK has no valid 'x'") }
        try self.init(kid: fields.kid, raw: x)
    }

    /// The public JWK, one line of JSON.
    public var jwk: Data { JWK(kid: kid, x: Base64URL.encode(raw)).encoded() }

    /// Whether `signature` is this key's Ed25519 signature of `message`.
    public func isValidSignature(_ signature: Data, for message: Data) -> Bool {
        (try? Curve25519.Signing.PublicKey(rawRepresentation: raw))?.isValidSignature(signature, for: message) ?? false
    }
}

/// An Ed25519 private key with its key id, kept as a private JWK (`d` beside `x`).
///
/// A signing key's file also carries the root's certificate of it (`cert`) and, once a key has
/// been revoked, the root's newest revocation statement (`revocations`), so that one file is all
/// a publisher needs and every signature it makes carries both.
public struct Ed25519PrivateKey: Sendable {
    /// The key id: the first 16 base64url characters of its public key's SHA-256, for a new key.
    public let kid: String
    private let box: KeyBox
    private var key: Curve25519.Signing.PrivateKey { box.key }
    /// The root's certificate of this key (compact JWS), for a signing key.
    public var certificate: String?
    /// The root's newest revocation statement (compact JWS), when one was issued.
    public var revocations: String?

    /// A new random key; its id is the first 16 base64url characters of its public key's SHA-256.
    public init() {
        let key = Curve25519.Signing.PrivateKey()
        box = KeyBox(key)
        kid = String(Base64URL.encode(SHA256.hash(data: key.publicKey.rawRepresentation)).prefix(16))
    }

    /// A private key from a private JWK's JSON, with the certificate and revocations its file holds.
    public init(jwk: Data) throws(SignatureError) {
        let fields = try JWK.decode(jwk)
        guard let d = fields.d.flatMap(Base64URL.decode), let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: d) else {
            throw SignatureError(.malformed, "the JWK has no valid private part 'd'")
        }
        if let x = fields.x, x != Base64URL.encode(key.publicKey.rawRepresentation) {
            throw SignatureError(.malformed, "the JWK's 'x' is not the public half of its 'd'")
        }
        self.kid = fields.kid
        box = KeyBox(key)
        certificate = fields.cert
        revocations = fields.revocations
    }

    /// The public half, with the same key id.
    public var publicKey: Ed25519PublicKey {
        Ed25519PublicKey(kid: kid, validRaw: key.publicKey.rawRepresentation)
    }

    /// The private JWK, one line of JSON: keep it out of `public/` and out of logs.
    public var jwk: Data {
        JWK(
            kid: kid, x: Base64URL.encode(key.publicKey.rawRepresentation), d: Base64URL.encode(key.rawRepresentation),
            cert: certificate, revocations: revocations
        ).encoded()
    }

    /// The Ed25519 signature of `message` (RFC 8032), 64 bytes.
    public func signature(for message: some DataProtocol) -> Data {
        // Ed25519 signing has no failure mode for a valid key; swift-crypto's `throws` is its API shape.
        (try? key.signature(for: message)) ?? Data()
    }

    /// A signing key's file content with the root's certificate of it.
    public func certified(_ certificate: String, revocations: String? = nil) -> Ed25519PrivateKey {
        var key = self
        key.certificate = certificate
        key.revocations = revocations
        return key
    }
}

/// The members of an OKP Ed25519 JWK this package reads and writes.
struct JWK: Codable {
    var kty = "OKP"
    var crv = "Ed25519"
    var kid: String
    var x: String?
    var d: String?
    var cert: String?
    var revocations: String?

    static func decode(_ data: Data) throws(SignatureError) -> JWK {
        guard data.count <= 64 * 1024, let jwk = try? JSONDecoder().decode(JWK.self, from: data) else {
            throw SignatureError(.malformed, "not a JSON Web Key")
        }
        guard jwk.kty == "OKP", jwk.crv == "Ed25519" else {
            throw SignatureError(.malformed, "the JWK is \(jwk.kty)/\(jwk.crv), not an OKP Ed25519 key")
        }
        guard KeyID.isValid(jwk.kid) else { throw SignatureError(.malformed, "the JWK's 'kid' is not a plain key id") }
        return jwk
    }

    func encoded() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return ((try? encoder.encode(self)) ?? Data()) + Data("\n".utf8)
    }
}

/// What a key id may be.
public enum KeyID {
    /// 1–64 characters of base64url's alphabet, plus `.`: printable in any header and log.
    public static func isValid(_ kid: String) -> Bool {
        (1...64).contains(kid.utf8.count) && kid.utf8.allSatisfy { Base64URL.isAlphabet($0) || $0 == UInt8(ascii: ".") }
    }

}

/// A swift-crypto private key, which is not `Sendable`. `@unchecked Sendable` is safe: the key
/// is set once, never mutated, and swift-crypto's signing reads it without shared state.
private final class KeyBox: @unchecked Sendable {
    let key: Curve25519.Signing.PrivateKey

    init(_ key: Curve25519.Signing.PrivateKey) {
        self.key = key
    }
}
