import Synchronization

/// A rate of reports per client, with a burst on top: `perMinute` sustained, `burst` at once.
public struct RateLimit: Sendable, Hashable {
    public var perMinute: Int
    public var burst: Int

    public init(perMinute: Int, burst: Int) {
        self.perMinute = perMinute
        self.burst = burst
    }
}

/// Token buckets per client key (an address, an install): a request takes a token; tokens come
/// back at the sustained rate up to the burst. In memory and per server: each replica limits on
/// its own, which bounds what one client costs the shared store to replicas × the limit.
final class RateLimiter: Sendable {
    private let perSecond: Double
    private let burst: Double
    private let clock: @Sendable () -> Double
    private let buckets = Mutex<[String: Bucket]>([:])
    /// Past this many clients, full buckets (idle clients) are forgotten: memory stays bounded
    /// however many addresses or installs are seen.
    private let maximumClients: Int

    private struct Bucket {
        var tokens: Double
        var updated: Double
    }

    init(_ limit: RateLimit, maximumClients: Int = 100_000, clock: @escaping @Sendable () -> Double = RateLimiter.monotonicSeconds) {
        perSecond = Double(limit.perMinute) / 60
        burst = Double(max(limit.burst, 1))
        self.maximumClients = maximumClients
        self.clock = clock
    }

    /// Takes a token for `key`; nil if one was there, or else the whole seconds until one is.
    func take(_ key: String) -> Int? {
        let now = clock()
        return buckets.withLock { buckets in
            var bucket = buckets[key] ?? Bucket(tokens: burst, updated: now)
            bucket.tokens = min(burst, bucket.tokens + (now - bucket.updated) * perSecond)
            bucket.updated = now
            defer {
                buckets[key] = bucket
                if buckets.count > maximumClients { forgetIdle(&buckets, now: now) }
            }
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                return nil
            }
            return perSecond > 0 ? max(1, Int(((1 - bucket.tokens) / perSecond).rounded(.up))) : 60
        }
    }

    private func forgetIdle(_ buckets: inout [String: Bucket], now: Double) {
        buckets = buckets.filter { $0.value.tokens + (now - $0.value.updated) * perSecond < burst }
        // Every client active at once: forgetting all of them errs on the side of serving.
        if buckets.count > maximumClients { buckets.removeAll() }
    }

    private static let origin = ContinuousClock.now

    static func monotonicSeconds() -> Double {
        let elapsed = ContinuousClock.now - origin
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}
