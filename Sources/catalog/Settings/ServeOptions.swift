import AppStoreServerAPI
import ArgumentParser
import CatalogKit
import CatalogServer
import Foundation
import Logging
import NIOCore
import OutboundAPI
import Storage

// The option groups of `catalog serve`, one per concern. Each declares its flags with the
// table's names (``Setting``), resolves itself from flags, environment and `--config` file
// through ``Settings``, checks its own values, and returns the `CatalogServer` configuration
// it fills. `ServeCommand` only assembles them.

/// Listening and TLS: `--host`, `--port`, `--admin-host`, `--admin-port`, `--tls-certificate`, `--tls-key`.
struct ListeningOptions: ParsableArguments {
    @Option(name: Setting.host.long, help: ArgumentHelp("The address to listen on. Default: 127.0.0.1.", valueName: "address"))
    var host: String?

    @Option(name: Setting.port.long, help: ArgumentHelp("The port to listen on. Default: 8080.", valueName: "port"))
    var port: Int?

    @Option(
        name: Setting.tlsCertificate.long,
        help: ArgumentHelp(
            "A PEM certificate chain: serve HTTPS (HTTP/2 and HTTP/1.1 by ALPN) instead of plain HTTP, with --tls-key. Reloaded when the file changes. Default: none.",
            valueName: "file"))
    var tlsCertificate: String?

    @Option(
        name: Setting.tlsKey.long,
        help: ArgumentHelp("The PEM private key of --tls-certificate. A secret: keep the file 0600. Default: none.", valueName: "file"))
    var tlsKey: String?

    @Option(
        name: Setting.adminPort.long,
        help: ArgumentHelp(
            "A second port for the editor API, the dashboard and /metrics, which the first then refuses, so that only feeds, reports and health face the internet. Default: none (one port answers everything).",
            valueName: "port"))
    var adminPort: Int?

    @Option(
        name: Setting.adminHost.long, help: ArgumentHelp("The address the admin port listens on. Default: 127.0.0.1.", valueName: "address")
    )
    var adminHost: String?

    func resolve(_ settings: Settings) throws -> ListenerConfiguration {
        var listener = ListenerConfiguration()
        listener.host = try settings.value(.host, flag: host, default: listener.host) ?? listener.host
        listener.port = try settings.value(.port, flag: port, default: listener.port) ?? listener.port
        guard (1...65535).contains(listener.port) else { throw ValidationError("port \(listener.port) is not between 1 and 65535") }
        let adminPort = try settings.value(.adminPort, flag: adminPort, default: nil as Int?)
        let adminHost = try settings.value(.adminHost, flag: adminHost, default: "127.0.0.1") ?? "127.0.0.1"
        if let adminPort {
            guard (1...65535).contains(adminPort), adminPort != listener.port else {
                throw ValidationError("--admin-port \(adminPort) must be between 1 and 65535 and differ from --port")
            }
            listener.admin = (adminHost, adminPort)
        }
        let certificate = try settings.value(.tlsCertificate, flag: tlsCertificate, default: nil as String?)
        let key = try settings.value(.tlsKey, flag: tlsKey, default: nil as String?)
        guard (certificate == nil) == (key == nil) else { throw ValidationError("--tls-certificate and --tls-key go together") }
        listener.tls = certificate.flatMap { certificate in key.map { (certificate, $0) } }
        return listener
    }
}

/// Protection: deadlines, the connection limit, report rate limits and trusted proxies.
struct ProtectionOptions: ParsableArguments {
    @Option(
        name: Setting.readDeadline.long,
        help: ArgumentHelp(
            "How long each request has to arrive whole, from its first byte, and with TLS a handshake, from the accept; a client that reads none of its answers for as long is closed too (10s, 1m; a bare number is seconds). Default: 10s.",
            valueName: "duration"))
    var readDeadline: Seconds?

    @Option(
        name: Setting.idleTimeout.long,
        help: ArgumentHelp(
            "How long a keep-alive connection with nothing in progress stays open (30s, 5m; a bare number is seconds). Default: 30s.",
            valueName: "duration"))
    var idleTimeout: Seconds?

