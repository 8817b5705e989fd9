import PropertyList
import Synchronization
import Time

/// Where a definition was written: the file and the position of its start tag.
public struct SourceLocation: Sendable, Hashable, CustomStringConvertible {
    /// The file as diagnostics name it, such as `catalog/com.example.game.plist`.
    public var file: String
    /// The line and column of the definition's start tag.
    public var position: SourcePosition

    /// A location in `file` at `position`.
    public init(file: String, position: SourcePosition) {
        self.file = file
        self.position = position
    }

    public var description: String { "\(file):\(position)" }
}

/// A subscription's place in its group.
public struct Subscription: Sendable, Hashable {
    /// The subscription group it belongs to.
    public var group: String
    /// An ISO 8601 duration such as `P1M`.
    public var period: String
    /// Apple's level of service within the group; 1 is the highest.
    public var rank: Int64?
}

/// What an Android app buys on Google Play for a product (docs/catalog-format.md, "Google Play"):
/// a Play product, and for a subscription the base plan it is sold with.
public struct PlayProduct: Sendable, Hashable, Codable {
    /// The Play product id: lower case letters, digits, `_` and `.`.
    public var productId: String
    /// The base plan, for a subscription (auto-renewing or prepaid); nil for a one-time product.
    public var basePlan: String?
    /// The offer an Android app presents with the base plan; nil for the base plan alone.
    public var offer: String?
    /// A one-time product's purchase option (Play Billing Library 8); nil for its default one.
    public var purchaseOption: String?

    /// A Play product.
    public init(productId: String, basePlan: String? = nil, offer: String? = nil, purchaseOption: String? = nil) {
        self.productId = productId
        self.basePlan = basePlan
        self.offer = offer
        self.purchaseOption = purchaseOption
    }
}

/// A product's ``PlayProduct``, boxed.
final class PlayStorage: Sendable {
    let value: PlayProduct
    init(_ value: PlayProduct) { self.value = value }
}

/// A validated product definition.
public struct Product: Sendable {
    /// The product's identifier in the catalog, and its App Store product identifier where the App
    /// Store sells it.
    public var id: String
    /// The kind of in-app purchase; nil when the source does not say.
    public var type: ProductType?
    /// The internal name, as in App Store Connect; at most 64 characters.
    public var referenceName: String?
    /// Where the product stands; `cleared` unless the source says otherwise.
    public var status: ProductStatus
    /// The platforms it is sold on; nil means every platform of the app.
    public var platforms: [Platform]?
    /// The oldest app version offered the product; nil for every version.
    public var minimumAppVersion: AppVersion?
    /// The start of sale, inclusive; nil for always.
    public var availableFrom: Timestamp?
    /// The end of sale, exclusive: off sale from this moment; nil for never.
    public var availableUntil: Timestamp?
    /// Its place in a subscription group; set on an auto-renewable product only.
    public var subscription: Subscription?
    /// Its position in `products.json`: lowest first, then products without one; ties keep source order.
    public var displayOrder: Int64?
    /// The free-form `metadata` dict, already encoded as a JSON object for the rich feed.
    public var metadataJSON: [UInt8]?
    /// Where it is defined, for diagnostics.
    public var location: SourceLocation
    /// Why the feedback loop quarantined it (from `<app>.feedback.plist`); nil when it did not.
    public var quarantineReason: String?
    /// The entitlements a purchase of it unlocks, as written; nil when the source names none.
    public var entitlements: [String]? = nil
    /// A non-renewing subscription's period, an ISO 8601 duration such as `P1M`: the App Store keeps
    /// none for that type, so the ledger takes it from here. Set on a non-renewing product only.
    public var duration: String? = nil
    /// What an Android app buys for it on Google Play; nil: it is not sold there.
    public var play: PlayProduct? {
        get { playStorage?.value }
        set { playStorage = newValue.map(PlayStorage.init) }
    }
    /// ``play``, out of line: most catalogs sell nothing on Google Play, and inline its four strings
    /// were 64 bytes more per product, 6 MB of a 100,000-product build's peak (docs/benchmarks.md).
    var playStorage: PlayStorage? = nil

