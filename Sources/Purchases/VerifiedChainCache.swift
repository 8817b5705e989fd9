import Crypto
import Foundation

/// Leaf and intermediate pairs whose chain to a trusted root has been verified, so that verifying
/// another token they signed costs one ES256 check instead of a chain validation.
///
/// What is cached is time-free: the chain's signatures, constraints and marker OIDs. What depends on
/// time, whether every certificate was valid at a token's own date, is kept as the window where all
/// were, and checked on every use. The key is the two certificates' base64 exactly as sent, so a hit
/// decodes nothing. The size is bounded: past `capacity` the oldest entry goes, since Apple signs with
/// a handful of leaves at a time and an attacker's chains never verify, so never enter.
final class VerifiedChainCache: @unchecked Sendable {
    // @unchecked: `entries` and `order` are only touched while `lock` is held.
    struct Entry {
        var window: ClosedRange<Date>
        var key: P256.Signing.PublicKey
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
