import AppStore
import AppStoreTestSupport
import CatalogTestSupport
import Crypto
import Foundation
import Ledger
import Testing
import X509

@testable import CatalogServer

/// The AppTransactions reports carry (`ReportAppTransactions`, on the App Store module's `SignedDataVerifier`) against a PKI
/// built here (AppStoreTestPKI): what is accepted, and that each way of getting it wrong is refused for the right
/// reason. The refusal codes are the ledger's (docs/purchases.md); reasons are checked where the code alone is coarse.
@Suite("Report AppTransactions")
struct ReportAppTransactionTests {
    typealias Code = PurchaseRefusal.Code

    static let bundle = "com.example.catalog"

    private func verify(
        _ jws: String, with pki: AppStoreTestPKI, bundleID: String = bundle, settings: AppStoreApp? = nil
    ) async throws -> Result<VerifiedAppTransaction, PurchaseRefusal> {
        try await pki.verifier().verify(jws, app: ReportAppTransactions.app(bundleID: bundleID, settings: settings))
    }

    /// The refusal's code, or nil when it verified (so that `#expect(kind(r) == .x)` prints both sides).
    private func kind(_ result: Result<VerifiedAppTransaction, PurchaseRefusal>) -> Code? {
        if case .failure(let refusal) = result { return refusal.code }
        return nil
    }

    private func rejection(_ result: Result<VerifiedAppTransaction, PurchaseRefusal>) -> PurchaseRefusal? {
        if case .failure(let refusal) = result { return refusal }
        return nil
    }

    /// Replaces one dot-separated part of a JWS.
    private func replacing(part index: Int, of jws: String, with text: String) -> String {
        var parts = jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        parts[index] = text
        return parts.joined(separator: ".")
    }

    // MARK: - Accepted

    @Test func validAppTransactionVerifies() async throws {
        let pki = try AppStoreTestPKI.make()
        let result = try await verify(try pki.appTransactionJWS(appTransactionID: "704289572"), with: pki)
        #expect(try result.get() == VerifiedAppTransaction(bundleID: Self.bundle, environment: "production", installKey: "704289572"))
    }

    @Test(arguments: [("Production", "production"), ("Sandbox", "sandbox")])
    func environmentIsLowerCased(receiptType: String, expected: String) async throws {
        let pki = try AppStoreTestPKI.make()
        let result = try await verify(try pki.appTransactionJWS(environment: receiptType), with: pki)
        #expect(try result.get().environment == expected)
    }

    /// Once accepted (Xcode under Apple's chain, any spelling's case): Apple's chain signs only Production and
    /// Sandbox, spelt as Apple spells them.
    @Test(arguments: ["Xcode", "SANDBOX"])
    func xcodeOrAnotherSpellingUnderApplesChainIsRefused(receiptType: String) async throws {
        let pki = try AppStoreTestPKI.make()
        let result = try await verify(try pki.appTransactionJWS(environment: receiptType), with: pki)
        #expect(kind(result) == .environmentNotAccepted)
    }

    /// Xcode's AppTransactions are signed by the developer's own Xcode certificate: accepted only when the app's
    /// purchase settings name that certificate.
    @Test func xcodeAppTransactionNeedsTheAppsXcodeCertificate() async throws {
        let pki = try AppStoreTestPKI.make()
        let xcode = try AppStoreTestSupport.AppStoreTestPKI.xcode()
        let key = try #require(xcode.signingKey)
        let jws = try AppStoreTestSupport.AppStoreTestPKI.sign(
            header: ["alg": "ES256", "x5c": [Data(AppStoreTestPKI.der(xcode.certificate)).base64EncodedString()]],
            payload: AppStoreTestPKI.appTransactionPayload(environment: "Xcode"), key: key)
        #expect(kind(try await verify(jws, with: pki)) == .notAuthenticated)
        let settings = AppStoreApp(environments: [.production, .sandbox, .xcode], xcodeCertificate: xcode.certificate)
        #expect(try await verify(jws, with: pki, settings: settings).get().environment == "xcode")
    }

