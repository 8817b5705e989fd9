import AppStoreTestSupport
import Crypto
import Foundation
import Ledger
import Testing
import X509

@testable import AppStore

/// Issue 35: a refused piece of evidence costs almost nothing. Each test is an attack that cost the
/// earlier verifier dearly, held to a bound that is counted, never timed: the signatures checked (or
/// handed to the chain builder), the cache entries made, the refusal's code.
@Suite struct RefusalCostTests {
    typealias PKI = AppStoreTestPKI
    static let app = SignedDataVerifierTests.app

    static func refusal(_ body: () async throws -> Void) async -> PurchaseRefusal? {
        await SignedDataVerifierTests.refusal(body)
    }

    // MARK: - Receipts

    @Test func certificatesThatAllIssueEachOtherCostNoSignatureCheck() async throws {
        let trusted = try await PKI.rsa()
        let mutual = try await PKI.mutuallyIssuing(count: 5)
        let receipt = try await TestReceipts.sign(
            TestReceipts.payload(), certificate: mutual.leaf, keyPEM: mutual.leafKeyPEM, chain: mutual.certificates)
        let verifier = SignedDataVerifier(trust: trusted.trust, app: Self.app)
        let refusal = await Self.refusal { _ = try await verifier.verifyAndDecodeReceipt(receipt) }
        #expect(refusal?.code == .notAuthenticated)
        #expect(refusal?.reason.contains("6 certificates") == true, "\(refusal?.reason ?? "")")
        #expect(verifier.signatureChecks == 0)
    }

    @Test func aReceiptWithTwoCandidateIntermediatesCostsNoSignatureCheck() async throws {
        let trusted = try await PKI.rsa()
        // Three certificates, as many as Apple's: the signer and two that could each be its issuer.
        let mutual = try await PKI.mutuallyIssuing(count: 2)
        let receipt = try await TestReceipts.sign(
            TestReceipts.payload(), certificate: mutual.leaf, keyPEM: mutual.leafKeyPEM, chain: mutual.certificates)
        let verifier = SignedDataVerifier(trust: trusted.trust, app: Self.app)
        let refusal = await Self.refusal { _ = try await verifier.verifyAndDecodeReceipt(receipt) }
        #expect(refusal?.code == .notAuthenticated)
        #expect(refusal?.reason.contains("intermediate") == true, "\(refusal?.reason ?? "")")
        #expect(verifier.signatureChecks == 0)
    }

    @Test func aGenuineReceiptCostsAFewSignatureChecks() async throws {
        let pki = try await PKI.rsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        _ = try await verifier.verifyAndDecodeReceipt(try await TestReceipts.signed(TestReceipts.payload(), by: pki))
        // The intermediate's signature on the signer, the root's on the intermediate, the signer's on the content.
        #expect(verifier.signatureChecks <= 3)
    }

    @Test func aForgedReceiptIsRefusedBeforeItsContentIsRead() async throws {
        let trusted = try await PKI.rsa()
        let impostor = try await PKI.rsa()
        // A last in-app entry whose date does not parse: only a verifier that decodes the content
        // before it authenticates it can say so.
        let entries = (0..<50).map {
            TestReceipts.InApp(
                productId: "com.example.app.coins", transactionId: "\($0)", originalTransactionId: "\($0)",
                purchaseDate: $0 == 49 ? "not a date" : "2024-12-01T10:00:00Z")
        }
        let receipt = try await TestReceipts.signed(TestReceipts.payload(inApp: entries), by: impostor)
        let verifier = SignedDataVerifier(trust: trusted.trust, app: Self.app)
        let refusal = await Self.refusal { _ = try await verifier.verifyAndDecodeReceipt(receipt) }
        #expect(refusal?.code == .notAuthenticated, "\(refusal?.reason ?? "")")
    }

