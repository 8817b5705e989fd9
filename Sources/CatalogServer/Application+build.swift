import CatalogKit
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import Purchases
import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The serving application: the catalog's routes and the reload service, ready to run or test.
///
/// The editor API under `/v1/admin/` needs both `reportStore` (tokens and the audit log) and
/// `workflow` (the catalog sources it edits and publishes from, into `publicDirectory`).
public func buildApplication(
    publicDirectory: PublicTree, host: String = "127.0.0.1", port: Int = 8080,
    configuration: ServeConfiguration = ServeConfiguration(), reloadInterval: Duration = .milliseconds(250),
    reportStore: (any CatalogStore)? = nil, reportsConfiguration: ReportsConfiguration = ReportsConfiguration(),
    workflow: CatalogWorkflow? = nil, purchasesConfiguration: PurchasesConfiguration = PurchasesConfiguration(),
    metrics: ServerMetrics = ServerMetrics(),
    adminListener: (host: String, port: Int)? = nil, tls: ReloadingCertificate? = nil,
    extraServices: [any Service] = [], eventLoopGroup: EventLoopGroupProvider = .singleton, logger: Logger
) -> some ApplicationProtocol {
    let store = FeedStore(tree: publicDirectory, logger: logger)
    metrics.recordFeeds(store.index, reloaded: false)
    // One intake for both paths that receive reports: one committer, one set of rate limits.
    let intake = reportStore.map { ReportIntake(store: $0, configuration: reportsConfiguration, metrics: metrics) }
    let connectionLimit = ConnectionLimit(maximum: configuration.maxConnections, metrics: metrics)
    let server = HTTPServerBuilder { responder in
        let http1 = FeedHTTP1Channel(
            responder: responder, connectionLimit: connectionLimit,
            connectionHandler: { FeedConnectionHandler(store: store, metrics: metrics, configuration: configuration) },
            reportHandler: { connection in
                intake.map {
                    ReportConnectionHandler(
                        intake: $0, feeds: store, connection: connection, metrics: metrics, clock: configuration.clock,
                        accessLog: configuration.accessLog)
                }
            })
        // With TLS, the same channel and protections behind it (``FeedTLSChannel``).
        guard let tls else { return http1 }
        return try FeedTLSChannel(certificate: tls, http1: http1, configuration: configuration)
    }
    var services: [any Service] = [FeedReloadService(store: store, interval: reloadInterval, metrics: metrics, logger: logger)]
    if let reportStore {
        services.append(
            ReportRetentionService(
                store: reportStore, retention: reportsConfiguration.retention, perAppQuota: reportsConfiguration.perAppQuota,
                metrics: metrics, interval: reportsConfiguration.pruneInterval, clock: configuration.clock, logger: logger))
    }
    let admin = reportStore.flatMap { store in workflow.map { AdminAPI(store: store, workflow: $0, clock: configuration.clock) } }
    // Purchases need the app settings of the catalog sources and a store that keeps purchases.
    let purchases: PurchaseEndpoints? = {
        guard let reportStore, let workflow, let purchaseStore = reportStore as? any PurchaseStore else { return nil }
        let appleRoots: PurchaseTrust
        do {
            appleRoots = try PurchaseTrust.apple()
        } catch {
            logger.error("purchases.trust", metadata: ["error": "\(error)"])
            return nil
        }
        let trust =
            purchasesConfiguration.trust ?? appleRoots.adding(reportsConfiguration.appTransactions?.rootCertificates ?? [])
        return PurchaseEndpoints(
            store: purchaseStore, tokens: reportStore, workflow: workflow, trust: trust, configuration: purchasesConfiguration,
            metrics: metrics)
    }()
    if let adminListener {
        // A second listener, run beside the first as one of its services: plain HTTP/1 through
        // Hummingbird (no lean paths: nothing there is hot), for editors and operators only.
        services.append(
            Application(
                responder: CatalogResponder(
                    store: store, configuration: configuration, metrics: metrics, reports: intake, admin: admin, purchases: purchases,
                    logger: logger, role: .adminOnly),
                server: .http1(),
                configuration: ApplicationConfiguration(address: .hostname(adminListener.host, port: adminListener.port), serverName: nil),
                eventLoopGroupProvider: eventLoopGroup, logger: logger))
    }
    return Application(
        responder: CatalogResponder(
            store: store, configuration: configuration, metrics: metrics, reports: intake, admin: admin, purchases: purchases,
            logger: logger, role: adminListener == nil ? .all : .publicOnly),
        server: server,
        configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: nil),
        services: services + extraServices,
        eventLoopGroupProvider: eventLoopGroup,
        logger: logger)
}

