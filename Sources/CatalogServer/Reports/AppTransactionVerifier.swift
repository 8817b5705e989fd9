import Crypto
import Foundation
import SwiftASN1
// The SPI gives RFC5280Policy(fixedExpiryValidationTime:), the non-deprecated way to check
// expiry at a chosen time rather than at the moment of validation (see `validationTime`).
@_spi(FixedExpiryValidationTime) import X509

/// What a verified AppTransaction says: the bundle it was issued to, the store environment, and the id that counts one install.
public struct VerifiedAppTransaction: Sendable, Hashable {
    /// The app's bundle identifier, as signed by the App Store (equal to the one the caller expected).
    public var bundleID: String
    /// The store environment, lower-cased: "production", "sandbox" or "xcode".
    public var environment: String
    /// The id that counts one install: `appTransactionId`, or `originalTransactionId` where the former is absent.
    public var installKey: String

    /// Makes a value by hand, e.g. for tests or for callers that stub the verifier.
    public init(bundleID: String, environment: String, installKey: String) {
        self.bundleID = bundleID
        self.environment = environment
        self.installKey = installKey
    }
}

/// Why an AppTransaction JWS was refused: a coarse `kind` to branch or count on, and a `description` that says exactly why.
public struct AppTransactionRejection: Error, Sendable, Hashable, CustomStringConvertible {
    /// The class of failure, stable enough for metrics and for mapping to responses.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// The JWS is over the size bound.
        case tooLarge
        /// Not a compact JWS, bad base64url, header or payload not a JSON object, fields of the wrong type.
        case malformed
        /// The header's `alg` is not ES256 (e.g. `none`, HS256), or it asks for extensions (`crit`) we don't implement.
        case unsupportedAlgorithm
        /// The `x5c` header is missing, too short, too long, or holds something that is not a certificate.
        case certificateChain
        /// The certificates don't chain to a configured root under RFC 5280 and Apple's OID rules at the validation time.
        case untrustedChain
        /// The ES256 signature is not 64 bytes or does not verify with the leaf's key.
        case badSignature
        /// The signed `bundleId` is missing or differs from the expected one.
        case wrongBundle
        /// The signed `receiptType` is missing or is not Production, Sandbox or Xcode.
        case unknownEnvironment
        /// Neither `appTransactionId` nor `originalTransactionId` is present and non-empty.
        case missingInstallKey
        /// Apple signed it, but it is not an AppTransaction: it carries a purchase transaction's own fields
        /// (`transactionId`, `productId`), which an app can hold many of and which say nothing about an install.
        case notAnAppTransaction
    }

    /// The class of failure.
    public var kind: Kind
    /// Says exactly why, for logs; it never echoes more than a short, bounded piece of the input.
    public var description: String

    /// Makes a rejection of the given kind with a human-readable reason.
    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }
}

/// A root certificate set that cannot be used: raised by `AppTransactionVerifier`'s initialisers, never by `verify`.
public struct AppTransactionVerifierConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Which root was unusable and why.
    public var description: String
}

/// Verifies StoreKit 2 `AppTransaction` JWSs offline, the way Apple's App Store Server Library does
/// (its `SignedDataVerifier` with online checks off), against a fixed set of trusted roots.
public struct AppTransactionVerifier: Sendable {
    /// A JWS longer than this is refused before any parsing. Real AppTransactions are about 4 KiB
    /// (three base64 certificates dominate), so 16 KiB leaves room without letting a client make us parse megabytes.
    public static let maximumJWSBytes = 16 * 1024
    /// More certificates than this in `x5c` is refused: Apple sends leaf, intermediate and root.
    public static let maximumChainLength = 3

