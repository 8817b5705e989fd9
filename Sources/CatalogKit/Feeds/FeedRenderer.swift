import PropertyList

/// The bytes of one selection of products, before revision details are stamped on the rich feed.
public struct RenderedFeeds: Sendable {
    /// `products.json`: exactly the JSON array of identifiers that Apple's sample code parses.
    public var products: [UInt8]
    /// The rich feed's content (products and known) with room in front for its revision details,
    /// so that stamping them never copies a feed of many megabytes.
    private var catalogBuffer: [UInt8]
    static let headroom = 512

    init(products: [UInt8], catalogBuffer: [UInt8]) {
        self.products = products
        self.catalogBuffer = catalogBuffer
    }

    /// The rich feed's content members without revision details: what decides whether it changed.
    public var catalogBody: ArraySlice<UInt8> { catalogBuffer[Self.headroom...] }

    /// `catalog.json`: revision details first, then the content's members.
    public mutating func stampedCatalog(app: String, revision: Int, publishedAt: Timestamp) -> ArraySlice<UInt8> {
        var header = JSONWriter(capacity: 128)
        header.beginObject()
        header.key("app")
        header.string(app)
        header.key("revision")
        header.integer(Int64(revision))
        header.key("publishedAt")
        header.string(publishedAt.iso8601)
        // The header's members replace the body's opening brace and run into its members.
        var bytes = header.bytes
        bytes.append(UInt8(ascii: ","))
        let start = Self.headroom + 1 - bytes.count
        precondition(start >= 0, "app identifiers are at most 155 characters, so the header fits")
        catalogBuffer.replaceSubrange(start..<Self.headroom + 1, with: bytes)
        return catalogBuffer[start...]
    }
}

/// Renders an app's feeds. Pure: the same catalog and moment give the same bytes.
///
/// Each product's JSON is encoded once and spliced into every feed that lists it; variants
/// that select the same products share their bytes.
public struct FeedRenderer: Sendable {
    public let catalog: AppCatalog
    public let selector: VariantSelector
    /// Each product's rich-feed object up to its metadata, encoded once, in one buffer: the
    /// metadata itself is spliced in from the model so that it is not held twice.
    let feedHeads: ByteArena
    /// Indices into `catalog.products` in feed order: displayOrder, then source order.
    let feedOrder: [Int]
    /// Products that apps may meet in restored purchases although they are no longer sold.
    public let known: [Int]
    /// Each product's identifier as a JSON string, encoded once, in one buffer.
    let quotedIDs: ByteArena
    /// What selection needs of each product, kept apart from `Product` so that the selection
    /// loop (products × variants) touches small plain values, not whole structs of strings.
    let saleFacts: [SaleFacts]

    struct SaleFacts: Sendable {
        var status: ProductStatus
        var isQuarantined: Bool
        var availableFrom: Timestamp?
        var availableUntil: Timestamp?
        /// Bit i set: sold on `Platform.allCases[i]`; 0 means every platform.
        var platformMask: UInt8
        var minimumAppVersion: AppVersion?
    }

    public init(catalog: AppCatalog) {
        self.catalog = catalog
        selector = VariantSelector(catalog: catalog)
        var heads = ByteArena(capacity: catalog.products.count)
        var ids = ByteArena(capacity: catalog.products.count)
        for product in catalog.products {
            heads.append(FeedRenderer.encodeHead(product, for: .feed).bytes)
            var writer = JSONWriter(capacity: product.id.utf8.count + 2)
            writer.string(product.id)
            ids.append(writer.bytes)
        }
        feedHeads = heads
        quotedIDs = ids
        let appMask = FeedRenderer.mask(catalog.platforms)
        saleFacts = catalog.products.map { product in
            SaleFacts(
                status: product.status, isQuarantined: product.isQuarantined, availableFrom: product.availableFrom,
                availableUntil: product.availableUntil,
                platformMask: product.platforms.map(FeedRenderer.mask) ?? appMask,
                minimumAppVersion: product.minimumAppVersion)
        }
        let order = catalog.products.indices.sorted { left, right in
            let a = catalog.products[left].displayOrder ?? .max
            let b = catalog.products[right].displayOrder ?? .max
            return a != b ? a < b : left < right
        }
        feedOrder = order
        known = order.filter {
            let product = catalog.products[$0]
            return product.status == .retired || product.status == .removed || product.isQuarantined
        }
    }

