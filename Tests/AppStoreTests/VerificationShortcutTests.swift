import AppStoreTestSupport
import Crypto
import FeedSigning
import Foundation
import Ledger
import Testing

@testable import AppStore

/// The shortcuts that make a notification cheaper to verify (docs/benchmarks.md, durable
/// notifications) change no verdict: a cached header is never a cached trust, and a notification
/// body read without the JSON decoder gives the decoder's answer.
@Suite struct VerificationShortcutTests {
    typealias PKI = AppStoreTestPKI
    static let app = SignedDataVerifierTests.app

    /// `jws` with its payload signed again by `key`, its header bytes untouched.
    static func resigned(_ jws: String, payload: [String: any Sendable]? = nil, key: P256.Signing.PrivateKey) throws -> String {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let body = try payload.map { Base64URL.encode(try JSONSerialization.data(withJSONObject: $0)) } ?? parts[1]
        let input = parts[0] + "." + body
        return input + "." + Base64URL.encode(try key.signature(for: Data(input.utf8)).rawRepresentation)
    }

    @Test func aCachedHeaderDoesNotVouchForAnotherSigner() async throws {
        let pki = try PKI.ecdsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        let genuine = try pki.jws(payload: PKI.transaction())
        _ = try await verifier.verifyAndDecodeTransaction(genuine)
        #expect(verifier.cachedHeaderCount == 1)
        // The genuine header, byte for byte (a hit), over a payload the attacker chose and signed.
        let forged = try Self.resigned(
            genuine, payload: PKI.transaction(["transactionId": "9"]), key: P256.Signing.PrivateKey())
        let refusal = await SignedDataVerifierTests.refusal { _ = try await verifier.verifyAndDecodeTransaction(forged) }
        #expect(refusal?.code == .notAuthenticated)
        // The genuine x5c under another algorithm: a header of other bytes, decoded on its own.
        var header = pki.header
        header["alg"] = "HS256"
        let swapped = try PKI.sign(header: header, payload: PKI.transaction(), key: try #require(pki.signingKey))
        let algorithm = await SignedDataVerifierTests.refusal { _ = try await verifier.verifyAndDecodeTransaction(swapped) }
        #expect(algorithm?.code == .notAuthenticated)
        _ = try await verifier.verifyAndDecodeTransaction(genuine)
    }

    @Test func aCachedChainChecksWithItsLeafsTable() async throws {
        let pki = try PKI.ecdsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        let cacheKey = VerifiedChainCache.key(leaf: pki.x5c[0], intermediate: pki.x5c[1])
        _ = try await verifier.verifyAndDecodeTransaction(try pki.jws(payload: PKI.transaction()))
        // The one table of the leaf's key, shared with every other verifier.
        let leafKey = try #require(pki.signingKey).publicKey
        let table = try #require(verifier.chains.entry(for: cacheKey)?.fixedKey)
        #expect(table === FixedKeyVerifier.shared(leafKey))
        // Tokens after the first are checked with it, and a forged one is still refused.
        _ = try await verifier.verifyAndDecodeTransaction(try pki.jws(payload: PKI.transaction(["transactionId": "2"])))
        let forged = try Self.resigned(
            try pki.jws(payload: PKI.transaction()), payload: PKI.transaction(["transactionId": "3"]), key: P256.Signing.PrivateKey())
        let refusal = await SignedDataVerifierTests.refusal { _ = try await verifier.verifyAndDecodeTransaction(forged) }
        #expect(refusal?.code == .notAuthenticated)
        // With the cache off, no chain is kept and no table made for it.
        let uncached = SignedDataVerifier(trust: pki.trust, app: Self.app, cacheCapacity: 0)
        _ = try await uncached.verifyAndDecodeTransaction(try pki.jws(payload: PKI.transaction()))
        #expect(uncached.chains.entry(for: cacheKey) == nil)
    }

    @Test func madeUpHeadersFillTheCacheOnlyToItsBound() async throws {
        let pki = try PKI.ecdsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app, cacheCapacity: 4)
        let impostor = P256.Signing.PrivateKey()
        for index in 0..<20 {
            var header = pki.header
            header["kid"] = "made-up-\(index)"
            let token = try PKI.sign(header: header, payload: PKI.transaction(), key: impostor)
            let refusal = await SignedDataVerifierTests.refusal { _ = try await verifier.verifyAndDecodeTransaction(token) }
            #expect(refusal?.code == .notAuthenticated)
        }
        #expect(verifier.cachedHeaderCount == 4)
        // Headers that do not decode are never kept.
        _ = await SignedDataVerifierTests.refusal { _ = try await verifier.verifyAndDecodeTransaction("bm90IGpzb24.e30.AA") }
        #expect(verifier.cachedHeaderCount == 4)
        _ = try await verifier.verifyAndDecodeTransaction(try pki.jws(payload: PKI.transaction()))
        let off = SignedDataVerifier(trust: pki.trust, app: Self.app, cacheCapacity: 0)
        _ = try await off.verifyAndDecodeTransaction(try pki.jws(payload: PKI.transaction()))
        #expect(off.cachedHeaderCount == 0)
    }