    /// The Apple Worldwide Developer Relations intermediate marker, required on x5c[1] as Apple's library does.
    static let intermediateMarkerOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]
    /// The App Store receipt-signing marker, required on the leaf as Apple's library does.
    static let leafMarkerOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]

    private let roots: CertificateStore
    /// The trusted roots, for the purchase endpoints to trust as well.
    public let rootCertificates: [Certificate]

    /// roots: DER bytes of the trusted root certificates (Apple Root CA - G3 in production; tests pass their own).
    /// Throws when the list is empty or an entry is not a DER certificate: a verifier that trusts nothing is a misconfiguration.
    public init(rootCertificates: [[UInt8]]) throws {
        guard !rootCertificates.isEmpty else {
            throw AppTransactionVerifierConfigurationError(description: "no root certificates given")
        }
        var parsed: [Certificate] = []
        for (index, der) in rootCertificates.enumerated() {
            do {
                parsed.append(try Certificate(derEncoded: der))
            } catch {
                throw AppTransactionVerifierConfigurationError(
                    description: "root certificate #\(index) is not a DER X.509 certificate: \(error)"
                )
            }
        }
        self.roots = CertificateStore(parsed)
        self.rootCertificates = parsed
    }

    /// Loads PEM or DER root certificate files; a PEM file may hold several certificates.
    public init(rootCertificateFiles: [String]) throws {
        var ders: [[UInt8]] = []
        for path in rootCertificateFiles {
            let bytes: [UInt8]
            do {
                bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            } catch {
                throw AppTransactionVerifierConfigurationError(description: "cannot read root certificate file \(path): \(error)")
            }
            // Apple publishes AppleRootCA-G3.cer as DER; people also convert it to PEM. Sniff rather than trust the extension.
            if let text = String(bytes: bytes, encoding: .utf8), text.contains("-----BEGIN CERTIFICATE-----") {
                let documents: [PEMDocument]
                do {
                    documents = try PEMDocument.parseMultiple(pemString: text)
                } catch {
                    throw AppTransactionVerifierConfigurationError(description: "\(path) is not valid PEM: \(error)")
                }
                let certificates = documents.filter { $0.discriminator == "CERTIFICATE" }
                guard !certificates.isEmpty else {
                    throw AppTransactionVerifierConfigurationError(description: "\(path) holds no CERTIFICATE block")
                }
                ders.append(contentsOf: certificates.map(\.derBytes))
            } else {
                ders.append(bytes)
            }
        }
        try self.init(rootCertificates: ders)
    }

    /// Verifies offline: compact JWS, header alg ES256, x5c chain [leaf, intermediate, (root)] up to one of the configured
    /// roots (RFC 5280 at the validation time plus Apple's leaf and intermediate OID markers), the ES256 signature over
    /// `header.payload` with the leaf's P-256 key, then the payload: it must be an AppTransaction (no `transactionId` or
    /// `productId`, which only a purchase transaction carries, and a `receiptType`), `bundleId` must equal `bundleID`;
    /// environment from `receiptType`; the install key from `appTransactionId`, else `originalTransactionId`.
    ///
    /// The same App Store leaf signs purchase transactions (`JWSTransaction`) and renewal info as well as
    /// AppTransactions, so a valid chain and signature only say "Apple signed this". Without the shape check, any
    /// transaction JWS an app ever received (one per purchase, each with its own `originalTransactionId`) would count
    /// as another install.
    ///
    /// Validation time: the payload's signing date (`receiptCreationDate`, which Apple's library exposes as the
    /// AppTransaction's `signedDate`; else a `signedDate` field), and `now` only when the payload carries neither.
    /// This is what Apple's `ChainVerifier` does when online checks are off. The reason: an app holds on to its
    /// AppTransaction and sends the same JWS for a long time, while Apple's receipt-signing leaves live about two years,
    /// so checking at `now` would refuse genuine old AppTransactions once their leaf had been rotated out. The cost,
    /// which Apple's library accepts too, is that a leaf key leaked after expiry could sign with a back-dated date;
    /// only revocation (OCSP, i.e. online checks) closes that, and this verifier is offline by design.
    ///
    /// Never traps on input: every failure is a `.failure` saying why.
    public func verify(_ jws: String, bundleID: String, now: Date = Date()) async -> Result<VerifiedAppTransaction, AppTransactionRejection>
    {
        // verifyThrowing has typed throws, so every error here is already a rejection.
        do {
            return .success(try await verifyThrowing(jws, bundleID: bundleID, now: now))
        } catch {
            return .failure(error)
        }
    }

    // MARK: - Steps

    private func verifyThrowing(_ jws: String, bundleID: String, now: Date) async throws(AppTransactionRejection) -> VerifiedAppTransaction
    {
        let utf8 = jws.utf8
        // Bound first, before splitting or decoding, so hostile sizes cost nothing.
        guard utf8.count <= Self.maximumJWSBytes else {
            throw AppTransactionRejection(.tooLarge, "JWS is \(utf8.count) bytes, over the \(Self.maximumJWSBytes)-byte limit")
        }
        // Compact serialisation only: exactly three parts. Empty parts are kept so that "a..b" counts as three.
        let parts = utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw AppTransactionRejection(.malformed, "expected a compact JWS of 3 dot-separated parts, got \(parts.count)")
        }
        let headerPart = parts[0], payloadPart = parts[1], signaturePart = parts[2]

        // Header.
        guard let headerBytes = JWSBase64.decode(headerPart, alphabet: .url) else {
            throw AppTransactionRejection(.malformed, "JWS header is not base64url")
        }
        let header: JWSHeader
        do {
            header = try JSONDecoder().decode(JWSHeader.self, from: Data(headerBytes))
        } catch {
            throw AppTransactionRejection(.malformed, "JWS header is not a JSON object of the expected shape")
        }
        guard let alg = header.alg else {
            throw AppTransactionRejection(.malformed, "JWS header has no alg")
        }
        // A fixed algorithm, never taken from the token: this is what stops "none" and HS256-with-the-public-key tricks.
        guard alg == "ES256" else {
            throw AppTransactionRejection(.unsupportedAlgorithm, "JWS alg is \(Self.excerpt(alg)), only ES256 is accepted")
        }
        // RFC 7515 §4.1.11: a recipient that doesn't understand every listed extension must refuse the JWS.
        if let crit = header.crit {
            throw AppTransactionRejection(
                .unsupportedAlgorithm,
                "JWS header lists critical extensions \(Self.excerpt(crit.joined(separator: ","))), none are supported")
        }

        // Certificate chain from x5c.
        guard let x5c = header.x5c else {
            throw AppTransactionRejection(.certificateChain, "JWS header has no x5c certificate chain")
        }
        // Apple sends [leaf, intermediate, root]. The root in x5c is never trusted as such (trust comes from the
        // configured store only), so [leaf, intermediate] is accepted too; more than three is not a chain Apple makes.
        guard x5c.count >= 2, x5c.count <= Self.maximumChainLength else {
            throw AppTransactionRejection(
                .certificateChain, "x5c has \(x5c.count) certificates, expected 2 or 3 (leaf, intermediate, root)")
        }
        let leaf = try Self.certificate(x5c[0], position: "leaf")
        let intermediate = try Self.certificate(x5c[1], position: "intermediate")

        // Payload: decoded before the chain check because its date is the validation time (as in Apple's library).
        // Nothing in it is believed until the signature has been checked below.
        guard let payloadBytes = JWSBase64.decode(payloadPart, alphabet: .url) else {
            throw AppTransactionRejection(.malformed, "JWS payload is not base64url")
        }
        let payload: AppTransactionPayload
        do {
            payload = try JSONDecoder().decode(AppTransactionPayload.self, from: Data(payloadBytes))
        } catch {
            throw AppTransactionRejection(.malformed, "JWS payload is not a JSON object of the expected shape")
        }
        let validationTime = payload.receiptCreationDate?.date ?? payload.signedDate?.date ?? now

        // Chain: RFC 5280 (signatures, validity at validationTime, basic constraints, name chaining) plus Apple's markers.
        var verifier = Verifier(rootCertificates: roots) {
            RFC5280Policy(fixedExpiryValidationTime: validationTime)
            AppStoreOIDPolicy()
        }
        let chainResult = await verifier.validate(leaf: leaf, intermediates: CertificateStore([intermediate]))
        switch chainResult {
        case .validCertificate:
            break
        case .couldNotValidate(let failures):
            let why = Self.chainFailureSummary(leaf: leaf, intermediate: intermediate, at: validationTime, failures: failures)
            throw AppTransactionRejection(.untrustedChain, "certificate chain not trusted at \(Self.iso8601(validationTime)): \(why)")
        }

        // Signature: ES256 over the ASCII of `header.payload`, as sent (RFC 7515 §5.2), raw r||s (RFC 7518 §3.4).
        guard let publicKey = P256.Signing.PublicKey(leaf.publicKey) else {
            throw AppTransactionRejection(.badSignature, "leaf certificate key is not a P-256 key, ES256 needs one")
        }
        guard let signatureBytes = JWSBase64.decode(signaturePart, alphabet: .url) else {
            throw AppTransactionRejection(.malformed, "JWS signature is not base64url")
        }
        guard signatureBytes.count == 64 else {
            throw AppTransactionRejection(
                .badSignature, "ES256 signature is \(signatureBytes.count) bytes, expected 64 (raw r||s, not DER)")
        }
        let signature: P256.Signing.ECDSASignature
        do {
            signature = try P256.Signing.ECDSASignature(rawRepresentation: signatureBytes)
        } catch {
            throw AppTransactionRejection(.badSignature, "ES256 signature is not a valid r||s pair")
        }
        let signingInput = Array(utf8.prefix(headerPart.count + 1 + payloadPart.count))
        guard publicKey.isValidSignature(signature, for: signingInput) else {
            throw AppTransactionRejection(.badSignature, "ES256 signature does not verify with the leaf certificate's key")
        }

        // Payload claims, now that they are known to be Apple's. The kind of document first: a purchase transaction
        // has `transactionId` and `productId`, an AppTransaction never has either and always has `receiptType`.
        if payload.transactionId != nil || payload.productId != nil {
            throw AppTransactionRejection(
                .notAnAppTransaction, "payload has transactionId or productId: a signed purchase transaction, not an AppTransaction")
        }
        guard let signedBundle = payload.bundleId else {
            throw AppTransactionRejection(.wrongBundle, "payload has no bundleId")
        }
        guard signedBundle == bundleID else {
            throw AppTransactionRejection(.wrongBundle, "payload bundleId \(Self.excerpt(signedBundle)) is not \(Self.excerpt(bundleID))")
        }
        // Transactions name their store in `environment`; only AppTransactions have `receiptType`, so no fallback.
        guard let rawEnvironment = payload.receiptType else {
            throw AppTransactionRejection(.unknownEnvironment, "payload has no receiptType, which every AppTransaction carries")
        }
        // Apple spells them "Production", "Sandbox", "Xcode"; case is ignored since it carries no meaning.
        let environment = rawEnvironment.lowercased()
        guard ["production", "sandbox", "xcode"].contains(environment) else {
            throw AppTransactionRejection(
                .unknownEnvironment, "environment \(Self.excerpt(rawEnvironment)) is not Production, Sandbox or Xcode")
        }
        // appTransactionId is the per-Apple-account, per-app id (iOS 18.4+); older AppTransactions only carry
        // originalTransactionId. Empty strings count as absent so that "" never becomes everyone's install key.
        let installKey = payload.appTransactionId?.value ?? payload.originalTransactionId?.value
        guard let installKey, !installKey.isEmpty else {
            throw AppTransactionRejection(.missingInstallKey, "payload has neither appTransactionId nor originalTransactionId")
        }
        return VerifiedAppTransaction(bundleID: signedBundle, environment: environment, installKey: installKey)
    }

    private static func certificate(_ base64: String, position: String) throws(AppTransactionRejection) -> Certificate {
        // x5c entries are standard base64 of DER (RFC 7515 §4.1.6), not base64url.
        guard let der = JWSBase64.decode(Substring(base64).utf8, alphabet: .standard), !der.isEmpty else {
            throw AppTransactionRejection(.certificateChain, "x5c \(position) certificate is not base64")
        }
        do {
            return try Certificate(derEncoded: der)
        } catch {
            throw AppTransactionRejection(.certificateChain, "x5c \(position) certificate is not a DER X.509 certificate")
        }
    }

    /// Says why no chain was accepted, briefly. swift-certificates' reasons embed whole certificate dumps, so the
    /// commonest case (a certificate outside its validity at the validation time) is named here directly, and other
    /// reasons keep their start and their end, where the verdict ("has expired", "is not marked as a CA") is.
    private static func chainFailureSummary(
        leaf: Certificate, intermediate: Certificate, at time: Date, failures: [CertificateValidationResult.PolicyFailure]
    ) -> String {
        for (position, certificate) in [("leaf", leaf), ("intermediate", intermediate)] {
            if time < certificate.notValidBefore {
                return "\(position) certificate is not valid before \(iso8601(certificate.notValidBefore))"
            }
            if time > certificate.notValidAfter {
                return "\(position) certificate expired at \(iso8601(certificate.notValidAfter))"
            }
        }
        // With no failure at all, chain building found no path from the leaf to a configured root.
        guard !failures.isEmpty else { return "no chain from the leaf reaches a configured root" }
        var seen = Set<String>()
        let reasons = failures.compactMap { failure -> String? in
            let reason = String(describing: failure.policyFailureReason)
            let short = reason.count > 160 ? reason.prefix(40) + "…" + reason.suffix(100) : reason
            return seen.insert(short).inserted ? short : nil
        }
        return reasons.prefix(3).joined(separator: "; ")
    }

    /// Quotes at most `limit` characters of untrusted text so that a description stays short whatever the input.
    static func excerpt(_ text: String, limit: Int = 64) -> String {
        let cut = text.prefix(limit)
        return "\"" + cut + (cut.count < text.count ? "…" : "") + "\""
    }

    private static func iso8601(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}