    @Test func aReceiptOfTinyBERElementsIsRefusedBeforeItIsParsed() async throws {
        let pki = try await PKI.rsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        let entries = (0..<50).map {
            TestReceipts.InApp(
                productId: "com.example.app.coins", transactionId: "\($0)", originalTransactionId: "\($0)",
                purchaseDate: "2024-12-01T10:00:00Z")
        }
        // About 8 KiB of content.
        let der = try await TestReceipts.signed(TestReceipts.payload(inApp: entries), by: pki)
        // In chunks of 64 bytes, as BER allows and Xcode does with larger ones, it still verifies.
        _ = try await verifier.verifyAndDecodeReceipt(TestReceipts.chunked(der, size: 64))
        let checks = verifier.signatureChecks
        // In 1-byte chunks: a BER element, and a node for the parser, per byte of content.
        let refusal = await Self.refusal { _ = try await verifier.verifyAndDecodeReceipt(TestReceipts.chunked(der, size: 1)) }
        #expect(refusal?.code == .malformed, "\(refusal?.reason ?? "accepted")")
        #expect(refusal?.reason.contains("BER elements") == true, "\(refusal?.reason ?? "accepted")")
        #expect(verifier.signatureChecks == checks)
    }

    /// In-app entries of one attribute each, and attributes of an undocumented type, beside the
    /// payload's own (8 attributes and 2 entries).
    static func extra(entries: Int, attributes: Int) -> [[UInt8]] {
        let entry = TestReceipts.attribute(17, TestReceipts.tlv(0x31, TestReceipts.attribute(1702, TestReceipts.utf8String("p"))))
        return Array(repeating: entry, count: entries) + Array(repeating: TestReceipts.attribute(1000, []), count: attributes)
    }

    @Test func inAppEntriesAreCappedAt5000() async throws {
        let pki = try await PKI.rsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        let atTheCap = try await verifier.verifyAndDecodeReceipt(
            try await TestReceipts.signed(TestReceipts.payload(extra: Self.extra(entries: 4_998, attributes: 0)), by: pki))
        #expect(atTheCap.inApp.count == 5_000)
        let over = try await TestReceipts.signed(TestReceipts.payload(extra: Self.extra(entries: 4_999, attributes: 0)), by: pki)
        let refusal = await Self.refusal { _ = try await verifier.verifyAndDecodeReceipt(over) }
        #expect(refusal?.code == .malformed)
        #expect(refusal?.reason.contains("5000") == true, "\(refusal?.reason ?? "")")
    }

    @Test func attributesAreCappedAt10000() async throws {
        let pki = try await PKI.rsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        _ = try await verifier.verifyAndDecodeReceipt(
            try await TestReceipts.signed(TestReceipts.payload(extra: Self.extra(entries: 0, attributes: 9_990)), by: pki))
        let over = try await TestReceipts.signed(TestReceipts.payload(extra: Self.extra(entries: 0, attributes: 9_991)), by: pki)
        let refusal = await Self.refusal { _ = try await verifier.verifyAndDecodeReceipt(over) }
        #expect(refusal?.code == .malformed)
        #expect(refusal?.reason.contains("10000") == true, "\(refusal?.reason ?? "")")
    }

    // MARK: - The verified-chain cache

    @Test func aTokenWhoseSignatureFailsAddsNoCacheEntry() async throws {
        let pki = try PKI.ecdsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        // Apple's public certificates, a signature by anybody.
        let forged = try PKI.sign(header: pki.header, payload: PKI.transaction(), key: P256.Signing.PrivateKey())
        let refusal = await Self.refusal { _ = try await verifier.verifyAndDecodeTransaction(forged) }
        #expect(refusal?.code == .notAuthenticated)
        #expect(verifier.cachedChainCount == 0)
    }

