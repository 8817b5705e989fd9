import Foundation

#if canImport(os)
    import os
#endif

extension CatalogClient {
    /// Where the catalog is, what to fall back on, where to keep files, and how patient to be.
    public struct Configuration: Sendable {
        /// The server's base URL: feeds are under `v1/apps/<app>/` below it, as `catalog serve`
        /// serves them and as the published `public/` tree lays them out on a static host or CDN
        /// (each platform and app-version band at a path of its own, listed by `variants.json`).
        public var server: URL
        /// Where reports and purchases go, when not to ``server``: the base URL of a `catalog serve`
        /// (reports are posted to `v1/apps/<app>/invalid-identifiers` below it, purchases to
        /// `v1/apps/<app>/purchases`). Set it when feeds come from a
        /// static host or CDN, which cannot take reports; nil (the default) sends them to ``server``.
        public var reportServer: URL?
        /// Where content files are downloaded from, when not from the server that lists them (a CDN
        /// in front, say): the signed URLs' paths go after it. Nil (the default): after
        /// ``reportServer``, or ``server``. An absolute URL in the list is used as it is.
        public var contentServer: URL?
        /// The app's bundle identifier, as the catalog names it.
        public var app: String
        /// The identifiers the app ships (Apple's `product_ids.plist`, say), returned when there
        /// is neither a server answer nor a cached list. See ``CatalogClient/bundledIdentifiers(at:)``.
        public var fallbackIdentifiers: [String]
        /// Whether feeds must be signed, and by which root: off by default.
        public var signatures = SignaturePolicy.off
        /// A signed feed the app ships, preferred to ``fallbackIdentifiers`` when it verifies.
        public var bundledFeed: BundledFeed?
        /// `products.json` (identifiers only) or `catalog.json` (identifiers with details, revision
        /// and the known identifiers for restoring purchases). One request either way.
        public var feed: FeedKind = .products
        /// The cached feeds: the OS may purge this directory, which costs one download.
        public var cacheDirectory: URL
        /// The report queue and the install id: must outlive the app's process and not be purged.
        public var dataDirectory: URL
        /// What reports say the app runs on.
        public var platform: Platform? = .current
        /// What reports say the app's version is.
        public var appVersion: String? = Configuration.bundleAppVersion
        /// Seconds without progress before a request fails.
        public var requestTimeout: TimeInterval = 10
        /// The largest answer the client reads, in bytes, after decompression: a feed (or a
        /// `.jws`) bigger than this fails with ``CatalogClientError/Code/responseTooLarge`` and the
        /// cache or fallback answers. The default, 32 MiB, holds the `catalog.json` of a catalog
        /// far larger than App Store Connect allows; a hostile mirror's gzip bomb stops there.
        public var maximumResponseBytes = 32 << 20
        /// Attempts per feed request, the first included, before falling back to the cache.
        public var fetchAttempts = 3
        /// Waits between feed attempts: short, because an app launch is waiting on them.
        public var fetchBackoff = Backoff(initial: 0.5, maximum: 4)
        /// Waits between report deliveries after a failure, when the server sends no `Retry-After`.
        public var reportBackoff = Backoff(initial: 30, maximum: 3600)
        /// Send queued reports in the background, as soon as they are queued and whenever a
        /// back-off ends. Off: only ``CatalogClient/sendPendingReports()`` sends them.
        public var sendsReportsAutomatically = true
        /// Queued reports beyond this many are dropped, oldest first: a device offline for
        /// months should not pile up work or disk.
        public var maximumQueuedReports = 200
        /// Reports older than this are dropped unsent: stale evidence misleads the feedback loop.
        public var maximumReportAge: TimeInterval = 7 * 24 * 3600
        /// Send queued purchases in the background, as soon as they are queued and whenever a
        /// back-off ends. Off: only ``CatalogClient/sendPendingPurchases()`` sends them.
        public var sendsPurchasesAutomatically = true
        /// Waits between purchase deliveries after a failure, when the server sends no `Retry-After`:
        /// shorter than reports', since the customer waits for what they bought.
        public var purchaseBackoff = Backoff(initial: 2, maximum: 600)
        /// Queued purchases beyond this many are dropped, oldest first (and logged). A purchase is
        /// never dropped for its age: the App Store's evidence stays valid, and the server records
        /// it once however late it comes.
        public var maximumQueuedPurchases = 100
        /// Where the client says what it dropped or could not store. By default the unified log on
        /// Apple platforms, standard error elsewhere.
        public var log: @Sendable (String) -> Void = Configuration.defaultLog

