import ArgumentParser

/// One setting, named once: its flag is `--name`, its environment variable `CATALOG_NAME` (upper
/// snake case) and its key in the `--config` file `name` (docs/operations.md, "Configuration").
///
/// ``all`` is the table every command reads settings through: the option groups declare their
/// flags with ``long``, ``Settings`` looks values up by it, and ``Settings/rejectUnknown()``
/// refuses any `CATALOG_` variable or file key that is not in it.
struct Setting: Hashable, Sendable, CustomStringConvertible {
    /// The flag's long name without its dashes, which is also the file's key.
    let name: String
    /// Repeatable: a JSON array in the file, comma-separated in the environment.
    let isList: Bool
    /// Never printed: `--print-config` shows `<redacted>`.
    let isSecret: Bool

    private init(_ name: String, list: Bool = false, secret: Bool = false) {
        self.name = name
        isList = list
        isSecret = secret
    }

    /// `--name`.
    var flag: String { "--" + name }
    /// `CATALOG_NAME`.
    var variable: String { "CATALOG_" + name.uppercased().replacingOccurrences(of: "-", with: "_") }
    /// The flag's name, for `@Option(name:)`.
    var long: NameSpecification { .customLong(name) }
    var description: String { flag }

    // Sources and the published tree (CatalogOptions).
    static let catalog = Setting("catalog")
    static let publicDirectory = Setting("public")
    // The store (StoreOptions).
    static let store = Setting("store", secret: true)
    static let storePasswordFile = Setting("store-password-file")
    // Signing (SigningOptions).
    static let signingKey = Setting("signing-key")
    static let signatureLifetime = Setting("signature-lifetime")
    // Logging (LoggingOptions).
    static let logLevel = Setting("log-level")
    static let logFormat = Setting("log-format")
    static let accessLog = Setting("access-log")
    static let accessLogFeedSample = Setting("access-log-feed-sample")
    static let logFullAddresses = Setting("log-full-addresses")
    // Listening and TLS (ListeningOptions).
    static let host = Setting("host")
    static let port = Setting("port")
    static let tlsCertificate = Setting("tls-certificate")
    static let tlsKey = Setting("tls-key")
    static let adminPort = Setting("admin-port")
    static let adminHost = Setting("admin-host")
    // Protection (ProtectionOptions).
    static let readDeadline = Setting("read-deadline")
    static let idleTimeout = Setting("idle-timeout")
    static let maxConnections = Setting("max-connections")
    static let reportLimitAddress = Setting("report-limit-address")
    static let reportLimitInstall = Setting("report-limit-install")
    static let trustedProxy = Setting("trusted-proxy", list: true)
    static let trustedProxyHeader = Setting("trusted-proxy-header")
    // Reports (ReportsOptions).
    static let reportNetworkIPv4Prefix = Setting("report-network-ipv4-prefix")
    static let reportNetworkIPv6Prefix = Setting("report-network-ipv6-prefix")
    static let reportEvidenceIPv6Prefix = Setting("report-evidence-ipv6-prefix")
    static let reportNetworkSecretFile = Setting("report-network-secret-file")
    static let rootCertificate = Setting("root-certificate", list: true)
    static let reportQuota = Setting("report-quota")
    static let retentionDays = Setting("retention-days")
    // Feeds and replicas (FeedsOptions).
    static let cacheControl = Setting("cache-control")
    static let feeds = Setting("feeds")
    static let feedsCache = Setting("feeds-cache")
    static let feedsPoll = Setting("feeds-poll")
    static let autoFeedback = Setting("auto-feedback")
    // Purchased content (ContentOptions).
    static let contentKeys = Setting("content-keys")
    static let contentURLLifetime = Setting("content-url-lifetime")
    // The App Store Server API (AppStoreAPIServeOptions).
    static let reconcileInterval = Setting("reconcile-interval")
    static let appStoreAPIURL = Setting("app-store-api-url")
    // Google Play (PlayServeOptions).
    static let googlePushKeys = Setting("google-push-keys")
    static let playAPIURL = Setting("play-api-url")

    /// Every setting, in the order `--print-config` and docs/operations.md list them.
    static let all: [Setting] = [
        catalog, publicDirectory, store, storePasswordFile, signingKey, signatureLifetime,
        logLevel, logFormat, accessLog, accessLogFeedSample, logFullAddresses,
        host, port, tlsCertificate, tlsKey, adminPort, adminHost,
        readDeadline, idleTimeout, maxConnections, reportLimitAddress, reportLimitInstall, trustedProxy, trustedProxyHeader,
        reportNetworkIPv4Prefix, reportNetworkIPv6Prefix, reportEvidenceIPv6Prefix, reportNetworkSecretFile, rootCertificate,
        reportQuota, retentionDays,
        cacheControl, feeds, feedsCache, feedsPoll, autoFeedback,
        contentKeys, contentURLLifetime, reconcileInterval, appStoreAPIURL, googlePushKeys, playAPIURL,
    ]

    /// ``all`` by name.
    static let named = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })
}
