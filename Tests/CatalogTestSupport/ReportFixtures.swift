import CatalogKit
import Time

/// What fixture reports say they requested from the store.
public enum RequestedIdentifiers: Sendable {
    /// The reported identifier and ``validIdentifier``: a report about the product.
    case productReport
    /// Nothing: the report leaves out `requestedProductIdentifiers`.
    case unsaid
    case list([String])
}

/// An identifier the fixtures' product reports requested and the store answered valid.
public let validIdentifier = "com.example.fine"

/// One report per install, each naming `identifier` invalid at `moment`: the shape of the
/// evidence the feedback policy counts.
///
/// By default these are genuine product reports: each install on a network of its own
/// (`network-<index>`, standing for the hash the server would store), each saying what it
/// requested.
///
/// - Parameter networks: how many distinct networks the installs come from, round robin; nil
///   for none recorded (reports stored before networks were).
public func invalidReports(
    _ identifier: String, installs: Int, app: String = "com.example.app", at moment: Timestamp,
    environment: ReportEnvironment? = .production, platform: Platform? = .iOS, requested: RequestedIdentifiers = .productReport,
    networks: Int? = .max, installPrefix: String = "install"
) -> [InvalidIdentifierReport] {
    let list: [String]? =
        switch requested {
        case .productReport: [identifier, validIdentifier]
        case .unsaid: nil
        case .list(let list): list
        }
    return (0..<installs).map { index in
        InvalidIdentifierReport(
            app: app, reportID: "\(installPrefix)-\(identifier)-\(moment.secondsSince1970)-\(index)", receivedAt: moment,
            invalid: [identifier], requested: list, platform: platform, appVersion: AppVersion("2.3"), environment: environment,
            storefront: "USA", feedRevision: 1, installID: "\(installPrefix)-\(index)",
            network: networks.map { "network-\(index % max($0, 1))" })
    }
}