    @Test func respelledCertificatesMakeNoNewCacheEntries() async throws {
        let pki = try PKI.ecdsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app, cacheCapacity: 8)
        _ = try await verifier.verifyAndDecodeTransaction(try pki.jws(payload: PKI.transaction()))
        #expect(verifier.cachedChainCount == 1)
        // Foundation's decoder reads each of these as the same certificate: padding added, or (for a
        // certificate whose base64 ends in padding) other bits in the last character's unused ones.
        var spellings = (1...4).map { pki.x5c[0] + String(repeating: "=", count: 4 * $0) }
        if let respelled = Self.otherTrailingBits(pki.x5c[0]) { spellings.append(respelled) }
        for spelling in spellings {
            var header = pki.header
            header["x5c"] = [spelling, pki.x5c[1], pki.x5c[2]]
            let token = try PKI.sign(header: header, payload: PKI.transaction(), key: P256.Signing.PrivateKey())
            let refusal = await Self.refusal { _ = try await verifier.verifyAndDecodeTransaction(token) }
            #expect(refusal?.code == .notAuthenticated)
        }
        #expect(verifier.cachedChainCount == 1)
    }

    /// `base64` with the last character before its padding changed in the bits decoding drops, or nil
    /// when it has no padding.
    static func otherTrailingBits(_ base64: String) -> String? {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        var characters = Array(base64)
        let padding = characters.reversed().prefix { $0 == "=" }.count
        guard padding > 0, let value = alphabet.firstIndex(of: characters[characters.count - padding - 1]) else { return nil }
        // One padding character: 2 unused bits; two: 4.
        characters[characters.count - padding - 1] = alphabet[value ^ 1]
        return String(characters)
    }

    // MARK: - Reasons

    @Test func noReasonQuotesASourceLocation() async throws {
        let pki = try await PKI.rsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        let genuine = try await TestReceipts.signed(TestReceipts.payload(), by: pki)
        let garbageContent = try await TestReceipts.signed([0x31, 0x05, 0x30, 0x03, 0x02, 0x01, 0x01], by: pki)
        let inputs: [[UInt8]] = [
            Array("NOT A RECEIPT".utf8), Array(genuine.prefix(genuine.count / 2)), [0x30, 0x03, 0x02, 0x01, 0x01], garbageContent,
            Array(genuine.prefix(40)) + Array(repeating: 0, count: 40),
        ]
        for input in inputs {
            let refusal = await Self.refusal { _ = try await verifier.verifyAndDecodeReceipt(input) }
            #expect(refusal != nil)
            #expect(refusal?.reason.contains(".swift:") == false, "\(refusal?.reason ?? "")")
            #expect((refusal?.reason.count ?? 0) < 300, "\(refusal?.reason ?? "")")
        }
        let jws = try PKI.ecdsa()
        let tokens = [
            try PKI.sign(
                header: ["alg": "ES256", "x5c": ["AAAA", jws.x5c[1], jws.x5c[2]]], payload: PKI.transaction(),
                key: P256.Signing.PrivateKey()),
            try jws.jws(header: ["alg": "ES256", "x5c": [jws.x5c[1], jws.x5c[2], jws.x5c[2]]], payload: PKI.transaction()),
        ]
        let jwsVerifier = SignedDataVerifier(trust: jws.trust, app: Self.app)
        for token in tokens {
            let refusal = await Self.refusal { _ = try await jwsVerifier.verifyAndDecodeTransaction(token) }
            #expect(refusal?.reason.contains(".swift:") == false, "\(refusal?.reason ?? "")")
            #expect((refusal?.reason.count ?? 0) < 300, "\(refusal?.reason ?? "")")
        }
    }

    @Test func aReasonThatCountsCertificatesCountsTheTokens() async throws {
        let pki = try PKI.ecdsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        let x5c = pki.x5c
        // The intermediate as the leaf, issued by the root: a chain builder finds a chain of two in a token of three.
        for chain in [[x5c[1], x5c[2], x5c[2]], [x5c[0], x5c[1], x5c[2], x5c[2]], [x5c[0], x5c[1]], [x5c[1], x5c[1], x5c[2]]] {
            let token = try pki.jws(header: ["alg": "ES256", "x5c": chain], payload: PKI.transaction())
            let refusal = await Self.refusal { _ = try await verifier.verifyAndDecodeTransaction(token) }
            let reason = refusal?.reason ?? ""
            #expect(refusal?.code == .notAuthenticated)
            let stated = reason.firstMatch(of: /(\d+) certificates/).map { Int($0.1) }
            #expect(stated == nil || stated == chain.count, "\(chain.count) in the token: \(reason)")
        }
    }
}