    @Test func installKeyFallsBackToOriginalTransactionId() async throws {
        let pki = try AppStoreTestPKI.make()
        let jws = try pki.appTransactionJWS(appTransactionID: nil, originalTransactionID: "2000000123456789")
        #expect(try await verify(jws, with: pki).get().installKey == "2000000123456789")
    }

    @Test func appTransactionIdWinsOverOriginalTransactionId() async throws {
        let pki = try AppStoreTestPKI.make()
        let jws = try pki.appTransactionJWS(appTransactionID: "704289572", originalTransactionID: "2000000123456789")
        #expect(try await verify(jws, with: pki).get().installKey == "704289572")
    }

    @Test func numericAppTransactionIdIsAccepted() async throws {
        let pki = try AppStoreTestPKI.make()
        var payload = AppStoreTestPKI.appTransactionPayload(appTransactionID: nil)
        payload["appTransactionId"] = 704_289_572
        #expect(try await verify(try pki.jws(payload: payload), with: pki).get().installKey == "704289572")
    }

    @Test func twoCertificateChainIsRefused() async throws {
        // Once accepted, since the root in x5c is never trusted: the App Store always sends leaf, intermediate and
        // root, and one certificate only for Xcode, so two is not a chain it makes.
        let pki = try AppStoreTestPKI.make()
        let jws = try pki.jws(header: ["alg": "ES256", "x5c": Array(pki.x5c.prefix(2))], payload: AppStoreTestPKI.appTransactionPayload())
        #expect(kind(try await verify(jws, with: pki)) == .notAuthenticated)
    }

    /// Once accepted: a JWS's base64url has no padding (RFC 7515 §2), and Purchases reads one spelling only.
    @Test func paddedBase64URLIsRefused() async throws {
        let pki = try AppStoreTestPKI.make()
        func padded(_ text: String) -> String { text + String(repeating: "=", count: (4 - text.count % 4) % 4) }
        let header = padded(AppStoreTestPKI.base64URL(try AppStoreTestPKI.json(pki.header)))
        let payload = padded(AppStoreTestPKI.base64URL(try AppStoreTestPKI.json(AppStoreTestPKI.appTransactionPayload())))
        let signingInput = header + "." + payload
        let signature = try pki.leafKey.signature(for: Data(signingInput.utf8))
        let jws = signingInput + "." + padded(AppStoreTestPKI.base64URL(signature.rawRepresentation))
        #expect(jws.contains("="))
        #expect(kind(try await verify(jws, with: pki)) == .malformed)
    }

    @Test func verifierLoadsPEMAndDERRootFiles() async throws {
        let pki = try AppStoreTestPKI.make()
        let other = try AppStoreTestPKI.make()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apptx-roots-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let pem = directory.appendingPathComponent("root.pem")
        let der = directory.appendingPathComponent("other.cer")
        try Data(pki.rootPEM.utf8).write(to: pem)
        try Data(other.rootDER).write(to: der)

        let verifier = try ReportAppTransactions(rootCertificateFiles: [pem.path, der.path])
        for trusted in [pki, other] {
            let result = await verifier.verify(
                try trusted.appTransactionJWS(), app: ReportAppTransactions.app(bundleID: Self.bundle, settings: nil))
            #expect(try result.get().bundleID == Self.bundle)
        }
    }

    // MARK: - Configuration

