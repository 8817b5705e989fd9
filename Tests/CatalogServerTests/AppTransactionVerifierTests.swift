import Crypto
import Foundation
import Testing
import X509

@testable import CatalogServer

/// AppTransactionVerifier against a PKI built here (AppStoreTestPKI): what it accepts, and that each way of getting
/// it wrong is refused for the right reason.
@Suite("AppTransactionVerifier")
struct AppTransactionVerifierTests {
    typealias Kind = AppTransactionRejection.Kind

    static let bundle = "com.example.catalog"
    /// Inside the default leaf validity, after the default signing date.
    static let now = AppStoreTestPKI.date(2025, 6, 1)

    private func verify(
        _ jws: String, with pki: AppStoreTestPKI, bundleID: String = bundle, now: Date = now
    ) async throws -> Result<VerifiedAppTransaction, AppTransactionRejection> {
        try await pki.verifier().verify(jws, bundleID: bundleID, now: now)
    }

    /// The rejection's kind, or nil when it verified (so that `#expect(kind(r) == .x)` prints both sides).
    private func kind(_ result: Result<VerifiedAppTransaction, AppTransactionRejection>) -> Kind? {
        if case .failure(let rejection) = result { return rejection.kind }
        return nil
    }

    private func rejection(_ result: Result<VerifiedAppTransaction, AppTransactionRejection>) -> AppTransactionRejection? {
        if case .failure(let rejection) = result { return rejection }
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

    @Test(arguments: [("Production", "production"), ("Sandbox", "sandbox"), ("Xcode", "xcode"), ("SANDBOX", "sandbox")])
    func environmentIsLowerCased(receiptType: String, expected: String) async throws {
        let pki = try AppStoreTestPKI.make()
        let result = try await verify(try pki.appTransactionJWS(environment: receiptType), with: pki)
        #expect(try result.get().environment == expected)
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

    @Test func twoCertificateChainIsAccepted() async throws {
        // The root in x5c is never what we trust, so leaving it out changes nothing.
        let pki = try AppStoreTestPKI.make()
        let jws = try pki.jws(header: ["alg": "ES256", "x5c": Array(pki.x5c.prefix(2))], payload: AppStoreTestPKI.appTransactionPayload())
        #expect(try await verify(jws, with: pki).get().bundleID == Self.bundle)
    }

    @Test func paddedBase64URLIsAccepted() async throws {
        let pki = try AppStoreTestPKI.make()
        func padded(_ text: String) -> String { text + String(repeating: "=", count: (4 - text.count % 4) % 4) }
        let header = padded(AppStoreTestPKI.base64URL(try AppStoreTestPKI.json(pki.header)))
        let payload = padded(AppStoreTestPKI.base64URL(try AppStoreTestPKI.json(AppStoreTestPKI.appTransactionPayload())))
        let signingInput = header + "." + payload
        let signature = try pki.leafKey.signature(for: Data(signingInput.utf8))
        let jws = signingInput + "." + padded(AppStoreTestPKI.base64URL(signature.rawRepresentation))
        #expect(jws.contains("="))
        #expect(try await verify(jws, with: pki).get().installKey == "704289572")
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

        let verifier = try AppTransactionVerifier(rootCertificateFiles: [pem.path, der.path])
        for trusted in [pki, other] {
            let result = await verifier.verify(try trusted.appTransactionJWS(), bundleID: Self.bundle, now: Self.now)
            #expect(try result.get().bundleID == Self.bundle)
        }
    }

    // MARK: - Configuration

    @Test func unusableRootsThrow() throws {
        #expect(throws: AppTransactionVerifierConfigurationError.self) { try AppTransactionVerifier(rootCertificates: []) }
        #expect(throws: AppTransactionVerifierConfigurationError.self) {
            try AppTransactionVerifier(rootCertificates: [[0x30, 0x03, 0x02, 0x01, 0x01]])
        }
        #expect(throws: AppTransactionVerifierConfigurationError.self) {
            try AppTransactionVerifier(rootCertificateFiles: ["/nonexistent/AppleRootCA-G3.cer"])
        }
    }

    // MARK: - Tampering