    /// The products on sale in `variant` at `moment`, as indices in feed order.
    public func selection(_ variant: Variant, at moment: Timestamp) -> [Int] {
        let platformBit = variant.platform.map(FeedRenderer.bit) ?? 0
        var sellable: [Int] = []
        sellable.reserveCapacity(feedOrder.count)
        saleFacts.withUnsafeBufferPointer { facts in
            for index in feedOrder {
                let fact = facts[index]
                guard fact.status == .cleared, !fact.isQuarantined,
                    fact.availableFrom.map({ $0 <= moment }) ?? true,
                    fact.availableUntil.map({ moment < $0 }) ?? true
                else { continue }
                if platformBit != 0 && fact.platformMask != 0 && fact.platformMask & platformBit == 0 { continue }
                if let band = variant.band, let minimum = fact.minimumAppVersion, band < minimum { continue }
                sellable.append(index)
            }
        }
        return sellable
    }

    private static func bit(_ platform: Platform) -> UInt8 {
        1 << UInt8(Platform.allCases.firstIndex(of: platform)!)
    }

    private static func mask(_ platforms: [Platform]) -> UInt8 {
        platforms.reduce(0) { $0 | bit($1) }
    }

    public func render(_ selection: [Int]) -> RenderedFeeds {
        var ids = JSONWriter(capacity: selection.reduce(2) { $0 + quotedIDs.count(at: $1) + 1 })
        ids.beginArray()
        for index in selection { ids.raw(quotedIDs[index]) }
        ids.endArray()

        var body = JSONWriter(
            capacity: selection.reduce(RenderedFeeds.headroom + 64) {
                $0 + feedHeads.count(at: $1) + (catalog.products[$1].metadataJSON?.count ?? 0) + 14
            })
        body.raw(Array(repeating: UInt8(ascii: " "), count: RenderedFeeds.headroom))
        body.resetSeparator()
        body.beginObject()
        body.key("products")
        body.beginArray()
        for index in selection {
            body.raw(feedHeads[index])
            FeedRenderer.finish(&body, metadata: catalog.products[index].metadataJSON)
        }
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
            if let reason = product.isQuarantined ? product.quarantineReason : nil {
                body.string("quarantined")
                body.key("reason")
                body.string(reason)
            } else {
                body.string(product.status.rawValue)
            }
            body.endObject()
        }
        body.endArray()
        body.endObject()
        return RenderedFeeds(products: ids.bytes, catalogBuffer: body.bytes)
    }

    /// Who a product's JSON is for.
    public enum Audience: Sendable {
        /// Apps: what they need to offer and present the product.
        case feed
        /// Editors: every field, for history and diffs (a revision's `products.jsonl.gz`).
        case snapshot
    }

    /// One product as JSON. The feed leaves out what only editors use (reference name, status,
    /// display order, the start of availability), which is also much of a big feed's size.
    public static func encode(_ product: Product, for audience: Audience) -> [UInt8] {
        var json = encodeHead(product, for: audience)
        finish(&json, metadata: product.metadataJSON)
        return json.bytes
    }

    /// The metadata and the closing brace of a product object whose head is already written.
    static func finish(_ json: inout JSONWriter, metadata: [UInt8]?) {
        if let metadata {
            json.appendUnseparated(metadataKey)
            json.appendUnseparated(metadata)
        }
        json.appendUnseparated(closingBrace)
    }

    private static let metadataKey = Array(#","metadata":"#.utf8)
    private static let closingBrace = Array("}".utf8)

    /// A product object without its metadata and closing brace.
    static func encodeHead(_ product: Product, for audience: Audience) -> JSONWriter {
        let full = audience == .snapshot
        var json = JSONWriter()
        json.beginObject()
        json.key("id")
        json.string(product.id)
        if let type = product.type {
            json.key("type")
            json.string(type.rawValue)
        }
        if full, let name = product.referenceName {
            json.key("referenceName")
            json.string(name)
        }
        if full {
            json.key("status")
            json.string(product.status.rawValue)
        }
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
        if full, let from = product.availableFrom {
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
        if full, let order = product.displayOrder {
            json.key("displayOrder")
            json.integer(order)
        }
        // In the snapshot, so that history and `--dry-run` show a quarantine as a product change.
        if full, product.isQuarantined, let reason = product.quarantineReason {
            json.key("quarantine")
            json.string(reason)
        }
        return json
    }
}

/// Many small byte strings in one buffer: one allocation instead of one per product.
struct ByteArena: Sendable {
    private var bytes: [UInt8] = []
    private var ends: [Int] = []

    init(capacity: Int) {
        ends.reserveCapacity(capacity)
    }

    mutating func append(_ item: [UInt8]) {
        bytes.append(contentsOf: item)
        ends.append(bytes.count)
    }

    func count(at index: Int) -> Int {
        ends[index] - (index == 0 ? 0 : ends[index - 1])
    }

    subscript(index: Int) -> ArraySlice<UInt8> {
        bytes[(index == 0 ? 0 : ends[index - 1])..<ends[index]]
    }
}
