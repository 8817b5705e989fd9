import Crypto
import FeedSigning
import Foundation
import Ledger
import Testing
import _CryptoExtras

@testable import GooglePlay

/// Google Play's evidence verified offline, attacked as a stranger would: purchases signed by the
/// app's licence key over their exact bytes, and the Pub/Sub push token (docs/google-play.md).
@Suite struct PlayVerificationTests {
    static let package = "com.example.playtest"

    /// A licence key pair, as Play Console holds the private half and shows the public one.
    struct LicenceKey {
        let privateKey: _RSA.Signing.PrivateKey
        var base64: String { privateKey.publicKey.derRepresentation.base64EncodedString() }

        init(bits: Int = 2048) throws {
            privateKey = try _RSA.Signing.PrivateKey(keySize: bits == 2048 ? .bits2048 : .init(bitCount: bits))
        }

        /// Google's signature over `bytes`: RSASSA-PKCS1-v1_5 with SHA-1, base64.
        func sign(_ bytes: [UInt8]) throws -> String {
            try privateKey.signature(for: Insecure.SHA1.hash(data: bytes), padding: .insecurePKCS1v1_5).rawRepresentation
                .base64EncodedString()
        }
    }

    static func purchase(state: Int = 0, package: String = package, extra: String = "") -> [UInt8] {
        Array(
            #"{"orderId":"GPA.0000-1111-2222-33333","packageName":"\#(package)","productId":"gems.100","purchaseTime":1764000000000,"purchaseState":\#(state),"purchaseToken":"token-abc","obfuscatedAccountId":"acct-1","quantity":1,"acknowledged":false\#(extra)}"#
                .utf8)
    }

    static func verifier(_ key: LicenceKey) throws -> PlayPurchaseVerifier {
        PlayPurchaseVerifier(packageName: package, key: try PlayLicenseKey(base64: key.base64))
    }

    @Test func aPurchaseSignedByTheLicenceKeyOverItsExactBytesVerifies() throws {
        let key = try LicenceKey()
        let bytes = Self.purchase(extra: #","developerPayload":"café ☕ 日本""#)
        let purchase = try Self.verifier(key).verify(originalJson: bytes, signature: try key.sign(bytes))
        #expect(purchase.purchaseToken == "token-abc")
        #expect(purchase.obfuscatedAccountId == "acct-1")
        #expect(purchase.state == .purchased)
    }

    /// The attacks: each must be refused, for the reason given.
    @Test func forgeriesAreRefused() throws {
        let key = try LicenceKey()
        let verifier = try Self.verifier(key)
        let bytes = Self.purchase()
        let signature = try key.sign(bytes)
        func refusal(_ json: [UInt8], _ signature: String) -> PurchaseRefusal.Code? {
            do {
                _ = try verifier.verify(originalJson: json, signature: signature)
                return nil
            } catch {
                return error.code
            }
        }
        // The same object written again with other spacing is not what was signed.
        let object = try JSONSerialization.jsonObject(with: Data(bytes))
        let rewritten = Array(try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted]))
        #expect(refusal(rewritten, signature) == .notAuthenticated)
        // One byte changed: another product.
        var changed = bytes
        changed[changed.firstIndex(of: UInt8(ascii: "1"))!] = UInt8(ascii: "9")
        #expect(refusal(changed, signature) == .notAuthenticated)
        // A pending purchase made purchased, its signature kept.
        let pending = Self.purchase(state: 4)
        let pendingSignature = try key.sign(pending)
        #expect(try verifier.verify(originalJson: pending, signature: pendingSignature).state == .pending)
        #expect(refusal(Self.purchase(state: 0), pendingSignature) == .notAuthenticated)
        // Another key's signature, and another app's purchase correctly signed.
        #expect(refusal(bytes, try LicenceKey().sign(bytes)) == .notAuthenticated)
        let other = Self.purchase(package: "com.example.other")
        #expect(refusal(other, try key.sign(other)) == .wrongApp)
        // Not base64, or empty.
        #expect(refusal(bytes, "not base64!") == .malformed)
        #expect(refusal(bytes, "") == .notAuthenticated)
        // Signed, but no token: nothing to know the purchase by.
        let tokenless = Array(#"{"packageName":"com.example.playtest","productId":"gems.100","purchaseState":0}"#.utf8)
        #expect(refusal(tokenless, try key.sign(tokenless)) == .malformed)
        // Too large to be a purchase.
        let huge = Self.purchase(extra: ",\"developerPayload\":\"" + String(repeating: "x", count: 20_000) + "\"")
        #expect(refusal(huge, try key.sign(huge)) == .malformed)
    }