    @Option(
        name: Setting.maxConnections.long,
        help: ArgumentHelp(
            "Open connections at most; one past it is closed at once. Default: the descriptor limit less 256, at most 10000.",
            valueName: "n"))
    var maxConnections: Int?

    @Option(
        name: Setting.reportLimitAddress.long,
        help: ArgumentHelp(
            "Reports per minute accepted from one client network (see --report-network-ipv4-prefix); 0 for no limit. Default: 600.",
            valueName: "n"))
    var reportLimitAddress: Int?

    @Option(
        name: Setting.reportLimitInstall.long,
        help: ArgumentHelp("Reports per minute accepted from one install (installId); 0 for no limit. Default: 30.", valueName: "n"))
    var reportLimitInstall: Int?

    @Option(
        name: Setting.trustedProxy.long,
        help: ArgumentHelp(
            "A proxy whose forwarding header (--trusted-proxy-header) is believed, as an address or CIDR block; repeatable. Default: none.",
            valueName: "cidr"))
    var trustedProxy: [String] = []

    @Option(
        name: Setting.trustedProxyHeader.long,
        help: ArgumentHelp(
            "The one header the trusted proxies write: x-forwarded-for (nginx's $proxy_add_x_forwarded_for, HAProxy's option forwardfor, most load balancers) or forwarded (RFC 7239); the other is never read. Default: x-forwarded-for.",
            valueName: "name"))
    var trustedProxyHeader: ForwardingHeader?

    func resolve(_ settings: Settings) throws -> ProtectionConfiguration {
        var protection = ProtectionConfiguration()
        let readDeadline = try settings.value(.readDeadline, flag: readDeadline, default: Seconds(protection.readDeadline))?.seconds ?? 0
        let idleTimeout = try settings.value(.idleTimeout, flag: idleTimeout, default: Seconds(protection.idleTimeout))?.seconds ?? 0
        guard (1...3600).contains(readDeadline), (1...86_400).contains(idleTimeout) else {
            throw ValidationError("--read-deadline must be 1 to 3600 seconds and --idle-timeout 1 to 86400")
        }
        protection.readDeadline = .seconds(readDeadline)
        protection.idleTimeout = .seconds(idleTimeout)
        protection.maxConnections = try settings.value(.maxConnections, flag: maxConnections, default: nil as Int?)
        if let maxConnections = protection.maxConnections, maxConnections < 1 {
            throw ValidationError("--max-connections must be 1 or more")
        }
        let perAddress =
            try settings.value(.reportLimitAddress, flag: reportLimitAddress, default: protection.perAddress?.perMinute ?? 0) ?? 0
        let perInstall =
            try settings.value(.reportLimitInstall, flag: reportLimitInstall, default: protection.perInstall?.perMinute ?? 0) ?? 0
        guard perAddress >= 0, perInstall >= 0 else { throw ValidationError("report limits cannot be negative") }
        protection.perAddress = ProtectionConfiguration.limit(perMinute: perAddress)
        protection.perInstall = ProtectionConfiguration.limit(perMinute: perInstall)
        protection.trustedProxies = try settings.values(.trustedProxy, flags: trustedProxy).map { block in
            guard let range = AddressRange(cidr: block) else {
                throw ValidationError("--trusted-proxy '\(block)' is not an address or CIDR block such as 10.0.0.0/8 or fd00::/8")
            }
            return range
        }
        protection.forwardingHeader =
            try settings.value(.trustedProxyHeader, flag: trustedProxyHeader, default: protection.forwardingHeader)
            ?? protection.forwardingHeader
        return protection
    }
}

/// Reports: the client network prefixes and their secret, App Store roots, quota and retention.
struct ReportsOptions: ParsableArguments {
    @Option(
        name: Setting.reportNetworkIPv4Prefix.long,
        help: ArgumentHelp("How many leading bits of an IPv4 client address name its network. Default: 24.", valueName: "bits"))
    var reportNetworkIpv4Prefix: Int?

    @Option(
        name: Setting.reportNetworkIPv6Prefix.long,
        help: ArgumentHelp(
            "How many leading bits of an IPv6 client address name its network for rate limits and logs. Default: 48.", valueName: "bits"))
    var reportNetworkIpv6Prefix: Int?

