import Crypto
import FeedSigning
import Foundation

/// One secret that signs content URLs, named by the id the URLs carry.
public struct ContentSigningKey: Sendable {
    /// The id a URL carries in `kid`: 1 to 64 of `A-Z a-z 0-9 . _ -`.
    public let id: String
    /// The secret's bytes: `SymmetricKey` is not `Sendable` in swift-crypto 3, so the key is made
    /// from them at each use (a copy of 32 bytes).
    private let secret: [UInt8]
    var key: SymmetricKey { SymmetricKey(data: secret) }

    /// The shortest secret accepted: HMAC-SHA256's own output size (RFC 2104 §3 advises no less).
    public static let minimumSecretBytes = 32

    /// A key named `id` with `secret` (at least ``minimumSecretBytes`` random bytes).
    public init(id: String, secret: [UInt8]) throws(ContentKeyError) {
        guard ContentURLToken.isValidKeyId(id) else {
            throw ContentKeyError("a content key id must be 1 to 64 of A-Z a-z 0-9 . _ -, not \(id.prefix(80).debugDescription)")
        }
        guard secret.count >= Self.minimumSecretBytes else {
            throw ContentKeyError(
                "the content key \(id) has \(secret.count) bytes of secret; at least \(Self.minimumSecretBytes) are needed")
        }
        self.id = id
        self.secret = secret
    }

    /// A new key named `id` with 32 random bytes from the system's generator.
    public static func generate(id: String) throws(ContentKeyError) -> ContentSigningKey {
        let secret = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        return try ContentSigningKey(id: id, secret: secret)
    }

    /// The secret in base64url without padding, as a key ring file holds it.
    public var secretBase64URL: String { Base64URL.encode(secret) }
}

/// A content key ring that cannot be made: a clear message of what is wrong.
public struct ContentKeyError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public var message: String
    /// An error saying `message`.
    public init(_ message: String) { self.message = message }
    /// The message.
    public var description: String { message }
}

/// The keys that sign and verify content URLs: several by id, one of them current.
///
/// New URLs are signed with the current key; a URL verifies with whichever key its `kid` names, so
/// keys rotate without breaking URLs already issued: add the new key, make it current, and remove
/// the old one once the longest lifetime of the URLs it signed has passed (docs/content.md, "Keys").
public struct ContentKeyRing: Sendable {
    /// The keys, by id.
    private let keys: [String: ContentSigningKey]
    /// The key that signs new URLs.
    private let current: ContentSigningKey
    /// How far ahead of now an expiry may be: a URL that claims more was not signed by this server
    /// (whose URLs live at most this long) and is refused, so a leaked or misused key cannot mint
    /// URLs that last for years.
    public let maximumLifetime: TimeInterval

    /// The default ``maximumLifetime``: a day.
    public static let defaultMaximumLifetime: TimeInterval = 86_400

    /// A ring of `keys` (ids unique) signing with the one named `current`.
    public init(keys: [ContentSigningKey], current: String, maximumLifetime: TimeInterval = defaultMaximumLifetime) throws(ContentKeyError)
    {
        var byId: [String: ContentSigningKey] = [:]
        for key in keys {
            guard byId[key.id] == nil else { throw ContentKeyError("the content key id \(key.id) is given twice") }
            byId[key.id] = key
        }
        guard let currentKey = byId[current] else { throw ContentKeyError("the current content key \(current) is not among the keys") }
        guard maximumLifetime > 0 else { throw ContentKeyError("the maximum lifetime of a content URL must be positive") }
        self.keys = byId
        self.current = currentKey
        self.maximumLifetime = maximumLifetime
    }

    /// A ring read from its JSON file: `{"current": "k2", "keys": {"k1": "<base64url secret>", …}}`.
    public init(json: Data, maximumLifetime: TimeInterval = defaultMaximumLifetime) throws(ContentKeyError) {
        struct File: Decodable {
            var current: String
            var keys: [String: String]
        }
        let file: File
        do {
            file = try JSONDecoder().decode(File.self, from: json)
        } catch {
            throw ContentKeyError("a content key ring is JSON {\"current\": ID, \"keys\": {ID: base64url secret}}: \(error)")
        }
        var keys: [ContentSigningKey] = []
        for (id, text) in file.keys.sorted(by: { $0.key < $1.key }) {
            guard let secret = Base64URL.decode(bytes: text.utf8) else { throw ContentKeyError("the content key \(id) is not base64url") }
            keys.append(try ContentSigningKey(id: id, secret: secret))
        }
        try self.init(keys: keys, current: file.current, maximumLifetime: maximumLifetime)
    }

    /// The id of the key that signs new URLs.
    public var currentKeyId: String { current.id }

    /// The ids of the keys, sorted.
    public var keyIds: [String] { keys.keys.sorted() }

    /// A token for the file whose SHA-256 is `digest`, valid until `expires` (whole seconds, rounded
    /// down), signed with the current key.
    public func sign(digest: ContentDigest, expires: Date) -> ContentURLToken {
        let seconds = Int64(expires.timeIntervalSince1970.rounded(.down))
        let message = ContentURLToken.message(digest: digest, expires: seconds, keyId: current.id)
        let mac = HMAC<SHA256>.authenticationCode(for: message, using: current.key)
        return ContentURLToken(digest: digest, expires: seconds, keyId: current.id, signature: Base64URL.encode(Array(mac)))
    }

    /// Whether `token` may be served at `now`: its key known, its expiry after `now` and no further
    /// than ``maximumLifetime`` ahead, and its signature right. Clock and memory only: no disk.
    ///
    /// The comparison of the signature is constant-time (`HMAC.isValidAuthenticationCode`).
    public func verify(_ token: ContentURLToken, now: Date) -> ContentURLRefusal? {
        guard let key = keys[token.keyId] else {
            return ContentURLRefusal(.unknownKey, "the URL is signed with key \(token.keyId), which this server does not have")
        }
        let seconds = now.timeIntervalSince1970
        guard seconds < Double(token.expires) else {
            return ContentURLRefusal(
                .expired, "the URL expired at \(token.expires) (Unix time); it is now \(Int64(seconds.rounded(.down)))")
        }
        guard Double(token.expires) - seconds <= maximumLifetime else {
            return ContentURLRefusal(
                .tooFarAhead, "the URL claims to be valid until \(token.expires), more than \(Int64(maximumLifetime)) s from now")
        }
        guard let signature = Base64URL.decode(bytes: token.signature.utf8), signature.count == 32 else {
            return ContentURLRefusal(.malformed, "the signature is not 32 bytes of base64url")
        }
        let message = ContentURLToken.message(digest: token.digest, expires: token.expires, keyId: token.keyId)
        guard HMAC<SHA256>.isValidAuthenticationCode(signature, authenticating: message, using: key.key) else {
            return ContentURLRefusal(.badSignature, "the signature does not match the digest, expiry and key id")
        }
        return nil
    }

    /// Parses the path and query of a request and verifies the token they carry: the one call the
    /// server makes before it touches the disk.
    public func verify(path: some StringProtocol, query: some StringProtocol, now: Date) -> Result<ContentURLToken, ContentURLRefusal> {
        switch ContentURLToken.parse(path: path, query: query) {
        case .failure(let refusal): return .failure(refusal)
        case .success(let token):
            if let refusal = verify(token, now: now) { return .failure(refusal) }
            return .success(token)
        }
    }
}
