import AppStore
import AppStoreServerAPI
import CatalogKit
import Foundation
import GooglePlay
import Hummingbird
import HummingbirdCore
import Ledger
import Logging
import NIOCore
import OutboundAPI
import PlayDeveloperAPI
import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The serving application: the catalog's routes and the reload service, ready to run or test.
///
/// The editor API under `/v1/admin/` needs both `reportStore` (tokens and the audit log) and
/// `workflow` (the catalog sources it edits and publishes from, into `publicDirectory`); the
/// purchase endpoints and webhooks need `purchaseStore`. Each store capability is handed in on
/// its own, as the caller composed them (the `catalog` executable passes one store as both).
public func buildApplication(
    publicDirectory: PublicTree, host: String = "127.0.0.1", port: Int = 8080,
    configuration: ServeConfiguration = ServeConfiguration(), reloadInterval: Duration = .milliseconds(250),
    reportStore: (any CatalogStore)? = nil, purchaseStore: (any PurchaseStore & WebhookOutbox)? = nil,
    appStoreAPIStore: (any AppStoreAPIService.Store)? = nil, playStore: (any StoreAcknowledgementStore & PollPositionStore)? = nil,
    reportsConfiguration: ReportsConfiguration = ReportsConfiguration(),
    workflow: CatalogWorkflow? = nil, purchasesConfiguration: PurchasesConfiguration = PurchasesConfiguration(),
    metrics: ServerMetrics = ServerMetrics(),
    adminListener: (host: String, port: Int)? = nil, tls: ReloadingCertificate? = nil,
    extraServices: [any Service] = [], eventLoopGroup: EventLoopGroupProvider = .singleton, logger: Logger
) -> some ApplicationProtocol {
    let store = FeedStore(tree: publicDirectory, logger: logger)
    metrics.recordFeeds(store.index, reloaded: false)
    // The App Store Server API's clients, on the editor node: one connection pool for the
    // endpoints and the service, which shuts it down when it stops.
    let apiMetrics = AppStoreAPIMetrics(registry: metrics.registry)
    let appStoreAPI: (store: any AppStoreAPIService.Store, clients: AppStoreAPIClients)? =
        configuration.isReplica || purchaseStore == nil
        ? nil
        : appStoreAPIStore.map {
            (
                $0,
                AppStoreAPIClients(transport: HTTPClientTransport(), baseURL: purchasesConfiguration.appStoreAPIURL, metrics: apiMetrics)
            )
        }
    // Google Play's client, on the editor node; a replica only queues what Google must be told.
    let playMetrics = PlayAPIMetrics(registry: metrics.registry)
    let playClients =
        configuration.isReplica || playStore == nil
        ? nil : PlayAPIClients(transport: HTTPClientTransport(), baseURL: purchasesConfiguration.playAPIURL, metrics: playMetrics)
    let googlePlay = playStore.map {
        GooglePlayEndpoints(
            acknowledgements: $0, clients: playClients, pushKeys: purchasesConfiguration.googlePushKeys.map(GooglePushKeys.init))
    }
    // Purchases need a store that keeps them; the apps' settings come from each revision's
    // purchase record, on the editor node and on replicas alike.
    let purchases: PurchaseEndpoints? = {
        guard let purchaseStore else { return nil }
        let appleRoots: PurchaseTrust
        do {
            appleRoots = try PurchaseTrust.apple()
        } catch {
            logger.error("purchases.trust", metadata: ["error": "\(error)"])
            return nil
        }
        let trust =
            purchasesConfiguration.trust ?? appleRoots.adding(reportsConfiguration.appTransactions?.trust.jwsRoots ?? [])
        return PurchaseEndpoints(
            store: purchaseStore, tokens: configuration.isReplica ? nil : reportStore, tree: publicDirectory, trust: trust,
            configuration: purchasesConfiguration,
            metrics: metrics, appStoreAPI: appStoreAPI, googlePlay: googlePlay, logger: logger)
    }()
    // An app's purchase settings at the revision it serves, read once per revision: for the report
    // intake's AppTransactions and the webhooks alike.
    let publishedSettings: @Sendable (String) async -> AppPurchases? = { app in
        guard let purchases, let revision = store.index.apps[app]?.manifest.revision else { return nil }
        return try? await purchases.settings.app(app, revision: revision).get()
    }
    // One intake for both paths that receive reports: one committer, one set of rate limits. The
    // AppTransactions reports carry are bound to the app's purchase settings where there are some.
    let intake = reportStore.map { reportStore in
        ReportIntake(
            store: reportStore, configuration: reportsConfiguration, metrics: metrics,
            purchaseSettings: { await publishedSettings($0)?.verifier.app },
            playProducts: { app in
                guard let purchases, let revision = store.index.apps[app]?.manifest.revision else { return [:] }
                return (try? await purchases.settings.playProductIds(app, revision: revision).get()) ?? [:]
            })
    }
    // One for the server: the key ring, and the count of files opened.
    let content = ContentFiles(
        keyRing: configuration.content.keyRing, keyFile: configuration.content.keyFile, tree: publicDirectory, logger: logger)
    let connectionLimit = ConnectionLimit(maximum: configuration.maxConnections, metrics: metrics)
    let server = HTTPServerBuilder { responder in
        let http1 = LeanHTTP1Channel(
            responder: responder, connectionLimit: connectionLimit,
            connectionHandler: { LeanConnectionHandler(store: store, metrics: metrics, configuration: configuration, content: content) },
            postHandler: { connection in
                guard intake != nil || purchases != nil else { return nil }
                return LeanPostHandler(
                    intake: intake, purchases: purchases, feeds: store, connection: connection, metrics: metrics,
                    clock: configuration.clock, instant: configuration.instant, accessLog: configuration.accessLog)
            })
        // With TLS, the same channel and protections behind it (``LeanTLSChannel``).
        guard let tls else { return http1 }
        return try LeanTLSChannel(certificate: tls, http1: http1, configuration: configuration)
    }
    var services: [any Service] = [FeedReloadService(store: store, interval: reloadInterval, metrics: metrics, logger: logger)]
    if let reportStore {
        services.append(
            ReportRetentionService(
                store: reportStore, retention: reportsConfiguration.retention, perAppQuota: reportsConfiguration.perAppQuota,
                metrics: metrics, interval: reportsConfiguration.pruneInterval, clock: configuration.clock, logger: logger))
    }
    // The dashboard's customer page reads customers as a backend does, with the revision served now.
    let customers = purchases.map { purchases in
        { @Sendable (app: String, id: String, at: Date) async -> Response in
            await purchases.customerDocument(app: app, id: id, revision: store.index.apps[app]?.manifest.revision, at: at)
        }
    }
    // And what they may download, from the content manifest of that revision.
    let customerContent = purchases.map { purchases in
        { @Sendable (app: String, id: String, at: Date) async -> Response in
            await purchases.customerContentDocument(
                app: app, id: id, revision: store.index.apps[app]?.manifest.revision, at: at, tree: publicDirectory)
        }
    }
    let admin = reportStore.flatMap { reportStore in
        workflow.map {
            AdminAPI(
                store: reportStore, workflow: $0, clock: configuration.clock, instant: configuration.instant, customers: customers,
                customerContent: customerContent)
        }
    }
    // Webhooks of entitlement changes, from the store's outbox (docs/purchases.md, "Webhooks"); on
    // the editor node only, as purchases are: a replica's role has no rights on the purchase tables.
    if !configuration.isReplica, purchases != nil, let outbox = purchaseStore {
        let targets = WebhookTargets(settings: publishedSettings, logger: logger)
        services.append(
            WebhookDeliveryService(
                store: outbox, targets: { await targets.target($0) }, metrics: WebhookMetrics(registry: metrics.registry), logger: logger))
    }
    // The App Store Server API's work (docs/app-store-api.md), once per cluster: on the editor node.
    if purchases != nil, let purchaseStore, let appStoreAPI {
        services.append(
            AppStoreAPIService(
                apps: { Array(store.index.apps.keys) }, settings: publishedSettings, store: purchaseStore, apiStore: appStoreAPI.store,
                clients: appStoreAPI.clients, metrics: apiMetrics, interval: purchasesConfiguration.reconcileInterval, logger: logger))
    }
    // Google Play's acknowledgement outbox (docs/google-play.md, "Acknowledgement"), on the editor node.
    if let purchases, let purchaseStore, let playStore, let playClients {
        // An app's Play settings at the revision it serves.
        let playApp: @Sendable (String) async -> PlayApp? = { app in
            guard let revision = store.index.apps[app]?.manifest.revision,
                case .success(let play?) = await purchases.settings.play(app, revision: revision)
            else { return nil }
            return play
        }
        // What Google says of a purchase claims it for no one: the app account it names does.
        let record: PlayLedgerRecorder = { app, values in
            let submission = values.submission(
                app: app, receivedAt: Date(), source: .storeAPI, sendsWebhooks: await playApp(app)?.sendsWebhooks ?? true)
            _ = try await purchases.committer.outcome(of: submission).get()
        }
        let acknowledger = PlayAcknowledger(
            store: playStore, client: { await playApp($0).flatMap { playClients.client($0) } },
            catalog: { await playApp($0)?.catalog ?? PlayCatalog() },
            record: record)
        services.append(
            PlayAPIService(
                acknowledger: acknowledger, voided: PlayVoidedPoller(positions: playStore, purchases: purchaseStore, record: record),
                clients: {
                    var clients: [(app: String, client: PlayDeveloperAPIClient)] = []
                    for app in store.index.apps.keys {
                        guard let play = await playApp(app), let client = playClients.client(play) else { continue }
                        clients.append((app, client))
                    }
                    return clients
                }, transport: playClients.caller.transport, interval: purchasesConfiguration.playInterval, metrics: playMetrics,
                logger: logger))
    }
    if let adminListener {
        // A second listener, run beside the first as one of its services: plain HTTP/1 through
        // Hummingbird (no lean paths: nothing there is hot), for editors and operators only.
        services.append(
            Application(
                responder: CatalogResponder(
                    store: store, configuration: configuration, metrics: metrics, reports: intake, admin: admin, purchases: purchases,
                    content: content, logger: logger, role: .adminOnly),
                server: .http1(),
                configuration: ApplicationConfiguration(address: .hostname(adminListener.host, port: adminListener.port), serverName: nil),
                eventLoopGroupProvider: eventLoopGroup, logger: logger))
    }
    return Application(
        responder: CatalogResponder(
            store: store, configuration: configuration, metrics: metrics, reports: intake, admin: admin, purchases: purchases,
            content: content, logger: logger, role: adminListener == nil ? .all : .publicOnly),
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
