import Content
import Foundation
import Testing

/// Signed content URLs (docs/content.md, "Signed URLs"): each attack is a URL a client could send,
/// refused with its stable code, before anything reads a disk.
@Suite struct SignedContentURLTests {
    static let now = Date(timeIntervalSince1970: 1_750_000_000)
    static let digest = ContentDigest.of(Data("issue 42".utf8))
    static let other = ContentDigest.of(Data("issue 43".utf8))

    static func key(_ id: String, _ fill: UInt8) throws -> ContentSigningKey {
        try ContentSigningKey(id: id, secret: [UInt8](repeating: fill, count: 32))
    }

    static func ring(_ ids: [(String, UInt8)], current: String) throws -> ContentKeyRing {
        try ContentKeyRing(keys: ids.map { try key($0.0, $0.1) }, current: current)
    }

    /// A URL valid for ten minutes from `now`, signed with k1.
    static func issued() throws -> (ContentKeyRing, ContentURLToken) {
        let ring = try ring([("k1", 1)], current: "k1")
        return (ring, ring.sign(digest: digest, expires: now.addingTimeInterval(600)))
    }

    static func verdict(_ ring: ContentKeyRing, path: String, query: String, at instant: Date = now) -> ContentURLRefusal.Code? {
        switch ring.verify(path: path, query: query, now: instant) {
        case .success: nil
        case .failure(let refusal): refusal.code
        }
    }

    @Test func aFreshURLVerifiesAndSaysWhatItIsFor() throws {
        let (ring, token) = try Self.issued()
        #expect(token.path == "/v1/content/\(Self.digest.hex)")
        #expect(token.query == "exp=1750000600&kid=k1&sig=\(token.signature)")
        #expect(token.signature.utf8.count == 43)
        #expect(try ring.verify(path: token.path, query: token.query, now: Self.now).get() == token)
        // Valid up to the last second before the expiry.
        #expect(Self.verdict(ring, path: token.path, query: token.query, at: Self.now.addingTimeInterval(599.9)) == nil)
    }

    /// One altered URL per row, and the code it must be refused with.
    struct Attack: Sendable, CustomTestStringConvertible {
        var name: String
        var alter: @Sendable (_ path: String, _ query: String, _ token: ContentURLToken) -> (String, String)
        var code: ContentURLRefusal.Code
        var testDescription: String { name }
    }

    static let attacks: [Attack] = [
        Attack(name: "another file's digest", alter: { _, query, _ in ("/v1/content/\(other.hex)", query) }, code: .badSignature),
        Attack(
            name: "one digit of the digest changed",
            alter: { path, query, _ in
                let flipped = path.last == "0" ? "1" : "0"
                return (String(path.dropLast()) + flipped, query)
            }, code: .badSignature),
        Attack(
            name: "expiry pushed later", alter: { path, _, token in (path, "exp=\(token.expires + 60)&kid=k1&sig=\(token.signature)") },
            code: .badSignature),
        Attack(
            name: "expiry pulled earlier, still ahead",
            alter: { path, _, token in (path, "exp=\(token.expires - 60)&kid=k1&sig=\(token.signature)") }, code: .badSignature),
        Attack(
            name: "future-dated far beyond any lifetime this server signs",
            alter: { path, _, token in (path, "exp=\(token.expires + 10 * 365 * 86_400)&kid=k1&sig=\(token.signature)") },
            code: .tooFarAhead),
        Attack(
            name: "kid swapped to another key of the ring",
            alter: { path, _, token in (path, "exp=\(token.expires)&kid=k2&sig=\(token.signature)") }, code: .badSignature),
        Attack(
            name: "kid swapped to a key the server does not have",
            alter: { path, _, token in (path, "exp=\(token.expires)&kid=k9&sig=\(token.signature)") }, code: .unknownKey),
        Attack(
            name: "signature truncated",
            alter: { path, _, token in (path, "exp=\(token.expires)&kid=k1&sig=\(token.signature.dropLast(1))") },
            code: .malformed),
        Attack(
            name: "signature truncated to nothing", alter: { path, _, token in (path, "exp=\(token.expires)&kid=k1&sig=") },
            code: .malformed),
        Attack(
            name: "signature with one character changed",
            alter: { path, _, token in
                let last: Character = token.signature.first == "A" ? "B" : "A"
                return (path, "exp=\(token.expires)&kid=k1&sig=\(last)\(token.signature.dropFirst())")
            }, code: .badSignature),
        Attack(
            name: "signature in padded standard base64",
            alter: { path, _, token in (path, "exp=\(token.expires)&kid=k1&sig=\(token.signature)=") }, code: .malformed),
        Attack(name: "no signature at all", alter: { path, _, token in (path, "exp=\(token.expires)&kid=k1") }, code: .malformed),
        Attack(
            name: "a second expiry appended", alter: { path, query, token in (path, query + "&exp=\(token.expires + 86_000)") },
            code: .malformed),
        Attack(name: "an extra parameter", alter: { path, query, _ in (path, query + "&download=1") }, code: .malformed),
        Attack(name: "upper-case digest", alter: { path, query, _ in (path.uppercased(), query) }, code: .malformed),
        Attack(name: "a path outside /v1/content", alter: { _, query, _ in ("/v1/contents/\(digest.hex)", query) }, code: .malformed),
        Attack(
            name: "a huge expiry", alter: { path, _, token in (path, "exp=99999999999999999999999&kid=k1&sig=\(token.signature)") },
            code: .malformed),
        Attack(
            name: "the same expiry spelled with a leading zero",
            alter: { path, _, token in (path, "exp=0\(token.expires)&kid=k1&sig=\(token.signature)") }, code: .malformed),
        Attack(
            name: "the same parameters in another order",
            alter: { path, _, token in (path, "kid=k1&exp=\(token.expires)&sig=\(token.signature)") }, code: .malformed),
        Attack(
            name: "a negative expiry", alter: { path, _, token in (path, "exp=-1&kid=k1&sig=\(token.signature)") }, code: .malformed),
    ]

