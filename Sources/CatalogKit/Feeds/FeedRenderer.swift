import PropertyList

/// The bytes of one selection of products, before revision details are stamped on the rich feed.
public struct RenderedFeeds: Sendable {
    /// `products.json`: exactly the JSON array of identifiers that Apple's sample code parses.
    public var products: [UInt8]
    /// The rich feed's content members (products and known), without revision details.
    public var catalogBody: [UInt8]
}

/// Renders an app's feeds. Pure: the same catalog and moment give the same bytes.
///
/// Each product's JSON is encoded once and spliced into every feed that lists it; variants
/// that select the same products share their bytes.
public struct FeedRenderer: Sendable {
    public let catalog: AppCatalog
    public let selector: VariantSelector
    /// The product objects of the rich feed, one per product in source order, encoded once.
    public let productJSON: [[UInt8]]
    /// Indices into `catalog.products` in feed order: displayOrder, then source order.
    let feedOrder: [Int]
    /// Products that apps may meet in restored purchases although they are no longer sold.
    public let known: [Int]

    public init(catalog: AppCatalog) {
        self.catalog = catalog
        selector = VariantSelector(catalog: catalog)
        productJSON = catalog.products.map(FeedRenderer.encode)
        let order = catalog.products.indices.sorted { left, right in
            let a = catalog.products[left].displayOrder ?? .max
            let b = catalog.products[right].displayOrder ?? .max
            return a != b ? a < b : left < right
        }
        feedOrder = order
        known = order.filter { catalog.products[$0].status == .retired || catalog.products[$0].status == .removed }
    }

    /// The products on sale in `variant` at `moment`, as indices in feed order.
    public func selection(_ variant: Variant, at moment: Timestamp) -> [Int] {
        let appPlatforms = catalog.platforms
        var sellable: [Int] = []
        for index in feedOrder {
            let product = catalog.products[index]
            guard product.isOnSale(at: moment) else { continue }
            if let platform = variant.platform {
                let platforms = product.platforms ?? appPlatforms
                if !platforms.isEmpty && !platforms.contains(platform) { continue }
            }
            if let band = variant.band, let minimum = product.minimumAppVersion, band < minimum { continue }
            sellable.append(index)
        }
        return sellable
    }

    public func render(_ selection: [Int]) -> RenderedFeeds {
        var ids = JSONWriter(capacity: selection.count * 40 + 2)
        ids.beginArray()
        for index in selection { ids.string(catalog.products[index].id) }
        ids.endArray()

        var body = JSONWriter(capacity: selection.reduce(64) { $0 + productJSON[$1].count + 1 })
        body.beginObject()
        body.key("products")
        body.beginArray()
        for index in selection { body.raw(productJSON[index]) }
        body.endArray()
        body.key("known")
        body.beginArray()
        for index in known {
            let product = catalog.products[index]
            body.beginObject()
            body.key("id")
            body.string(product.id)
            if let type = product.type {
                body.key("type")
                body.string(type.rawValue)
            }
            body.key("status")
            body.string(product.status.rawValue)
            body.endObject()
        }
        body.endArray()
        body.endObject()
        return RenderedFeeds(products: ids.bytes, catalogBody: body.bytes)
    }

    /// `catalog.json`: revision details first, then the body's members.
    public static func catalogJSON(app: String, revision: Int, publishedAt: Timestamp, body: [UInt8]) -> [UInt8] {
        var header = JSONWriter(capacity: body.count + 128)
        header.beginObject()
        header.key("app")
        header.string(app)
        header.key("revision")
        header.integer(Int64(revision))
        header.key("publishedAt")
        header.string(publishedAt.iso8601)
        var bytes = header.bytes
        // The body is an object; splice its members in after the header's.
        if body.count > 2 {
            bytes.append(UInt8(ascii: ","))
            bytes.append(contentsOf: body[1...])
        } else {
            bytes.append(UInt8(ascii: "}"))
        }
        return bytes
    }

    /// One product as the rich feed and the revision snapshot show it.
    static func encode(_ product: Product) -> [UInt8] {
        var json = JSONWriter()
        json.beginObject()
        json.key("id")
        json.string(product.id)
        if let type = product.type {
            json.key("type")
            json.string(type.rawValue)
        }
        if let name = product.referenceName {
            json.key("referenceName")
            json.string(name)
        }
        json.key("status")
        json.string(product.status.rawValue)
        if let platforms = product.platforms {
            json.key("platforms")
            json.beginArray()
            for platform in platforms { json.string(platform.name) }
            json.endArray()
        }
        if let version = product.minimumAppVersion {
            json.key("minimumAppVersion")
            json.string(version.description)
        }
        if let from = product.availableFrom {
            json.key("availableFrom")
            json.string(from.iso8601)
        }
        if let until = product.availableUntil {
            json.key("availableUntil")
            json.string(until.iso8601)
        }
        if let subscription = product.subscription {
            json.key("subscription")
            json.beginObject()
            json.key("group")
            json.string(subscription.group)
            json.key("period")
            json.string(subscription.period)
            if let rank = subscription.rank {
                json.key("rank")
                json.integer(rank)
            }
            json.endObject()
        }
        if let order = product.displayOrder {
            json.key("displayOrder")
            json.integer(order)
        }
        if let metadata = product.metadataJSON {
            json.key("metadata")
            json.raw(metadata)
        }
        json.endObject()
        return json.bytes
    }
}