    /// The cache hashes only a header's length and first bytes: headers alike in those but not
    /// after are still told apart, each found as itself.
    @Test func headersAlikeInTheirFirstBytesAreToldApart() {
        let cache = JWSHeaderCache(capacity: 8)
        let start = [UInt8](repeating: UInt8(ascii: "A"), count: 3_000)
        let headers = (0..<4).map { index in
            (start + Array("-\(index)".utf8), CompactJWS.Header(alg: "ES256", x5c: ["\(index)"], crit: nil))
        }
        for (bytes, header) in headers { cache.insert(header, for: bytes) }
        for (bytes, header) in headers { #expect(cache.header(for: bytes)?.x5c == header.x5c) }
        #expect(cache.header(for: start + Array("-9".utf8)) == nil)
        #expect(cache.count == 4)
    }

    /// A notification body is read as strict JSON, its value found without decoding it member by
    /// member: every form JSON allows gives the JWS, and anything else is refused.
    @Test func aNotificationBodyIsReadAsJSONAllows() async throws {
        let pki = try PKI.ecdsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        let jws = try pki.jws(payload: PKI.notification(type: "TEST"))
        let read = [
            "{\"signedPayload\":\"\(jws)\"}", "{ \"signedPayload\" :\t\"\(jws)\"\r\n}",
            // Forms JSON allows that Apple does not send: an escape in the value, another member beside it.
            "{\"signedPayload\":\"\(jws.replacingOccurrences(of: ".", with: "\\u002e"))\"}",
            "{\"signedPayload\":\"\(jws)\",\"other\":1}",
        ]
        for body in read {
            #expect(try SignedDataVerifier.signedPayload(of: body) == jws, "\(body.prefix(40))")
            _ = try await verifier.verifyAndDecodeNotification(body)
        }
        // A value with a control character is not JSON; one with anything but base64url and dots is
        // refused by the JWS parser, in the header, payload or signature.
        let refused = [
            "{\"signedPayload\":\"\(jws)\"}x", "{\"signedPayload\":\"\(jws)\"", "{\"signedPayload\":\"\(jws)}",
            "{\"signedPayload\":\"\(jws)\u{01}\"}", "{\"signedPayload\":\"\u{01}\(jws)\"}", "{\"signedPayload\":\"\(jws) \"}",
            "{\"signedPayload\":\"\(jws)é\"}", "{\"signedPayload\":\"\(jws.replacingOccurrences(of: ".", with: ".="))\"}",
            "{\"signedPayload\":\"\(jws.replacingOccurrences(of: ".", with: "\u{7F}.", options: [], range: jws.range(of: ".")))\"}",
            // Not JSON, and `signedPayload` twice (which `JSONDecoder` read as one of them).
            "{\"signedPayload\":\"\(jws)\",}", "{\"signedPayload\":\"\(jws)\",\"signedPayload\":\"\(jws)\"}",
        ]
        for body in refused {
            let refusal = await SignedDataVerifierTests.refusal { _ = try await verifier.verifyAndDecodeNotification(body) }
            #expect(refusal?.code == .malformed)
        }
    }
}