// MARK: - Apple's OID policy

/// Apple's extra chain rule from its `ChainVerifier`: exactly leaf, intermediate and root, with the WWDR marker on the
/// intermediate and the receipt-signing marker on the leaf. RFC 5280 alone would accept any leaf under Apple's root
/// (e.g. a developer's own certificate), so these markers are what make the signer the App Store.
fileprivate struct AppStoreOIDPolicy: VerifierPolicy, Sendable {
    // The markers are not critical extensions, so this policy takes responsibility for none.
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        guard chain.count == 3 else {
            return .failsToMeetPolicy(reason: "chain has \(chain.count) certificates, Apple's has leaf, intermediate and root")
        }
        let leaf = chain[0], intermediate = chain[1]
        guard intermediate.extensions.contains(where: { $0.oid == AppTransactionVerifier.intermediateMarkerOID }) else {
            return .failsToMeetPolicy(reason: "intermediate certificate lacks Apple's WWDR marker 1.2.840.113635.100.6.2.1")
        }
        guard leaf.extensions.contains(where: { $0.oid == AppTransactionVerifier.leafMarkerOID }) else {
            return .failsToMeetPolicy(reason: "leaf certificate lacks Apple's receipt-signing marker 1.2.840.113635.100.6.11.1")
        }
        return .meetsPolicy
    }
}

