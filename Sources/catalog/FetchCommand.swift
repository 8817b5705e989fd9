import ArgumentParser
import CatalogClient
import Foundation

struct FetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Fetch a feed as an app does, with CatalogClient: watch a revalidation from the terminal.",
        discussion: """
            Prints the identifiers, a blank line, then the HTTP status (200 or 304; none when a fresh \
            cache made a request unnecessary), the validators, where the answer came from and whether \
            it is stale. The cache lives in $XDG_CACHE_HOME/catalog (~/.cache/catalog by default). \
            Exit status: 0 with a list from the server or the cache, 1 when there was neither.
            """
    )

    @Argument(help: "A feed URL, such as http://127.0.0.1:8080/v1/apps/com.example.game/products.json?platform=ios")
    var url: String

    @Flag(help: "Revalidate with the server even while the cached feed is fresh.")
    var refresh = false

    @Option(
        help: ArgumentHelp(
            "A root public key (root.pub.jwk) the feed's signature must chain to; repeatable. Default: none.", valueName: "file"))
    var rootKey: [String] = []

    @Option(
        help: ArgumentHelp(
            "off, report or enforce (see CatalogClient.SignaturePolicy). Default: enforce with --root-key, else off.", valueName: "mode"))
    var signatures: CatalogClient.SignaturePolicy.Mode?

    func validate() throws {
        guard let feedURL = URL(string: url), ["http", "https"].contains(feedURL.scheme?.lowercased() ?? ""), feedURL.host != nil else {
            throw ValidationError("'\(url)' is not an http or https URL")
        }
    }

    func run() async throws {
        guard let feedURL = URL(string: url) else { throw ExitCode.validationFailure }
        let directory = Self.cacheDirectory()
        // Only the cache is used: the fetch command sends no reports, so the server URL and app
        // matter only for building report URLs, which it never does.
        var configuration = CatalogClient.Configuration(
            server: feedURL, app: VerifyCommand.location(feedURL.path)?.app ?? "", fallbackIdentifiers: [])
        let roots = try SigningOptions.rootKeys(rootKey)
        let mode = signatures ?? (roots.isEmpty ? .off : .enforce)
        if mode != .off && roots.isEmpty { throw ValidationError("--signatures \(mode.rawValue) needs --root-key") }
        configuration.signatures = CatalogClient.SignaturePolicy(mode: mode, rootKeys: roots)
        configuration.cacheDirectory = directory.appendingPathComponent("feeds", isDirectory: true)
        configuration.dataDirectory = directory
        configuration.sendsReportsAutomatically = false
        configuration.log = { FileHandle.standardError.write(Array("catalog fetch: \($0)\n".utf8)) }
        let list: ProductList
        if let app = Self.appFeed(feedURL) {
            // An app's feed URL, fetched as an app does: its platform and appVersion pick the
            // variant, asked for at the variant's own path when the server lists them.
            configuration.server = app.server
            configuration.feed = app.kind
            let client = CatalogClient(configuration: configuration)
            list =
                refresh
                ? await client.refresh(platform: app.platform, appVersion: app.appVersion)
                : await client.products(platform: app.platform, appVersion: app.appVersion)
        } else {
            list = await CatalogClient(configuration: configuration).products(from: feedURL, revalidate: refresh)
        }
        var lines = list.identifiers
        lines.append("")
        lines.append("status: \(list.status.map(String.init) ?? "none")")
        lines.append("etag: \(list.entityTag ?? "none")")
        lines.append("last-modified: \(list.lastModified ?? "none")")
        lines.append("source: \(list.source.rawValue) (\(Self.explain(list)))")
        lines.append("stale: \(list.isStale ? "yes" : "no")")
        if mode != .off {
            let verified = list.signedRevision.map { "verified, revision \($0)" } ?? "not verified"
            if let refused = list.error, refused.code == .signature {
                lines.append("signature: refused (\(refused.message)); the list is \(verified)")
            } else if let issue = list.signatureIssue {
                lines.append("signature: not trusted, used anyway in report mode (\(issue.message))")
            } else {
                lines.append("signature: \(verified)")
            }
        }
        print(lines.joined(separator: "\n"))
        if list.source == .fallback { throw ExitCode(1) }
    }

    /// The server, feed kind, platform and app version of an app's feed URL
    /// (`<server>/v1/apps/<app>/<feed>[?platform=…&appVersion=…]`), nil for any other URL.
    static func appFeed(_ url: URL) -> (server: URL, kind: FeedKind, platform: Platform?, appVersion: String?)? {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true),
            let location = FeedLocation(path: components.path), location.variant == nil,
            let kind = FeedKind(rawValue: location.feed)
        else { return nil }
        let query = components.queryItems ?? []
        let platformName = query.first { $0.name == "platform" }?.value
        let platform = platformName.flatMap { name in Platform.allCases.first { $0.rawValue.lowercased() == name.lowercased() } }
        // A platform this client does not know is left to the URL as it is.
        if platformName != nil && platform == nil { return nil }
        components.query = nil
        components.path = String(components.path.dropLast("v1/apps/\(location.app)/\(location.feed)".count))
        guard let server = components.url else { return nil }
        return (server, kind, platform, query.first { $0.name == "appVersion" }?.value)
    }

    private static func explain(_ list: ProductList) -> String {
        switch list.source {
        case .network: return "downloaded, cache updated"
        case .notModified: return "from the cache, confirmed current by the server"
        case .freshCache:
            let left = max(Int((list.freshUntil?.timeIntervalSinceNow ?? 0).rounded(.up)), 0)
            return "from the cache without a request, fresh for another \(left) s"
        case .staleCache: return "from the cache, not confirmed: \(list.error?.message ?? "unknown error")"
        case .fallback: return "no cache and no answer: \(list.error?.message ?? "unknown error")"
        }
    }

    /// `$XDG_CACHE_HOME/catalog`, or `~/.cache/catalog`; the XDG spec says to ignore a relative path.
    static func cacheDirectory() -> URL {
        if let xdg = ProcessInfo.processInfo.environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            return URL(fileURLWithPath: xdg, isDirectory: true).appendingPathComponent("catalog", isDirectory: true)
        }
        return FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cache/catalog", isDirectory: true)
    }
}

extension CatalogClient.SignaturePolicy.Mode: ExpressibleByArgument {}
