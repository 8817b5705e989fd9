import ArgumentParser
import CatalogKit
import CatalogServer
import Foundation
import Hummingbird
import Logging
import NIOPosix
import ReportStorage

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

    @Option(help: ArgumentHelp("Reports per minute accepted from one client address; 0 for no limit.", valueName: "n"))
    var reportLimitAddress = 600

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
        var reports = ReportsConfiguration()
        reports.perAddress = Self.limit(perMinute: reportLimitAddress)
        reports.perInstall = Self.limit(perMinute: reportLimitInstall)
        reports.retention = .seconds(Int64(retentionDays) * 86_400)
        // For scripts/crash-test only: proves the harness catches a server that answers early.
        if ProcessInfo.processInfo.environment["CATALOG_UNSAFE_ACKNOWLEDGE_BEFORE_COMMIT"] == "1" {
            logger.critical("reports.unsafe", metadata: ["reason": "acknowledging reports before they are committed (crash-test mode)"])
            reports.acknowledgeBeforeCommit = true
        }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: availableCPUCount())
        let storeName = try storeOptions.url.description
        try await storeOptions.withStore(logger: logger) { store in
            logger.info("reports.store", metadata: ["store": "\(storeName)"])
            let app = buildApplication(
                publicDirectory: tree, host: host, port: port, configuration: configuration, reportStore: store,
                reportsConfiguration: reports, workflow: options.workflow,
                extraServices: autoFeedback.map {
                    [AutoFeedbackService(workflow: options.workflow, store: store, interval: $0.duration, logger: logger)]
                } ?? [],
                eventLoopGroup: .shared(group), logger: logger)
            try await app.runService()
        }
    }
}
