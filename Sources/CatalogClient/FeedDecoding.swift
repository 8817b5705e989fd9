import Foundation

/// Which feed a URL names: `products.json` (identifiers only) or `catalog.json` (the rich feed).
public enum FeedKind: String, Sendable, Hashable, CaseIterable {
    /// The JSON array of identifiers, exactly what Apple's sample code parses.
    case products = "products.json"
    /// The rich feed: each product's details, the revision, and the known identifiers.
    case catalog = "catalog.json"

    /// The kind a feed URL's last path component names; anything else is read as `products.json`,
    /// the format static hosts and Apple's sample code use.
    init(url: URL) {
        self = url.lastPathComponent == FeedKind.catalog.rawValue ? .catalog : .products
    }
}

/// A feed body, parsed.
struct DecodedFeed: Sendable, Hashable {
    var identifiers: [String]
    var products: [CatalogProduct]?
    var known: [KnownProduct] = []
    var revision: Int?

    /// Parses a body; anything that is not the feed (an HTML login page behind a captive portal,
    /// a truncated body) is `.malformedResponse`, so that it never replaces a good list.
    init(_ body: Data, kind: FeedKind) throws(CatalogClientError) {
        let json = try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed])
        switch kind {
        case .products:
            guard let identifiers = json as? [String] else { throw Self.malformed(kind) }
            self.identifiers = identifiers
        case .catalog:
            guard let object = json as? [String: Any], let items = object["products"] as? [[String: Any]] else {
                throw Self.malformed(kind)
            }
            var products: [CatalogProduct] = []
            for item in items {
                guard let product = Self.product(item) else { throw Self.malformed(kind) }
                products.append(product)
            }
            self.products = products
            identifiers = products.map(\.id)
            revision = object["revision"] as? Int
            known = (object["known"] as? [[String: Any]] ?? []).compactMap { item in
                (item["id"] as? String).map {
                    KnownProduct(
                        id: $0, type: item["type"] as? String, status: item["status"] as? String, reason: item["reason"] as? String)
                }
            }
        }
    }

    private static func product(_ item: [String: Any]) -> CatalogProduct? {
        guard let id = item["id"] as? String else { return nil }
        var subscription: CatalogProduct.Subscription?
        if let details = item["subscription"] as? [String: Any], let group = details["group"] as? String,
            let period = details["period"] as? String
        {
            subscription = CatalogProduct.Subscription(group: group, period: period, rank: details["rank"] as? Int)
        }
        var metadataJSON: String?
        if let metadata = item["metadata"], let data = try? JSONSerialization.data(withJSONObject: metadata, options: [.sortedKeys]) {
            metadataJSON = String(decoding: data, as: UTF8.self)
        }
        return CatalogProduct(
            id: id, type: item["type"] as? String, platforms: item["platforms"] as? [String],
            minimumAppVersion: item["minimumAppVersion"] as? String, availableUntil: item["availableUntil"] as? String,
            subscription: subscription, metadataJSON: metadataJSON)
    }

    private static func malformed(_ kind: FeedKind) -> CatalogClientError {
        CatalogClientError(code: .malformedResponse, message: "the response is not a \(kind.rawValue) feed", status: 200)
    }
}