    /// Whether Android feeds list it: it has a Play product, and no platforms list leaves Android out.
    public var isSoldOnAndroid: Bool { Self.isSoldOnAndroid(hasPlay: playStorage != nil, platforms: platforms) }

    /// What a purchase of it unlocks: its `entitlements`, or its own identifier when it names none.
    public var unlocks: [String] { entitlements ?? [id] }

    /// Whether feedback takes the product off sale: only a cleared product is on sale to begin
    /// with, and a retired or removed one keeps its own status in the known list.
    public var isQuarantined: Bool { Self.isQuarantined(status: status, quarantineReason: quarantineReason) }

    // Each rule once, from the fields it reads: the properties above and the accessors by index
    // below (`Array<Product>.isQuarantined(at:)`) both call these.
    fileprivate static func isSoldOnAndroid(hasPlay: Bool, platforms: [Platform]?) -> Bool {
        hasPlay && (platforms?.contains(.android) ?? true)
    }

    fileprivate static func isQuarantined(status: ProductStatus, quarantineReason: String?) -> Bool {
        status == .cleared && quarantineReason != nil
    }

    /// Whether the product is on sale at `moment`, ignoring platform and version.
    public func isOnSale(at moment: Timestamp) -> Bool {
        status == .cleared && !isQuarantined
            && (availableFrom.map { $0 <= moment } ?? true)
            && (availableUntil.map { moment < $0 } ?? true)
    }
}

/// One app's validated catalog, merged from all of its source files.
public struct AppCatalog: Sendable {
    /// The bundle identifier, which is also the file or folder name.
    public var app: String
    /// The platforms the app declares; empty when neither it nor its products name any.
    public var platforms: [Platform]
    /// The thresholds of `catalog feedback`: the defaults, or what a source sets in `feedbackPolicy`.
    public var feedbackPolicy: FeedbackPolicy
    /// The app's feedback file as read; its quarantines are applied to `products`.
    public var feedback = FeedbackFile()
    /// Products in source order: files by name, then position in the file.
    public var products: [Product]
    /// The source files, in the order they were merged.
    public var files: [String]
    /// What the purchases endpoints bind the App Store's evidence to (docs/catalog-format.md).
    public var purchaseSettings = PurchaseSettings()
    /// The content items, by id: what `catalog build` puts into the blob store and the revision's
    /// content manifest (docs/content.md). Empty: the app delivers no content.
    public var content: [CatalogContentItem] = []
    /// The published identifier history that validation read for the history rules, for the plan
    /// to take instead of reading it again; nil before the first publication.
    var publishedHistory: PublishedHistory?
}

/// An app's identifier history as read from one revision's records, handed over once: the plan
/// that takes it records the new revision in it, the only owner of its table, instead of reading
/// it again (a big catalog's history is tens of milliseconds to read, on the build's one busy
/// core), or changing a copy of a table still held here.
final class PublishedHistory: Sendable {
    /// The revision whose records it was read from.
    let revision: Int
    private let history: Mutex<IdentifierHistory?>

    init(revision: Int, history: consuming IdentifierHistory) {
        self.revision = revision
        self.history = Mutex(history)
    }

    /// The history, if it was read from `revision` and nothing took it before.
    func take(readFrom revision: Int) -> IdentifierHistory? {
        guard revision == self.revision else { return nil }
        return history.withLock { $0.take() }
    }
}

/// The rules of ``Product/isQuarantined`` and ``Product/isSoldOnAndroid`` for the product at an
/// index, read from its fields in place, for loops over a big catalog: a product read by index to
/// call a computed property is copied whole first, a retain for every field, and those copies were
/// a few per cent of a 100,000-product build (docs/benchmarks.md, "The build on both cores").
extension Array where Element == Product {
    func isQuarantined(at index: Int) -> Bool {
        Product.isQuarantined(status: self[index].status, quarantineReason: self[index].quarantineReason)
    }

    func isSoldOnAndroid(at index: Int) -> Bool {
        Product.isSoldOnAndroid(hasPlay: self[index].playStorage != nil, platforms: self[index].platforms)
    }
}
