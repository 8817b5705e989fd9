import CatalogKit
import PropertyList

/// One report per install, each naming `identifier` invalid at `moment`: the shape of the
/// evidence the feedback policy counts.
public func invalidReports(
    _ identifier: String, installs: Int, app: String = "com.example.app", at moment: Timestamp,
    environment: ReportEnvironment? = .production, platform: Platform? = .iOS, requested: [String]? = nil, installPrefix: String = "install"
) -> [InvalidIdentifierReport] {
    (0..<installs).map { index in
        InvalidIdentifierReport(
            app: app, reportID: "\(installPrefix)-\(identifier)-\(moment.secondsSince1970)-\(index)", receivedAt: moment,
            invalid: [identifier],
            requested: requested, platform: platform, appVersion: AppVersion("2.3"), environment: environment, storefront: "USA",
            feedRevision: 1, installID: "\(installPrefix)-\(index)")
    }
}
