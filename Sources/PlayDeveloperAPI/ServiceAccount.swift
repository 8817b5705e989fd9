import FeedSigning
import Foundation
import GooglePlay
import OutboundAPI
import _CryptoExtras

/// A Google Cloud service account's key file, as the console lets you download it once (JSON:
/// `type` `service_account`, `client_email`, `private_key_id`, `private_key` in PEM, `token_uri`).
/// The server reads it from a path; the key never sits in the catalog.
public struct PlayServiceAccount: Sendable {
    /// The account's email: the assertion's issuer.
    public let email: String
    /// The key's id: the assertion's `kid`.
    public let keyId: String
    /// Where access tokens are asked for: https, or http to a loopback stand-in only.
    public let tokenURL: URL
    let key: _RSA.Signing.PrivateKey

    /// The account in `json`.
    public init(json: Data) throws(PlayCredentialsError) {
        struct File: Decodable {
            var type: String?
            var client_email: String?
            var private_key_id: String?
            var private_key: String?
            var token_uri: String?
        }
        guard let file = try? JSONDecoder().decode(File.self, from: json) else {
            throw PlayCredentialsError("the service account key file is not JSON (download it again from the Google Cloud console)")
        }
        guard file.type == "service_account", let email = file.client_email, let keyId = file.private_key_id,
            let pem = file.private_key
        else {
            throw PlayCredentialsError(
                "the key file is not a service account's (type service_account, client_email, private_key_id, private_key)")
        }
        guard let url = APICaller.baseURL(file.token_uri ?? "https://oauth2.googleapis.com/token") else {
            throw PlayCredentialsError("the key file's token_uri must be https (http only to a loopback host)")
        }
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw PlayCredentialsError("the key file's private_key is not an RSA private key in PEM")
        }
        guard key.keySizeInBits >= 2048 else { throw PlayCredentialsError("the key file's RSA key is under 2048 bits") }
        self.email = email
        self.keyId = keyId
        tokenURL = url
    }

    /// The signed assertion exchanged for an access token (RFC 7523, as Google's "Using OAuth 2.0 for
    /// Server to Server Applications" spells it): RS256 with `kid`; `iss` the account, `scope` the
    /// Play Developer API's, `aud` the token URL, `iat` now and `exp` an hour later, Google's limit.
    public func assertion(issuedAt: Date) throws(PlayCredentialsError) -> String {
        struct Header: Encodable { var alg = "RS256", kid: String, typ = "JWT" }
        struct Claims: Encodable { var iss: String, scope: String, aud: String, iat: Int64, exp: Int64 }
        let issued = Int64(issuedAt.timeIntervalSince1970.rounded(.down))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            let header = try encoder.encode(Header(kid: keyId))
            let claims = try encoder.encode(
                Claims(iss: email, scope: PlayAccessTokens.scope, aud: tokenURL.absoluteString, iat: issued, exp: issued + 3600))
            let input = Base64URL.encode(header) + "." + Base64URL.encode(claims)
            let signature = try key.signature(for: Data(input.utf8), padding: .insecurePKCS1v1_5)
            return input + "." + Base64URL.encode(signature.rawRepresentation)
        } catch {
            throw PlayCredentialsError("could not sign the assertion: \(error)")
        }
    }
}

/// The access tokens every call of the Play Developer API carries: an assertion signed by the
/// service account's key, exchanged at Google's token endpoint (the JWT bearer grant) for a token of
/// about an hour, reused until ``renewal`` before it ends, as Google's own libraries do. The key file
/// is read again whenever it changes on disk, so that a rotated key is used from the next call on.
public actor PlayAccessTokens {
    /// The Play Developer API's OAuth scope.
    public static let scope = "https://www.googleapis.com/auth/androidpublisher"
    /// How long before its expiry a token is replaced: Google's libraries use 3 minutes 45 seconds.
    public static let renewal: TimeInterval = 225

    /// The key file's path.
    public let keyFile: String
    let caller: APICaller
    private var account: (file: FileIdentity, account: PlayServiceAccount)?
    private var token: (value: String, expires: Date, file: FileIdentity)?

    /// Tokens for the account in `keyFile`, exchanged through `caller`.
    public init(keyFile: String, caller: APICaller) {
        self.keyFile = keyFile
        self.caller = caller
    }

    /// A token valid at `now` for at least ``renewal`` more.
    public func token(now: Date) async throws(PlayAPIError) -> String {
        guard let identity = FileIdentity(keyFile) else {
            throw PlayAPIError(.credentials, operation: "token", message: "cannot read the service account key file \(keyFile)")
        }
        if let token, token.file == identity, token.expires.timeIntervalSince(now) > Self.renewal { return token.value }
        let account = try serviceAccount(identity)
        let assertion: String
        do {
            assertion = try account.assertion(issuedAt: now)
        } catch {
            throw PlayAPIError(.credentials, operation: "token", message: error.description)
        }
        let body = "grant_type=\(APICaller.percentEncoded("urn:ietf:params:oauth:grant-type:jwt-bearer"))&assertion=\(assertion)"
        let response = try await caller.send(
            "token",
            request: { () throws(PlayAPIError) -> APIRequest in
                APIRequest(
                    method: "POST", url: account.tokenURL.absoluteString,
                    headers: [("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json")],
                    body: Array(body.utf8))
            },
            judge: { response in
                let failure = PlayAPIError.tokenFailure(response)
                return (failure, failure.isRetryable)
            },
            unreachable: { PlayAPIError(.unreachable, operation: "token", message: "\($0)") })
        struct Answer: Decodable {
            var access_token: String?
            var expires_in: FlexibleInteger?
        }
        guard let answer = try? JSONDecoder().decode(Answer.self, from: Data(response.body)), let value = answer.access_token,
            !value.isEmpty
        else { throw PlayAPIError(.malformed, operation: "token", status: response.status, message: "no access_token in the answer") }
        let lifetime = TimeInterval(answer.expires_in?.value ?? 3600)
        token = (value, now.addingTimeInterval(lifetime), identity)
        return value
    }

    /// Forgets the token: Google refused it (401), and the next call gets another.
    public func invalidate() {
        token = nil
    }

    private func serviceAccount(_ identity: FileIdentity) throws(PlayAPIError) -> PlayServiceAccount {
        if let account, account.file == identity { return account.account }
        guard let data = FileManager.default.contents(atPath: keyFile) else {
            throw PlayAPIError(.credentials, operation: "token", message: "cannot read the service account key file \(keyFile)")
        }
        do {
            let loaded = try PlayServiceAccount(json: data)
            account = (identity, loaded)
            return loaded
        } catch {
            throw PlayAPIError(.credentials, operation: "token", message: "\(keyFile): \(error.description)")
        }
    }
}

/// A service account key file that cannot be used.
public struct PlayCredentialsError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public let description: String
    init(_ description: String) { self.description = description }
}
