import CatalogKit
import NIOCore

/// What protects `catalog serve` from slow, many or lying clients: deadlines, the connection
/// limit, the report rate limits and the proxies whose forwarding header is believed
/// (docs/operations.md, "Limits that protect the server" and "Behind a TLS proxy").
public struct ProtectionConfiguration: Sendable {
    // The defaults are those of the two configurations these settings fill, written there once.

    /// See ``ServeConfiguration/readDeadline``.
    public var readDeadline = ServeConfiguration().readDeadline
    /// See ``ServeConfiguration/idleTimeout``.
    public var idleTimeout = ServeConfiguration().idleTimeout
    /// Open connections at most; nil: ``defaultMaxConnections()`` once the descriptor limit is raised.
    public var maxConnections: Int?
    /// Reports per minute from one client network; nil for no limit.
    public var perAddress = ReportsConfiguration().perAddress
    /// Reports per minute from one install; nil for no limit.
    public var perInstall = ReportsConfiguration().perInstall
    /// See ``ReportsConfiguration/trustedProxies``.
    public var trustedProxies = ReportsConfiguration().trustedProxies
    /// See ``ReportsConfiguration/forwardingHeader``.
    public var forwardingHeader = ReportsConfiguration().forwardingHeader

    /// The defaults of `catalog serve`.
    public init() {}

    /// A limit with a burst of a fifth of a minute's worth (at least 10), or none for 0.
    public static func limit(perMinute: Int) -> RateLimit? {
        perMinute == 0 ? nil : RateLimit(perMinute: perMinute, burst: max(10, perMinute / 5))
    }

    /// Sets the fields of the two configurations these settings belong to.
    public func apply(to serve: inout ServeConfiguration, reports: inout ReportsConfiguration) {
        serve.readDeadline = readDeadline
        serve.idleTimeout = idleTimeout
        serve.maxConnections = maxConnections ?? defaultMaxConnections()
        reports.perAddress = perAddress
        reports.perInstall = perInstall
        reports.trustedProxies = trustedProxies
        reports.forwardingHeader = forwardingHeader
    }
}