    @Test func unusableRootsThrow() throws {
        #expect(throws: PurchaseConfigurationError.self) { try ReportAppTransactions(roots: []) }
        let notDER = FileManager.default.temporaryDirectory.appendingPathComponent("apptx-root-\(UUID().uuidString).cer")
        try Data([0x30, 0x03, 0x02, 0x01, 0x01]).write(to: notDER)
        defer { try? FileManager.default.removeItem(at: notDER) }
        #expect(throws: PurchaseConfigurationError.self) { try ReportAppTransactions(rootCertificateFiles: [notDER.path]) }
        #expect(throws: PurchaseConfigurationError.self) {
            try ReportAppTransactions(rootCertificateFiles: ["/nonexistent/AppleRootCA-G3.cer"])
        }
    }

    // MARK: - Tampering

    @Test func tamperedPayloadIsRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        let jws = try pki.appTransactionJWS(bundleID: "com.example.other")
        // Same header and signature, payload swapped for one naming our bundle.
        let forged = AppStoreTestPKI.base64URL(try AppStoreTestPKI.json(AppStoreTestPKI.appTransactionPayload(bundleID: Self.bundle)))
        let result = try await verify(replacing(part: 1, of: jws, with: forged), with: pki)
        #expect(kind(result) == .notAuthenticated)
    }

    @Test func tamperedSignatureIsRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        let jws = try pki.appTransactionJWS()
        let signaturePart = String(jws.split(separator: ".")[2])
        var signature = try #require(
            Data(base64Encoded: signaturePart.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/") + "=="))
        signature[10] ^= 0x01
        let result = try await verify(replacing(part: 2, of: jws, with: AppStoreTestPKI.base64URL(signature)), with: pki)
        #expect(kind(result) == .notAuthenticated)
    }

    @Test func derEncodedOrShortSignatureIsRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        let jws = try pki.appTransactionJWS()
        let signingInput = jws.split(separator: ".").prefix(2).joined(separator: ".")
        let der = try pki.leafKey.signature(for: Data(signingInput.utf8)).derRepresentation
        for bytes in [der, Data(), Data(repeating: 0, count: 64)] {
            let result = try await verify(replacing(part: 2, of: jws, with: AppStoreTestPKI.base64URL(bytes)), with: pki)
            #expect(kind(result) == .notAuthenticated)
        }
    }

    @Test func signatureByAnotherKeyIsRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        let signingInput =
            AppStoreTestPKI.base64URL(try AppStoreTestPKI.json(pki.header)) + "."
            + AppStoreTestPKI.base64URL(try AppStoreTestPKI.json(AppStoreTestPKI.appTransactionPayload()))
        let signature = try P256.Signing.PrivateKey().signature(for: Data(signingInput.utf8))
        let result = try await verify(signingInput + "." + AppStoreTestPKI.base64URL(signature.rawRepresentation), with: pki)
        #expect(kind(result) == .notAuthenticated)
    }

    @Test func leafWithoutAP256KeyIsRejected() async throws {
        // A chain that is otherwise fine, but the leaf's key is P-384: ES256 cannot be checked with it.
        let pki = try AppStoreTestPKI.make()
        let p384Leaf = try pki.issueLeaf(publicKey: .init(P384.Signing.PrivateKey().publicKey))
        let x5c = [Data(AppStoreTestPKI.der(p384Leaf)).base64EncodedString(), pki.x5c[1], pki.x5c[2]]
        let jws = try pki.jws(header: ["alg": "ES256", "x5c": x5c], payload: AppStoreTestPKI.appTransactionPayload())
        let result = try await verify(jws, with: pki)
        #expect(kind(result) == .notAuthenticated)
        #expect(rejection(result)?.description.contains("P-256") == true)
    }

    @Test func nonCanonicalBase64IsRejected() async throws {
        // The last of 86 characters for 64 bytes carries 2 data bits and 4 unused ones; a lenient decoder would give
        // the same signature for 16 different strings. Set an unused bit and expect a refusal.
        let pki = try AppStoreTestPKI.make()
        let jws = try pki.appTransactionJWS()
        let signaturePart = String(jws.split(separator: ".")[2])
        #expect(signaturePart.count == 86)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let last = try #require(signaturePart.last.flatMap { alphabet.firstIndex(of: $0) })
        let mutated = String(signaturePart.dropLast()) + String(alphabet[last | 0b0001])
        #expect(last & 0b1111 == 0)
        let result = try await verify(replacing(part: 2, of: jws, with: mutated), with: pki)
        #expect(kind(result) == .malformed)
    }

    // MARK: - Chain

    @Test func chainToAnUntrustedRootIsRejected() async throws {
        // The impostor uses the very same names as the trusted PKI, only other keys.
        let trusted = try AppStoreTestPKI.make()
        let impostor = try AppStoreTestPKI.make()
        let result = try await verify(try impostor.appTransactionJWS(), with: trusted)
        #expect(kind(result) == .notAuthenticated)
    }

    @Test func rootInX5cIsNotTrusted() async throws {
        // Trusted leaf and intermediate with an impostor root in x5c[2]: still fine, since x5c[2] is ignored.
        let trusted = try AppStoreTestPKI.make()
        let impostor = try AppStoreTestPKI.make()
        let mixed = [trusted.x5c[0], trusted.x5c[1], impostor.x5c[2]]
        let accepted = try trusted.jws(header: ["alg": "ES256", "x5c": mixed], payload: AppStoreTestPKI.appTransactionPayload())
        #expect(try await verify(accepted, with: trusted).get().bundleID == Self.bundle)
        // And the reverse: an impostor chain that carries the trusted root's certificate is not made trusted by it.
        let carried = [impostor.x5c[0], impostor.x5c[1], trusted.x5c[2]]
        let refused = try impostor.jws(header: ["alg": "ES256", "x5c": carried], payload: AppStoreTestPKI.appTransactionPayload())
        #expect(kind(try await verify(refused, with: trusted)) == .notAuthenticated)
    }

    @Test func leafWithoutAppleMarkerIsRejected() async throws {
        let pki = try AppStoreTestPKI.make(leafCarriesMarker: false)
        let result = try await verify(try pki.appTransactionJWS(), with: pki)
        #expect(kind(result) == .notAuthenticated)
        #expect(rejection(result)?.description.contains("1.2.840.113635.100.6.11.1") == true)
    }

    @Test func intermediateWithoutAppleMarkerIsRejected() async throws {
        let pki = try AppStoreTestPKI.make(intermediateCarriesMarker: false)
        let result = try await verify(try pki.appTransactionJWS(), with: pki)
        #expect(kind(result) == .notAuthenticated)
        #expect(rejection(result)?.description.contains("1.2.840.113635.100.6.2.1") == true)
    }

    @Test func leafExpiredAtSigningDateIsRejected() async throws {
        let pki = try AppStoreTestPKI.make(leafValidity: AppStoreTestPKI.date(2022)...AppStoreTestPKI.date(2024))
        let result = try await verify(try pki.appTransactionJWS(signedDate: AppStoreTestPKI.date(2025)), with: pki)
        #expect(kind(result) == .notAuthenticated)
        #expect(rejection(result)?.description.contains("expired") == true)
    }

    @Test func leafNotYetValidAtSigningDateIsRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        let result = try await verify(try pki.appTransactionJWS(signedDate: AppStoreTestPKI.date(2023)), with: pki)
        #expect(kind(result) == .notAuthenticated)
    }

    @Test func chainIsCheckedAtTheSigningDateNotNow() async throws {
        // Signed while the leaf was valid, presented after it expired: accepted, as Apple's offline verification does.
        // The verifier reads no clock at all, and today is after this leaf's expiry.
        let pki = try AppStoreTestPKI.make(leafValidity: AppStoreTestPKI.date(2024)...AppStoreTestPKI.date(2025, 6))
        #expect(Date() > AppStoreTestPKI.date(2025, 6))
        let result = try await verify(try pki.appTransactionJWS(), with: pki)
        #expect(try result.get().installKey == "704289572")
    }

    /// Once checked at now: every AppTransaction carries receiptCreationDate, so one without it is malformed.
    @Test func appTransactionWithoutSigningDateIsRefused() async throws {
        let pki = try AppStoreTestPKI.make()
        let jws = try pki.appTransactionJWS(signedDate: nil)
        let result = try await verify(jws, with: pki)
        #expect(kind(result) == .malformed)
        #expect(rejection(result)?.reason.contains("signing date") == true)
    }

    // MARK: - Header

    @Test func algNoneIsRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        let header = AppStoreTestPKI.base64URL(try AppStoreTestPKI.json(["alg": "none", "x5c": pki.x5c]))
        let payload = AppStoreTestPKI.base64URL(try AppStoreTestPKI.json(AppStoreTestPKI.appTransactionPayload()))
        let result = try await verify(header + "." + payload + ".", with: pki)
        #expect(kind(result) == .notAuthenticated)
    }

    @Test func hs256WithThePublicKeyAsSecretIsRejected() async throws {
        // The classic confusion: HMAC keyed with the leaf's public key, which anyone has.
        let pki = try AppStoreTestPKI.make()
        let signingInput =
            AppStoreTestPKI.base64URL(try AppStoreTestPKI.json(["alg": "HS256", "x5c": pki.x5c])) + "."
            + AppStoreTestPKI.base64URL(try AppStoreTestPKI.json(AppStoreTestPKI.appTransactionPayload()))
        let mac = HMAC<SHA256>.authenticationCode(
            for: Data(signingInput.utf8), using: SymmetricKey(data: pki.leafKey.publicKey.derRepresentation)
        )
        let result = try await verify(signingInput + "." + AppStoreTestPKI.base64URL(Data(mac)), with: pki)
        #expect(kind(result) == .notAuthenticated)
    }

    @Test(arguments: ["ES384", "RS256", "es256", "ES256 "])
    func otherAlgorithmsAreRejected(alg: String) async throws {
        let pki = try AppStoreTestPKI.make()
        let jws = try pki.jws(header: ["alg": alg, "x5c": pki.x5c], payload: AppStoreTestPKI.appTransactionPayload())
        #expect(kind(try await verify(jws, with: pki)) == .notAuthenticated)
    }

    @Test func missingAlgIsRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        let jws = try pki.jws(header: ["x5c": pki.x5c], payload: AppStoreTestPKI.appTransactionPayload())
        let result = try await verify(jws, with: pki)
        #expect(kind(result) == .notAuthenticated)
        #expect(rejection(result)?.reason.contains("only ES256 is accepted") == true)
    }

    @Test func criticalHeaderExtensionsAreRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        let jws = try pki.jws(header: ["alg": "ES256", "x5c": pki.x5c, "crit": ["exp"]], payload: AppStoreTestPKI.appTransactionPayload())
        #expect(kind(try await verify(jws, with: pki)) == .notAuthenticated)
    }

    @Test func missingX5cIsRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        let jws = try pki.jws(header: ["alg": "ES256"], payload: AppStoreTestPKI.appTransactionPayload())
        #expect(kind(try await verify(jws, with: pki)) == .notAuthenticated)
    }

    @Test func x5cOfWrongLengthIsRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        for chain in [[], [pki.x5c[0]], pki.x5c + [pki.x5c[2]], Array(repeating: "MIIB", count: 10)] {
            let jws = try pki.jws(header: ["alg": "ES256", "x5c": chain], payload: AppStoreTestPKI.appTransactionPayload())
            #expect(kind(try await verify(jws, with: pki)) == .notAuthenticated, "x5c of \(chain.count)")
        }
    }

    @Test func x5cEntriesThatAreNotCertificatesAreRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        let notDER = Data("not a certificate".utf8).base64EncodedString()
        let urlSafe = pki.x5c[0].replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        for leaf in ["!!!", "", notDER, "MIIB", urlSafe == pki.x5c[0] ? "-_-_" : urlSafe] {
            let jws = try pki.jws(
                header: ["alg": "ES256", "x5c": [leaf, pki.x5c[1], pki.x5c[2]]], payload: AppStoreTestPKI.appTransactionPayload())
            #expect(kind(try await verify(jws, with: pki)) == .notAuthenticated, "leaf \(leaf.prefix(16))")
        }
    }

    @Test func x5cOfTheWrongTypeIsMalformed() async throws {
        let pki = try AppStoreTestPKI.make()
        let jws = try pki.jws(header: ["alg": "ES256", "x5c": pki.x5c[0]], payload: AppStoreTestPKI.appTransactionPayload())
        #expect(kind(try await verify(jws, with: pki)) == .malformed)
    }

    // MARK: - Payload

    @Test func wrongBundleIsRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        let jws = try pki.appTransactionJWS(bundleID: "com.example.catalog.evil")
        let result = try await verify(jws, with: pki)
        #expect(kind(result) == .wrongApp)
        #expect(kind(try await verify(try pki.appTransactionJWS(), with: pki, bundleID: "com.example.other")) == .wrongApp)
        let unnamed = try await verify(try pki.appTransactionJWS(bundleID: nil), with: pki)
        #expect(kind(unnamed) == .malformed)
        #expect(rejection(unnamed)?.reason.contains("bundleId") == true)
    }

    @Test(arguments: ["LocalTesting", "production ", "", "Prod"])
    func unknownEnvironmentIsRejected(receiptType: String) async throws {
        let pki = try AppStoreTestPKI.make()
        #expect(kind(try await verify(try pki.appTransactionJWS(environment: receiptType), with: pki)) == .environmentNotAccepted)
    }

    @Test func missingEnvironmentIsRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        let result = try await verify(try pki.appTransactionJWS(environment: nil), with: pki)
        #expect(kind(result) == .malformed)
        #expect(rejection(result)?.reason.contains("names no environment") == true)
    }

    /// The attack: a purchase transaction is signed by the same App Store leaf, and an app holds one per purchase, each
    /// with its own `originalTransactionId`; presented as an AppTransaction, each counted as another install.
    @Test func signedPurchaseTransactionIsNotAnInstall() async throws {
        let pki = try AppStoreTestPKI.make()
        let result = try await verify(try pki.jws(payload: AppStoreTestPKI.purchaseTransactionPayload()), with: pki)
        #expect(kind(result) == .malformed)
        // A transaction has signedDate, not receiptCreationDate: Purchases refuses it before its fields are read.
        #expect(rejection(result)?.reason.contains("signing date") == true)
    }

    @Test func appTransactionWithATransactionsFieldIsRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        for (key, value) in [("transactionId", "2000000123456789"), ("productId", "com.example.catalog.coins100")] {
            var payload = AppStoreTestPKI.appTransactionPayload()
            payload[key] = value
            let result = try await verify(try pki.jws(payload: payload), with: pki)
            #expect(kind(result) == .malformed, "\(key)")
            #expect(rejection(result)?.reason.contains("not an AppTransaction") == true, "\(key)")
        }
        // A number counts as present too: the check is on the field, not its type.
        var payload = AppStoreTestPKI.appTransactionPayload()
        payload["transactionId"] = 2_000_000_123_456_789
        let result = try await verify(try pki.jws(payload: payload), with: pki)
        #expect(kind(result) == .malformed)
        #expect(rejection(result)?.reason.contains("not an AppTransaction") == true)
    }

    /// `environment` is a transaction's field; an AppTransaction names its store in `receiptType`, so without it the
    /// payload is refused (this used to be read as a fallback, which let transactions through).
    @Test func environmentFieldWithoutReceiptTypeIsRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        var payload = AppStoreTestPKI.appTransactionPayload(environment: nil)
        payload["environment"] = "Sandbox"
        let result = try await verify(try pki.jws(payload: payload), with: pki)
        #expect(kind(result) == .malformed)
        #expect(rejection(result)?.reason.contains("names no environment") == true)
    }

    @Test func missingTransactionIdIsRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        let none = try pki.appTransactionJWS(appTransactionID: nil, originalTransactionID: nil)
        #expect(kind(try await verify(none, with: pki)) == .malformed)
        #expect(rejection(try await verify(none, with: pki))?.reason.contains("neither appTransactionId nor") == true)
        let empty = try pki.appTransactionJWS(appTransactionID: "", originalTransactionID: nil)
        #expect(kind(try await verify(empty, with: pki)) == .malformed)
        #expect(rejection(try await verify(empty, with: pki))?.reason.contains("neither appTransactionId nor") == true)
    }

    @Test func payloadFieldsOfTheWrongTypeAreMalformed() async throws {
        let pki = try AppStoreTestPKI.make()
        let cases: [(String, any Sendable)] = [
            ("bundleId", 5), ("receiptType", ["Production"]), ("appTransactionId", 1.5), ("receiptCreationDate", "yesterday"),
        ]
        for (key, value) in cases {
            var payload = AppStoreTestPKI.appTransactionPayload()
            payload[key] = value
            #expect(kind(try await verify(try pki.jws(payload: payload), with: pki)) == .malformed, "\(key)")
        }
        // A date before 1970 is read as one (Apple's dates are milliseconds since 1970), and no chain was valid then.
        var payload = AppStoreTestPKI.appTransactionPayload()
        payload["receiptCreationDate"] = -1
        #expect(kind(try await verify(try pki.jws(payload: payload), with: pki)) == .notAuthenticated)
    }

    @Test func headerOrPayloadThatIsNotAJSONObjectIsMalformed() async throws {
        let pki = try AppStoreTestPKI.make()
        let header = try AppStoreTestPKI.json(pki.header)
        let payload = try AppStoreTestPKI.json(AppStoreTestPKI.appTransactionPayload())
        for (h, p) in [(Data("[]".utf8), payload), (Data("not json".utf8), payload), (header, Data("\"str\"".utf8)), (header, Data())] {
            #expect(kind(try await verify(try pki.jws(headerJSON: h, payloadJSON: p), with: pki)) == .malformed)
        }
    }

    // MARK: - Garbage

    @Test(arguments: [
        "", ".", "..", "...", "abc", "a.b", "a.b.c.d", "!!!.@@@.###", "eyJ.eyJ.sig", "a b.c d.e f",
        "eyJhbGciOiJFUzI1NiJ9", "eyJhbGciOiJFUzI1NiJ9.e30", "\u{0}\u{0}.\u{0}.\u{0}", "🙂.🙂.🙂",
    ])
    func garbageIsMalformed(jws: String) async throws {
        let pki = try AppStoreTestPKI.make()
        #expect(kind(try await verify(jws, with: pki)) == .malformed)
    }

    @Test func deeplyNestedJSONIsMalformedNotACrash() async throws {
        // Within the size bound, but nested far deeper than any decoder should recurse.
        let pki = try AppStoreTestPKI.make()
        let nested = Data((String(repeating: "[", count: 3_000) + String(repeating: "]", count: 3_000)).utf8)
        let header = try AppStoreTestPKI.json(pki.header)
        let payload = try AppStoreTestPKI.json(AppStoreTestPKI.appTransactionPayload())
        for (h, p) in [(nested, payload), (header, nested)] {
            let jws = try pki.jws(headerJSON: h, payloadJSON: p)
            #expect(jws.utf8.count <= ReportAppTransactions.maximumJWSBytes)
            #expect(kind(try await verify(jws, with: pki)) == .malformed)
        }
    }

    @Test func hugeInputIsRefusedBeforeParsing() async throws {
        let pki = try AppStoreTestPKI.make()
        let huge = String(repeating: "A", count: 20_000) + "." + String(repeating: "A", count: 20_000) + ".AAAA"
        for input in [huge, String(repeating: ".", count: 1 << 20)] {
            let result = try await verify(input, with: pki)
            #expect(kind(result) == .malformed)
            #expect(rejection(result)?.reason.contains("16384-byte limit") == true)
        }
        // A genuine JWS padded with a large extra header field is refused too, whatever its signature.
        let bloated = try pki.jws(
            header: ["alg": "ES256", "x5c": pki.x5c, "pad": String(repeating: "x", count: 16 * 1024)],
            payload: AppStoreTestPKI.appTransactionPayload()
        )
        #expect(kind(try await verify(bloated, with: pki)) == .malformed)
        #expect(rejection(try await verify(bloated, with: pki))?.reason.contains("16384-byte limit") == true)
    }

    @Test func realisticJWSFitsTheSizeLimit() throws {
        let pki = try AppStoreTestPKI.make()
        #expect(try pki.appTransactionJWS().utf8.count < ReportAppTransactions.maximumJWSBytes / 2)
    }

    @Test func singleCharacterMutationsNeverVerify() async throws {
        // Every one-character change to a valid JWS must be refused (and must not trap). Seeded, so reproducible.
        let pki = try AppStoreTestPKI.make()
        let verifier = try pki.verifier()
        let jws = Array(try pki.appTransactionJWS())
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ ")
        var random = SplitMix64(seed: 0x4A57_5345_4544)
        for _ in 0..<150 {
            var mutated = jws
            let index = Int(random.next() % UInt64(jws.count))
            var replacement = alphabet[Int(random.next() % UInt64(alphabet.count))]
            if replacement == mutated[index] { replacement = mutated[index] == "A" ? "B" : "A" }
            mutated[index] = replacement
            let result = await verifier.verify(String(mutated), app: ReportAppTransactions.app(bundleID: Self.bundle, settings: nil))
            #expect(kind(result) != nil, "mutation at \(index) to \(replacement) verified")
        }
    }

    @Test func descriptionsAreBoundedForHostileInput() async throws {
        let pki = try AppStoreTestPKI.make()
        let longBundle = String(repeating: "b", count: 5_000)
        let result = try await verify(try pki.appTransactionJWS(bundleID: longBundle), with: pki)
        let reason = try #require(rejection(result))
        #expect(reason.code == .wrongApp)
        #expect(reason.description.count < 300)
    }
}

