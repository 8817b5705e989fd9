import ArgumentParser
import CatalogKit
import CatalogServer
import Foundation
import Hummingbird
import Logging
import NIOPosix
import ReportStorage

#if canImport(Glibc)
    import Glibc
#endif

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the published feeds over HTTP with exact caching, reloading new revisions as they are published.",
        discussion: """
            Builds the catalog first when the published tree has no app yet. Stops gracefully on \
            SIGTERM and SIGINT: no new connections, in-flight requests finish, exit 0.
            """
    )

    @OptionGroup var options: CatalogOptions
    @OptionGroup var storeOptions: StoreOptions

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on.")
    var port = 8080

    @Option(help: "Cache-Control of the current feeds (revision snapshots are always immutable).")
    var cacheControl = "public, max-age=300"

    @Option(help: ArgumentHelp("Seconds within which each request must arrive whole, from its first byte; a client that reads none of its answers for as long is closed too.", valueName: "seconds"))
    var readDeadline = 10

    @Option(help: ArgumentHelp("Seconds after which a keep-alive connection with nothing in progress is closed.", valueName: "seconds"))
    var idleTimeout = 30

    @Option(
        help: ArgumentHelp(
            "Open connections at most; past it the server stops accepting until one closes. Default: the descriptor limit less 256, at most 10000.",
            valueName: "n"))
    var maxConnections: Int?

    @Option(
        help: ArgumentHelp(
            "Reports per minute accepted from one client network (see --report-network-ipv4-prefix); 0 for no limit.", valueName: "n"))
    var reportLimitAddress = 600

    @Option(
        help: ArgumentHelp(
            "A proxy whose Forwarded and X-Forwarded-For headers are believed, as an address or CIDR block; repeatable. Default: none.",
            valueName: "cidr"))
    var trustedProxy: [String] = []

    @Option(help: ArgumentHelp("How many leading bits of an IPv4 client address name its network.", valueName: "bits"))
    var reportNetworkIpv4Prefix = 24

    @Option(help: ArgumentHelp("How many leading bits of an IPv6 client address name its network.", valueName: "bits"))
    var reportNetworkIpv6Prefix = 48

    @Option(
        help: ArgumentHelp(
            "The file of the secret that report networks are hashed with, made on first start. Default: report-network.secret beside a SQLite store, var/report-network.secret with PostgreSQL (replicas must share it).",
            valueName: "path"))
    var reportNetworkSecretFile: String?

    @Option(
        help: ArgumentHelp(
            "A root certificate (PEM or DER) that App Store AppTransactions in reports are verified against, such as Apple Root CA - G3; repeatable. Without one, no report counts as verified.",
            valueName: "file"))
    var appleRootCertificate: [String] = []

    @Option(help: ArgumentHelp("Raw reports kept per app; past it the oldest are pruned first.", valueName: "n"))
    var reportQuota = 1_000_000

    @Option(help: ArgumentHelp("Reports per minute accepted from one install (installId); 0 for no limit.", valueName: "n"))
    var reportLimitInstall = 30

    @Option(help: ArgumentHelp("Days raw reports are kept before they are pruned.", valueName: "days"))
    var retentionDays = 90

    @Option(
        help: ArgumentHelp(
            "Run 'catalog feedback' then 'catalog build' at start and then this often (30m, 6h, …), logging every verdict change.",
            valueName: "interval"))
    var autoFeedback: Interval?

    func validate() throws {
        guard (1...65535).contains(port) else { throw ValidationError("port \(port) is not between 1 and 65535") }
        guard reportLimitAddress >= 0, reportLimitInstall >= 0 else { throw ValidationError("report limits cannot be negative") }
        guard (1...36_600).contains(retentionDays) else { throw ValidationError("--retention-days must be 1 to 36600 (100 years)") }
        for block in trustedProxy where AddressRange(cidr: block) == nil {
            throw ValidationError("--trusted-proxy '\(block)' is not an address or CIDR block such as 10.0.0.0/8 or fd00::/8")
        }
        guard (8...32).contains(reportNetworkIpv4Prefix), (16...128).contains(reportNetworkIpv6Prefix) else {
            throw ValidationError("--report-network-ipv4-prefix must be 8 to 32 and --report-network-ipv6-prefix 16 to 128")
        }
        guard (1...3600).contains(readDeadline), (1...86_400).contains(idleTimeout) else {
            throw ValidationError("--read-deadline must be 1 to 3600 seconds and --idle-timeout 1 to 86400")
        }
        if let maxConnections, maxConnections < 1 { throw ValidationError("--max-connections must be 1 or more") }
        guard reportQuota >= 1 else { throw ValidationError("--report-quota must be 1 or more") }
        if let autoFeedback, autoFeedback.seconds > 366 * 86_400 {
            throw ValidationError("--auto-feedback \(autoFeedback) is longer than a year (366d)")
        }
    }

    /// A limit with a burst of a fifth of a minute's worth (at least 10), or none for 0.
    private static func limit(perMinute: Int) -> RateLimit? {
        perMinute == 0 ? nil : RateLimit(perMinute: perMinute, burst: max(10, perMinute / 5))
    }

    func run() async throws {
        LoggingSystem.bootstrap(StreamLogHandler.standardError)
        var logger = Logger(label: "catalog.serve")
        logger.logLevel = .info
        let tree = PublicTree(root: URL(fileURLWithPath: options.publicDirectory, isDirectory: true))
        if tree.publishedApps().isEmpty {
            logger.info("catalog.building", metadata: ["catalog.directory": "\(options.catalog)"])
            let build = try options.workflow.build(at: .now, dryRun: false)
            report(build.diagnostics)
            if build.hasErrors { throw ExitCode(1) }
        }
        var configuration = ServeConfiguration()
        configuration.cacheControl = cacheControl
        configuration.readDeadline = .seconds(Int64(readDeadline))
        configuration.idleTimeout = .seconds(Int64(idleTimeout))
        raiseDescriptorLimit()
        configuration.maxConnections = maxConnections ?? defaultMaxConnections()
        var reports = ReportsConfiguration()
        reports.perAddress = Self.limit(perMinute: reportLimitAddress)
        reports.perInstall = Self.limit(perMinute: reportLimitInstall)
        reports.retention = .seconds(Int64(retentionDays) * 86_400)
        reports.trustedProxies = trustedProxy.compactMap(AddressRange.init(cidr:))
        reports.networkPrefixes = NetworkPrefixLengths(ipv4: reportNetworkIpv4Prefix, ipv6: reportNetworkIpv6Prefix)
        reports.perAppQuota = reportQuota
        let secretPath = try reportNetworkSecretFile ?? storeOptions.url.defaultNetworkSecretPath
        do {
            reports.networkSecret = try NetworkSecret.loadOrCreate(at: URL(fileURLWithPath: secretPath))
            if !appleRootCertificate.isEmpty {
                reports.appTransactions = try AppTransactionVerifier(rootCertificateFiles: appleRootCertificate)
            }
        } catch {
            printError("\(error)")
            throw ExitCode(1)
        }
        #if DEBUG
            // For scripts/crash-test --broken only, and only in a debug build: proves the harness
            // catches a server that answers early. A release binary has no such switch.
            if ProcessInfo.processInfo.environment["CATALOG_UNSAFE_ACKNOWLEDGE_BEFORE_COMMIT"] == "1" {
                logger.critical("reports.unsafe", metadata: ["reason": "acknowledging reports before they are committed (crash-test mode)"])
                reports.acknowledgeBeforeCommit = true
            }
        #endif
        let group = MultiThreadedEventLoopGroup(numberOfThreads: availableCPUCount())
        let metrics = ServerMetrics()
        let storeName = try storeOptions.url.description
        try await storeOptions.withStore(logger: logger) { store in
            logger.info("reports.store", metadata: ["store": "\(storeName)"])
            let app = buildApplication(
                publicDirectory: tree, host: host, port: port, configuration: configuration, reportStore: store,
                reportsConfiguration: reports, workflow: options.workflow, metrics: metrics,
                extraServices: autoFeedback.map {
                    [
                        AutoFeedbackService(
                            workflow: options.workflow, store: store, interval: $0.duration, metrics: metrics, logger: logger)
                    ]
                } ?? [],
                eventLoopGroup: .shared(group), logger: logger)
            try await app.runService()
        }
    }
}

/// Raises the soft limit on open descriptors to the hard one, as servers do: each connection
/// takes one, and the soft default (often 1024) would cap a server far below what it can hold.
private func raiseDescriptorLimit() {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
    limit.rlim_cur = min(limit.rlim_max, 1 << 20)
    _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}