    @Test func aLicenceKeyMustBeAnRSAKeyOfAtLeast2048Bits() throws {
        #expect(throws: PlayConfigurationError.self) { try PlayLicenseKey(base64: "dummy_public_key") }
        #expect(throws: PlayConfigurationError.self) { try PlayLicenseKey(base64: Data(repeating: 7, count: 128).base64EncodedString()) }
        let p256 = P256.Signing.PrivateKey().publicKey.derRepresentation.base64EncodedString()
        #expect(throws: PlayConfigurationError.self) { try PlayLicenseKey(base64: p256) }
        let short = try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 1024))
        #expect(throws: PlayConfigurationError.self) { try PlayLicenseKey(base64: short.publicKey.derRepresentation.base64EncodedString()) }
        _ = try PlayLicenseKey(base64: "  " + (try LicenceKey()).base64 + "\n")
    }

    // MARK: - Push tokens

    static let audience = "https://catalog.example.com/v1/apps/com.example.playtest/notifications/google-play"
    static let account = "play-push@example-project.iam.gserviceaccount.com"
    static let issued: TimeInterval = 1_764_000_000

    struct Google {
        let key: _RSA.Signing.PrivateKey
        let kid = "4d7f2e10a6c9b0d3"

        init() throws { key = try _RSA.Signing.PrivateKey(keySize: .bits2048) }

        var jwks: Data {
            get throws {
                let primitives = try key.publicKey.getKeyPrimitives()
                return Data(
                    #"{"keys":[{"kty":"EC","kid":"ec","crv":"P-256"},{"kty":"RSA","alg":"RS256","use":"sig","kid":"\#(kid)","n":"\#(Base64URL.encode(primitives.modulus))","e":"\#(Base64URL.encode(primitives.publicExponent))"}]}"#
                        .utf8)
            }
        }

        func token(header: [String: Any]? = nil, claims: [String: Any] = [:], sign: Bool = true) throws -> String {
            var body: [String: Any] = [
                "iss": "https://accounts.google.com", "aud": PlayVerificationTests.audience, "email": PlayVerificationTests.account,
                "email_verified": true, "iat": PlayVerificationTests.issued, "exp": PlayVerificationTests.issued + 3600,
                "sub": "1234567890",
            ]
            for (name, value) in claims { body[name] = value is NSNull ? nil : value }
            let head = try JSONSerialization.data(withJSONObject: header ?? ["alg": "RS256", "kid": kid, "typ": "JWT"])
            let input = Base64URL.encode(head) + "." + Base64URL.encode(try JSONSerialization.data(withJSONObject: body))
            guard sign else { return input + "." }
            let signature = try key.signature(for: SHA256.hash(data: Data(input.utf8)), padding: .insecurePKCS1v1_5)
            return input + "." + Base64URL.encode(signature.rawRepresentation)
        }
    }

    static func verifier(_ google: Google) throws -> PushTokenVerifier {
        PushTokenVerifier(audience: audience, serviceAccount: account, keys: try GoogleKeySet(json: try google.jwks))
    }

    @Test func aPushTokenOfGoogleForThisSubscriptionVerifies() throws {
        let google = try Google()
        try Self.verifier(google).verify(try google.token(), now: Date(timeIntervalSince1970: Self.issued + 1800))
        // Either spelling of Google's issuer.
        try Self.verifier(google).verify(
            try google.token(claims: ["iss": "accounts.google.com"]), now: Date(timeIntervalSince1970: Self.issued + 1800))
    }

    @Test func pushTokensAStrangerCouldMakeAreRefused() throws {
        let google = try Google()
        let verifier = try Self.verifier(google)
        let now = Date(timeIntervalSince1970: Self.issued + 1800)
        func refusal(_ token: String, at: Date? = nil) -> PurchaseRefusal.Code? {
            do {
                try verifier.verify(token, now: at ?? now)
                return nil
            } catch {
                return error.code
            }
        }
        // No signature at all.
        #expect(refusal(try google.token(header: ["alg": "none", "kid": google.kid], sign: false)) == .notAuthenticated)
        // HS256 keyed with the public key (the key-confusion attack): refused before any key is used.
        let confusion = try google.token(header: ["alg": "HS256", "kid": google.kid], sign: false)
        let pem = Data(google.key.publicKey.pemRepresentation.utf8)
        let mac = HMAC<SHA256>.authenticationCode(for: Data(confusion.dropLast().utf8), using: SymmetricKey(data: pem))
        #expect(refusal(confusion + Base64URL.encode(Data(mac))) == .notAuthenticated)
        // The audience changed, the signature kept.
        let genuine = try google.token()
        var parts = genuine.split(separator: ".").map(String.init)
        let forgedClaims = try JSONSerialization.data(withJSONObject: [
            "iss": "https://accounts.google.com", "aud": "https://attacker.example", "email": Self.account, "email_verified": true,
            "iat": Self.issued, "exp": Self.issued + 3600,
        ])
        parts[1] = Base64URL.encode(forgedClaims)
        #expect(refusal(parts.joined(separator: ".")) == .notAuthenticated)
        // Google's signature, but for another subscription, account or issuer, or an unverified email.
        #expect(refusal(try google.token(claims: ["aud": "https://other.example"])) == .wrongApp)
        #expect(refusal(try google.token(claims: ["email": "someone@example.com"])) == .wrongApp)
        #expect(refusal(try google.token(claims: ["email_verified": false])) == .wrongApp)
        #expect(refusal(try google.token(claims: ["iss": "https://evil.example"])) == .wrongApp)
        // Outside its hour, past the leeway either side.
        #expect(refusal(genuine, at: Date(timeIntervalSince1970: Self.issued + 3600 + 61)) == .notAuthenticated)
        #expect(refusal(genuine, at: Date(timeIntervalSince1970: Self.issued - 61)) == .notAuthenticated)
        #expect(refusal(genuine, at: Date(timeIntervalSince1970: Self.issued + 3600 + 59)) == nil)
        // A key the set does not hold fails closed, and a token signed by another key too.
        #expect(refusal(try google.token(header: ["alg": "RS256", "kid": "rotated-away"])) == .notAuthenticated)
        #expect(refusal(try Google().token()) == .notAuthenticated)
        // Not a JWT.
        #expect(refusal("a.b") == .malformed)
        #expect(refusal(String(repeating: "a", count: 9000)) == .malformed)
    }

    @Test func aKeySetMustHoldAnRS256KeyOfAtLeast2048Bits() throws {
        #expect(throws: PlayConfigurationError.self) { try GoogleKeySet(json: Data("[]".utf8)) }
        #expect(throws: PlayConfigurationError.self) { try GoogleKeySet(json: Data(#"{"keys":[{"kty":"EC","kid":"x"}]}"#.utf8)) }
        let short = try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 1024)).publicKey.getKeyPrimitives()
        let weak =
            #"{"keys":[{"kty":"RSA","kid":"w","n":"\#(Base64URL.encode(short.modulus))","e":"\#(Base64URL.encode(short.publicExponent))"}]}"#
        #expect(throws: PlayConfigurationError.self) { try GoogleKeySet(json: Data(weak.utf8)) }
        #expect(try GoogleKeySet(json: try Google().jwks).keyIds == ["4d7f2e10a6c9b0d3"])
    }
}
