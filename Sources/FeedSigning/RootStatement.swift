import Foundation

/// A statement the root key signs: an attached compact JWS (RFC 7515 §7.1) with EdDSA (RFC 8037),
/// its `typ` saying what it is, so that a certificate can never be read as a revocation list.
enum RootStatement {
    struct Header: Codable {
        var alg = "EdDSA"
        var typ: String
        var kid: String
    }

    /// Statements are small; anything bigger is refused before it is decoded.
    static let maximumLength = 16 * 1024

    static func sign(_ payload: some Encodable, typ: String, root: Ed25519PrivateKey) -> String {
        let header = Base64URL.encode(JSON.encode(Header(typ: typ, kid: root.kid)))
        let body = Base64URL.encode(JSON.encode(payload))
        let input = Data("\(header).\(body)".utf8)
        return "\(header).\(body).\(Base64URL.encode(root.signature(for: input)))"
    }

    /// The payload of a statement of `typ` signed by one of `roots`.
    static func verify<Payload: Decodable>(
        _ compact: String, typ: String, roots: [Ed25519PublicKey], as: Payload.Type
    ) throws(SignatureError) -> Payload {
        let (header, payload) = try parse(compact, typ: typ)
        guard let root = roots.first(where: { $0.kid == header.kid }) else {
            throw SignatureError(.untrustedKey, "\(typ) signed by '\(header.kid)', which is not a pinned root key")
        }
        let parts = compact.split(separator: ".", omittingEmptySubsequences: false)
        guard let signature = Base64URL.decode(parts[2]),
            root.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8))
        else { throw SignatureError(.badSignature, "\(typ) does not verify with root key '\(root.kid)'") }
        return try JSON.decode(Payload.self, from: payload, what: typ)
    }

    /// The payload without checking the signature: for a signer reading its own certificate.
    static func unverifiedPayload<Payload: Decodable>(_ compact: String, typ: String, as: Payload.Type) throws(SignatureError) -> Payload {
        try JSON.decode(Payload.self, from: parse(compact, typ: typ).payload, what: typ)
    }

    private static func parse(_ compact: String, typ: String) throws(SignatureError) -> (header: Header, payload: Data) {
        let parts = compact.split(separator: ".", omittingEmptySubsequences: false)
        guard compact.utf8.count <= maximumLength, parts.count == 3, let headerBytes = Base64URL.decode(parts[0]),
            let payload = Base64URL.decode(parts[1])
        else { throw SignatureError(.malformed, "\(typ) is not a compact JWS") }
        let header = try JSON.decode(Header.self, from: headerBytes, what: "\(typ) header")
        guard header.alg == "EdDSA", header.typ == typ else {
            throw SignatureError(.malformed, "expected a \(typ) with alg EdDSA, got \(header.typ) with \(header.alg)")
        }
        return (header, payload)
    }
}

/// The root's statement that a signing key may sign feeds until `expiresAt`.
public struct KeyCertificate: Codable, Sendable, Hashable {
    static let type = "catalog-key+jws"

    /// The certified signing key's id.
    public var kid: String
    /// The key's public half, base64url.
    public var x: String
    /// When the certificate was issued, in seconds since 1970.
    public var iat: Int64
    /// Until when the key may sign, in seconds since 1970.
    public var exp: Int64

    /// ``iat`` as a date.
    public var issuedAt: Date { Date(timeIntervalSince1970: TimeInterval(iat)) }
    /// ``exp`` as a date.
    public var expiresAt: Date { Date(timeIntervalSince1970: TimeInterval(exp)) }

    /// Certifies `key` from `now` for `lifetime` seconds; the compact JWS goes into the key's file.
    public static func issue(for key: Ed25519PublicKey, by root: Ed25519PrivateKey, now: Date, lifetime: TimeInterval) -> String {
        let certificate = KeyCertificate(
            kid: key.kid, x: Base64URL.encode(key.raw), iat: Int64(now.timeIntervalSince1970),
            exp: Int64((now + lifetime).timeIntervalSince1970))
        return RootStatement.sign(certificate, typ: type, root: root)
    }

    /// The certified key, if one of `roots` signed `compact`.
    public static func verify(_ compact: String, roots: [Ed25519PublicKey]) throws(SignatureError) -> (KeyCertificate, Ed25519PublicKey) {
        let certificate = try RootStatement.verify(compact, typ: type, roots: roots, as: KeyCertificate.self)
        guard let raw = Base64URL.decode(certificate.x) else { throw SignatureError(.malformed, "the certificate's key is not base64url") }
        return (certificate, try Ed25519PublicKey(kid: certificate.kid, raw: raw))
    }

    /// What a certificate says, unchecked: for the holder of the key, and for `catalog keys` listings.
    public static func read(_ compact: String) throws(SignatureError) -> KeyCertificate {
        try RootStatement.unverifiedPayload(compact, typ: type, as: KeyCertificate.self)
    }
}

/// The root's statement that signing keys are revoked. Each statement lists every key revoked so
/// far and counts up, so a client keeps the highest version it verified.
public struct KeyRevocations: Codable, Sendable, Hashable {
    static let type = "catalog-revocations+jws"

    /// Counts up with each statement: a client keeps the highest it verified.
    public var version: Int
    /// When the statement was made, in seconds since 1970.
    public var iat: Int64
    /// Every signing key revoked so far, by key id.
    public var revoked: [String]

    /// A statement revoking `revoked`, signed by `root`: a compact JWS for the signing key's file.
    public static func issue(_ revoked: [String], version: Int, by root: Ed25519PrivateKey, now: Date) -> String {
        RootStatement.sign(
            KeyRevocations(version: version, iat: Int64(now.timeIntervalSince1970), revoked: revoked.sorted()), typ: type, root: root)
    }

    /// The statement, if one of `roots` signed it.
    public static func verify(_ compact: String, roots: [Ed25519PublicKey]) throws(SignatureError) -> KeyRevocations {
        try RootStatement.verify(compact, typ: type, roots: roots, as: KeyRevocations.self)
    }

    /// What a statement says, unchecked: for `catalog keys` and the key's holder.
    public static func read(_ compact: String) throws(SignatureError) -> KeyRevocations {
        try RootStatement.unverifiedPayload(compact, typ: type, as: KeyRevocations.self)
    }
}

enum JSON {
    static func encode(_ value: some Encodable) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Our own Codable structs of strings and numbers always encode.
        return (try? encoder.encode(value)) ?? Data()
    }

    static func decode<Value: Decodable>(_ type: Value.Type, from data: Data, what: String) throws(SignatureError) -> Value {
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch {
            throw SignatureError(.malformed, "\(what) is not the expected JSON")
        }
    }
}
