import CatalogKit
import Crypto
import Foundation
import Ledger
import SwiftASN1
@_spi(FixedExpiryValidationTime) import X509

/// Verifies everything the App Store signs, offline, and binds it to one app's settings: StoreKit 2
/// transactions, renewal infos and AppTransactions, App Store Server Notifications V2 with their nested
/// tokens, and legacy app receipts (`verifyAndDecodeReceipt`).
///
/// A JWS is accepted when: its `alg` is ES256 (fixed here, never taken from the token); `x5c` is
/// exactly leaf, intermediate and root, the leaf issued by the intermediate and the intermediate by a
/// trusted root (the root sent in the token is ignored); the intermediate carries Apple's marker
/// 1.2.840.113635.100.6.2.1 and the leaf 1.2.840.113635.100.6.11.1; every certificate was valid at
/// the payload's own `signedDate` (`receiptCreationDate` for an AppTransaction); the ES256 signature
/// verifies with the leaf's key. Then the claims: bundle id, `appAppleId` for production evidence
/// that names one, and the environment against the app's accepted ones.
///
/// Checking at the signed date rather than now is what Apple's library does offline: an app keeps
/// its evidence for years while Apple's signing leaves live about two. The cost, which Apple accepts
/// too, is that a leaf key leaked after expiry could sign back-dated evidence; only revocation checks,
/// which are online, close that.
///
/// Verified (leaf, intermediate) pairs are cached (`VerifiedChainCache`) once a token they signed has
/// verified, so a verification costs one ES256 check. The verifier is safe to share between tasks.
public final class SignedDataVerifier: Sendable {
    /// Apple's marker on the Worldwide Developer Relations intermediate.
    public static let intermediateMarkerOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]
    /// Apple's marker on the App Store receipt-signing leaf.
    public static let leafMarkerOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]

    /// The roots trusted.
    public let trust: PurchaseTrust
    /// The app evidence is bound to.
    public let app: AppStoreApp
    let chains: VerifiedChainCache
    let headers: JWSHeaderCache
    let signatureCheckCounter = SignatureCheckCounter()

    /// Makes a verifier for one app. `cacheCapacity` bounds the verified-chain cache and the
    /// decoded-header cache; 0 turns both off.
    public init(trust: PurchaseTrust, app: AppStoreApp, cacheCapacity: Int = 32) {
        self.trust = trust
        self.app = app
        self.chains = VerifiedChainCache(capacity: cacheCapacity)
        self.headers = JWSHeaderCache(capacity: cacheCapacity)
    }

    /// How many verified chains are cached (for tests and metrics).
    public var cachedChainCount: Int { chains.count }

    /// How many decoded JWS headers are cached (for tests).
    var cachedHeaderCount: Int { headers.count }

    /// How many signatures this verifier has checked or handed to the chain builder (for tests).
    var signatureChecks: Int { signatureCheckCounter.count }

    // MARK: - Kinds of evidence

    /// Verifies a signed transaction and binds it to the app (bundle id, environment).
    public func verifyAndDecodeTransaction(_ jws: String) async throws(PurchaseRefusal) -> JWSTransactionDecodedPayload {
        try await verifiedTransaction(jws).payload
    }

    /// ``verifyAndDecodeTransaction(_:)``, with the payload's JSON as Apple signed it.
    func verifiedTransaction(_ jws: String) async throws(PurchaseRefusal) -> (payload: JWSTransactionDecodedPayload, json: [UInt8]) {
        let (transaction, signer, json) = try await authenticate(jws, as: JWSTransactionDecodedPayload.self) { $0.signedDate }
        try checkBundle(transaction.bundleId, what: "transaction")
        try checkEnvironment(transaction.environment, signer: signer, what: "transaction")
        return (transaction, json)
    }

    /// Verifies a subscription's renewal info and checks its environment. It names no app: a caller
    /// binds it through its `originalTransactionId`, as a notification does.
    public func verifyAndDecodeRenewalInfo(_ jws: String) async throws(PurchaseRefusal) -> JWSRenewalInfoDecodedPayload {
        try await verifiedRenewalInfo(jws).payload
    }

    /// ``verifyAndDecodeRenewalInfo(_:)``, with the payload's JSON as Apple signed it.
    func verifiedRenewalInfo(_ jws: String) async throws(PurchaseRefusal) -> (payload: JWSRenewalInfoDecodedPayload, json: [UInt8]) {
        let (renewal, signer, json) = try await authenticate(jws, as: JWSRenewalInfoDecodedPayload.self) { $0.signedDate }
        try checkEnvironment(renewal.environment, signer: signer, what: "renewal info")
        return (renewal, json)
    }

    /// Verifies an AppTransaction at its `receiptCreationDate` and binds it to the app (bundle id,
    /// `appAppleId` in production, environment).
    public func verifyAndDecodeAppTransaction(_ jws: String) async throws(PurchaseRefusal) -> AppTransaction {
        let (appTransaction, signer, _) = try await authenticate(jws, as: AppTransaction.self) { $0.receiptCreationDate }
        try checkBundle(appTransaction.bundleId, what: "AppTransaction")
        try checkEnvironment(appTransaction.receiptType, signer: signer, what: "AppTransaction")
        try checkAppAppleId(appTransaction.appAppleId, environment: appTransaction.receiptType, what: "AppTransaction")
        return appTransaction
    }

    /// A JWS's payload decoded as `T`, with Apple's dates, and nothing checked: no signature, no
    /// chain, no claim. For a caller that reads fields the models leave out from a JWS that one of
    /// the `verifyAndDecode…` methods has already accepted (report intake reads a purchase
    /// transaction's fields to refuse one sent as an AppTransaction).
    public static func unverifiedPayload<T: Decodable>(of jws: String, as type: T.Type) throws(PurchaseRefusal) -> T {
        try CompactJWS(jws).decodePayload(T.self)
    }

    /// A notification and its nested tokens, each verified.
    public struct VerifiedNotification: Sendable, Hashable {
        /// The notification.
        public var payload: ResponseBodyV2DecodedPayload
        /// `data.signedTransactionInfo`, verified and bound to the notification's app and environment.
        public var transaction: JWSTransactionDecodedPayload?
        /// `data.signedRenewalInfo`, verified and bound to the notification's environment and transaction.
        public var renewalInfo: JWSRenewalInfoDecodedPayload?
        /// The transaction's JSON exactly as Apple signed it: what the store keeps, never written
        /// again (Foundation's encoding of the two payloads was 6% of a stored notification's CPU).
        public var transactionJSON: String?
        /// The renewal info's JSON exactly as Apple signed it.
        public var renewalInfoJSON: String?
        /// `appData.signedAppTransactionInfo`, verified and bound to the notification's app and environment.
        public var appTransaction: AppTransaction?
    }

    /// Verifies an App Store Server Notification V2: a request body `{"signedPayload": "…"}`, or the
    /// bare JWS. The nested transaction and renewal info are verified too, at their own dates, and must
    /// name the notification's bundle id and environment (the renewal info, which names no bundle, the
    /// transaction's original transaction id), so that genuine tokens of another app or environment
    /// cannot be carried in.
    public func verifyAndDecodeNotification(_ body: String) async throws(PurchaseRefusal) -> VerifiedNotification {
        let jws = try Self.signedPayload(of: body)
        let (payload, signer, _) = try await authenticate(jws, as: ResponseBodyV2DecodedPayload.self) { $0.signedDate }
        let named = payload.app
        try checkBundle(named.bundleId, what: "notification")
        try checkEnvironment(named.environment, signer: signer, what: "notification")
        try checkAppAppleId(named.appAppleId, environment: named.environment, what: "notification")

        var verified = VerifiedNotification(payload: payload)
        if let nested = payload.data?.signedTransactionInfo {
            let (transaction, json) = try await nestedRefusal("signedTransactionInfo") { () async throws(PurchaseRefusal) in
                try await verifiedTransaction(nested)
            }
            guard transaction.bundleId == named.bundleId else {
                throw PurchaseRefusal(
                    .wrongApp,
                    "the nested transaction names bundle \(Self.quote(transaction.bundleId)), the notification \(Self.quote(named.bundleId))"
                )
            }
            guard transaction.environment == named.environment else {
                throw PurchaseRefusal(
                    .wrongApp,
                    "the nested transaction is from \(Self.quote(transaction.environment?.rawValue)), the notification from \(Self.quote(named.environment?.rawValue))"
                )
            }
            verified.transaction = transaction
            verified.transactionJSON = String(decoding: json, as: UTF8.self)
        }
        if let nested = payload.data?.signedRenewalInfo {
            let (renewal, json) = try await nestedRefusal("signedRenewalInfo") { () async throws(PurchaseRefusal) in
                try await verifiedRenewalInfo(nested)
            }
            guard renewal.environment == named.environment else {
                throw PurchaseRefusal(
                    .wrongApp,
                    "the nested renewal info is from \(Self.quote(renewal.environment?.rawValue)), the notification from \(Self.quote(named.environment?.rawValue))"
                )
            }
            if let transaction = verified.transaction, renewal.originalTransactionId != transaction.originalTransactionId {
                throw PurchaseRefusal(
                    .wrongApp,
                    "the nested renewal info is for original transaction \(Self.quote(renewal.originalTransactionId)), the transaction for \(Self.quote(transaction.originalTransactionId))"
                )
            }
            verified.renewalInfo = renewal
            verified.renewalInfoJSON = String(decoding: json, as: UTF8.self)
        }
        if let nested = payload.appData?.signedAppTransactionInfo {
            let appTransaction = try await nestedRefusal("signedAppTransactionInfo") { () async throws(PurchaseRefusal) in
                try await verifyAndDecodeAppTransaction(nested)
            }
            guard appTransaction.bundleId == named.bundleId, appTransaction.receiptType == named.environment else {
                throw PurchaseRefusal(
                    .wrongApp,
                    "the nested AppTransaction names \(Self.quote(appTransaction.bundleId)) in \(Self.quote(appTransaction.receiptType?.rawValue)), the notification \(Self.quote(named.bundleId)) in \(Self.quote(named.environment?.rawValue))"
                )
            }
            verified.appTransaction = appTransaction
        }
        return verified
    }

    /// The JWS inside a notification body: `{"signedPayload": "…"}` (other members are read past),
    /// or the body itself when it is a bare JWS. Read by CatalogKit's `JSONScanner`, strict JSON:
    /// its 12 KiB value is found by `memchr` and made into a string once, where `JSONDecoder` was
    /// 2.6% of the server's time under `scripts/bench-purchases notifications`. A body naming
    /// `signedPayload` twice is refused.
    static func signedPayload(of body: String) throws(PurchaseRefusal) -> String {
        let trimmed = trimmingASCIIWhitespace(Array(body.utf8))
        guard trimmed.first == UInt8(ascii: "{") else { return String(decoding: trimmed, as: UTF8.self) }
        let found = trimmed.withUnsafeBufferPointer { bytes -> String? in
            var scanner = JSONScanner(bytes)
            var value: JSONScanner.StringBytes?
            do {
                try scanner.readObjectKeys { key, scanner in
                    guard try scanner.string(at: key) == "signedPayload" else { return try scanner.skipValue() }
                    guard value == nil, try scanner.peekKind() == .string else {
                        throw JSONScanner.SyntaxError(message: "signedPayload twice, or not a string")
                    }
                    value = try scanner.readStringBytes()
                }
                try scanner.expectEnd()
                return try value.map { try scanner.string(at: $0) }
            } catch {
                return nil
            }
        }
        guard let found else { throw PurchaseRefusal(.malformed, "notification body is not {\"signedPayload\": \"…\"}") }
        return found
    }

    private func nestedRefusal<T>(
        _ field: String, _ body: () async throws(PurchaseRefusal) -> T
    ) async throws(PurchaseRefusal) -> T {
        do {
            return try await body()
        } catch {
            throw PurchaseRefusal(error.code, "data.\(field): \(error.reason)")
        }
    }

    // MARK: - Authentication

    /// Who signed a token: Apple's chain, or the certificate the app's settings name for Xcode.
    enum Signer: Sendable {
        case appStore
        case xcode
    }

    /// Parses, authenticates and decodes a JWS: everything but the claims.
    func authenticate<T: Decodable>(
        _ text: String, as type: T.Type, date: (T) -> Date?
    ) async throws(PurchaseRefusal) -> (T, Signer, json: [UInt8]) {
        let jws = try CompactJWS(text, headers: headers)
        // A fixed algorithm, never the token's choice: this is what stops alg "none" and HS256 keyed
        // with the public key.
        guard jws.header.alg == "ES256" else {
            throw PurchaseRefusal(.notAuthenticated, "JWS alg is \(Self.quote(jws.header.alg)), only ES256 is accepted")
        }
        // RFC 7515 §4.1.11: extensions a recipient does not understand must make it refuse.
        if let crit = jws.header.crit {
            throw PurchaseRefusal(
                .notAuthenticated, "JWS lists critical extensions \(Self.quote(crit.joined(separator: ","))), none are understood")
        }
        guard let x5c = jws.header.x5c else {
            throw PurchaseRefusal(.notAuthenticated, "JWS header has no x5c certificate chain")
        }
        // Decoded before the signature is checked because its date is when the chain is checked (as in
        // Apple's library); nothing in it is believed until the signature verifies below.
        let payload = try jws.decodePayload(T.self)
        guard let signedAt = date(payload) else {
            throw PurchaseRefusal(.malformed, "payload has no signing date (signedDate, or receiptCreationDate for an AppTransaction)")
        }
        let key: P256.Signing.PublicKey
        var fixedKey: FixedKeyVerifier?
        let signer: Signer
        var newChain: (key: String, entry: VerifiedChainCache.Entry)?
        switch x5c.count {
        case 3:
            let leaf = try await appStoreLeafKey(leaf: x5c[0], intermediate: x5c[1], at: signedAt)
            (key, fixedKey, newChain) = (leaf.key, leaf.fixedKey, leaf.newChain)
            signer = .appStore
        case 1:
            key = try xcodeKey(x5c[0], at: signedAt)
            signer = .xcode
        default:
            throw PurchaseRefusal(.notAuthenticated, "x5c has \(x5c.count) certificates; the App Store sends leaf, intermediate and root")
        }
        guard jws.signature.count == 64 else {
            throw PurchaseRefusal(.notAuthenticated, "ES256 signature is \(jws.signature.count) bytes, not a 64-byte r||s pair")
        }
        signatureCheckCounter.add(1)
        // With the leaf's table when the chain is cached; swift-crypto takes any 64 bytes as r||s.
        let verifies =
            if let fixedKey { fixedKey.isValidSignature(jws.signature, for: jws.signingInput) } else {
                (try? P256.Signing.ECDSASignature(rawRepresentation: jws.signature)).map {
                    key.isValidSignature($0, for: jws.signingInput)
                } ?? false
            }
        guard verifies else {
            throw PurchaseRefusal(.notAuthenticated, "ES256 signature does not verify with the leaf certificate's key")
        }
        // Cached only now: a chain that merely validates (Apple's public certificates under anybody's
        // signature) never takes a place, so refused tokens cannot push genuine chains out. Its key's
        // table is built then too, once for the leaf, for the tokens it signs next.
        if let newChain, chains.capacity > 0 {
            var entry = newChain.entry
            entry.fixedKey = FixedKeyVerifier.shared(entry.key)
            chains.insert(entry, for: newChain.key)
        }
        return (payload, signer, jws.payload)
    }

    /// The leaf's key once the chain is known good at `date`: from the cache, or by validating it, and
    /// then with the entry to cache once the token's own signature has verified.
    private func appStoreLeafKey(leaf leafBase64: String, intermediate intermediateBase64: String, at date: Date)
        async throws(PurchaseRefusal) -> (
            key: P256.Signing.PublicKey, fixedKey: FixedKeyVerifier?, newChain: (key: String, entry: VerifiedChainCache.Entry)?
        )
    {
        let cacheKey = VerifiedChainCache.key(leaf: leafBase64, intermediate: intermediateBase64)
        if let entry = chains.entry(for: cacheKey) {
            guard entry.window.contains(date) else {
                throw PurchaseRefusal(
                    .notAuthenticated,
                    "signed at \(RFC3339.format(date)), outside its chain's validity \(RFC3339.format(entry.window.lowerBound))…\(RFC3339.format(entry.window.upperBound))"
                )
            }
            return (entry.key, entry.fixedKey, nil)
        }
        let leaf = try Self.certificate(leafBase64, position: "leaf")
        let intermediate = try Self.certificate(intermediateBase64, position: "intermediate")
        let root = try await validateChain(leaf: leaf, intermediate: intermediate, roots: trust.jwsRoots, at: date, what: "JWS")
        guard let key = P256.Signing.PublicKey(leaf.publicKey) else {
            throw PurchaseRefusal(.notAuthenticated, "leaf certificate's key is not P-256, which ES256 needs")
        }
        return (key, nil, (cacheKey, .init(window: Self.window(of: [leaf, intermediate, root]), key: key)))
    }

    /// The Xcode certificate's key, when the app's settings name exactly the certificate the token carries.
    private func xcodeKey(_ base64: String, at date: Date) throws(PurchaseRefusal) -> P256.Signing.PublicKey {
        let certificate = try Self.certificate(base64, position: "only")
        guard let xcode = app.xcodeCertificate else {
            throw PurchaseRefusal(
                .notAuthenticated,
                "x5c holds one self-signed certificate, as Xcode's StoreKit testing signs; accepted only for an app whose settings name that certificate"
            )
        }
        guard certificate == xcode else {
            throw PurchaseRefusal(.notAuthenticated, "x5c's certificate is not the Xcode certificate the app's settings name")
        }
        try Self.checkValidity(of: [certificate], at: date)
        guard let key = P256.Signing.PublicKey(certificate.publicKey) else {
            throw PurchaseRefusal(.notAuthenticated, "the Xcode certificate's key is not P-256, which ES256 needs")
        }
        return key
    }

    /// Validates leaf → `intermediate` → a root of `roots` at `date`, with Apple's marker OIDs, and
    /// returns the root.
    ///
    /// The chain is the one given, never searched for: the chain builder is handed this one
    /// intermediate and only the roots named as its issuer, so it checks at most three signatures (one
    /// more per further root of that name), whatever the evidence carries. Validity, names and
    /// markers are checked by hand first, so the commonest failures are said plainly and a chain that
    /// cannot be Apple's costs no signature check at all.
    func validateChain(
        leaf: Certificate, intermediate: Certificate, roots: [Certificate], at date: Date, what: String
    ) async throws(PurchaseRefusal) -> Certificate {
        try Self.checkValidity(of: [leaf, intermediate], at: date)
        guard intermediate.subject == leaf.issuer else {
            throw PurchaseRefusal(.notAuthenticated, "\(what) intermediate is not the issuer its leaf names")
        }
        guard Self.carries(intermediate, Self.intermediateMarkerOID) else {
            throw PurchaseRefusal(.notAuthenticated, "\(what) intermediate lacks Apple's marker 1.2.840.113635.100.6.2.1")
        }
        guard Self.carries(leaf, Self.leafMarkerOID) else {
            throw PurchaseRefusal(.notAuthenticated, "\(what) leaf lacks Apple's marker 1.2.840.113635.100.6.11.1")
        }
        let issuers = roots.filter { $0.subject == intermediate.issuer }
        guard !issuers.isEmpty else {
            throw PurchaseRefusal(.notAuthenticated, "\(what) intermediate is not issued by a trusted root")
        }
        let counter = signatureCheckCounter
        var verifier = Verifier(
            rootCertificates: CertificateStore(custom: CountingCertificateStore(certificates: issuers, counter: counter))
        ) {
            RFC5280Policy(fixedExpiryValidationTime: date)
            ExactChainPolicy(intermediate: intermediate)
        }
        let intermediates = CertificateStore(custom: CountingCertificateStore(certificates: [intermediate], counter: counter))
        switch await verifier.validate(leaf: leaf, intermediates: intermediates) {
        case .validCertificate(let chain):
            guard let root = chain.last else {
                throw PurchaseRefusal(.notAuthenticated, "\(what) chain is empty")
            }
            return root
        case .couldNotValidate(let failures):
            // In plain words: swift-certificates' reasons embed whole certificates.
            throw PurchaseRefusal(
                .notAuthenticated,
                failures.isEmpty
                    ? "\(what) certificate chain does not verify: the intermediate did not sign the leaf, or no trusted root signed the intermediate"
                    : "\(what) certificate chain does not meet RFC 5280 at \(RFC3339.format(date)) (validity, basic or name constraints)")
        }
    }

    /// Whether `certificate` carries the extension `oid` (one of Apple's markers).
    static func carries(_ certificate: Certificate, _ oid: ASN1ObjectIdentifier) -> Bool {
        certificate.extensions.contains { $0.oid == oid }
    }

    // MARK: - Claims

    func checkBundle(_ bundleId: String?, what: String) throws(PurchaseRefusal) {
        guard let expected = app.bundleId else { return }
        guard let bundleId else {
            throw PurchaseRefusal(.malformed, "\(what) names no bundleId")
        }
        guard bundleId == expected else {
            throw PurchaseRefusal(.wrongApp, "\(what) is for bundle \(Self.quote(bundleId)), not \(Self.quote(expected))")
        }
    }

    /// Production evidence that names an Apple id must name the app's; with none in the settings it is refused.
    func checkAppAppleId(_ appAppleId: Int64?, environment: AppStoreEnvironment?, what: String) throws(PurchaseRefusal) {
        guard environment == .production, app.bindsAppAppleId, let appAppleId else { return }
        guard let expected = app.appAppleId else {
            throw PurchaseRefusal(
                .wrongApp, "production \(what) names appAppleId \(appAppleId), and the app's settings name none to match it against")
        }
        guard appAppleId == expected else {
            throw PurchaseRefusal(.wrongApp, "\(what) is for appAppleId \(appAppleId), not \(expected)")
        }
    }

    /// The environment against the app's: Xcode evidence only when Xcode's certificate signed it, Apple's
    /// chain only for production and sandbox, and those only when the app accepts them.
    func checkEnvironment(_ environment: AppStoreEnvironment?, signer: Signer, what: String) throws(PurchaseRefusal) {
        guard let environment else {
            throw PurchaseRefusal(.malformed, "\(what) names no environment")
        }
        switch signer {
        case .xcode:
            guard environment == .xcode else {
                throw PurchaseRefusal(
                    .notAuthenticated, "Xcode's certificate signed \(what) that claims \(Self.quote(environment.rawValue))")
            }
            return
        case .appStore:
            guard environment == .production || environment == .sandbox else {
                throw PurchaseRefusal(
                    .environmentNotAccepted, "\(what) signed by the App Store claims environment \(Self.quote(environment.rawValue))")
            }
        }
        guard !app.environments.contains(environment) else { return }
        if environment == .sandbox, app.environments.contains(.production) {
            throw PurchaseRefusal(.sandboxEvidence, "sandbox \(what) sent to an app that accepts production only")
        }
        if environment == .production, app.environments.contains(.sandbox) {
            throw PurchaseRefusal(.productionEvidence, "production \(what) sent to an app that accepts the sandbox only")
        }
        throw PurchaseRefusal(.environmentNotAccepted, "\(what) is from \(environment), which the app does not accept")
    }

    // MARK: - Helpers

    static func certificate(_ base64: String, position: String) throws(PurchaseRefusal) -> Certificate {
        // x5c entries are standard base64 of DER (RFC 7515 §4.1.6), not base64url, and read strictly:
        // the verified-chain cache keys chains by this text, which must spell its certificate one way.
        guard let der = StrictBase64.decode(base64) else {
            throw PurchaseRefusal(.notAuthenticated, "x5c \(position) certificate is not canonical standard base64")
        }
        do {
            return try Certificate(derEncoded: der)
        } catch {
            throw PurchaseRefusal(.notAuthenticated, "x5c \(position) certificate is not DER X.509")
        }
    }

    static func checkValidity(of certificates: [Certificate], at date: Date) throws(PurchaseRefusal) {
        for certificate in certificates {
            if date < certificate.notValidBefore {
                throw PurchaseRefusal(
                    .notAuthenticated,
                    "signed at \(RFC3339.format(date)), before \(commonName(certificate)) became valid at \(RFC3339.format(certificate.notValidBefore))"
                )
            }
            if date > certificate.notValidAfter {
                throw PurchaseRefusal(
                    .notAuthenticated,
                    "signed at \(RFC3339.format(date)), after \(commonName(certificate)) expired at \(RFC3339.format(certificate.notValidAfter))"
                )
            }
        }
    }

    /// Where every certificate of a chain is valid.
    static func window(of certificates: [Certificate]) -> ClosedRange<Date> {
        let start = certificates.map(\.notValidBefore).max() ?? .distantPast
        let end = certificates.map(\.notValidAfter).min() ?? .distantFuture
        return start <= end ? start...end : start...start
    }

    static func commonName(_ certificate: Certificate) -> String {
        for rdn in certificate.subject {
            for attribute in rdn where attribute.type == .RDNAttributeType.commonName {
                return "\"\(attribute.value)\""
            }
        }
        return "a certificate"
    }

    static func quote(_ text: String?) -> String {
        text.map { PurchaseRefusal.excerpt($0) } ?? "nothing"
    }
}

/// Apple's shape beyond RFC 5280, from its `ChainVerifier`: exactly leaf, intermediate and root, and
/// the intermediate the one given, whose marker OID `validateChain` checked. RFC 5280 alone would
/// accept any leaf under Apple's root (a developer's own certificate, say); the markers are what make
/// the signer the App Store.
struct ExactChainPolicy: VerifierPolicy, Sendable {
    // The markers are not critical extensions: this policy takes responsibility for none.
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []
    let intermediate: Certificate

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        guard chain.count == 3, chain[1] == intermediate else {
            return .failsToMeetPolicy(reason: "not the leaf, its intermediate and a root")
        }
        return .meetsPolicy
    }
}