    @Test(arguments: attacks) func attackIsRefused(_ attack: Attack) throws {
        let ring = try Self.ring([("k1", 1), ("k2", 2)], current: "k1")
        let token = ring.sign(digest: Self.digest, expires: Self.now.addingTimeInterval(600))
        #expect(Self.verdict(ring, path: token.path, query: token.query) == nil)
        let (path, query) = attack.alter(token.path, token.query, token)
        #expect(Self.verdict(ring, path: path, query: query) == attack.code)
    }

    @Test func expiredAtItsExpiryAndAfter() throws {
        let (ring, token) = try Self.issued()
        #expect(Self.verdict(ring, path: token.path, query: token.query, at: Self.now.addingTimeInterval(600)) == .expired)
        #expect(Self.verdict(ring, path: token.path, query: token.query, at: Self.now.addingTimeInterval(86_400 * 30)) == .expired)
    }

    @Test func aGenuineURLSignedTooFarAheadIsRefused() throws {
        let ring = try Self.ring([("k1", 1)], current: "k1")
        let token = ring.sign(digest: Self.digest, expires: Self.now.addingTimeInterval(ContentKeyRing.defaultMaximumLifetime + 1))
        #expect(Self.verdict(ring, path: token.path, query: token.query) == .tooFarAhead)
        // Once the clock catches up, the same URL is within the lifetime and valid.
        #expect(Self.verdict(ring, path: token.path, query: token.query, at: Self.now.addingTimeInterval(2)) == nil)
    }

    @Test func aURLOfAnotherServersKeyWithTheSameIdIsRefused() throws {
        let ours = try Self.ring([("k1", 1)], current: "k1")
        let theirs = try Self.ring([("k1", 7)], current: "k1")
        let token = theirs.sign(digest: Self.digest, expires: Self.now.addingTimeInterval(600))
        #expect(Self.verdict(ours, path: token.path, query: token.query) == .badSignature)
    }

    @Test func keysRotateWithoutBreakingURLsIssued() throws {
        let before = try Self.ring([("k1", 1)], current: "k1")
        let old = before.sign(digest: Self.digest, expires: Self.now.addingTimeInterval(600))

        // Rotation: k2 added and made current; k1 kept for the URLs it signed.
        let during = try Self.ring([("k1", 1), ("k2", 2)], current: "k2")
        let new = during.sign(digest: Self.digest, expires: Self.now.addingTimeInterval(600))
        #expect(new.keyId == "k2")
        #expect(Self.verdict(during, path: old.path, query: old.query) == nil)
        #expect(Self.verdict(during, path: new.path, query: new.query) == nil)

        // k1 removed once its URLs have expired: what it signed is refused, by name.
        let after = try Self.ring([("k2", 2)], current: "k2")
        #expect(Self.verdict(after, path: old.path, query: old.query) == .unknownKey)
        #expect(Self.verdict(after, path: new.path, query: new.query) == nil)
    }

    @Test func keyRingFileRoundTrip() throws {
        let k1 = try ContentSigningKey.generate(id: "2026-01")
        let k2 = try ContentSigningKey.generate(id: "2026-02")
        let json = #"{"current":"2026-02","keys":{"2026-01":"\#(k1.secretBase64URL)","2026-02":"\#(k2.secretBase64URL)"}}"#
        let ring = try ContentKeyRing(json: Data(json.utf8))
        #expect(ring.currentKeyId == "2026-02")
        #expect(ring.keyIds == ["2026-01", "2026-02"])
        let fromK1 = try ContentKeyRing(keys: [k1], current: "2026-01").sign(digest: Self.digest, expires: Self.now.addingTimeInterval(60))
        #expect(Self.verdict(ring, path: fromK1.path, query: fromK1.query) == nil)
    }

    @Test(arguments: [
        (
            #"{"current":"k2","keys":{"k1":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}}"#,
            "the current content key k2 is not among the keys"
        ),
        (#"{"current":"k1","keys":{"k1":"AAAA"}}"#, "the content key k1 has 3 bytes of secret; at least 32 are needed"),
        (#"{"current":"k 1","keys":{"k 1":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}}"#, "a content key id must be 1 to 64"),
        (#"{"current":"k1","keys":{"k1":"not base64!"}}"#, "the content key k1 is not base64url"),
    ])
    func badKeyRingsAreRefusedWithAClearMessage(json: String, message: String) {
        let error = #expect(throws: ContentKeyError.self) { try ContentKeyRing(json: Data(json.utf8)) }
        #expect(error?.message.hasPrefix(message) == true, "\(String(describing: error))")
    }
}