// MARK: - Wire types

/// The JOSE header fields we read. Unknown fields are ignored; a known field of the wrong type fails decoding.
private struct JWSHeader: Decodable {
    var alg: String?
    var x5c: [String]?
    var crit: [String]?
}

/// The AppTransaction payload fields we read; the rest (appAppleId, versions, device verification, ...) is ignored.
/// `transactionId` and `productId` are read only to refuse a purchase transaction, so any JSON value counts as present.
private struct AppTransactionPayload: Decodable {
    var bundleId: String?
    var receiptType: String?
    var transactionId: AnyJSONValue?
    var productId: AnyJSONValue?
    var appTransactionId: FlexibleID?
    var originalTransactionId: FlexibleID?
    var receiptCreationDate: MillisecondsDate?
    var signedDate: MillisecondsDate?
}

/// Any JSON value but null, read only to learn that a field is there: decoding consumes nothing and never fails.
private struct AnyJSONValue: Decodable {
    init(from decoder: any Decoder) throws {}
}

/// An id sent as a JSON string (Apple's documented form) or, leniently, as an integer; never a float or other type.
private struct FlexibleID: Decodable {
    var value: String

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let string = try? container.decode(String.self) {
            value = string
        } else {
            value = String(try container.decode(Int64.self))
        }
    }
}

