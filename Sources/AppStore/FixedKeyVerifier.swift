import CP256FixedKey
import Crypto
import Foundation
import Synchronization

/// ES256 checks for one P-256 key, with a table of its multiples built once (about 150 KB and
/// 1 ms): the App Store signs every token with the same leaf for months, and BoringSSL spends most
/// of a verification on that key's 255 doublings, which the table replaces by 37 additions, as
/// BoringSSL's own table does for the generator (docs/purchases.md, "Signatures with a key seen
/// before"). The arithmetic is BoringSSL's; `Sources/CP256FixedKey` only evaluates the tables.
///
/// Made only for a chain already verified and cached (``VerifiedChainCache``), so what it costs is
/// paid once for each leaf, never for a token that fails.
final class FixedKeyVerifier: @unchecked Sendable {
    // @unchecked: the table is written once, in init, and only read after.
    private let table: OpaquePointer

    /// The generator's table, shared by every key's checks; nil where the tables do not run.
    private static let generator: FixedKeyVerifier? = FixedKeyVerifier(x963: generatorX963)

    /// P-256's generator G, uncompressed (SEC 2, §2.4.2).
    private static let generatorX963: [UInt8] = [
        0x04, 0x6b, 0x17, 0xd1, 0xf2, 0xe1, 0x2c, 0x42, 0x47, 0xf8, 0xbc, 0xe6, 0xe5,
        0x63, 0xa4, 0x40, 0xf2, 0x77, 0x03, 0x7d, 0x81, 0x2d, 0xeb, 0x33, 0xa0, 0xf4,
        0xa1, 0x39, 0x45, 0xd8, 0x98, 0xc2, 0x96, 0x4f, 0xe3, 0x42, 0xe2, 0xfe, 0x1a,
        0x7f, 0x9b, 0x8e, 0xe7, 0xeb, 0x4a, 0x7c, 0x0f, 0x9e, 0x16, 0x2b, 0xce, 0x33,
        0x57, 0x6b, 0x31, 0x5e, 0xce, 0xcb, 0xb6, 0x40, 0x68, 0x37, 0xbf, 0x51, 0xf5,
    ]

    /// Nil where the tables do not run (not x86-64 Linux with AVX), or when memory runs out: then the
    /// caller checks with swift-crypto as before.
    convenience init?(_ key: P256.Signing.PublicKey) {
        guard Self.generator != nil else { return nil }
        self.init(x963: Array(key.x963Representation))
    }

    /// The table of `key`, made once for the process: every app's verifier, and the verifiers a
    /// new catalog revision makes, share the leaf's table instead of building their own. The
    /// last `sharedCapacity` keys are kept (Apple signs with a handful of leaves at a time);
    /// verifiers hold on to the tables they took.
    static func shared(_ key: P256.Signing.PublicKey) -> FixedKeyVerifier? {
        let x963 = key.x963Representation
        if let found = sharedTables.withLock({ $0.tables[x963] }) { return found }
        guard let made = FixedKeyVerifier(key) else { return nil }
        return sharedTables.withLock { shared in
            if let found = shared.tables[x963] { return found }
            shared.tables[x963] = made
            shared.order.append(x963)
            if shared.order.count > sharedCapacity { shared.tables[shared.order.removeFirst()] = nil }
            return made
        }
    }

    static let sharedCapacity = 16
    private static let sharedTables = Mutex<(tables: [Data: FixedKeyVerifier], order: [Data])>(([:], []))

    private init?(x963: [UInt8]) {
        guard x963.count == 65, let table = x963.withUnsafeBufferPointer({ cp256_table_new($0.baseAddress) }) else { return nil }
        self.table = table
    }

    deinit { cp256_table_free(table) }

    /// Whether `signature` (r and s, 32 bytes each) signs `message` (hashed with SHA-256 here)
    /// under this key: the verdict of `P256.Signing.PublicKey.isValidSignature` for the same key.
    func isValidSignature(_ signature: [UInt8], for message: some DataProtocol) -> Bool {
        guard signature.count == 64, let generator = Self.generator else { return false }
        let digest = SHA256.hash(data: message)
        return digest.withUnsafeBytes { digest in
            signature.withUnsafeBufferPointer { signature in
                cp256_verify(
                    generator.table, table, digest.baseAddress!.assumingMemoryBound(to: UInt8.self), signature.baseAddress) == 1
            }
        }
    }
}
