import ArgumentParser
import CatalogKit
import CatalogServer
import Foundation
import Hummingbird
import Logging
import NIOPosix

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

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on.")
    var port = 8080

    @Option(help: "Cache-Control of the current feeds (revision snapshots are always immutable).")
    var cacheControl = "public, max-age=300"

    func validate() throws {
        guard (1...65535).contains(port) else { throw ValidationError("port \(port) is not between 1 and 65535") }
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
        let group = MultiThreadedEventLoopGroup(numberOfThreads: availableCPUCount())
        let app = buildApplication(
            publicDirectory: tree, host: host, port: port, configuration: configuration, eventLoopGroup: .shared(group), logger: logger)
        try await app.runService()
    }
}