    @Test func tamperedPayloadIsRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        let jws = try pki.appTransactionJWS(bundleID: "com.example.other")
        // Same header and signature, payload swapped for one naming our bundle.
        let forged = AppStoreTestPKI.base64URL(try AppStoreTestPKI.json(AppStoreTestPKI.appTransactionPayload(bundleID: Self.bundle)))
        let result = try await verify(replacing(part: 1, of: jws, with: forged), with: pki)
        #expect(kind(result) == .badSignature)
    }

    @Test func tamperedSignatureIsRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        let jws = try pki.appTransactionJWS()
        let signaturePart = String(jws.split(separator: ".")[2])
        var signature = try #require(
            Data(base64Encoded: signaturePart.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/") + "=="))
        signature[10] ^= 0x01
        let result = try await verify(replacing(part: 2, of: jws, with: AppStoreTestPKI.base64URL(signature)), with: pki)
        #expect(kind(result) == .badSignature)
    }

    @Test func derEncodedOrShortSignatureIsRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        let jws = try pki.appTransactionJWS()
        let signingInput = jws.split(separator: ".").prefix(2).joined(separator: ".")
        let der = try pki.leafKey.signature(for: Data(signingInput.utf8)).derRepresentation
        for bytes in [der, Data(), Data(repeating: 0, count: 64)] {
            let result = try await verify(replacing(part: 2, of: jws, with: AppStoreTestPKI.base64URL(bytes)), with: pki)
            #expect(kind(result) == .badSignature)
        }
    }

    @Test func signatureByAnotherKeyIsRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        let signingInput =
            AppStoreTestPKI.base64URL(try AppStoreTestPKI.json(pki.header)) + "."
            + AppStoreTestPKI.base64URL(try AppStoreTestPKI.json(AppStoreTestPKI.appTransactionPayload()))
        let signature = try P256.Signing.PrivateKey().signature(for: Data(signingInput.utf8))
        let result = try await verify(signingInput + "." + AppStoreTestPKI.base64URL(signature.rawRepresentation), with: pki)
        #expect(kind(result) == .badSignature)
    }

    @Test func leafWithoutAP256KeyIsRejected() async throws {
        // A chain that is otherwise fine, but the leaf's key is P-384: ES256 cannot be checked with it.
        let pki = try AppStoreTestPKI.make()
        let p384Leaf = try pki.issueLeaf(publicKey: .init(P384.Signing.PrivateKey().publicKey))
        let x5c = [Data(AppStoreTestPKI.der(p384Leaf)).base64EncodedString(), pki.x5c[1], pki.x5c[2]]
        let jws = try pki.jws(header: ["alg": "ES256", "x5c": x5c], payload: AppStoreTestPKI.appTransactionPayload())
        let result = try await verify(jws, with: pki)
        #expect(kind(result) == .badSignature)
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
        #expect(kind(result) == .untrustedChain)
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
        #expect(kind(try await verify(refused, with: trusted)) == .untrustedChain)
    }

    @Test func leafWithoutAppleMarkerIsRejected() async throws {
        let pki = try AppStoreTestPKI.make(leafCarriesMarker: false)
        let result = try await verify(try pki.appTransactionJWS(), with: pki)
        #expect(kind(result) == .untrustedChain)
        #expect(rejection(result)?.description.contains("1.2.840.113635.100.6.11.1") == true)
    }

    @Test func intermediateWithoutAppleMarkerIsRejected() async throws {
        let pki = try AppStoreTestPKI.make(intermediateCarriesMarker: false)
        let result = try await verify(try pki.appTransactionJWS(), with: pki)
        #expect(kind(result) == .untrustedChain)
        #expect(rejection(result)?.description.contains("1.2.840.113635.100.6.2.1") == true)
    }

    @Test func leafExpiredAtSigningDateIsRejected() async throws {
        let pki = try AppStoreTestPKI.make(leafValidity: AppStoreTestPKI.date(2022)...AppStoreTestPKI.date(2024))
        let result = try await verify(try pki.appTransactionJWS(signedDate: AppStoreTestPKI.date(2025)), with: pki)
        #expect(kind(result) == .untrustedChain)
        #expect(rejection(result)?.description.contains("leaf certificate expired") == true)
    }

    @Test func leafNotYetValidAtSigningDateIsRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        let result = try await verify(try pki.appTransactionJWS(signedDate: AppStoreTestPKI.date(2023)), with: pki)
        #expect(kind(result) == .untrustedChain)
    }

    @Test func chainIsCheckedAtTheSigningDateNotNow() async throws {
        // Signed while the leaf was valid, presented after it expired: accepted, as Apple's offline verification does.
        let pki = try AppStoreTestPKI.make()
        let result = try await verify(try pki.appTransactionJWS(), with: pki, now: AppStoreTestPKI.date(2030))
        #expect(try result.get().installKey == "704289572")
    }

    @Test func chainIsCheckedAtNowWithoutSigningDate() async throws {
        let pki = try AppStoreTestPKI.make()
        let jws = try pki.appTransactionJWS(signedDate: nil)
        #expect(kind(try await verify(jws, with: pki, now: AppStoreTestPKI.date(2030))) == .untrustedChain)
        #expect(try await verify(jws, with: pki, now: AppStoreTestPKI.date(2025)).get().bundleID == Self.bundle)
    }

    // MARK: - Header

    @Test func algNoneIsRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        let header = AppStoreTestPKI.base64URL(try AppStoreTestPKI.json(["alg": "none", "x5c": pki.x5c]))
        let payload = AppStoreTestPKI.base64URL(try AppStoreTestPKI.json(AppStoreTestPKI.appTransactionPayload()))
        let result = try await verify(header + "." + payload + ".", with: pki)
        #expect(kind(result) == .unsupportedAlgorithm)
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
        #expect(kind(result) == .unsupportedAlgorithm)
    }

    @Test(arguments: ["ES384", "RS256", "es256", "ES256 "])
    func otherAlgorithmsAreRejected(alg: String) async throws {
        let pki = try AppStoreTestPKI.make()
        let jws = try pki.jws(header: ["alg": alg, "x5c": pki.x5c], payload: AppStoreTestPKI.appTransactionPayload())
        #expect(kind(try await verify(jws, with: pki)) == .unsupportedAlgorithm)
    }

    @Test func missingAlgIsRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        let jws = try pki.jws(header: ["x5c": pki.x5c], payload: AppStoreTestPKI.appTransactionPayload())
        #expect(kind(try await verify(jws, with: pki)) == .malformed)
    }

    @Test func criticalHeaderExtensionsAreRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        let jws = try pki.jws(header: ["alg": "ES256", "x5c": pki.x5c, "crit": ["exp"]], payload: AppStoreTestPKI.appTransactionPayload())
        #expect(kind(try await verify(jws, with: pki)) == .unsupportedAlgorithm)
    }

    @Test func missingX5cIsRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        let jws = try pki.jws(header: ["alg": "ES256"], payload: AppStoreTestPKI.appTransactionPayload())
        #expect(kind(try await verify(jws, with: pki)) == .certificateChain)
    }

    @Test func x5cOfWrongLengthIsRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        for chain in [[], [pki.x5c[0]], pki.x5c + [pki.x5c[2]], Array(repeating: "MIIB", count: 10)] {
            let jws = try pki.jws(header: ["alg": "ES256", "x5c": chain], payload: AppStoreTestPKI.appTransactionPayload())
            #expect(kind(try await verify(jws, with: pki)) == .certificateChain, "x5c of \(chain.count)")
        }
    }

    @Test func x5cEntriesThatAreNotCertificatesAreRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        let notDER = Data("not a certificate".utf8).base64EncodedString()
        let urlSafe = pki.x5c[0].replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        for leaf in ["!!!", "", notDER, "MIIB", urlSafe == pki.x5c[0] ? "-_-_" : urlSafe] {
            let jws = try pki.jws(
                header: ["alg": "ES256", "x5c": [leaf, pki.x5c[1], pki.x5c[2]]], payload: AppStoreTestPKI.appTransactionPayload())
            #expect(kind(try await verify(jws, with: pki)) == .certificateChain, "leaf \(leaf.prefix(16))")
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
        #expect(kind(result) == .wrongBundle)
        #expect(kind(try await verify(try pki.appTransactionJWS(), with: pki, bundleID: "com.example.other")) == .wrongBundle)
        #expect(kind(try await verify(try pki.appTransactionJWS(bundleID: nil), with: pki)) == .wrongBundle)
    }

    @Test(arguments: ["LocalTesting", "production ", "", "Prod"])
    func unknownEnvironmentIsRejected(receiptType: String) async throws {
        let pki = try AppStoreTestPKI.make()
        #expect(kind(try await verify(try pki.appTransactionJWS(environment: receiptType), with: pki)) == .unknownEnvironment)
    }

    @Test func missingEnvironmentIsRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        #expect(kind(try await verify(try pki.appTransactionJWS(environment: nil), with: pki)) == .unknownEnvironment)
    }

    /// The attack: a purchase transaction is signed by the same App Store leaf, and an app holds one per purchase, each
    /// with its own `originalTransactionId`; presented as an AppTransaction, each counted as another install.
    @Test func signedPurchaseTransactionIsNotAnInstall() async throws {
        let pki = try AppStoreTestPKI.make()
        let result = try await verify(try pki.jws(payload: AppStoreTestPKI.purchaseTransactionPayload()), with: pki)
        #expect(kind(result) == .notAnAppTransaction)
    }

    @Test func appTransactionWithATransactionsFieldIsRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        for (key, value) in [("transactionId", "2000000123456789"), ("productId", "com.example.catalog.coins100")] {
            var payload = AppStoreTestPKI.appTransactionPayload()
            payload[key] = value
            #expect(kind(try await verify(try pki.jws(payload: payload), with: pki)) == .notAnAppTransaction, "\(key)")
        }
        // A number counts as present too: the check is on the field, not its type.
        var payload = AppStoreTestPKI.appTransactionPayload()
        payload["transactionId"] = 2_000_000_123_456_789
        #expect(kind(try await verify(try pki.jws(payload: payload), with: pki)) == .notAnAppTransaction)
    }

    /// `environment` is a transaction's field; an AppTransaction names its store in `receiptType`, so without it the
    /// payload is refused (this used to be read as a fallback, which let transactions through).
    @Test func environmentFieldWithoutReceiptTypeIsRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        var payload = AppStoreTestPKI.appTransactionPayload(environment: nil)
        payload["environment"] = "Sandbox"
        #expect(kind(try await verify(try pki.jws(payload: payload), with: pki)) == .unknownEnvironment)
    }

    @Test func missingTransactionIdIsRejected() async throws {
        let pki = try AppStoreTestPKI.make()
        let none = try pki.appTransactionJWS(appTransactionID: nil, originalTransactionID: nil)
        #expect(kind(try await verify(none, with: pki)) == .missingInstallKey)
        let empty = try pki.appTransactionJWS(appTransactionID: "", originalTransactionID: nil)
        #expect(kind(try await verify(empty, with: pki)) == .missingInstallKey)
    }

    @Test func payloadFieldsOfTheWrongTypeAreMalformed() async throws {
        let pki = try AppStoreTestPKI.make()
        let cases: [(String, any Sendable)] = [
            ("bundleId", 5), ("receiptType", ["Production"]), ("appTransactionId", 1.5),
            ("receiptCreationDate", "yesterday"), ("receiptCreationDate", -1),
        ]
        for (key, value) in cases {
            var payload = AppStoreTestPKI.appTransactionPayload()
            payload[key] = value
            #expect(kind(try await verify(try pki.jws(payload: payload), with: pki)) == .malformed, "\(key)")
        }
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
            #expect(jws.utf8.count <= AppTransactionVerifier.maximumJWSBytes)
            #expect(kind(try await verify(jws, with: pki)) == .malformed)
        }
    }

    @Test func hugeInputIsRefusedBeforeParsing() async throws {
        let pki = try AppStoreTestPKI.make()
        let huge = String(repeating: "A", count: 20_000) + "." + String(repeating: "A", count: 20_000) + ".AAAA"
        #expect(kind(try await verify(huge, with: pki)) == .tooLarge)
        #expect(kind(try await verify(String(repeating: ".", count: 1 << 20), with: pki)) == .tooLarge)
        // A genuine JWS padded with a large extra header field is refused too, whatever its signature.
        let bloated = try pki.jws(
            header: ["alg": "ES256", "x5c": pki.x5c, "pad": String(repeating: "x", count: 16 * 1024)],
            payload: AppStoreTestPKI.appTransactionPayload()
        )
        #expect(kind(try await verify(bloated, with: pki)) == .tooLarge)
    }

    @Test func realisticJWSFitsTheSizeLimit() throws {
        let pki = try AppStoreTestPKI.make()
        #expect(try pki.appTransactionJWS().utf8.count < AppTransactionVerifier.maximumJWSBytes / 2)
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
            let result = await verifier.verify(String(mutated), bundleID: Self.bundle, now: Self.now)
            #expect(kind(result) != nil, "mutation at \(index) to \(replacement) verified")
        }
    }

    @Test func descriptionsAreBoundedForHostileInput() async throws {
        let pki = try AppStoreTestPKI.make()
        let longBundle = String(repeating: "b", count: 5_000)
        let result = try await verify(try pki.appTransactionJWS(bundleID: longBundle), with: pki)
        let reason = try #require(rejection(result))
        #expect(reason.kind == .wrongBundle)
        #expect(reason.description.count < 300)
    }
}

/// A tiny seeded generator so that a randomized test is the same on every run (and a failing
/// order can be replayed).
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