/// Apple's dates: milliseconds since 1970 as a JSON number. Out-of-range or non-finite values fail decoding.
private struct MillisecondsDate: Decodable {
    var date: Date

    init(from decoder: any Decoder) throws {
        let milliseconds = try decoder.singleValueContainer().decode(Double.self)
        // Years 1970...9999 cover anything real; the bound keeps Date and the X.509 time conversion well-defined.
        guard milliseconds.isFinite, milliseconds >= 0, milliseconds < 253_402_300_800_000 else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "date out of range"))
        }
        date = Date(timeIntervalSince1970: milliseconds / 1000)
    }
}

// MARK: - Base64

/// Base64 as JWS uses it, through Foundation's decoder: the alphabet is chosen (URL-safe for JWS
/// segments, standard for x5c entries), padding is optional, and a spelling that does not encode
/// back to itself (stray trailing bits) is refused, so that one value has one spelling.
fileprivate enum JWSBase64 {
    enum Alphabet {
        /// RFC 4648 §5, used by JWS segments.
        case url
        /// RFC 4648 §4, used by x5c entries.
        case standard
    }

    static func decode<Bytes: Collection<UInt8>>(_ input: Bytes, alphabet: Alphabet) -> [UInt8]? {
        var text = String(decoding: input, as: UTF8.self)
        var padding = 0
        while text.hasSuffix("="), padding < 2 {
            text.removeLast()
            padding += 1
        }
        if padding > 0, (text.utf8.count + padding) % 4 != 0 { return nil }
        // The other alphabet's two characters, or anything else Foundation might skip, are refused.
        let extra: (UInt8, UInt8) = alphabet == .url ? (UInt8(ascii: "-"), UInt8(ascii: "_")) : (UInt8(ascii: "+"), UInt8(ascii: "/"))
        guard text.utf8.allSatisfy({ $0.isASCIIAlphanumeric || $0 == extra.0 || $0 == extra.1 }) else { return nil }
        if alphabet == .url { text = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/") }
        let padded = text + String(repeating: "=", count: (4 - text.utf8.count % 4) % 4)
        guard let data = Data(base64Encoded: padded), data.base64EncodedString() == padded else { return nil }
        return [UInt8](data)
    }
}

extension UInt8 {
    fileprivate var isASCIIAlphanumeric: Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self)
    }
}