/// Row 7 of issue 27: an app's purchase settings bind what its reports' AppTransactions must name.
extension ReportAppTransactionTests {
    /// With no purchase settings there is no Apple id to check, so a production AppTransaction naming one is
    /// accepted; with settings naming another, the same genuine JWS is refused.
    @Test func appAppleIdIsBoundOnlyWhenTheSettingsNameOne() async throws {
        let pki = try AppStoreTestPKI.make()
        let jws = try pki.appTransactionJWS()
        #expect(try await verify(jws, with: pki).get().installKey == "704289572")
        let same = AppStoreApp(appAppleId: 1_234_567_890)
        #expect(try await verify(jws, with: pki, settings: same).get().installKey == "704289572")
        let other = try await verify(jws, with: pki, settings: AppStoreApp(appAppleId: 999))
        #expect(kind(other) == .wrongApp)
        #expect(rejection(other)?.reason.contains("appAppleId") == true)
    }

    @Test func environmentsComeFromTheAppsSettings() async throws {
        let pki = try AppStoreTestPKI.make()
        let sandbox = try pki.appTransactionJWS(environment: "Sandbox")
        #expect(try await verify(sandbox, with: pki).get().environment == "sandbox")
        let productionOnly = AppStoreApp(environments: [.production])
        #expect(kind(try await verify(sandbox, with: pki, settings: productionOnly)) == .sandboxEvidence)
    }

    /// The bundle bound is always the report's app, whatever the settings passed say.
    @Test func theBundleIsTheReportsAppNotTheSettings() {
        let bound = ReportAppTransactions.app(bundleID: "com.example.catalog", settings: AppStoreApp(bundleId: "com.example.other"))
        #expect(bound.bundleId == "com.example.catalog")
        #expect(!bound.refusesAppAppleIdWhenUnset)
    }
}
