import Crypto
import Foundation
import SwiftASN1
import X509

@testable import CatalogServer

/// A stand-in for Apple's PKI: a root, a WWDR-like intermediate and a receipt-signing-like leaf, all P-256, with Apple's
/// marker extensions where Apple puts them, and a signer of AppTransaction JWSs with the leaf key. Any test in this
/// target can use it to make AppTransactions that `ReportAppTransactions` accepts (with `verifier()`), or ones it must not.
struct AppStoreTestPKI {
    /// Apple's marker on the WWDR intermediate.
    static let intermediateMarkerOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]
    /// Apple's marker on the App Store receipt-signing leaf.
    static let leafMarkerOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]

    /// Fixed dates so that results don't depend on the day the tests run.
    static func date(_ year: Int, _ month: Int = 1, _ day: Int = 1) -> Date {
        var components = DateComponents()
        components.year = year
        components.month = month
        components.day = day
        components.timeZone = TimeZone(identifier: "UTC")
        // Gregorian in UTC always has these dates; the fallback only keeps this free of force unwraps.
        return Calendar(identifier: .gregorian).date(from: components) ?? Date(timeIntervalSince1970: 0)
    }

    /// When the default AppTransaction says it was signed: inside every default validity window.
    static let defaultSignedDate = date(2025, 1, 1)
    /// The default leaf validity, about two years like Apple's receipt-signing certificates.
    static let defaultLeafValidity = date(2024, 1, 1)...date(2026, 1, 1)

    let rootKey: P256.Signing.PrivateKey
    let intermediateKey: P256.Signing.PrivateKey
    let leafKey: P256.Signing.PrivateKey
    let root: Certificate
    let intermediate: Certificate
    let leaf: Certificate

    /// The root's DER, as a root certificate file holds it.
    var rootDER: [UInt8] { Self.der(root) }
    /// The root as a PEM file would hold it.
    var rootPEM: String {
        PEMDocument(type: "CERTIFICATE", derBytes: rootDER).pemString
    }
    /// The x5c header Apple sends: leaf, intermediate, root, each standard base64 of DER.
    var x5c: [String] { [leaf, intermediate, root].map { Data(Self.der($0)).base64EncodedString() } }

    /// Makes a fresh PKI. Every PKI uses the same names, so a second one is an impostor whose certificates look like
    /// the first's by name but are signed by other keys.
    static func make(
        leafValidity: ClosedRange<Date> = defaultLeafValidity,
        leafCarriesMarker: Bool = true,
        intermediateCarriesMarker: Bool = true
    ) throws -> AppStoreTestPKI {
        let rootKey = P256.Signing.PrivateKey()
        let intermediateKey = P256.Signing.PrivateKey()
        let leafKey = P256.Signing.PrivateKey()

        let rootName = try DistinguishedName {
            CommonName("Test Root CA - G3")
            OrganizationalUnitName("Test Certification Authority")
            OrganizationName("Test Inc.")
            CountryName("US")
        }
        let intermediateName = try DistinguishedName {
            CommonName("Test Worldwide Developer Relations Certification Authority")
            OrganizationalUnitName("G6")
            OrganizationName("Test Inc.")
            CountryName("US")
        }
        let leafName = try DistinguishedName {
            CommonName("Test ECC Mac App Store and iTunes Store Receipt Signing")
            OrganizationalUnitName("Test Worldwide Developer Relations")
            OrganizationName("Test Inc.")
            CountryName("US")
        }

        let root = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: .init(rootKey.publicKey),
            notValidBefore: date(2014),
            notValidAfter: date(2039),
            issuer: rootName,
            subject: rootName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: Certificate.PublicKey(rootKey.publicKey))
            },
            issuerPrivateKey: .init(rootKey)
        )
        let intermediate = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: .init(intermediateKey.publicKey),
            notValidBefore: date(2021),
            notValidAfter: date(2036),
            issuer: rootName,
            subject: intermediateName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: Certificate.PublicKey(intermediateKey.publicKey))
                AuthorityKeyIdentifier(keyIdentifier: SubjectKeyIdentifier(hash: Certificate.PublicKey(rootKey.publicKey)).keyIdentifier)
                if intermediateCarriesMarker { AppleMarker(oid: intermediateMarkerOID) }
            },
            issuerPrivateKey: .init(rootKey)
        )
        let leaf = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: .init(leafKey.publicKey),
            notValidBefore: leafValidity.lowerBound,
            notValidAfter: leafValidity.upperBound,
            issuer: intermediateName,
            subject: leafName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                AuthorityKeyIdentifier(
                    keyIdentifier: SubjectKeyIdentifier(hash: Certificate.PublicKey(intermediateKey.publicKey)).keyIdentifier)
                if leafCarriesMarker { AppleMarker(oid: leafMarkerOID) }
            },
            issuerPrivateKey: .init(intermediateKey)
        )
        return AppStoreTestPKI(
            rootKey: rootKey, intermediateKey: intermediateKey, leafKey: leafKey,
            root: root, intermediate: intermediate, leaf: leaf
        )
    }

    /// Issues another leaf under this PKI's intermediate, for any public key (e.g. a P-384 one that ES256 can't use).
    func issueLeaf(publicKey: Certificate.PublicKey, carriesMarker: Bool = true) throws -> Certificate {
        try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: publicKey,
            notValidBefore: leaf.notValidBefore,
            notValidAfter: leaf.notValidAfter,
            issuer: intermediate.subject,
            subject: leaf.subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                if carriesMarker { AppleMarker(oid: Self.leafMarkerOID) }
            },
            issuerPrivateKey: .init(intermediateKey)
        )
    }

    /// A verifier that trusts this PKI's root only.
    func verifier() throws -> ReportAppTransactions {
        try ReportAppTransactions(roots: [root])
    }

    /// The payload of an AppTransaction as StoreKit 2 signs it, with the fields the verifier reads set from the
    /// arguments (nil leaves a field out) and the rest filled with realistic values.
    static func appTransactionPayload(
        bundleID: String? = "com.example.catalog",
        environment: String? = "Production",
        appTransactionID: String? = "704289572",
        originalTransactionID: String? = nil,
        signedDate: Date? = defaultSignedDate
    ) -> [String: any Sendable] {
        var payload: [String: any Sendable] = [
            "appAppleId": 1_234_567_890,
            "applicationVersion": "42",
            "versionExternalIdentifier": 0,
            "originalApplicationVersion": "1",
            "originalPurchaseDate": 1_600_000_000_000,
            "deviceVerification": "uG5bFzmvSmaR0u0U2sNAoxYyLyRGnb7ZqXvkfpdwhWS9EgqYQoqKD9eUcNeWaQ3e",
            "deviceVerificationNonce": "48ccfa42-7431-4f22-9908-7e88983e105a",
            "originalPlatform": "iOS",
        ]
        payload["bundleId"] = bundleID
        payload["receiptType"] = environment
        payload["appTransactionId"] = appTransactionID
        payload["originalTransactionId"] = originalTransactionID
        if let signedDate {
            let milliseconds = Int64((signedDate.timeIntervalSince1970 * 1000).rounded())
            payload["receiptCreationDate"] = milliseconds
            payload["requestDate"] = milliseconds
        }
        return payload
    }

    /// The payload of a StoreKit 2 purchase transaction (`JWSTransaction`) as the App Store signs it, with the same
    /// leaf that signs AppTransactions: it has a bundle id, an `environment` and an `originalTransactionId`, but also
    /// `transactionId` and `productId`, and no `receiptType`.
    static func purchaseTransactionPayload(
        bundleID: String = "com.example.catalog", originalTransactionID: String = "2000000123456789",
        signedDate: Date = defaultSignedDate
    ) -> [String: any Sendable] {
        let milliseconds = Int64((signedDate.timeIntervalSince1970 * 1000).rounded())
        return [
            "transactionId": originalTransactionID,
            "originalTransactionId": originalTransactionID,
            "bundleId": bundleID,
            "productId": "com.example.catalog.coins100",
            "purchaseDate": milliseconds,
            "originalPurchaseDate": milliseconds,
            "quantity": 1,
            "type": "Consumable",
            "inAppOwnershipType": "PURCHASED",
            "signedDate": milliseconds,
            "environment": "Production",
            "transactionReason": "PURCHASE",
            "storefront": "USA",
            "storefrontId": "143441",
            "price": 990,
            "currency": "USD",
        ]
    }

    /// An AppTransaction JWS signed by this PKI's leaf, which the verifier accepts for `bundleID` (given a known
    /// environment and an id).
    func appTransactionJWS(
        bundleID: String? = "com.example.catalog",
        environment: String? = "Production",
        appTransactionID: String? = "704289572",
        originalTransactionID: String? = nil,
        signedDate: Date? = defaultSignedDate
    ) throws -> String {
        try jws(
            payload: Self.appTransactionPayload(
                bundleID: bundleID, environment: environment, appTransactionID: appTransactionID,
                originalTransactionID: originalTransactionID, signedDate: signedDate
            ))
    }

    /// The header Apple sends: ES256 with the full chain.
    var header: [String: any Sendable] { ["alg": "ES256", "x5c": x5c] }

    /// Signs any header and payload objects with the leaf key (ES256, raw r||s): for tests that need odd headers.
    func jws(header: [String: any Sendable]? = nil, payload: [String: any Sendable]) throws -> String {
        try jws(headerJSON: Self.json(header ?? self.header), payloadJSON: Self.json(payload))
    }

    /// Signs raw header and payload bytes with the leaf key: for tests that need bytes that aren't a JSON object.
    func jws(headerJSON: Data, payloadJSON: Data) throws -> String {
        let signingInput = Self.base64URL(headerJSON) + "." + Self.base64URL(payloadJSON)
        let signature = try leafKey.signature(for: Data(signingInput.utf8))
        return signingInput + "." + Self.base64URL(signature.rawRepresentation)
    }

    /// JSON with sorted keys, so a JWS is reproducible from its inputs.
    static func json(_ object: [String: any Sendable]) throws -> Data {
        try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    }

    /// base64url without padding, as JWS uses it.
    static func base64URL<Bytes: DataProtocol>(_ bytes: Bytes) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func der(_ certificate: Certificate) -> [UInt8] {
        var serializer = DER.Serializer()
        // Serialising a certificate that was parsed or built here cannot fail; [] would make any test using it fail loudly.
        return (try? serializer.serialize(certificate)).map { serializer.serializedBytes } ?? []
    }
}

/// One of Apple's marker extensions: non-critical, value ASN.1 NULL, as on Apple's real certificates.
private struct AppleMarker: CertificateExtensionConvertible {
    var oid: ASN1ObjectIdentifier

    func makeCertificateExtension() throws -> Certificate.Extension {
        Certificate.Extension(oid: oid, critical: false, value: [0x05, 0x00])
    }
}
