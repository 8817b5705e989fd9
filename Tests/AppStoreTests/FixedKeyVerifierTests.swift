import Crypto
import Foundation
import Testing

@testable import AppStore

/// The fixed-key checks (``FixedKeyVerifier``) give swift-crypto's verdict on every signature:
/// Wycheproof's ES256 vectors (edge cases of r, s and the arithmetic, 252 tests over 103 keys), and
/// signatures made here, genuine and altered, compared one by one.
@Suite struct FixedKeyVerifierTests {
    struct Vectors: Decodable {
        struct Group: Decodable {
            var key: String
            var tests: [Vector]
        }
        struct Vector: Decodable {
            var id: Int
            var comment: String
            var msg: String
            var sig: String
            var valid: Bool
        }
        var numberOfTests: Int
        var groups: [Group]
    }

    static func bytes(_ hex: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }

    /// swift-crypto's verdict for the same bytes.
    static func cryptoVerdict(_ key: P256.Signing.PublicKey, _ signature: [UInt8], _ message: [UInt8]) -> Bool {
        guard signature.count == 64, let parsed = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
        return key.isValidSignature(parsed, for: message)
    }

    @Test func wycheproofVectors() throws {
        let url = try #require(Bundle.module.url(forResource: "wycheproof-ecdsa-p256-sha256-p1363", withExtension: "json"))
        let vectors = try JSONDecoder().decode(Vectors.self, from: Data(contentsOf: url))
        #expect(vectors.groups.reduce(0) { $0 + $1.tests.count } == vectors.numberOfTests)
        var valid = 0
        for group in vectors.groups {
            let key = try P256.Signing.PublicKey(x963Representation: Self.bytes(group.key))
            // Fails here, loudly, where the tables do not run (not x86-64 Linux with AVX).
            let fixed = try #require(FixedKeyVerifier(key))
            for vector in group.tests {
                let message = Self.bytes(vector.msg)
                let signature = Self.bytes(vector.sig)
                #expect(
                    fixed.isValidSignature(signature, for: message) == vector.valid,
                    "Wycheproof test \(vector.id) (\(vector.comment)) should be \(vector.valid ? "valid" : "invalid")")
                #expect(Self.cryptoVerdict(key, signature, message) == vector.valid, "swift-crypto on test \(vector.id)")
                if vector.valid { valid += 1 }
            }
        }
        #expect(valid > 100)
    }

    /// The group's order, big-endian.
    static let order = bytes("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")

    /// `order - value` for a 32-byte big-endian value below the order.
    static func negated(_ value: ArraySlice<UInt8>) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for index in (0..<32).reversed() {
            let difference = Int(order[index]) - Int(value[value.startIndex + index]) - borrow
            result[index] = UInt8((difference + 256) % 256)
            borrow = difference < 0 ? 1 : 0
        }
        return result
    }

    @Test func signaturesMadeHereAndAlteredGetSwiftCryptosVerdict() throws {
        var checked = 0
        for _ in 0..<12 {
            let signer = P256.Signing.PrivateKey()
            let fixed = try #require(FixedKeyVerifier(signer.publicKey))
            for index in 0..<40 {
                let message = Array("token \(index) \(UUID())".utf8)
                let signature = Array(try signer.signature(for: message).rawRepresentation)
                var cases: [([UInt8], [UInt8], Bool?)] = [
                    (signature, message, true),
                    // s and order - s both verify in ECDSA.
                    (Array(signature[..<32]) + Self.negated(signature[32...]), message, true),
                    (signature, message + [0], false),
                    (Array(signature[..<32]) + signature[..<32], message, false),
                    (Array(repeating: 0, count: 32) + signature[32...], message, false),
                    (Array(signature[..<32]) + Array(repeating: 0, count: 32), message, false),
                    (Self.order + signature[32...], message, false),
                    (Array(signature[..<32]) + Self.order, message, false),
                    (Array(signature.dropLast()), message, false),
                    (signature + [0], message, false),
                ]
                var flipped = signature
                flipped[Int.random(in: 0..<64)] ^= 1 << UInt8.random(in: 0..<8)
                cases.append((flipped, message, nil))
                for (signature, message, expected) in cases {
                    let verdict = fixed.isValidSignature(signature, for: message)
                    #expect(verdict == Self.cryptoVerdict(signer.publicKey, signature, message))
                    if let expected { #expect(verdict == expected) }
                    checked += 1
                }
                // Another key's signature over the same message.
                let other = Array(try P256.Signing.PrivateKey().signature(for: message).rawRepresentation)
                #expect(!fixed.isValidSignature(other, for: message))
            }
        }
        #expect(checked == 12 * 40 * 11)
    }

    @Test func oneTableForAKeyAcrossVerifiers() throws {
        let key = P256.Signing.PrivateKey().publicKey
        let first = try #require(FixedKeyVerifier.shared(key))
        #expect(FixedKeyVerifier.shared(key) === first)
        // The oldest go past the bound; a key asked for again gets a table again.
        for _ in 0..<FixedKeyVerifier.sharedCapacity { _ = FixedKeyVerifier.shared(P256.Signing.PrivateKey().publicKey) }
        let again = try #require(FixedKeyVerifier.shared(key))
        #expect(again !== first)
        let signer = P256.Signing.PrivateKey()
        let message = Array("shared".utf8)
        let signature = Array(try signer.signature(for: message).rawRepresentation)
        #expect(try #require(FixedKeyVerifier.shared(signer.publicKey)).isValidSignature(signature, for: message))
        #expect(!again.isValidSignature(signature, for: message))
    }

    @Test func theGeneratorItselfAsAKey() throws {
        // The key whose discrete log is 1: u1·G + u2·G sums two multiples of one point, which the
        // full addition must handle, equal or not.
        var one = [UInt8](repeating: 0, count: 32)
        one[31] = 1
        let signer = try P256.Signing.PrivateKey(rawRepresentation: one)
        let fixed = try #require(FixedKeyVerifier(signer.publicKey))
        for index in 0..<50 {
            let message = Array("message \(index)".utf8)
            let signature = Array(try signer.signature(for: message).rawRepresentation)
            #expect(fixed.isValidSignature(signature, for: message))
            #expect(!fixed.isValidSignature(signature, for: message + [1]))
        }
    }
}
