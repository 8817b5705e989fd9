import Foundation

/// The product identifiers an app should ask the App Store about, and where they came from.
///
/// A list is never empty because of a network error: when the server cannot be reached, the list
/// is the cached one (``Source-swift.enum/staleCache``) or the fallback the app ships
/// (``Source-swift.enum/fallback``), and ``error`` says what went wrong.
public struct ProductList: Sendable, Hashable {
    /// Where a list came from.
    public enum Source: String, Sendable, Hashable, CaseIterable {
        /// Downloaded now: the server answered 200.
        case network
        /// Revalidated now: the server answered 304, so the cached list is still current.
        case notModified
        /// From the cache without a request, because the server's `max-age` has not run out.
        case freshCache
        /// From the cache after the server could not be reached or failed; it may be out of date.
        case staleCache
        /// The list the app ships, because there was neither a server answer nor a cache.
        case fallback
    }

    /// The identifiers in the order the catalog lists them: pass them to `Product.products(for:)`.
    public var identifiers: [String]
    /// The products with their details, when the feed is `catalog.json`; nil for `products.json`
    /// and for the fallback list.
    public var products: [CatalogProduct]?
    /// Identifiers no longer sold (retired or quarantined) that restored purchases may still
    /// contain; empty unless the feed is `catalog.json`.
    public var known: [KnownProduct]
    /// The catalog revision, when the feed says (`catalog.json` does).
    public var revision: Int?
    /// Where the list came from: the server, the cache (fresh, confirmed or stale) or the fallback.
    public var source: Source
    /// The HTTP status of the request this call made (200 or 304), or nil when it made none or
    /// none was answered.
    public var status: Int?
    /// The `ETag` the list was served with, sent back as `If-None-Match` on the next revalidation.
    public var entityTag: String?
    /// The `Last-Modified` the list was served with, sent back as `If-Modified-Since`.
    public var lastModified: String?
    /// When the server last sent or confirmed this list; nil for the fallback list.
    public var validatedAt: Date?
    /// Until when the list is used without asking the server (its `max-age`); nil: every call asks.
    public var freshUntil: Date?
    /// Why the list is not from the server just now: set for ``Source-swift.enum/staleCache`` and
    /// ``Source-swift.enum/fallback``.
    public var error: CatalogClientError?
    /// The revision the feed's verified signature names; nil when signatures are off or the
    /// list is not from a verified feed.
    public var signedRevision: Int?
    /// In ``CatalogClient/SignaturePolicy/Mode-swift.enum/report`` mode, why the feed's signature
    /// was not trusted although the list was used.
    public var signatureIssue: CatalogClientError?

    /// Whether the list came from the client's disk cache rather than a response body received now.
    public var isFromCache: Bool { source == .notModified || source == .freshCache || source == .staleCache }
    /// Whether the list may be out of date because the server could not confirm it.
    public var isStale: Bool { source == .staleCache || source == .fallback }
}

/// One product of `catalog.json`: what an app needs to offer and present it.
public struct CatalogProduct: Sendable, Hashable, Codable {
    /// The App Store product identifier.
    public var id: String
    /// `consumable`, `non-consumable`, `auto-renewable` or `non-renewing`, when the catalog says.
    public var type: String?
    /// The platforms the product is limited to; nil means every platform of the app.
    public var platforms: [String]?
    /// The first app version that offers the product, such as `2.3`.
    public var minimumAppVersion: String?
    /// When the product stops being sold, as ISO 8601 text.
    public var availableUntil: String?
    /// The subscription group, period and rank of an auto-renewable subscription.
    public var subscription: Subscription?
    /// The editor's free-form metadata, as JSON text (an object), so that any value survives.
    public var metadataJSON: String?

    /// Where an auto-renewable subscription sits among its group's.
    public struct Subscription: Sendable, Hashable, Codable {
        /// The subscription group's name.
        public var group: String
        /// ISO 8601 duration, such as `P1M`.
        public var period: String
        /// Its rank in the group, 1 for the highest level of service.
        public var rank: Int?
    }
}

/// An identifier apps may meet in restored purchases although it is no longer sold.
public struct KnownProduct: Sendable, Hashable, Codable {
    /// The App Store product identifier.
    public var id: String
    /// Its product type, when the catalog says.
    public var type: String?
    /// `retired`, `removed`, or why it was taken off sale.
    public var status: String?
    /// Why it was taken off sale, when the feedback loop quarantined it.
    public var reason: String?
}

/// The platforms the catalog publishes for.
public enum Platform: String, Sendable, Hashable, CaseIterable, Codable {
    /// The platforms the App Store sells on, as the catalog names them.
    case iOS, macOS, tvOS, watchOS, visionOS

    /// The platform this code was compiled for; nil on others (Linux), where an app passes one.
    public static var current: Platform? {
        #if os(visionOS)
            return .visionOS
        #elseif os(iOS)
            return .iOS
        #elseif os(macOS)
            return .macOS
        #elseif os(tvOS)
            return .tvOS
        #elseif os(watchOS)
            return .watchOS
        #else
            return nil
        #endif
    }
}

/// The store environment that answered, as StoreKit's `AppTransaction.environment` names it.
///
/// Reports from sandbox and Xcode count toward suspicion only: those stores are noisy by design.
public enum StoreEnvironment: String, Sendable, Hashable, CaseIterable, Codable {
    /// The App Store that answered: the real one, the sandbox, or Xcode's local StoreKit testing.
    case production, sandbox, xcode
}