    @Option(
        name: Setting.reportEvidenceIPv6Prefix.long,
        help: ArgumentHelp(
            "How many leading bits of an IPv6 client address name its network as evidence for quarantine: one provider's allocation, since /48s are cheap. Default: 32.",
            valueName: "bits"))
    var reportEvidenceIpv6Prefix: Int?

    @Option(
        name: Setting.reportNetworkSecretFile.long,
        help: ArgumentHelp(
            "The file of the secret that report networks are hashed with, made on first start. With PostgreSQL the store keeps the secret every node uses, and this file is only proposed to a store that has none (one that disagrees with the store is refused). Default: report-network.secret beside a SQLite store, var/report-network.secret with PostgreSQL.",
            valueName: "path"))
    var reportNetworkSecretFile: String?

    @Option(
        name: Setting.rootCertificate.long,
        help: ArgumentHelp(
            "A root certificate (PEM or DER) trusted beside Apple's two pinned roots, for purchases, notifications and reports' AppTransactions alike; repeatable (as every command that verifies evidence takes it). Default: Apple's pinned roots only.",
            valueName: "file"))
    var rootCertificate: [String] = []

    @Option(
        name: Setting.reportQuota.long,
        help: ArgumentHelp("Raw reports kept per app; past it the oldest are pruned first. Default: 1000000.", valueName: "n"))
    var reportQuota: Int?

    @Option(
        name: Setting.retentionDays.long,
        help: ArgumentHelp(
            "How long raw reports are kept before they are pruned: a span such as 90d, 12w or 36h, from 1d to 36600d; a bare number is days. Default: 90d.",
            valueName: "span"))
    var retentionDays: Days?

    /// The report settings, and where the network secret's file is (`named`: given, not the
    /// default beside the store). The secret itself is the store's business, settled at start.
    struct Resolved {
        var configuration: ReportsConfiguration
        var networkSecretFile: String
        var networkSecretFileNamed: Bool
        var rootCertificates: [String]
    }

    func resolve(_ settings: Settings, store: StoreURL) throws -> Resolved {
        var reports = ReportsConfiguration()
        let defaults = reports.networkPrefixes
        reports.networkPrefixes = NetworkPrefixLengths(
            ipv4: try settings.value(.reportNetworkIPv4Prefix, flag: reportNetworkIpv4Prefix, default: defaults.ipv4) ?? defaults.ipv4,
            ipv6: try settings.value(.reportNetworkIPv6Prefix, flag: reportNetworkIpv6Prefix, default: defaults.ipv6) ?? defaults.ipv6,
            ipv6Evidence: try settings.value(.reportEvidenceIPv6Prefix, flag: reportEvidenceIpv6Prefix, default: defaults.ipv6Evidence)
                ?? defaults.ipv6Evidence)
        let prefixes = reports.networkPrefixes
        guard (8...32).contains(prefixes.ipv4), (16...128).contains(prefixes.ipv6), (16...128).contains(prefixes.ipv6Evidence) else {
            throw ValidationError(
                "--report-network-ipv4-prefix must be 8 to 32, --report-network-ipv6-prefix and --report-evidence-ipv6-prefix 16 to 128")
        }
        let secretFile =
            try settings.value(.reportNetworkSecretFile, flag: reportNetworkSecretFile, default: store.defaultNetworkSecretPath)
            ?? store.defaultNetworkSecretPath
        let roots = try settings.values(.rootCertificate, flags: rootCertificate)
        reports.perAppQuota = try settings.value(.reportQuota, flag: reportQuota, default: reports.perAppQuota) ?? reports.perAppQuota
        guard reports.perAppQuota >= 1 else { throw ValidationError("--report-quota must be 1 or more") }
        let defaultSpan = Days(reports.retention)
        let span = try settings.value(.retentionDays, flag: retentionDays, default: defaultSpan) ?? defaultSpan
        guard (86_400...36_600 * 86_400).contains(span.seconds) else {
            throw ValidationError("--retention-days must be from 1d to 36600d (100 years); got \(span)")
        }
        reports.retention = .seconds(span.seconds)
        return Resolved(
            configuration: reports, networkSecretFile: secretFile, networkSecretFileNamed: secretFile != store.defaultNetworkSecretPath,
            rootCertificates: roots)
    }
}

