import CatalogKit
import Crypto

/// How the report endpoint protects the store, and how long raw reports are kept.
public struct ReportsConfiguration: Sendable {
    /// Raw reports older than this are pruned (aggregates are computed from raw reports).
    public var retention: Duration = .seconds(90 * 86_400)
    /// How often the pruning runs.
    public var pruneInterval: Duration = .seconds(3600)
    /// Per client network (``networkPrefixes``); nil for none (a benchmark from one address).
    public var perAddress: RateLimit? = RateLimit(perMinute: 600, burst: 120)
    /// Per `installId`: one device has little reason to report more than now and then.
    public var perInstall: RateLimit? = RateLimit(perMinute: 30, burst: 10)
    /// Reports waiting for the store at most; past it, 503 with `Retry-After` until it catches up.
    public var maximumQueuedReports = 20_000
    #if DEBUG
        /// The deliberately broken mode `scripts/crash-test --broken` must catch (debug builds
        /// only); see `GroupCommitter`.
        public var acknowledgeBeforeCommit = false
    #endif
    /// Proxies whose forwarding header is believed (`--trusted-proxy`); none by default, so
    /// that no client can name its own address.
    public var trustedProxies: [AddressRange] = []
    /// The one header those proxies write (`--trusted-proxy-header`); the other is never read.
    public var forwardingHeader = ForwardingHeader.xForwardedFor
    /// How much of a client's address is its network, for evidence and rate limits.
    public var networkPrefixes = NetworkPrefixLengths()
    /// The key of the networks' hashes. `catalog serve` keeps it in a file beside the store; the
    /// default, random per process, suits a server whose reports no other process judges.
    public var networkSecret: [UInt8] = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
    /// Verifies the StoreKit `AppTransaction` a report may carry; nil: none is verified, and
    /// every report counts as unverified.
    public var appTransactions: ReportAppTransactions?
    /// Raw reports kept per app; past it the oldest are pruned first (by the retention service).
    public var perAppQuota = 1_000_000

    public init() {}
}