/// `--max-connections`: a connection accepted past it is closed at once, before any handler is
/// set up for it (the cheapest refusal that still tells the client), and `/metrics` counts it.
///
/// Counted here rather than with Hummingbird's `availableConnectionsDelegate`, which stops
/// accepting instead: that one is dropped by `ApplicationConfiguration.with(address:)`, so the
/// tests could not see it, and a server that stops accepting leaves clients waiting silently.
final class ConnectionLimit: Sendable {
    let maximum: Int
    private let metrics: ServerMetrics
    private let open = Atomic<Int>(0)

    init(maximum: Int, metrics: ServerMetrics) {
        self.maximum = maximum
        self.metrics = metrics
    }

    /// Counts `channel` until it closes; false (and counted as refused) if it is one too many.
    func admit(_ channel: any Channel) -> Bool {
        let count = open.add(1, ordering: .relaxed).newValue
        guard count <= maximum else {
            open.subtract(1, ordering: .relaxed)
            metrics.recordConnectionRefused()
            return false
        }
        metrics.recordOpenConnections(count)
        channel.closeFuture.whenComplete { _ in
            self.metrics.recordOpenConnections(self.open.subtract(1, ordering: .relaxed).newValue)
        }
        return true
    }
}

/// The default `--max-connections`: what the process's descriptor limit leaves after a reserve
/// for the store, files and the listener, at most 10,000.
public func defaultMaxConnections() -> Int {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
    return max(64, min(10_000, Int(clamping: limit.rlim_cur) - 256))
}

/// How many CPUs this process may run on: one event loop each. NIO's default counts the
/// machine's cores, so a server pinned to one core, or given one core's worth of time by its
/// container, would time-share two or more loops on it. The smaller of the affinity mask and the
/// cgroup CPU quota, rounded up.
public func availableCPUCount() -> Int {
    let affinity = affinityCPUCount() ?? System.coreCount
    // cgroup v2 (`cpu.max`), then v1 (`cpu.cfs_quota_us` / `cpu.cfs_period_us`).
    let quota =
        (try? String(contentsOfFile: "/sys/fs/cgroup/cpu.max", encoding: .utf8)).flatMap(cpuQuota(cpuMax:))
        ?? {
            guard let quota = try? String(contentsOfFile: "/sys/fs/cgroup/cpu/cpu.cfs_quota_us", encoding: .utf8),
                let period = try? String(contentsOfFile: "/sys/fs/cgroup/cpu/cpu.cfs_period_us", encoding: .utf8)
            else { return nil }
            return cpuQuota(cpuMax: quota.trimmingCharacters(in: .whitespacesAndNewlines) + " " + period)
        }()
    return max(1, min(affinity, quota ?? affinity))
}

/// CPUs' worth of time in a cgroup `cpu.max` line (`200000 100000`: 2; `150000 100000`: 2, rounded
/// up; `max 100000` or a v1 quota of `-1`: nil, no quota).
func cpuQuota(cpuMax: String) -> Int? {
    let fields = cpuMax.split(whereSeparator: \.isWhitespace)
    guard fields.count == 2, let quota = Double(fields[0]), let period = Double(fields[1]), quota > 0, period > 0 else { return nil }
    return max(1, Int((quota / period).rounded(.up)))
}

/// `Cpus_allowed_list: 0-1,4` in /proc/self/status is the affinity mask, readable without C.
private func affinityCPUCount() -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") })
    else { return nil }
    var count = 0
    for range in line.dropFirst("Cpus_allowed_list:".count).split(separator: ",") {
        let bounds = range.split(separator: "-").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        if bounds.count == 2 { count += bounds[1] - bounds[0] + 1 } else if bounds.count == 1 { count += 1 }
    }
    return count > 0 ? count : nil
}