/// Feeds and replicas: where the served feeds come from, their Cache-Control, auto-feedback.
struct FeedsOptions: ParsableArguments {
    @Option(
        name: Setting.cacheControl.long,
        help: ArgumentHelp(
            "Cache-Control of the current feeds (revision snapshots are always immutable). Default: public, max-age=300.",
            valueName: "value"))
    var cacheControl: String?

    @Option(
        name: Setting.feeds.long,
        help: ArgumentHelp(
            "Where the feeds served come from: public (the --public tree, as 'catalog build' writes it: the editor node) or store (what the PostgreSQL --store holds: a serving replica, with no catalog sources and no editor API). Default: public.",
            valueName: "public|store"))
    var feeds: FeedsConfiguration.Source?

    @Option(
        name: Setting.feedsCache.long,
        help: ArgumentHelp(
            "With --feeds store: the folder the replica keeps the feeds it received in, so that it starts and serves them while the store is unreachable. Default: a temporary folder, removed at exit.",
            valueName: "directory"))
    var feedsCache: String?

    @Option(
        name: Setting.feedsPoll.long,
        help: ArgumentHelp(
            "With --feeds store: how often the store is asked for new publications besides its announcements (a lost announcement waits this long at most). Default: 2s.",
            valueName: "interval"))
    var feedsPoll: Interval?

    @Option(
        name: Setting.autoFeedback.long,
        help: ArgumentHelp(
            "Run 'catalog feedback' then 'catalog build' at start and then this often (30m, 6h, …), logging every verdict change. Default: off.",
            valueName: "interval"))
    var autoFeedback: Interval?

    func resolve(_ settings: Settings) throws -> FeedsConfiguration {
        var feeds = FeedsConfiguration()
        feeds.cacheControl = try settings.value(.cacheControl, flag: cacheControl, default: feeds.cacheControl) ?? feeds.cacheControl
        feeds.source = try settings.value(.feeds, flag: self.feeds, default: .public) ?? .public
        feeds.cache = try settings.value(.feedsCache, flag: feedsCache, default: nil as String?)
        let defaultPoll = Interval("\(feeds.poll.components.seconds)s")
        let poll = try settings.value(.feedsPoll, flag: feedsPoll, default: defaultPoll) ?? defaultPoll
        let autoFeedback = try settings.value(.autoFeedback, flag: autoFeedback, default: nil as Interval?)
        if let autoFeedback, autoFeedback.seconds > 366 * 86_400 {
            throw ValidationError("--auto-feedback \(autoFeedback) is longer than a year (366d)")
        }
        feeds.autoFeedback = autoFeedback?.duration
        if feeds.isReplica {
            guard let poll, (1...3600).contains(poll.seconds) else { throw ValidationError("--feeds-poll must be 1s to 1h") }
        } else if feeds.cache != nil {
            throw ValidationError("--feeds-cache is for a replica (--feeds store); the editor node serves --public")
        }
        if let poll { feeds.poll = poll.duration }
        return feeds
    }
}

/// Purchased content: the key file that signs and verifies its URLs, and how long a URL lives.
struct ContentOptions: ParsableArguments {
    @Option(
        name: Setting.contentKeys.long,
        help: ArgumentHelp(
            "The JSON key ring that signs and verifies content URLs: {\"current\": ID, \"keys\": {ID: base64url secret}}. A secret: keep the file 0600. Default: none, and the content endpoints answer 503.",
            valueName: "file"))
    var contentKeys: String?

    @Option(
        name: Setting.contentURLLifetime.long,
        help: ArgumentHelp(
            "How long a content URL that POST /v1/apps/{app}/content signs stays valid (5m, 1h; at most 1d). Default: 1h.",
            valueName: "duration"))
    var contentUrlLifetime: Interval?

    /// Where the keys are (read at start, when the server is about to use them) and the lifetime.
    struct Resolved {
        var keysFile: String?
        var urlLifetime: Int64
    }

