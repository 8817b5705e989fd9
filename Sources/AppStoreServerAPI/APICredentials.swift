import AppStore
import Crypto
import FeedSigning
import Foundation
import OutboundAPI

/// What calling the App Store Server API for one app takes (docs/app-store-api.md): the in-app
/// purchase key made in App Store Connect (its id, and the file of its private key, never the key
/// itself in a setting), the issuer id of the team, and the app's bundle id.
public struct AppStoreAPICredentials: Sendable, Hashable {
    /// The key's id (`kid`), as App Store Connect shows it.
    public var keyId: String
    /// The team's issuer id (`iss`), from the keys page of App Store Connect.
    public var issuerId: String
    /// The app's bundle id (`bid`).
    public var bundleId: String
    /// The path of the `.p8` file App Store Connect let you download once (PKCS#8 PEM).
    public var keyFile: String

    /// The credentials `app`'s settings name; nil when they name none.
    public init?(_ app: AppPurchases) {
        guard let api = app.serverAPI else { return nil }
        self.init(keyId: api.keyId, issuerId: api.issuerId, bundleId: app.bundleId, keyFile: api.keyFile)
    }

    /// Credentials.
    public init(keyId: String, issuerId: String, bundleId: String, keyFile: String) {
        self.keyId = keyId
        self.issuerId = issuerId
        self.bundleId = bundleId
        self.keyFile = keyFile
    }
}

/// Mints the bearer token every call carries (Apple's "Generating JSON Web Tokens for API
/// requests"): ES256, header `alg`, `kid` and `typ`; claims `iss`, `iat`, `exp`, `aud`
/// `appstoreconnect-v1` and `bid`. Apple refuses a token that lives longer than an hour, so each
/// lives ``lifetime`` and is reused until ``renewal`` before it ends. The key file is read again
/// whenever it changes on disk (size, modification time or inode), so a rotated key is used from
/// the next call on, without a restart.
public actor APITokenSource {
    /// How long a token is valid: well under Apple's hour.
    public static let lifetime: TimeInterval = 20 * 60
    /// How long before its expiry a token is replaced.
    public static let renewal: TimeInterval = 5 * 60

    private var credentials: AppStoreAPICredentials
    private var key: (file: FileIdentity, key: P256.Signing.PrivateKey)?
    private var token: (value: String, expires: Date, credentials: AppStoreAPICredentials)?

    /// A source for `credentials`.
    public init(_ credentials: AppStoreAPICredentials) {
        self.credentials = credentials
    }

    /// Replaces the credentials (a new revision of the catalog named another key); the next token
    /// is minted with them.
    public func update(_ credentials: AppStoreAPICredentials) {
        self.credentials = credentials
    }

    /// A token valid at `now` for at least ``renewal`` more; fails when the key file cannot be read
    /// or holds no P-256 private key.
    public func token(now: Date) throws(APICredentialsError) -> String {
        guard let identity = FileIdentity(credentials.keyFile) else {
            throw APICredentialsError("cannot read the API key file \(credentials.keyFile): \(String(cString: strerror(errno)))")
        }
        if let token, token.credentials == credentials, key?.file == identity, token.expires.timeIntervalSince(now) > Self.renewal {
            return token.value
        }
        let signingKey = try signingKey(identity)
        let value = try Self.mint(credentials, key: signingKey, issuedAt: now)
        token = (value, now.addingTimeInterval(Self.lifetime), credentials)
        return value
    }

    private func signingKey(_ identity: FileIdentity) throws(APICredentialsError) -> P256.Signing.PrivateKey {
        if let key, key.file == identity { return key.key }
        let path = credentials.keyFile
        guard let data = FileManager.default.contents(atPath: path), let pem = String(data: data, encoding: .utf8) else {
            throw APICredentialsError("cannot read the API key file \(path)")
        }
        do {
            let loaded = try P256.Signing.PrivateKey(pemRepresentation: pem.trimmingCharacters(in: .whitespacesAndNewlines))
            key = (identity, loaded)
            return loaded
        } catch {
            throw APICredentialsError("the API key file \(path) holds no P-256 private key in PEM (the .p8 file from App Store Connect)")
        }
    }

    /// A token for `credentials`, signed by `key`, issued at `issuedAt`.
    static func mint(_ credentials: AppStoreAPICredentials, key: P256.Signing.PrivateKey, issuedAt: Date) throws(APICredentialsError)
        -> String
    {
        struct Header: Encodable { var alg = "ES256", kid: String, typ = "JWT" }
        struct Claims: Encodable { var iss: String, iat: Int64, exp: Int64, aud = "appstoreconnect-v1", bid: String }
        let issued = Int64(issuedAt.timeIntervalSince1970.rounded(.down))
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        do {
            let header = try encoder.encode(Header(kid: credentials.keyId))
            let claims = try encoder.encode(
                Claims(iss: credentials.issuerId, iat: issued, exp: issued + Int64(lifetime), bid: credentials.bundleId))
            let input = Base64URL.encode(header) + "." + Base64URL.encode(claims)
            let signature = try key.signature(for: Data(input.utf8))
            return input + "." + Base64URL.encode(signature.rawRepresentation)
        } catch {
            throw APICredentialsError("could not sign the API token: \(error)")
        }
    }
}

/// The credentials could not make a token: the key file is missing, unreadable or not a key.
public struct APICredentialsError: Error, CustomStringConvertible, Sendable, Hashable {
    /// What could not be done, and with which file.
    public let description: String
    init(_ description: String) { self.description = description }
}
