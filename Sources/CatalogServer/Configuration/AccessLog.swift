import CatalogKit
import Logging

/// The access log: one line per request (method, path, status, body bytes, duration, the
/// client's network), at `info` under the label `catalog.access`.
///
/// The client appears as its network (`203.0.113.0/24`, the same prefix the feedback loop and the
/// rate limits use), never its full address unless `fullAddresses` is set. Feed requests answered
/// on the lean path are many and alike: they are logged one in `feedSampling` (0: none), so that
/// the log costs the serving path nothing unless asked.
public struct AccessLog: Sendable {
    /// Off unless asked (`--access-log on`): a line costs 25-50 µs of CPU (docs/benchmarks.md, `scripts/bench-ingest`).
    public var enabled = false
    /// One in this many feed requests answered on the lean path is logged; 0: none (`--access-log-feed-sample`).
    public var feedSampling = 0
    /// Clients' full addresses rather than their networks (`--log-full-addresses on`).
    public var fullAddresses = false
    /// How much of a client's address is its network: the reports' prefixes.
    public var prefixes = NetworkPrefixLengths()
    /// Made again once the logging system is set up: a logger keeps the handler it was made with.
    public var logger = Logger(label: "catalog.access")

    /// Off, with the default prefixes.
    public init() {}
}
