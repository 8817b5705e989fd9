import AppStore
import CatalogTestSupport
import Crypto
import Foundation
import Ledger
import SwiftASN1
import X509
import _CryptoExtras

/// A stand-in for Apple's PKI, made by the tests: a root, a WWDR-like intermediate and a
/// receipt-signing-like leaf, with Apple's marker extensions where Apple puts them. `ecdsa` makes
/// P-256 ones for JWS; `rsa` makes RSA ones for receipts. Every PKI uses the same names, so a second
/// one is an impostor whose certificates look like the first's by name but are signed by other keys.
///
/// `@unchecked Sendable`: every stored property is a `let`; the one that is not `Sendable`,
/// swift-crypto's P-256 private key, is an immutable value whose signing only reads it, which
/// BoringSSL allows from any thread.
public struct AppStoreTestPKI: @unchecked Sendable {
    /// Apple's marker on the WWDR intermediate.
    public static let intermediateMarkerOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]
    /// Apple's marker on the receipt-signing leaf.
    public static let leafMarkerOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]

    /// A fixed UTC date, so results never depend on the day the tests run.
    public static func date(_ year: Int, _ month: Int = 1, _ day: Int = 1) -> Date {
        var components = DateComponents()
        components.year = year
        components.month = month
        components.day = day
        components.timeZone = TimeZone(identifier: "UTC")
        return Calendar(identifier: .gregorian).date(from: components) ?? Date(timeIntervalSince1970: 0)
    }

    /// When evidence says it was signed by default: inside every default validity window.
    public static let defaultSignedDate = date(2025, 1, 1)
    /// The default leaf validity, about two years like Apple's.
    public static let defaultLeafValidity = date(2024, 1, 1)...date(2026, 1, 1)

    public let root: Certificate
    public let intermediate: Certificate
    public let leaf: Certificate
    /// The leaf's key as PEM (for openssl, which signs the test receipts).
    public let leafKeyPEM: String
    /// The leaf's key when it is P-256 (a JWS PKI).
    public let signingKey: P256.Signing.PrivateKey?

    /// A trust set holding this PKI's root only.
    public var trust: PurchaseTrust { PurchaseTrust(jwsRoots: [root], receiptRoots: [root]) }

    /// Makes a P-256 PKI, for JWS.
    public static func ecdsa(
        leafValidity: ClosedRange<Date> = defaultLeafValidity, leafMarker: Bool = true, intermediateMarker: Bool = true
    ) throws -> AppStoreTestPKI {
        let keys = (P256.Signing.PrivateKey(), P256.Signing.PrivateKey(), P256.Signing.PrivateKey())
        return try make(
            keys: (.init(keys.0), .init(keys.1), .init(keys.2)), leafKeyPEM: keys.2.pemRepresentation, signingKey: keys.2,
            algorithm: .ecdsaWithSHA256, leafValidity: leafValidity, leafMarker: leafMarker, intermediateMarker: intermediateMarker)
    }

    /// Makes an RSA-2048 PKI, for receipts; certificates signed with SHA-256 or SHA-1 as Apple's older ones are.
    ///
    /// Three RSA keys take a noticeable while to make: that happens on a thread of its own
    /// (`offThePool`), never on the few that run every test's tasks.
    public static func rsa(
        leafValidity: ClosedRange<Date> = defaultLeafValidity, leafMarker: Bool = true, intermediateMarker: Bool = true,
        sha1: Bool = false
    ) async throws -> AppStoreTestPKI {
        try await offThePool {
            try rsaNow(leafValidity: leafValidity, leafMarker: leafMarker, intermediateMarker: intermediateMarker, sha1: sha1)
        }
    }

    private static func rsaNow(
        leafValidity: ClosedRange<Date>, leafMarker: Bool, intermediateMarker: Bool, sha1: Bool
    ) throws -> AppStoreTestPKI {
        let keys = try (
            _RSA.Signing.PrivateKey(keySize: .bits2048), _RSA.Signing.PrivateKey(keySize: .bits2048),
            _RSA.Signing.PrivateKey(keySize: .bits2048)
        )
        return try make(
            keys: (.init(keys.0), .init(keys.1), .init(keys.2)), leafKeyPEM: keys.2.pemRepresentation, signingKey: nil,
            algorithm: sha1 ? .sha1WithRSAEncryption : .sha256WithRSAEncryption, leafValidity: leafValidity, leafMarker: leafMarker,
            intermediateMarker: intermediateMarker)
    }

    private static func make(
        keys: (Certificate.PrivateKey, Certificate.PrivateKey, Certificate.PrivateKey), leafKeyPEM: String,
        signingKey: P256.Signing.PrivateKey?, algorithm: Certificate.SignatureAlgorithm, leafValidity: ClosedRange<Date>, leafMarker: Bool,
        intermediateMarker: Bool
    ) throws -> AppStoreTestPKI {
        let rootName = try DistinguishedName {
            CommonName("Test Root CA")
            OrganizationName("Test Inc.")
            CountryName("US")
        }
        let intermediateName = try DistinguishedName {
            CommonName("Test Worldwide Developer Relations Certification Authority")
            OrganizationName("Test Inc.")
            CountryName("US")
        }
        let leafName = try DistinguishedName {
            CommonName("Test App Store Receipt Signing")
            OrganizationName("Test Inc.")
            CountryName("US")
        }
        let root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: keys.0.publicKey, notValidBefore: date(2014), notValidAfter: date(2039),
            issuer: rootName, subject: rootName, signatureAlgorithm: algorithm,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: keys.0.publicKey)
            },
            issuerPrivateKey: keys.0)
        let intermediate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: keys.1.publicKey, notValidBefore: date(2015), notValidAfter: date(2036),
            issuer: rootName, subject: intermediateName, signatureAlgorithm: algorithm,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: keys.1.publicKey)
                AuthorityKeyIdentifier(keyIdentifier: SubjectKeyIdentifier(hash: keys.0.publicKey).keyIdentifier)
                if intermediateMarker { AppleMarker(oid: intermediateMarkerOID) }
            },
            issuerPrivateKey: keys.0)
        let leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: keys.2.publicKey, notValidBefore: leafValidity.lowerBound,
            notValidAfter: leafValidity.upperBound, issuer: intermediateName, subject: leafName, signatureAlgorithm: algorithm,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                AuthorityKeyIdentifier(keyIdentifier: SubjectKeyIdentifier(hash: keys.1.publicKey).keyIdentifier)
                if leafMarker { AppleMarker(oid: leafMarkerOID) }
            },
            issuerPrivateKey: keys.1)
        return AppStoreTestPKI(root: root, intermediate: intermediate, leaf: leaf, leafKeyPEM: leafKeyPEM, signingKey: signingKey)
    }

    /// A self-signed certificate like the one Xcode makes for StoreKit testing, with its key.
    public static func xcode(rsa: Bool = false) throws -> (certificate: Certificate, keyPEM: String, signingKey: P256.Signing.PrivateKey?) {
        let name = try DistinguishedName { CommonName("StoreKit Testing in Xcode") }
        let key: Certificate.PrivateKey
        let pem: String
        var signingKey: P256.Signing.PrivateKey?
        if rsa {
            let rsaKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            (key, pem) = (.init(rsaKey), rsaKey.pemRepresentation)
        } else {
            let ecKey = P256.Signing.PrivateKey()
            (key, pem) = (.init(ecKey), ecKey.pemRepresentation)
            signingKey = ecKey
        }
        let certificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: key.publicKey, notValidBefore: date(2020), notValidAfter: date(2030),
            issuer: name, subject: name, signatureAlgorithm: rsa ? .sha256WithRSAEncryption : .ecdsaWithSHA256,
            extensions: try Certificate.Extensions { Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0)) },
            issuerPrivateKey: key)
        return (certificate, pem, signingKey)
    }

    /// `count` CA certificates that share one name and one RSA key and differ only in their subject
    /// alternative name, each with Apple's intermediate marker, and a leaf with Apple's leaf marker
    /// issued under that name: every one of them verifies as the issuer of every other, which makes a
    /// chain builder that is handed them all try every ordering. The envelope of a forged receipt
    /// (issue 35: eight of them kept the old verifier busy for minutes).
    public static func mutuallyIssuing(count: Int) async throws -> (leaf: Certificate, leafKeyPEM: String, certificates: [Certificate]) {
        try await offThePool {
            let caKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            let leafKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            let issuer = Certificate.PrivateKey(caKey)
            let name = try DistinguishedName {
                CommonName("Mutual Certification Authority")
                OrganizationName("Test Inc.")
            }
            let certificates = try (0..<count).map { index in
                try Certificate(
                    version: .v3, serialNumber: .init(), publicKey: issuer.publicKey, notValidBefore: date(2015), notValidAfter: date(2036),
                    issuer: name, subject: name, signatureAlgorithm: .sha256WithRSAEncryption,
                    extensions: try Certificate.Extensions {
                        Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                        Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                        SubjectAlternativeNames([.dnsName("ca\(index).example")])
                        AppleMarker(oid: intermediateMarkerOID)
                    },
                    issuerPrivateKey: issuer)
            }
            let leaf = try Certificate(
                version: .v3, serialNumber: .init(), publicKey: Certificate.PrivateKey(leafKey).publicKey, notValidBefore: date(2024),
                notValidAfter: date(2026), issuer: name, subject: try DistinguishedName { CommonName("Test App Store Receipt Signing") },
                signatureAlgorithm: .sha256WithRSAEncryption,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.notCertificateAuthority)
                    Critical(KeyUsage(digitalSignature: true))
                    AppleMarker(oid: leafMarkerOID)
                },
                issuerPrivateKey: issuer)
            return (leaf, leafKey.pemRepresentation, certificates)
        }
    }

    // MARK: - JWS

    /// The x5c header Apple sends: leaf, intermediate, root, each standard base64 of DER.
    public var x5c: [String] { [leaf, intermediate, root].map { Data(Self.der($0)).base64EncodedString() } }

    /// Apple's header: ES256 with the full chain.
    public var header: [String: any Sendable] { ["alg": "ES256", "x5c": x5c] }

    /// A JWS of `payload` signed by this PKI's leaf, with `header` (Apple's by default).
    public func jws(header: [String: any Sendable]? = nil, payload: [String: any Sendable]) throws -> String {
        guard let signingKey else { throw TestPKIError("an RSA PKI signs receipts, not JWS") }
        return try Self.sign(header: header ?? self.header, payload: payload, key: signingKey)
    }

    /// Signs header and payload objects with an ES256 key (raw r||s).
    public static func sign(header: [String: any Sendable], payload: [String: any Sendable], key: P256.Signing.PrivateKey) throws -> String
    {
        let input = base64URL(try json(header)) + "." + base64URL(try json(payload))
        return input + "." + base64URL(try key.signature(for: Data(input.utf8)).rawRepresentation)
    }

    /// A transaction payload with Apple's fields; overrides replace or (with NSNull) remove fields.
    public static func transaction(_ overrides: [String: any Sendable] = [:]) -> [String: any Sendable] {
        merge(
            [
                "transactionId": "2000000000000001", "originalTransactionId": "2000000000000001", "webOrderLineItemId": "2000000000000002",
                "bundleId": "com.example.app", "productId": "com.example.app.pro.monthly", "subscriptionGroupIdentifier": "21000000",
                "purchaseDate": milliseconds(date(2024, 12, 31)), "originalPurchaseDate": milliseconds(date(2024, 12, 31)),
                "expiresDate": milliseconds(date(2025, 1, 31)), "quantity": 1, "type": "Auto-Renewable Subscription",
                "inAppOwnershipType": "PURCHASED", "signedDate": milliseconds(defaultSignedDate), "environment": "Production",
                "transactionReason": "PURCHASE", "storefront": "USA", "storefrontId": "143441", "price": 9990, "currency": "USD",
            ], overrides)
    }

    /// A renewal info payload.
    public static func renewalInfo(_ overrides: [String: any Sendable] = [:]) -> [String: any Sendable] {
        merge(
            [
                "originalTransactionId": "2000000000000001", "autoRenewProductId": "com.example.app.pro.monthly",
                "productId": "com.example.app.pro.monthly", "autoRenewStatus": 1, "signedDate": milliseconds(defaultSignedDate),
                "environment": "Production", "recentSubscriptionStartDate": milliseconds(date(2024, 12, 31)),
                "renewalDate": milliseconds(date(2025, 1, 31)),
            ], overrides)
    }

    /// An AppTransaction payload.
    public static func appTransaction(_ overrides: [String: any Sendable] = [:]) -> [String: any Sendable] {
        merge(
            [
                "receiptType": "Production", "appAppleId": 1_234_567_890, "bundleId": "com.example.app", "applicationVersion": "42",
                "receiptCreationDate": milliseconds(defaultSignedDate), "originalPurchaseDate": milliseconds(date(2020)),
                "originalApplicationVersion": "1", "appTransactionId": "704289572", "originalPlatform": "iOS",
            ], overrides)
    }

    /// A notification payload whose `data` carries the given nested tokens.
    public static func notification(
        type: String = "DID_RENEW", subtype: String? = nil, data: [String: any Sendable] = [:], _ overrides: [String: any Sendable] = [:]
    ) -> [String: any Sendable] {
        var payload: [String: any Sendable] = [
            "notificationType": type, "notificationUUID": UUID().uuidString.lowercased(), "version": "2.0",
            "signedDate": milliseconds(defaultSignedDate),
            "data": merge(["environment": "Production", "bundleId": "com.example.app", "appAppleId": 1_234_567_890, "status": 1], data),
        ]
        payload["subtype"] = subtype
        return merge(payload, overrides)
    }

    static func merge(_ base: [String: any Sendable], _ overrides: [String: any Sendable]) -> [String: any Sendable] {
        var result = base
        for (key, value) in overrides {
            result[key] = value is NSNull ? nil : value
        }
        return result
    }

    /// Apple's date form: milliseconds since 1970.
    public static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }

    /// JSON with sorted keys.
    public static func json(_ object: [String: any Sendable]) throws -> Data {
        try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    }

    /// base64url without padding.
    public static func base64URL<Bytes: DataProtocol>(_ bytes: Bytes) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// A certificate's DER.
    public static func der(_ certificate: Certificate) -> [UInt8] {
        var serializer = DER.Serializer()
        return (try? serializer.serialize(certificate)).map { serializer.serializedBytes } ?? []
    }

    /// A certificate as PEM.
    public static func pem(_ certificate: Certificate) -> String {
        PEMDocument(type: "CERTIFICATE", derBytes: der(certificate)).pemString
    }
}

/// A test PKI that could not do what was asked.
public struct TestPKIError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// One of Apple's marker extensions: non-critical, value ASN.1 NULL, as on Apple's certificates.
struct AppleMarker: CertificateExtensionConvertible {
    var oid: ASN1ObjectIdentifier

    func makeCertificateExtension() throws -> Certificate.Extension {
        Certificate.Extension(oid: oid, critical: false, value: [0x05, 0x00])
    }
}
