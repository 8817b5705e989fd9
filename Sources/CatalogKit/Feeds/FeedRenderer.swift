import Time

/// The revision details at the head of a rich feed.
public struct CatalogStamp: Sendable, Hashable {
    /// The app's bundle identifier.
    public var app: String
    /// The revision whose number the feed carries: the one that first published these bytes.
    public var revision: Int
    /// When that revision was published.
    public var publishedAt: Timestamp

    /// The details of `revision` of `app`, published at `publishedAt`.
    public init(app: String, revision: Int, publishedAt: Timestamp) {
        self.app = app
        self.revision = revision
        self.publishedAt = publishedAt
    }

    /// `{` and the details as members, each followed by a comma: the content's members follow.
    var head: [UInt8] {
        var json = JSONWriter(capacity: 128)
        json.beginObject()
        json.key("app")
        json.string(app)
        json.key("revision")
        json.integer(Int64(revision))
        json.key("publishedAt")
        json.string(publishedAt.iso8601)
        return json.bytes + [UInt8(ascii: ",")]
    }
}

/// The products a variant's feeds list, in feed order, and which identifiers its `products.json`
/// names: an Android variant lists the Google Play product ids that Android apps ask Play for.
/// Variants share feeds only when both are equal.
public struct FeedSelection: Sendable, Hashable {
    /// Indices into the catalog's products, in feed order.
    public var products: [Int]
    /// Whether `products.json` names each product's Play product id (once each) instead of its id.
    public var namesPlayProducts: Bool

    /// A selection.
    public init(products: [Int], namesPlayProducts: Bool = false) {
        self.products = products
        self.namesPlayProducts = namesPlayProducts
    }
}

/// Receives a feed's bytes piece by piece, in order.
public typealias FeedPieces = (UnsafeBufferPointer<UInt8>) -> Void

