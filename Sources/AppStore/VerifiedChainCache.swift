import Crypto
import Foundation
import Ledger

/// Leaf and intermediate pairs whose chain to a trusted root has been verified, so that verifying
/// another token they signed costs one ES256 check instead of a chain validation.
///
/// What is cached is time-free: the chain's signatures, constraints and marker OIDs. What depends on
/// time, whether every certificate was valid at a token's own date, is kept as the window where all
/// were, and checked on every use. An entry is made only once a token the chain signed has verified:
/// Apple's certificates are public, and a chain that merely validates, under anybody's signature,
/// would let refused tokens push genuine chains out.
///
/// The key is the two certificates' base64 exactly as sent, so a hit decodes nothing. It is as much
/// the certificates' own key as their DER bytes would be: a chain enters only through
/// `StrictBase64`, which reads canonical base64 alone, and that spells each DER in one way
/// (Foundation's decoder also read extra padding and stray bits, so one certificate had many
/// spellings, each an entry). The size is bounded: past `capacity` the oldest entry goes, since Apple
/// signs with a handful of leaves at a time.
final class VerifiedChainCache: @unchecked Sendable {
    // @unchecked: `entries` and `order` are only touched while `lock` is held.
    struct Entry {
        var window: ClosedRange<Date>
        var key: P256.Signing.PublicKey
        /// The key's table for the tokens it signs next (nil where tables do not run).
        var fixedKey: FixedKeyVerifier? = nil
    }

    let capacity: Int
    private let lock = NSLock()
    private var entries: [String: Entry] = [:]
    private var order: [String] = []

    init(capacity: Int) {
        // 0 turns caching off: every token's chain is validated (what benchmarks compare against).
        self.capacity = max(0, capacity)
    }

    static func key(leaf: String, intermediate: String) -> String { leaf + "." + intermediate }

    func entry(for key: String) -> Entry? {
        lock.withLock { entries[key] }
    }

    func insert(_ entry: Entry, for key: String) {
        guard capacity > 0 else { return }
        lock.withLock {
            if entries.updateValue(entry, forKey: key) == nil {
                order.append(key)
                if order.count > capacity {
                    entries[order.removeFirst()] = nil
                }
            }
        }
    }

    var count: Int { lock.withLock { entries.count } }
}

/// Decoded JWS headers by their base64url text exactly as sent. Every token the App Store signs with
/// one leaf carries the same header (`alg` and three base64 certificates, about 3.3 KiB once
/// encoded), so decoding it again for each token was the largest cost after the signatures:
/// a base64url pass and a JSON decoding per token, three per notification (`perf` on
/// `catalog serve` under `scripts/bench-purchases notifications`).
///
/// The decoded header is a pure function of those bytes, so a hit is exactly what decoding would
/// give, and nothing in it is believed yet: the algorithm, the chain and the signature are checked on
/// every token as before. Only headers that decode are kept, at most `capacity`, the oldest going
/// first, so headers an attacker makes up cost memory only up to that bound.
final class JWSHeaderCache: @unchecked Sendable {
    // @unchecked: `entries` and `order` are only touched while `lock` is held.
    let capacity: Int
    private let lock = NSLock()
    private var entries: [Key: CompactJWS.Header] = [:]
    private var order: [Key] = []

    /// The header's bytes, compared in full by `memcmp`. `[UInt8]`'s own hashing feeds the hasher a
    /// byte at a time, which made a lookup cost more than the decoding it saves, and its `==` compares
    /// a byte at a time too (2.3% of a verification's CPU with a KiB hashed, `perf`). This hashes the
    /// length and the first 256 bytes in one pass: the algorithm and the leaf certificate's start,
    /// its serial number among them. Headers alike in those share a bucket, and there are at most
    /// `capacity` of them.
    struct Key: Hashable {
        var bytes: [UInt8]

        func hash(into hasher: inout Hasher) {
            hasher.combine(bytes.count)
            bytes.withUnsafeBytes { hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: $0.prefix(256))) }
        }

        static func == (a: Key, b: Key) -> Bool {
            a.bytes.count == b.bytes.count
                && a.bytes.withUnsafeBytes { a in
                    b.bytes.withUnsafeBytes { b in a.isEmpty || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 }
                }
        }
    }

    init(capacity: Int) {
        // 0 turns caching off, as for the chains.
        self.capacity = max(0, capacity)
    }

    func header(for encoded: [UInt8]) -> CompactJWS.Header? {
        guard capacity > 0 else { return nil }
        let key = Key(bytes: encoded)
        return lock.withLock { entries[key] }
    }

    func insert(_ header: CompactJWS.Header, for encoded: [UInt8]) {
        guard capacity > 0 else { return }
        let key = Key(bytes: encoded)
        lock.withLock {
            if entries.updateValue(header, forKey: key) == nil {
                order.append(key)
                if order.count > capacity {
                    entries[order.removeFirst()] = nil
                }
            }
        }
    }

    var count: Int { lock.withLock { entries.count } }
}
