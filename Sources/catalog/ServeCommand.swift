import ArgumentParser
import CatalogKit
import CatalogServer
import FeedSigning
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import ReportStorage
import ServiceLifecycle

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

    // Every setting is optional here: unset, it comes from CATALOG_<NAME> in the environment,
    // then from the --config file, then its default (see Settings and docs/operations.md).

    @Option(help: ArgumentHelp("A JSON file of settings, keyed by flag name (\"port\": 8080).", valueName: "file"))
    var config: String?

    @Flag(help: "Print the effective settings, where each came from, secrets redacted, and exit.")
    var printConfig = false

    @Option(help: ArgumentHelp("The catalog sources. Default: catalog.", valueName: "directory"))
    var catalog: String?

    @Option(name: .customLong("public"), help: ArgumentHelp("The published tree. Default: public.", valueName: "directory"))
    var publicDirectory: String?

    @Option(
        name: .customLong("store"),
        help: ArgumentHelp(
            "Where reports are kept: sqlite:PATH or postgres://user[:password]@host[:port]/database. Default: \(StoreURL.default). A secret: prefer CATALOG_STORE or --store-password-file to the command line.",
            valueName: "url"))
    var storeURL: String?

    @Option(help: ArgumentHelp("A file holding the PostgreSQL password (one line), used instead of one in --store.", valueName: "file"))
    var storePasswordFile: String?

    @Option(help: ArgumentHelp("trace, debug, info, notice, warning, error or critical. Default: info.", valueName: "level"))
    var logLevel: Logger.Level?

    @Option(help: ArgumentHelp("text, or json (one object per line). Default: text.", valueName: "format"))
    var logFormat: LogFormat?

    @Option(
        help: ArgumentHelp(
            "on: a line per request (feeds answered on the lean path as --access-log-feed-sample says); off: none. Default: off (a line costs 25-50 µs of CPU, a sixth to a third of a report's).",
            valueName: "on|off"))
    var accessLog: Switch?

    @Option(help: ArgumentHelp("Log one in n feed requests answered on the lean path; 0 for none. Default: 0.", valueName: "n"))
    var accessLogFeedSample: Int?

    @Option(
        help: ArgumentHelp(
            "on: log clients' full addresses; off: only their network (as the rate limits see it). Default: off.", valueName: "on|off"))
    var logFullAddresses: Switch?

    @Option(help: ArgumentHelp("The address to listen on. Default: 127.0.0.1.", valueName: "address"))
    var host: String?

    @Option(help: ArgumentHelp("The port to listen on. Default: 8080.", valueName: "port"))
    var port: Int?

    @Option(
        help: ArgumentHelp(
            "A PEM certificate chain: serve HTTPS (HTTP/2 and HTTP/1.1 by ALPN) instead of plain HTTP, with --tls-key. Reloaded when the file changes. Default: none.",
            valueName: "file"))
    var tlsCertificate: String?

    @Option(help: ArgumentHelp("The PEM private key of --tls-certificate. A secret: keep the file 0600.", valueName: "file"))
    var tlsKey: String?

    @Option(
        help: ArgumentHelp(
            "A second port for the editor API, the dashboard and /metrics, which the first then refuses, so that only feeds, reports and health face the internet. Default: none (one port answers everything).",
            valueName: "port"))
    var adminPort: Int?

    @Option(help: ArgumentHelp("The address the admin port listens on. Default: 127.0.0.1.", valueName: "address"))
    var adminHost: String?

    @Option(
        help: ArgumentHelp(
            "Cache-Control of the current feeds (revision snapshots are always immutable). Default: public, max-age=300.",
            valueName: "value"))
    var cacheControl: String?

    @Option(
        help: ArgumentHelp(
            "Seconds within which each request must arrive whole, from its first byte, and with TLS a handshake, from the accept; a client that reads none of its answers for as long is closed too. Default: 10.",
            valueName: "seconds"))
    var readDeadline: Int?

    @Option(
        help: ArgumentHelp(
            "Seconds after which a keep-alive connection with nothing in progress is closed. Default: 30.", valueName: "seconds"))
    var idleTimeout: Int?

    @Option(
        help: ArgumentHelp(
            "Open connections at most; one past it is closed at once. Default: the descriptor limit less 256, at most 10000.",
            valueName: "n"))
    var maxConnections: Int?

    @Option(
        help: ArgumentHelp(
            "Reports per minute accepted from one client network (see --report-network-ipv4-prefix); 0 for no limit. Default: 600.",
            valueName: "n"))
    var reportLimitAddress: Int?

    @Option(
        help: ArgumentHelp(
            "A proxy whose forwarding header (--trusted-proxy-header) is believed, as an address or CIDR block; repeatable. Default: none.",
            valueName: "cidr"))
    var trustedProxy: [String] = []

    @Option(
        help: ArgumentHelp(
            "The one header the trusted proxies write: x-forwarded-for (nginx's $proxy_add_x_forwarded_for, HAProxy's option forwardfor, most load balancers) or forwarded (RFC 7239); the other is never read. Default: x-forwarded-for.",
            valueName: "name"))
    var trustedProxyHeader: ForwardingHeader?

    @Option(help: ArgumentHelp("How many leading bits of an IPv4 client address name its network. Default: 24.", valueName: "bits"))
    var reportNetworkIpv4Prefix: Int?

    @Option(
        help: ArgumentHelp(
            "How many leading bits of an IPv6 client address name its network for rate limits and logs. Default: 48.", valueName: "bits"))
    var reportNetworkIpv6Prefix: Int?

    @Option(
        help: ArgumentHelp(
            "How many leading bits of an IPv6 client address name its network as evidence for quarantine: one provider's allocation, since /48s are cheap. Default: 32.",
            valueName: "bits"))
    var reportEvidenceIpv6Prefix: Int?

    @Option(
        help: ArgumentHelp(
            "The file of the secret that report networks are hashed with, made on first start. With PostgreSQL the store keeps the secret every node uses, and this file is only proposed to a store that has none (one that disagrees with the store is refused). Default: report-network.secret beside a SQLite store, var/report-network.secret with PostgreSQL.",
            valueName: "path"))
    var reportNetworkSecretFile: String?

    @Option(
        help: ArgumentHelp(
            "A root certificate (PEM or DER) that App Store AppTransactions in reports are verified against, such as Apple Root CA - G3; repeatable. Without one, no report counts as verified.",
            valueName: "file"))
    var appleRootCertificate: [String] = []

    @Option(help: ArgumentHelp("Raw reports kept per app; past it the oldest are pruned first. Default: 1000000.", valueName: "n"))
    var reportQuota: Int?

    @Option(help: ArgumentHelp("Reports per minute accepted from one install (installId); 0 for no limit. Default: 30.", valueName: "n"))
    var reportLimitInstall: Int?

    @Option(help: ArgumentHelp("Days raw reports are kept before they are pruned. Default: 90.", valueName: "days"))
    var retentionDays: Int?

    @Option(
        help: ArgumentHelp(
            "Run 'catalog feedback' then 'catalog build' at start and then this often (30m, 6h, …), logging every verdict change. Default: off.",
            valueName: "interval"))
    var autoFeedback: Interval?

    @Option(
        help: ArgumentHelp(
            "A signing key file ('catalog keys create'): feeds the server publishes (editor API, auto-feedback) are signed, and every current signature is re-issued before it expires. A secret: keep the file 0600. Default: none.",
            valueName: "file"))
    var signingKey: String?

    @Option(help: ArgumentHelp("How long each signature is trusted; re-issued when half has run. Default: 7d.", valueName: "interval"))
    var signatureLifetime: Interval?

    @Option(
        help: ArgumentHelp(
            "Where the feeds served come from: public (the --public tree, as 'catalog build' writes it: the editor node) or store (what the PostgreSQL --store holds: a serving replica, with no catalog sources and no editor API). Default: public.",
            valueName: "public|store"))
    var feeds: FeedSource?

    @Option(
        help: ArgumentHelp(
            "With --feeds store: the folder the replica keeps the feeds it received in, so that it starts and serves them while the store is unreachable. Default: a temporary folder, removed at exit.",
            valueName: "directory"))
    var feedsCache: String?

    @Option(
        help: ArgumentHelp(
            "With --feeds store: how often the store is asked for new publications besides its announcements (a lost announcement waits this long at most). Default: 2s.",
            valueName: "interval"))
    var feedsPoll: Interval?

    enum FeedSource: String, ExpressibleByArgument, CaseIterable {
        case `public`, store
    }

    enum LogFormat: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    enum Switch: String, ExpressibleByArgument, CaseIterable {
        case on, off
    }

    /// Every setting as in effect, wherever it came from, checked.
    struct Resolved {
        var logLevel: Logger.Level
        var logFormat: LogFormat
        var accessLog: AccessLog
        var catalog: String
        var publicDirectory: String
        var store: StoreURL
        var host: String
        var port: Int
        var admin: (host: String, port: Int)?
        var tls: (certificate: String, key: String)?
        var cacheControl: String
        var readDeadline: Int
        var idleTimeout: Int
        var maxConnections: Int?
        var reportLimitAddress: Int
        var trustedProxies: [AddressRange]
        var trustedProxyHeader: ForwardingHeader
        var networkPrefixes: NetworkPrefixLengths
        var reportNetworkSecretFile: String
        var appleRootCertificates: [String]
        var reportQuota: Int
        var reportLimitInstall: Int
        var retentionDays: Int
        var autoFeedback: Interval?
        var signer: FeedSigner?
        var feeds: FeedSource
        var feedsCache: String?
        var feedsPoll: Interval

        var workflow: CatalogWorkflow {
            var workflow = CatalogWorkflow(
                catalogDirectory: URL(fileURLWithPath: catalog, isDirectory: true), catalogDisplayPath: catalog,
                publicDirectory: URL(fileURLWithPath: publicDirectory, isDirectory: true))
            workflow.signer = signer
            return workflow
        }
    }

    func resolve(_ settings: Settings) throws -> Resolved {
        let catalog = try settings.value("catalog", flag: catalog, default: "catalog")!
        let feeds = try settings.value("feeds", flag: feeds, default: .public)!
        var isDirectory: ObjCBool = false
        // A replica has no sources: its feeds come from the store.
        guard feeds == .store || FileManager.default.fileExists(atPath: catalog, isDirectory: &isDirectory) && isDirectory.boolValue else {
            throw ValidationError("catalog directory '\(catalog)' does not exist")
        }
        let publicDirectory = try settings.value("public", flag: publicDirectory, default: "public")!
        var store: StoreURL
        do {
            store = try StoreURL(parsing: try settings.value("store", flag: storeURL, default: "\(StoreURL.default)", secret: true)!)
        } catch let error as StoreURLError {
            throw ValidationError(error.description)
        }
        if let file = try settings.value("store-password-file", flag: storePasswordFile, default: nil as String?) {
            guard case .postgres(var connection) = store else {
                throw ValidationError("--store-password-file is for a PostgreSQL store; \(store) is not one")
            }
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw ValidationError("cannot read the password file \(file)")
            }
            connection.password = String(text.prefix { $0 != "\n" && $0 != "\r" })
            store = .postgres(connection)
        }
        settings.record("store (effective)", store.description, "password \(store.hasPassword ? "<redacted>" : "none")")
        let port = try settings.value("port", flag: port, default: 8080)!
        guard (1...65535).contains(port) else { throw ValidationError("port \(port) is not between 1 and 65535") }
        let adminPort = try settings.value("admin-port", flag: adminPort, default: nil as Int?)
        let adminHost = try settings.value("admin-host", flag: adminHost, default: "127.0.0.1")!
        if let adminPort {
            guard (1...65535).contains(adminPort), adminPort != port else {
                throw ValidationError("--admin-port \(adminPort) must be between 1 and 65535 and differ from --port")
            }
        }
        let certificate = try settings.value("tls-certificate", flag: tlsCertificate, default: nil as String?)
        let key = try settings.value("tls-key", flag: tlsKey, default: nil as String?)
        guard (certificate == nil) == (key == nil) else { throw ValidationError("--tls-certificate and --tls-key go together") }
        let proxies = try settings.values("trusted-proxy", flags: trustedProxy)
        let trustedProxies = try proxies.map { block in
            guard let range = AddressRange(cidr: block) else {
                throw ValidationError("--trusted-proxy '\(block)' is not an address or CIDR block such as 10.0.0.0/8 or fd00::/8")
            }
            return range
        }
        // Asked whether or not there is a key, so that every setting is known to rejectUnknown().
        let signatureLifetime = try settings.value("signature-lifetime", flag: signatureLifetime, default: nil as Interval?)
        var accessLog = AccessLog()
        accessLog.enabled = try settings.value("access-log", flag: self.accessLog, default: .off)! == .on
        accessLog.feedSampling = try settings.value("access-log-feed-sample", flag: accessLogFeedSample, default: 0)!
        accessLog.fullAddresses = try settings.value("log-full-addresses", flag: logFullAddresses, default: .off)! == .on
        guard accessLog.feedSampling >= 0 else { throw ValidationError("--access-log-feed-sample must be 0 or more") }
        let resolved = Resolved(
            logLevel: try settings.value("log-level", flag: logLevel, default: .info)!,
            logFormat: try settings.value("log-format", flag: logFormat, default: .text)!,
            accessLog: accessLog,
            catalog: catalog, publicDirectory: publicDirectory, store: store,
            host: try settings.value("host", flag: host, default: "127.0.0.1")!, port: port,
            admin: adminPort.map { (adminHost, $0) },
            tls: certificate.flatMap { certificate in key.map { (certificate, $0) } },
            cacheControl: try settings.value("cache-control", flag: cacheControl, default: "public, max-age=300")!,
            readDeadline: try settings.value("read-deadline", flag: readDeadline, default: 10)!,
            idleTimeout: try settings.value("idle-timeout", flag: idleTimeout, default: 30)!,
            maxConnections: try settings.value("max-connections", flag: maxConnections, default: nil as Int?),
            reportLimitAddress: try settings.value("report-limit-address", flag: reportLimitAddress, default: 600)!,
            trustedProxies: trustedProxies,
            trustedProxyHeader: try settings.value("trusted-proxy-header", flag: trustedProxyHeader, default: .xForwardedFor)!,
            networkPrefixes: NetworkPrefixLengths(
                ipv4: try settings.value("report-network-ipv4-prefix", flag: reportNetworkIpv4Prefix, default: 24)!,
                ipv6: try settings.value("report-network-ipv6-prefix", flag: reportNetworkIpv6Prefix, default: 48)!,
                ipv6Evidence: try settings.value("report-evidence-ipv6-prefix", flag: reportEvidenceIpv6Prefix, default: 32)!),
            reportNetworkSecretFile: try settings.value(
                "report-network-secret-file", flag: reportNetworkSecretFile, default: store.defaultNetworkSecretPath)!,
            appleRootCertificates: try settings.values("apple-root-certificate", flags: appleRootCertificate),
            reportQuota: try settings.value("report-quota", flag: reportQuota, default: 1_000_000)!,
            reportLimitInstall: try settings.value("report-limit-install", flag: reportLimitInstall, default: 30)!,
            retentionDays: try settings.value("retention-days", flag: retentionDays, default: 90)!,
            autoFeedback: try settings.value("auto-feedback", flag: autoFeedback, default: nil as Interval?),
            signer: try settings.value("signing-key", flag: signingKey, default: nil as String?).map { path in
                try SigningOptions.signer(keyFile: path, lifetime: signatureLifetime)
            },
            feeds: feeds,
            feedsCache: try settings.value("feeds-cache", flag: feedsCache, default: nil as String?),
            feedsPoll: try settings.value("feeds-poll", flag: feedsPoll, default: Interval("2s")!)!)
        try settings.rejectUnknown()
        try Self.check(resolved)
        return resolved
    }

    /// What the operator should hear at start about a setting that is allowed but weakens trust.
    static func warnings(_ settings: Resolved) -> [String] {
        var warnings: [String] = []
        for range in settings.trustedProxies {
            if range.prefixLength == 0 {
                warnings.append(
                    "--trusted-proxy \(range) covers every address: any client can name any network, and one machine can take products off sale"
                )
            } else if !range.isNonPublic {
                warnings.append(
                    "--trusted-proxy \(range) covers public addresses: a client in it can name any network; name only the proxy's own addresses"
                )
            }
        }
        if !settings.trustedProxies.isEmpty && settings.admin == nil {
            warnings.append(
                "the editor API, the dashboard and /metrics answer on the port the proxy forwards to: set --admin-port, or keep /v1/admin/ and /metrics off the proxy (docs/operations.md)"
            )
        }
        return warnings
    }

    private static func check(_ settings: Resolved) throws {
        guard settings.reportLimitAddress >= 0, settings.reportLimitInstall >= 0 else {
            throw ValidationError("report limits cannot be negative")
        }
        guard (1...36_600).contains(settings.retentionDays) else {
            throw ValidationError("--retention-days must be 1 to 36600 (100 years)")
        }
        guard (8...32).contains(settings.networkPrefixes.ipv4), (16...128).contains(settings.networkPrefixes.ipv6),
            (16...128).contains(settings.networkPrefixes.ipv6Evidence)
        else {
            throw ValidationError(
                "--report-network-ipv4-prefix must be 8 to 32, --report-network-ipv6-prefix and --report-evidence-ipv6-prefix 16 to 128")
        }
        guard (1...3600).contains(settings.readDeadline), (1...86_400).contains(settings.idleTimeout) else {
            throw ValidationError("--read-deadline must be 1 to 3600 seconds and --idle-timeout 1 to 86400")
        }
        if let maxConnections = settings.maxConnections, maxConnections < 1 {
            throw ValidationError("--max-connections must be 1 or more")
        }
        guard settings.reportQuota >= 1 else { throw ValidationError("--report-quota must be 1 or more") }
        if let autoFeedback = settings.autoFeedback, autoFeedback.seconds > 366 * 86_400 {
            throw ValidationError("--auto-feedback \(autoFeedback) is longer than a year (366d)")
        }
        if settings.feeds == .store {
            guard case .postgres = settings.store else {
                throw ValidationError("--feeds store serves what a PostgreSQL store holds; \(settings.store) is not one")
            }
            // What publishes belongs to the editor node, the one with the sources.
            guard settings.autoFeedback == nil, settings.signer == nil else {
                throw ValidationError(
                    "--auto-feedback and --signing-key publish: they belong on the editor node (--feeds public), not on a replica")
            }
            guard (1...3600).contains(settings.feedsPoll.seconds) else { throw ValidationError("--feeds-poll must be 1s to 1h") }
        } else if settings.feedsCache != nil {
            throw ValidationError("--feeds-cache is for a replica (--feeds store); the editor node serves --public")
        }
    }

    /// A limit with a burst of a fifth of a minute's worth (at least 10), or none for 0.
    private static func limit(perMinute: Int) -> RateLimit? {
        perMinute == 0 ? nil : RateLimit(perMinute: perMinute, burst: max(10, perMinute / 5))
    }

    func run() async throws {
        let settings = try await Settings(configFile: config)
        let resolved = try resolve(settings)
        let warnings = Self.warnings(resolved)
        if printConfig {
            print(settings.description)
            for warning in warnings { print("# warning: \(warning)") }
            return
        }
        let level = resolved.logLevel
        switch resolved.logFormat {
        case .text:
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
        case .json:
            LoggingSystem.bootstrap { label in
                var handler = JSONLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
        }
        let logger = Logger(label: "catalog.serve")
        for warning in warnings { logger.warning("serve.trust", metadata: ["reason": "\(warning)"]) }
        let workflow = resolved.workflow
        let isReplica = resolved.feeds == .store
        // A replica's tree is a cache of the store's: given, or a fresh folder removed at exit.
        let cache = resolved.feedsCache.map { URL(fileURLWithPath: $0, isDirectory: true) }
        let temporaryCache =
            isReplica && cache == nil
            ? FileManager.default.temporaryDirectory.appendingPathComponent("catalog-feeds-\(UUID().uuidString)", isDirectory: true) : nil
        defer { if let temporaryCache { try? FileManager.default.removeItem(at: temporaryCache) } }
        let tree =
            if let replicaCache = cache ?? temporaryCache {
                PublicTree(
                    root: replicaCache.appendingPathComponent("public", isDirectory: true),
                    records: replicaCache.appendingPathComponent("records", isDirectory: true))
            } else {
                PublicTree(root: URL(fileURLWithPath: resolved.publicDirectory, isDirectory: true))
            }
        if isReplica {
            try FileManager.default.createDirectory(at: tree.root, withIntermediateDirectories: true)
        } else if tree.publishedApps().isEmpty {
            logger.info("catalog.building", metadata: ["catalog.directory": "\(resolved.catalog)"])
            let build = try workflow.build(at: .now, dryRun: false)
            report(build.diagnostics)
            if build.hasErrors { throw ExitCode(1) }
        }
        var configuration = ServeConfiguration()
        configuration.isReplica = isReplica
        configuration.cacheControl = resolved.cacheControl
        configuration.readDeadline = .seconds(Int64(resolved.readDeadline))
        configuration.idleTimeout = .seconds(Int64(resolved.idleTimeout))
        raiseDescriptorLimit()
        configuration.maxConnections = resolved.maxConnections ?? defaultMaxConnections()
        configuration.accessLog = resolved.accessLog
        configuration.accessLog.prefixes = resolved.networkPrefixes
        configuration.accessLog.logger = Logger(label: "catalog.access")
        var reports = ReportsConfiguration()
        reports.perAddress = Self.limit(perMinute: resolved.reportLimitAddress)
        reports.perInstall = Self.limit(perMinute: resolved.reportLimitInstall)
        reports.retention = .seconds(Int64(resolved.retentionDays) * 86_400)
        reports.trustedProxies = resolved.trustedProxies
        reports.forwardingHeader = resolved.trustedProxyHeader
        reports.networkPrefixes = resolved.networkPrefixes
        reports.perAppQuota = resolved.reportQuota
        do {
            if !resolved.appleRootCertificates.isEmpty {
                reports.appTransactions = try ReportAppTransactions(rootCertificateFiles: resolved.appleRootCertificates)
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
        var tls: ReloadingCertificate?
        if let files = resolved.tls {
            do {
                tls = try ReloadingCertificate(certificate: files.certificate, key: files.key, logger: logger)
            } catch {
                printError("cannot use the TLS certificate \(files.certificate) and key \(files.key): \(error)")
                throw ExitCode(1)
            }
        }
        // One loop per core the process may use: NIO counts the cgroup CPU quota (rounded up) and cpuset.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
        let metrics = ServerMetrics()
        // A replica with feeds of its own serves them while the store cannot be reached.
        let serveWithoutStore = isReplica && !tree.publishedApps().isEmpty
        try await StoreOptions.withStore(resolved.store, logger: logger, evenIfUnreachable: serveWithoutStore) { store in
            logger.info("reports.store", metadata: ["store": "\(resolved.store)"])
            // With PostgreSQL the secret is the store's (docs/feedback.md); a replica says when its
            // role can do more than a replica needs (docs/storage.md, "Roles").
            var reports = reports
            do {
                reports.networkSecret = try await StoreOptions.networkSecret(
                    store: store, file: resolved.reportNetworkSecretFile,
                    explicit: resolved.reportNetworkSecretFile != resolved.store.defaultNetworkSecretPath, cache: resolved.feedsCache,
                    logger: logger)
            } catch {
                printError("\(error)")
                throw ExitCode(1)
            }
            if isReplica, let shared = store as? PostgresReportStore { await shared.warnOfRightsBeyondAReplica() }
            let publications = try await publicationServices(resolved, store: store, tree: tree, metrics: metrics, logger: logger)
            let app = buildApplication(
                publicDirectory: tree, host: resolved.host, port: resolved.port, configuration: configuration, reportStore: store,
                reportsConfiguration: reports, workflow: workflow, metrics: metrics, adminListener: resolved.admin, tls: tls,
                extraServices: (resolved.autoFeedback.map {
                    [AutoFeedbackService(workflow: workflow, store: store, interval: $0.duration, metrics: metrics, logger: logger)]
                } ?? [])
                    + (resolved.signer.map { [SignatureRefreshService(workflow: workflow, lifetime: $0.lifetime, logger: logger)] } ?? [])
                    + publications,
                eventLoopGroup: .shared(group), logger: logger)
            do {
                try await app.runService()
            } catch let error as IOError where error.errnoCode == EADDRINUSE {
                // NIO's error names neither the address nor the cause in words.
                let addresses = [(resolved.host, resolved.port)] + (resolved.admin.map { [$0] } ?? [])
                let named = addresses.map { $0.0.contains(":") ? "[\($0.0)]:\($0.1)" : "\($0.0):\($0.1)" }
                printError("\(named.joined(separator: " or ")) is already in use (another catalog serve?)")
                throw ExitCode(1)
            }
        }
    }
}

extension ServeCommand {
    /// With a PostgreSQL store, the editor node records in it whatever of `public/` it lacks; a
    /// replica catches up with it first (an empty disk serves nothing until it has the feeds)
    /// and then follows it.
    private func publicationServices(
        _ resolved: Resolved, store: any CatalogStore, tree: PublicTree, metrics: ServerMetrics, logger: Logger
    ) async throws -> [any Service] {
        guard let shared = store as? any PublicationStore else { return [] }
        guard resolved.feeds == .store else { return [PublicationExportService(store: store, tree: tree, logger: logger)] }
        // With feeds in its cache, the replica serves them at once and the follower catches up
        // as soon as the store answers; with none, it has nothing to serve until it has caught up.
        if tree.publishedApps().isEmpty {
            do {
                try await PublicationFollowerService.catchUp(store: shared, tree: tree)
            } catch {
                printError("cannot read the feeds from the store \(resolved.store): \(error)")
                throw ExitCode(1)
            }
        }
        return [
            PublicationFollowerService(
                store: shared, tree: tree, pollInterval: resolved.feedsPoll.duration, metrics: metrics, logger: logger)
        ]
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

extension Logger.Level: @retroactive ExpressibleByArgument {}
extension ForwardingHeader: ExpressibleByArgument {}