/// Renders an app's feeds. Pure: the same catalog and moment give the same bytes.
///
/// Each product's JSON is encoded once and spliced into every feed that lists it; variants
/// that select the same products share their bytes. Feeds come out piece by piece, so that
/// planning hashes a feed of many megabytes without ever holding it (``ContentHash``), and
/// publishing writes it into one buffer of its exact size (``collect(_:)``).
public struct FeedRenderer: Sendable {
    /// The validated catalog the feeds are rendered from.
    public let catalog: AppCatalog
    /// The variants the catalog's definitions distinguish.
    public let selector: VariantSelector
    /// Each product's rich-feed object, encoded once, in one buffer per core: rendering a feed is then
    /// one copy per product, with no reference counting on the model (which cost more than the
    /// copying). The metadata is thereby held twice, about 50 bytes a product.
    let feedObjects: ByteArenas
    /// Indices into `catalog.products` in feed order: displayOrder, then source order.
    let feedOrder: [Int]
    /// Products that apps may meet in restored purchases although they are no longer sold.
    public let known: [Int]
    /// The end of every rich feed of the app, whatever the selection: `],"known":[…]}`.
    let knownTail: [UInt8]
    /// Each product's identifier as a JSON string, encoded once, in one buffer per core.
    let quotedIDs: ByteArenas
    /// Each product's Play product id as a JSON string (empty for a product without one); nil when
    /// no product is sold on Google Play.
    let quotedPlayIDs: [[UInt8]]?
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
        /// Whether Android's feeds list it (``Product/isSoldOnAndroid``).
        var isSoldOnAndroid: Bool
        /// The index in `selector.bands` of the band its minimum app version starts; 0 for none.
        /// An index, not the version: comparing versions (arrays) in the loop over products and
        /// variants cost reference counting on each.
        var minimumBand: Int
    }

    /// A renderer of `catalog`'s feeds; encodes each product once, on every core.
    public init(catalog: AppCatalog) {
        self.catalog = catalog
        selector = VariantSelector(catalog: catalog)
        let appMask = FeedRenderer.mask(catalog.platforms)
        // Every minimum app version but 0 starts a band of its own (VariantSelector).
        let bandIndex = Dictionary(uniqueKeysWithValues: selector.bands.enumerated().map { ($1, $0) })
        // Encoded in parts, one per core, with each product's sale facts and display order: of
        // planning, only this pass over every product would otherwise keep one core idle, and the
        // facts read after it kept it idle for a few milliseconds more.
        let products = catalog.products
        let parts = parallelMap(coreParts(of: products.indices)) { range in
            var objects = ByteArena(capacity: range.count, bytes: range.count * 512)
            var ids = ByteArena(capacity: range.count, bytes: range.count * 128)
            var facts: [SaleFacts] = []
            facts.reserveCapacity(range.count)
            var displayOrders: [Int64] = []
            displayOrders.reserveCapacity(range.count)
            // Products read in place, field by field: `for product in` would copy each, whole.
            for index in range {
                objects.appendItem { FeedRenderer.write(products[index], for: .feed, to: &$0) }
                ids.appendItem { $0.string(products[index].id) }
                facts.append(
                    SaleFacts(
                        status: products[index].status, isQuarantined: products.isQuarantined(at: index),
                        availableFrom: products[index].availableFrom, availableUntil: products[index].availableUntil,
                        platformMask: products[index].platforms.map(FeedRenderer.mask) ?? appMask,
                        isSoldOnAndroid: products.isSoldOnAndroid(at: index),
                        minimumBand: products[index].minimumAppVersion.flatMap { bandIndex[$0] } ?? 0))
                displayOrders.append(products[index].displayOrder ?? .max)
            }
            return (objects: objects, ids: ids, facts: facts, displayOrders: displayOrders)
        }
        feedObjects = ByteArenas(parts.map(\.objects))
        quotedIDs = ByteArenas(parts.map(\.ids))
        let facts = parts.count == 1 ? parts[0].facts : parts.flatMap(\.facts)
        saleFacts = facts
        quotedPlayIDs =
            facts.contains(where: \.isSoldOnAndroid)
            ? products.indices.map { index in
                guard let play = products[index].playStorage?.value else { return [] }
                var writer = JSONWriter(capacity: play.productId.utf8.count + 2)
                writer.string(play.productId)
                return writer.bytes
            } : nil
        // Sorted on plain values: a product read in each comparison is copied, whole.
        let displayOrders = parts.count == 1 ? parts[0].displayOrders : parts.flatMap(\.displayOrders)
        let order = displayOrders.indices.sorted { left, right in
            let a = displayOrders[left]
            let b = displayOrders[right]
            return a != b ? a < b : left < right
        }
        feedOrder = order
        known = order.filter { facts[$0].status == .retired || facts[$0].status == .removed || facts[$0].isQuarantined }
        knownTail = FeedRenderer.knownTail(catalog.products, known)
    }

    /// The products on sale in `variant` at `moment`, in feed order. Android's lists only products
    /// sold on Google Play, by their Play ids.
    public func selection(_ variant: Variant, at moment: Timestamp) -> FeedSelection {
        let android = variant.platform == .android
        let platformBit = android ? 0 : variant.platform.map(FeedRenderer.bit) ?? 0
        // The band the variant's version falls in: a product starting a later band is not sold there.
        let band = variant.band.map { version in selector.bands.lastIndex { $0 <= version } ?? 0 }
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
                if android && !fact.isSoldOnAndroid { continue }
                if let band, band < fact.minimumBand { continue }
                sellable.append(index)
            }
        }
        return FeedSelection(products: sellable, namesPlayProducts: android)
    }

    private static func bit(_ platform: Platform) -> UInt8 {
        1 << UInt8(Platform.allCases.firstIndex(of: platform)!)
    }

    private static func mask(_ platforms: [Platform]) -> UInt8 {
        platforms.reduce(0) { $0 | bit($1) }
    }

    /// `products.json`: exactly the JSON array of identifiers that Apple's sample code parses; on
    /// Android, the Play product ids, each once (a subscription's base plans share one).
    public func productsFeed(_ selection: FeedSelection, _ pieces: FeedPieces) {
        FeedRenderer.piece("[", pieces)
        if selection.namesPlayProducts, let quotedPlayIDs {
            var listed = Set<[UInt8]>()
            for index in selection.products where listed.insert(quotedPlayIDs[index]).inserted {
                if listed.count > 1 { FeedRenderer.piece(",", pieces) }
                quotedPlayIDs[index].withUnsafeBufferPointer(pieces)
            }
        } else {
            quotedIDs.forEachItem(at: selection.products, separatedBy: UInt8(ascii: ","), pieces)
        }
        FeedRenderer.piece("]", pieces)
    }

    /// `catalog.json`: the revision details of `stamp`, then the products and the known ones.
    /// Without a stamp, the content alone (`{"products":[…],"known":[…]}`): what decides whether
    /// the rich feed changed.
    public func catalogFeed(_ selection: FeedSelection, stamp: CatalogStamp?, _ pieces: FeedPieces) {
        FeedRenderer.catalogHead(stamp).withUnsafeBufferPointer(pieces)
        catalogBody(selection, pieces)
    }

    /// The start of `catalog.json` up to its products: the stamp's details, or `{` alone.
    static func catalogHead(_ stamp: CatalogStamp?) -> [UInt8] {
        stamp?.head ?? [UInt8(ascii: "{")]
    }

    /// `catalog.json` after ``catalogHead(_:)``: the same bytes whatever the stamp.
    func catalogBody(_ selection: FeedSelection, _ pieces: FeedPieces) {
        FeedRenderer.piece(#""products":["#, pieces)
        feedObjects.forEachItem(at: selection.products, separatedBy: UInt8(ascii: ","), pieces)
        knownTail.withUnsafeBufferPointer(pieces)
    }

    /// A feed's pieces in one buffer of its exact size.
    public static func collect(_ feed: (FeedPieces) -> Void) -> [UInt8] {
        var count = 0
        feed { count += $0.count }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        feed { bytes.append(contentsOf: $0) }
        return bytes
    }

    private static func piece(_ text: StaticString, _ pieces: FeedPieces) {
        pieces(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    private static func knownTail(_ products: [Product], _ known: [Int]) -> [UInt8] {
        var body = JSONWriter()
        body.raw("]".utf8)
        body.key("known")
        body.beginArray()
        // Products read in place, field by field: a product read whole is copied, a retain a field.
        for index in known {
            body.beginObject()
            body.key("id")
            body.string(products[index].id)
            if let type = products[index].type {
                body.key("type")
                body.string(type.rawValue)
            }
            body.key("status")
            if let reason = products.isQuarantined(at: index) ? products[index].quarantineReason : nil {
                body.string("quarantined")
                body.key("reason")
                body.string(reason)
            } else {
                body.string(products[index].status.rawValue)
            }
            if let play = products[index].playStorage?.value { writePlay(play, to: &body) }
            body.endObject()
        }
        body.endArray()
        body.endObject()
        return body.bytes
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
    public static func encode(_ product: borrowing Product, for audience: Audience) -> [UInt8] {
        var json = JSONWriter()
        write(product, for: audience, to: &json)
        return json.bytes
    }

    /// Writes ``encode(_:for:)``'s JSON with `json`, after what it holds. Borrowed, not copied: a
    /// product passed by value was copied whole, a retain and a release for each of its fields,
    /// from the array it was read from (7.6 ms of a rebuild's snapshot on one core, `perf`).
    static func write(_ product: borrowing Product, for audience: Audience, to json: inout JSONWriter) {
        let full = audience == .snapshot
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
        if let play = product.play { writePlay(play, to: &json) }
        if full, let order = product.displayOrder {
            json.key("displayOrder")
            json.integer(order)
        }
        // In the snapshot, so that history and `--dry-run` show a quarantine as a product change.
        if full, product.isQuarantined, let reason = product.quarantineReason {
            json.key("quarantine")
            json.string(reason)
        }
        if let metadata = product.metadataJSON {
            json.key("metadata")
            json.raw(metadata)
        }
        json.endObject()
    }
}

/// A product's `play` object, as feeds and snapshots write it (the source's keys).
private func writePlay(_ play: PlayProduct, to json: inout JSONWriter) {
    json.key("play")
    json.beginObject()
    json.key("productId")
    json.string(play.productId)
    for (key, value) in [("basePlan", play.basePlan), ("offer", play.offer), ("purchaseOption", play.purchaseOption)] {
        if let value {
            json.key(key)
            json.string(value)
        }
    }
    json.endObject()
}

/// Many small byte strings in one buffer: one allocation instead of one per product.
struct ByteArena: Sendable {
    private var bytes: [UInt8] = []
    private var ends: [Int] = []

    /// Room for `capacity` items of `bytes` bytes in all: generous is fine, since capacity that
    /// is never written takes no memory, while growing copies everything written so far.
    init(capacity: Int, bytes: Int) {
        ends.reserveCapacity(capacity)
        self.bytes.reserveCapacity(bytes)
    }

    /// Appends the item `write` writes, straight into the arena: an array of its own for each of
    /// 100,000 products' two items was an allocation, a copy and a release each.
    mutating func appendItem(_ write: (inout JSONWriter) -> Void) {
        var json = JSONWriter(continuing: &bytes)
        write(&json)
        bytes = json.takeBytes()
        ends.append(bytes.count)
    }

    var count: Int { ends.count }

    /// Calls `body` with the bytes and item ends in place.
    func withUnsafeParts<Result>(_ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<Int>) -> Result) -> Result {
        bytes.withUnsafeBufferPointer { bytes in ends.withUnsafeBufferPointer { ends in body(bytes, ends) } }
    }
}

/// The items of arenas filled on several cores, numbered across them in order. The arenas are
/// kept as they are: joining them copied every byte once more, on one core, while the other
/// waited.
struct ByteArenas: Sendable {
    private let arenas: [ByteArena]
    /// The number of the first item of each arena.
    private let firstItems: [Int]

    init(_ arenas: [ByteArena]) {
        self.arenas = arenas
        var first = 0
        firstItems = arenas.map { arena in
            defer { first += arena.count }
            return first
        }
    }

    /// Calls `body` with the item at each of `indices`, in place, and with `separator` between
    /// them: no slice, so no reference counting per item in loops over every product.
    func forEachItem(at indices: [Int], separatedBy separator: UInt8, _ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        withUnsafeArenas { arenas in
            withUnsafePointer(to: separator) { separator in
                for (position, index) in indices.enumerated() {
                    if position > 0 { body(UnsafeBufferPointer(start: separator, count: 1)) }
                    // One arena per core: a short search from the last.
                    var arena = arenas.count - 1
                    while firstItems[arena] > index { arena -= 1 }
                    let (bytes, ends) = arenas[arena]
                    let item = index - firstItems[arena]
                    let start = item == 0 ? 0 : ends[item - 1]
                    body(UnsafeBufferPointer(rebasing: bytes[start..<ends[item]]))
                }
            }
        }
    }

    /// Calls `body` with every arena's bytes and ends in place, in order.
    private func withUnsafeArenas<Result>(
        from index: Int = 0, _ collected: [(UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<Int>)] = [],
        _ body: ([(UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<Int>)]) -> Result
    ) -> Result {
        guard index < arenas.count else { return body(collected) }
        return arenas[index].withUnsafeParts { withUnsafeArenas(from: index + 1, collected + [($0, $1)], body) }
    }
}