    func resolve(_ settings: Settings) throws -> Resolved {
        let keysFile = try settings.value(.contentKeys, flag: contentKeys, default: nil as String?)
        let defaultLifetime = Interval("\(Int64(ContentConfiguration().urlLifetime))s")
        let lifetime = try settings.value(.contentURLLifetime, flag: contentUrlLifetime, default: defaultLifetime)
        let seconds = lifetime?.seconds ?? Int64(ContentConfiguration().urlLifetime)
        guard (60...Int64(ContentConfiguration.maximumURLLifetime)).contains(seconds) else {
            throw ValidationError("--content-url-lifetime must be 1m to 1d: a content key ring refuses URLs further ahead than a day")
        }
        return Resolved(keysFile: keysFile, urlLifetime: seconds)
    }

    /// The content configuration, its key ring read from the file (a clear error if it cannot be).
    static func configuration(_ resolved: Resolved) throws -> ContentConfiguration {
        var content = ContentConfiguration()
        content.urlLifetime = TimeInterval(resolved.urlLifetime)
        if let file = resolved.keysFile {
            do {
                content.keyRing = try ContentConfiguration.keyRing(file: file)
                content.keyFile = file
            } catch {
                throw ValidationError("--content-keys: \(error.message)")
            }
        }
        return content
    }
}

/// Logging: level, format and the access log.
struct LoggingOptions: ParsableArguments {
    @Option(
        name: Setting.logLevel.long,
        help: ArgumentHelp("trace, debug, info, notice, warning, error or critical. Default: info.", valueName: "level"))
    var logLevel: Logger.Level?

    @Option(name: Setting.logFormat.long, help: ArgumentHelp("text, or json (one object per line). Default: text.", valueName: "format"))
    var logFormat: LoggingConfiguration.Format?

    @Option(
        name: Setting.accessLog.long,
        help: ArgumentHelp(
            "on: a line per request (feeds answered on the lean path as --access-log-feed-sample says); off: none. Default: off (a line costs 25-50 µs of CPU, a sixth to a third of a report's).",
            valueName: "on|off"))
    var accessLog: Switch?

    @Option(
        name: Setting.accessLogFeedSample.long,
        help: ArgumentHelp("Log one in n feed requests answered on the lean path; 0 for none. Default: 0.", valueName: "n"))
    var accessLogFeedSample: Int?

    @Option(
        name: Setting.logFullAddresses.long,
        help: ArgumentHelp(
            "on: log clients' full addresses; off: only their network (as the rate limits see it). Default: off.", valueName: "on|off"))
    var logFullAddresses: Switch?

    enum Switch: String, ExpressibleByArgument, CaseIterable {
        case on, off
    }

    /// The logging settings; the access log names clients by `prefixes`, as the rate limits do.
    func resolve(_ settings: Settings, prefixes: NetworkPrefixLengths) throws -> LoggingConfiguration {
        var logging = LoggingConfiguration()
        logging.level = try settings.value(.logLevel, flag: logLevel, default: logging.level) ?? logging.level
        logging.format = try settings.value(.logFormat, flag: logFormat, default: logging.format) ?? logging.format
        logging.accessLog.enabled = try settings.value(.accessLog, flag: accessLog, default: .off) == .on
        logging.accessLog.feedSampling = try settings.value(.accessLogFeedSample, flag: accessLogFeedSample, default: 0) ?? 0
        logging.accessLog.fullAddresses = try settings.value(.logFullAddresses, flag: logFullAddresses, default: .off) == .on
        guard logging.accessLog.feedSampling >= 0 else { throw ValidationError("--access-log-feed-sample must be 0 or more") }
        logging.accessLog.prefixes = prefixes
        return logging
    }
}

/// A duration where a flag once took a number of seconds: an ``Interval`` (`10s`, `5m`, `1d`),
/// the one syntax of durations on the command line, or, as before, a bare number of seconds.
struct Seconds: ExpressibleByArgument, CustomStringConvertible, Sendable {
    let seconds: Int64
    let description: String

    /// A default, such as ``ServeConfiguration/readDeadline``, in whole seconds.
    init(_ amount: TimeAmount) {
        seconds = amount.nanoseconds / 1_000_000_000
        description = "\(seconds)s"
    }

