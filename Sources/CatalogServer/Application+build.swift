import CatalogKit
import Hummingbird
import Logging

/// The serving application: the catalog's routes and the reload service, ready to run or test.
public func buildApplication(
    publicDirectory: PublicTree, host: String = "127.0.0.1", port: Int = 8080,
    configuration: ServeConfiguration = ServeConfiguration(), reloadInterval: Duration = .milliseconds(250), logger: Logger
) -> some ApplicationProtocol {
    let store = FeedStore(tree: publicDirectory, logger: logger)
    return Application(
        responder: CatalogResponder(store: store, configuration: configuration),
        configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: nil),
        services: [FeedReloadService(store: store, interval: reloadInterval, logger: logger)],
        logger: logger)
}
