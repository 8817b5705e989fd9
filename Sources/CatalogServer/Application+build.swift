import CatalogKit
import Hummingbird
import HummingbirdCore
import Logging

/// The serving application: the catalog's routes and the reload service, ready to run or test.
public func buildApplication(
    publicDirectory: PublicTree, host: String = "127.0.0.1", port: Int = 8080,
    configuration: ServeConfiguration = ServeConfiguration(), reloadInterval: Duration = .milliseconds(250), logger: Logger
) -> some ApplicationProtocol {
    let store = FeedStore(tree: publicDirectory, logger: logger)
    let metrics = ServerMetrics()
    metrics.recordFeeds(store.index, reloaded: false)
    let deadline = configuration.requestReadDeadline
    // A handler per connection (the closure runs for each), small header limits: feed requests
    // carry a handful of short headers.
    let http = HTTP1Channel.Configuration(
        additionalChannelHandlers: [RequestDeadlineHandler(deadline: deadline)], idleTimeout: configuration.idleTimeout,
        httpDecoderConfiguration: HTTP1Channel.Configuration.DecoderConfiguration(
            maxHeaderFieldSize: 8 * 1024, maxHeaderListSize: 16 * 1024, maxHeaderFieldCount: 100))
    return Application(
        responder: CatalogResponder(store: store, configuration: configuration, metrics: metrics),
        server: .http1(configuration: http),
        configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: nil),
        services: [FeedReloadService(store: store, interval: reloadInterval, metrics: metrics, logger: logger)],
        logger: logger)
}
