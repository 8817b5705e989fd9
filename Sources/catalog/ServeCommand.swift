import AppStore
import ArgumentParser
import CatalogKit
import CatalogServer
import FeedSigning
import Foundation
import Hummingbird
import Ledger
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Storage

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
    // then from the --config file, then its default (see Settings, Setting and docs/operations.md).
    @OptionGroup var config: ConfigOptions

    @Flag(help: "Print the effective settings, where each came from, secrets redacted, and exit.")
    var printConfig = false

    @OptionGroup var catalogOptions: CatalogOptions
    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var logging: LoggingOptions
    @OptionGroup var listening: ListeningOptions
    @OptionGroup var protection: ProtectionOptions
    @OptionGroup var reports: ReportsOptions
    @OptionGroup var signing: SigningOptions
    @OptionGroup var feeds: FeedsOptions
    @OptionGroup var content: ContentOptions
    @OptionGroup var appStoreAPI: AppStoreAPIServeOptions
    @OptionGroup var play: PlayServeOptions

    /// Every setting as in effect, wherever it came from, checked.
    struct Resolved {
        var paths: CatalogPaths
        var store: StoreURL
        var logging: LoggingConfiguration
        var listener: ListenerConfiguration
        var protection: ProtectionConfiguration
        var reports: ReportsOptions.Resolved
        var signer: FeedSigner?
        var feeds: FeedsConfiguration
        var content: ContentOptions.Resolved
        var appStoreAPI: AppStoreAPIServeOptions.Resolved
        var play: PlayServeOptions.Resolved

        var workflow: CatalogWorkflow {
            var workflow = paths.workflow
            workflow.signer = signer
            return workflow
        }
    }

    func resolve(_ settings: Settings) throws -> Resolved {
        let feeds = try self.feeds.resolve(settings)
        // A replica has no sources: its feeds come from the store.
        let paths = try catalogOptions.paths(settings, sourcesRequired: !feeds.isReplica)
        let store = try storeOptions.url(settings)
        let reports = try self.reports.resolve(settings, store: store)
        let resolved = Resolved(
            paths: paths, store: store,
            logging: try logging.resolve(settings, prefixes: reports.configuration.networkPrefixes),
            listener: try listening.resolve(settings), protection: try protection.resolve(settings), reports: reports,
            signer: try signing.signer(settings), feeds: feeds, content: try content.resolve(settings),
            appStoreAPI: try appStoreAPI.resolve(settings), play: try play.resolve(settings))
        try Self.check(resolved)
        return resolved
    }

    /// What the operator should hear at start about a setting that is allowed but weakens trust.
    static func warnings(_ settings: Resolved) -> [String] {
        var warnings: [String] = []
        for range in settings.protection.trustedProxies {
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
        if !settings.protection.trustedProxies.isEmpty && settings.listener.admin == nil {
            warnings.append(
                "the editor API, the dashboard and /metrics answer on the port the proxy forwards to: set --admin-port, or keep /v1/admin/ and /metrics off the proxy (docs/operations.md)"
            )
        }
        return warnings
    }

    /// What no one group can check: settings of different groups that do not go together.
    private static func check(_ settings: Resolved) throws {
        guard settings.feeds.isReplica else { return }
        guard case .postgres = settings.store else {
            throw ValidationError("--feeds store serves what a PostgreSQL store holds; \(settings.store) is not one")
        }
        // What publishes belongs to the editor node, the one with the sources.
        guard settings.feeds.autoFeedback == nil, settings.signer == nil else {
            throw ValidationError(
                "--auto-feedback and --signing-key publish: they belong on the editor node (--feeds public), not on a replica")
        }
    }

    func run() async throws {
        let settings = try config.settings()
        let resolved = try resolve(settings)
        let warnings = Self.warnings(resolved)
        if printConfig {
            print(settings.description)
            for warning in warnings { print("# warning: \(warning)") }
            return
        }
        resolved.logging.bootstrap()
        let logger = Logger(label: "catalog.serve")
        for warning in warnings { logger.warning("serve.trust", metadata: ["reason": "\(warning)"]) }
        let workflow = resolved.workflow
        let isReplica = resolved.feeds.isReplica
        // A replica's tree is a cache of the store's: given, or a fresh folder removed at exit.
        let cache = resolved.feeds.cache.map { URL(fileURLWithPath: $0, isDirectory: true) }
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
                PublicTree(root: URL(fileURLWithPath: resolved.paths.publicDirectory, isDirectory: true))
            }
        if isReplica {
            try FileManager.default.createDirectory(at: tree.root, withIntermediateDirectories: true)
        } else if tree.publishedApps().isEmpty {
            logger.info("catalog.building", metadata: ["catalog.directory": "\(resolved.paths.catalog)"])
            let build = try workflow.build(at: .now, dryRun: false)
            report(build.diagnostics)
            if build.hasErrors { throw ExitCode(1) }
        }
        var configuration = ServeConfiguration()
        configuration.isReplica = isReplica
        configuration.cacheControl = resolved.feeds.cacheControl
        configuration.content = try ContentOptions.configuration(resolved.content)
        if configuration.content.keyRing == nil {
            logger.notice("content.off", metadata: ["reason": "no --content-keys: the content endpoints answer 503"])
        }
        configuration.accessLog = resolved.logging.accessLog
        configuration.accessLog.logger = Logger(label: "catalog.access")
        var reports = resolved.reports.configuration
        var purchasesConfiguration = PurchasesConfiguration()
        purchasesConfiguration.appStoreAPIURL = resolved.appStoreAPI.apiURL
        purchasesConfiguration.reconcileInterval = .seconds(resolved.appStoreAPI.reconcileInterval)
        purchasesConfiguration.playAPIURL = resolved.play.apiURL
        purchasesConfiguration.googlePushKeys = resolved.play.pushKeys
        raiseDescriptorLimit()
        resolved.protection.apply(to: &configuration, reports: &reports)
        do {
            // Apple's pinned roots always, and the roots the operator adds: a report's AppTransaction
            // is verified as a purchase's evidence is, with or without --root-certificate.
            reports.appTransactions = try ReportAppTransactions(
                roots: try PurchaseTrust.apple().jwsRoots + PurchaseTrust.certificates(fromFiles: resolved.reports.rootCertificates))
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
        let listener = resolved.listener
        var tls: ReloadingCertificate?
        if let files = listener.tls {
            do {
                tls = try ReloadingCertificate(certificate: files.certificate, key: files.key, logger: logger)
            } catch {
                printError("cannot use the TLS certificate \(files.certificate) and key \(files.key): \(error)")
                throw ExitCode(1)
            }
        }
        // One loop per core the process may use: the cgroup's quota and cpuset, and the affinity mask.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: EventLoopCount.forThisProcess)
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
                    store: store, file: resolved.reports.networkSecretFile, explicit: resolved.reports.networkSecretFileNamed,
                    cache: resolved.feeds.cache, logger: logger)
            } catch {
                printError("\(error)")
                throw ExitCode(1)
            }
            if isReplica, let shared = store.postgres { await shared.warnOfRightsBeyondAReplica() }
            let publications = try await publicationServices(resolved, store: store, tree: tree, metrics: metrics, logger: logger)
            let app = buildApplication(
                publicDirectory: tree, host: listener.host, port: listener.port, configuration: configuration, reportStore: store,
                purchaseStore: store, appStoreAPIStore: store, playStore: store, reportsConfiguration: reports, workflow: workflow,
                purchasesConfiguration: purchasesConfiguration, metrics: metrics, adminListener: listener.admin,
                tls: tls,
                extraServices: (resolved.feeds.autoFeedback.map {
                    [AutoFeedbackService(workflow: workflow, store: store, interval: $0, metrics: metrics, logger: logger)]
                } ?? [])
                    + (resolved.signer.map { [SignatureRefreshService(workflow: workflow, lifetime: $0.lifetime, logger: logger)] } ?? [])
                    + publications,
                eventLoopGroup: .shared(group), logger: logger)
            do {
                try await app.runService()
            } catch let error as IOError where error.errnoCode == EADDRINUSE {
                // NIO's error names neither the address nor the cause in words.
                let addresses = [(listener.host, listener.port)] + (listener.admin.map { [$0] } ?? [])
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
        _ resolved: Resolved, store: any Store, tree: PublicTree, metrics: ServerMetrics, logger: Logger
    ) async throws -> [any Service] {
        guard let shared = store.publications else { return [] }
        guard resolved.feeds.isReplica else { return [PublicationExportService(store: store, tree: tree, logger: logger)] }
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
                store: shared, tree: tree, pollInterval: resolved.feeds.poll, metrics: metrics, logger: logger)
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