        /// A configuration with the default directories: `Caches/CatalogClient/<app>` and
        /// `Application Support/CatalogClient/<app>` (their XDG equivalents on Linux), or
        /// `cache` and `data` inside `directory` when given.
        public init(server: URL, app: String, fallbackIdentifiers: [String], directory: URL? = nil) {
            self.server = server
            self.app = app
            self.fallbackIdentifiers = fallbackIdentifiers
            if let directory {
                cacheDirectory = directory.appendingPathComponent("cache", isDirectory: true)
                dataDirectory = directory.appendingPathComponent("data", isDirectory: true)
            } else {
                cacheDirectory = Self.standardDirectory(.cachesDirectory, app: app)
                dataDirectory = Self.standardDirectory(.applicationSupportDirectory, app: app)
            }
        }

        /// `CFBundleShortVersionString` of the main bundle, such as `2.3.1`.
        public static var bundleAppVersion: String? {
            Bundle.main.object(forInfoDictionaryKey: "CFBundleShortVersionString") as? String
        }

        private static func standardDirectory(_ kind: FileManager.SearchPathDirectory, app: String) -> URL {
            let base =
                FileManager.default.urls(for: kind, in: .userDomainMask).first ?? FileManager.default.temporaryDirectory
            return base.appendingPathComponent("CatalogClient", isDirectory: true).appendingPathComponent(app, isDirectory: true)
        }

        /// The default ``log``: the unified log (subsystem `CatalogClient`) on Apple platforms,
        /// standard error elsewhere.
        @Sendable public static func defaultLog(_ message: String) {
            #if canImport(os)
                Logger(subsystem: "CatalogClient", category: "catalog").notice("\(message, privacy: .public)")
            #else
                FileHandle.standardError.write(Data("CatalogClient: \(message)\n".utf8))
            #endif
        }

        /// The feed URL for a platform and app version. A version the server would refuse (`2.3 beta`)
        /// is left out, which gets the feed for every version rather than a 400 and the fallback.
        func feedURL(platform: Platform?, appVersion: String?) -> URL {
            let path = server.appendingPathComponent("v1/apps/\(app)/\(feed.rawValue)")
            guard var components = URLComponents(url: path, resolvingAgainstBaseURL: true) else { return path }
            var query: [URLQueryItem] = []
            if let platform { query.append(URLQueryItem(name: "platform", value: platform.rawValue.lowercased())) }
            if let version = WireRules.appVersion(appVersion) { query.append(URLQueryItem(name: "appVersion", value: version)) }
            components.queryItems = query.isEmpty ? nil : query
            return components.url ?? path
        }

        /// The feed URL of a variant at its own path (`v1/apps/<app>/variants/ios/2.0/products.json`,
        /// the app's own feed path for the default), as the server's variant index places it; nil
        /// without an index.
        func feedURL(_ variant: RequestedVariant, index: FeedVariants?) -> URL? {
            guard let index else { return nil }
            let key = index.key(platform: variant.platform, appVersion: variant.appVersion)
            return server.appendingPathComponent("v1/apps/\(app)/" + FeedVariants.directory(key: key) + feed.rawValue)
        }

        /// `v1/apps/<app>/variants.json`: the platforms and bands, which give each variant's path.
        var variantIndexURL: URL { server.appendingPathComponent("v1/apps/\(app)/\(FeedVariants.indexName)") }

        var reportURL: URL { (reportServer ?? server).appendingPathComponent("v1/apps/\(app)/invalid-identifiers") }

        /// `POST v1/apps/<app>/purchases` on the `catalog serve` that takes reports: a static host cannot.
        var purchaseURL: URL { (reportServer ?? server).appendingPathComponent("v1/apps/\(app)/purchases") }

        /// `POST v1/apps/<app>/content`, on the server that takes purchases.
        var contentListURL: URL { (reportServer ?? server).appendingPathComponent("v1/apps/\(app)/content") }

        /// What the signed URLs' paths are joined to.
        var contentBaseURL: URL { contentServer ?? reportServer ?? server }
    }

    /// The identifiers in a file the app ships: a JSON array of strings, or a property list whose
    /// root is an array of strings (Apple's `product_ids.plist`).
    ///
    /// ```swift
    /// let bundled = Bundle.main.url(forResource: "product_ids", withExtension: "plist")
    /// let fallback = bundled.flatMap { try? CatalogClient.bundledIdentifiers(at: $0) } ?? []
    /// ```
    public static func bundledIdentifiers(at url: URL) throws -> [String] {
        let data = try Data(contentsOf: url)
        if let identifiers = try? JSONSerialization.jsonObject(with: data) as? [String] { return identifiers }
        if let identifiers = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String] { return identifiers }
        throw CatalogClientError(code: .malformedResponse, message: "\(url.path) is not an array of product identifiers")
    }
}