    init?(argument: String) {
        if let interval = Interval(argument) {
            seconds = interval.seconds
            description = interval.description
        } else if let bare = Int64(argument), bare >= 0 {
            seconds = bare
            description = argument
        } else {
            return nil
        }
    }
}

/// A duration where a flag once took a number of days (`--retention-days`): an ``Interval`` (`90d`,
/// `12w`, `36h`), the one syntax of durations on the command line, or, as before, a bare number of days.
struct Days: ExpressibleByArgument, CustomStringConvertible, Sendable {
    let seconds: Int64
    let description: String

    /// A default, such as ``ReportsConfiguration/retention``, in whole seconds.
    init(_ duration: Duration) {
        seconds = duration.components.seconds
        description = seconds % 86_400 == 0 ? "\(seconds / 86_400)d" : "\(seconds)s"
    }

    init?(argument: String) {
        if let interval = Interval(argument) {
            seconds = interval.seconds
            description = interval.description
        } else if let bare = Int64(argument), (0...Int64.max / 86_400).contains(bare) {
            seconds = bare * 86_400
            description = argument
        } else {
            return nil
        }
    }
}

/// Google Play on the purchase endpoints (docs/google-play.md).
struct PlayServeOptions: ParsableArguments {
    @Option(
        name: Setting.googlePushKeys.long,
        help: ArgumentHelp(
            "Google's keys for Pub/Sub push tokens: a file you fetch from https://www.googleapis.com/oauth2/v3/certs and refresh; read again when it changes. Without it, Google Play's notifications are refused.",
            valueName: "file"))
    var googlePushKeys: String?

    @Option(
        name: Setting.playAPIURL.long,
        help: ArgumentHelp(
            "Call this base URL instead of the Play Developer API's, for a stand-in (tests); http only to a loopback host. Default: Google's.",
            valueName: "url"))
    var playApiUrl: String?

    struct Resolved {
        var pushKeys: String?
        var apiURL: URL?
    }

    func resolve(_ settings: Settings) throws -> Resolved {
        var url: URL?
        if let text = try settings.value(.playAPIURL, flag: playApiUrl, default: nil as String?) {
            guard let parsed = APICaller.baseURL(text) else {
                throw ValidationError("--play-api-url must be an https URL (http only to a loopback host), not \(text)")
            }
            url = parsed
        }
        return Resolved(pushKeys: try settings.value(.googlePushKeys, flag: googlePushKeys, default: nil as String?), apiURL: url)
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
extension ForwardingHeader: ExpressibleByArgument {}
extension FeedsConfiguration.Source: ExpressibleByArgument {}
extension LoggingConfiguration.Format: ExpressibleByArgument {}

/// The App Store Server API's work on the editor node (docs/app-store-api.md).
struct AppStoreAPIServeOptions: ParsableArguments {
    @Option(
        name: Setting.reconcileInterval.long,
        help: ArgumentHelp(
            "How often each app whose catalog names an API key is reconciled with Apple's notification history (10m to 1d). Default: 1h.",
            valueName: "interval"))
    var reconcileInterval: Interval?

    @Option(
        name: Setting.appStoreAPIURL.long,
        help: ArgumentHelp(
            "Call this base URL instead of Apple's, for a stand-in of the API (tests); http only to a loopback host. Default: Apple's.",
            valueName: "url"))
    var appStoreApiUrl: String?

    struct Resolved {
        var reconcileInterval: Int64
        var apiURL: URL?
    }

    func resolve(_ settings: Settings) throws -> Resolved {
        let hour = Interval("1h")
        guard let interval = try settings.value(.reconcileInterval, flag: reconcileInterval, default: hour) ?? hour,
            (600...86_400).contains(interval.seconds)
        else {
            throw ValidationError("--reconcile-interval must be 10m to 1d")
        }
        var url: URL?
        if let text = try settings.value(.appStoreAPIURL, flag: appStoreApiUrl, default: nil as String?) {
            guard let parsed = AppStoreAPIEnvironment.baseURL(text) else {
                throw ValidationError("--app-store-api-url must be an https URL (http only to a loopback host), not \(text)")
            }
            url = parsed
        }
        return Resolved(reconcileInterval: interval.seconds, apiURL: url)
    }
}
