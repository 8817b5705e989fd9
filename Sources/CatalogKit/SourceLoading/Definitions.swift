import PropertyList
import Time

/// A value as written in a source, with where it was written.
public struct Located<Value: Sendable>: Sendable {
    /// The value, decoded.
    public var value: Value
    /// Where it was written: its element, or for an XML attribute the element that carries it.
    public var position: SourcePosition

    /// A value written at `position`.
    public init(_ value: Value, at position: SourcePosition) {
        self.value = value
        self.position = position
    }
}

/// A product as a source file spells it, before the rules run: both formats decode to this,
/// so that each rule exists once, whatever the format.
public struct ProductDefinition: Sendable {
    /// The file as diagnostics name it.
    public var file: String
    /// The position of the product's start tag.
    public var position: SourcePosition
    /// The product identifier; nil when the source has none.
    public var id: Located<String>?
    /// The type as written, such as `non-consumable`; checked by the rules.
    public var type: Located<String>?
    /// The internal name as written.
    public var referenceName: Located<String>?
    /// The status as written, such as `cleared`; checked by the rules.
    public var status: Located<String>?
    /// The `platforms` list, each name as written.
    public var platforms: Located<[Located<String>]>?
    /// The minimum app version as written, such as `2.0`; checked by the rules.
    public var minimumAppVersion: Located<String>?
    /// The start of sale.
    public var availableFrom: Located<Timestamp>?
    /// The end of sale.
    public var availableUntil: Located<Timestamp>?
    /// The `subscription` dict or element.
    public var subscription: SubscriptionDefinition?
    /// The position in `products.json`.
    public var displayOrder: Located<Int64>?
    /// The free-form `metadata`, already encoded as a JSON object for the rich feed.
    public var metadataJSON: [UInt8]?
    /// The `entitlements` list, each name as written.
    public var entitlements: Located<[Located<String>]>?
    /// A non-renewing subscription's `duration` as written, such as `P1M`.
    public var duration: Located<String>?
    /// The `play` dict or element: the product on Google Play.
    public var play: PlayDefinition?
    /// Keys present in the source with a value the decoder already reported as malformed:
    /// rules must not report them again as missing.
    public var malformedKeys: Set<String> = []

    /// A definition of a product that starts at `position` in `file`, with no field yet.
    public init(file: String, position: SourcePosition) {
        self.file = file
        self.position = position
    }
}

/// A subscription as a source spells it, before the rules run.
public struct SubscriptionDefinition: Sendable {
    /// The position of its dict or element.
    public var position: SourcePosition
    /// The subscription group.
    public var group: Located<String>?
    /// The ISO 8601 duration as written, such as `P1M`.
    public var period: Located<String>?
    /// The level of service within the group as written; 1 is the highest.
    public var rank: Located<Int64>?
}

/// A product's Google Play counterpart as a source spells it, before the rules run.
public struct PlayDefinition: Sendable {
    /// The position of its dict or element.
    public var position: SourcePosition
    /// `productId`.
    public var productId: Located<String>?
    /// `basePlan`.
    public var basePlan: Located<String>?
    /// `offer`.
    public var offer: Located<String>?
    /// `purchaseOption`.
    public var purchaseOption: Located<String>?

    /// A definition at `position` with no field yet.
    public init(position: SourcePosition) {
        self.position = position
    }
}

/// App settings as one source file spells them.
public struct AppSettingsDefinition: Sendable {
    /// The file as diagnostics name it.
    public var file: String
    /// The `app` setting; when present it must equal the file or folder name.
    public var app: Located<String>?
    /// The app's `platforms` list, each name as written.
    public var platforms: Located<[Located<String>]>?
    /// The `feedbackPolicy` dict or element, at its position.
    public var feedbackPolicy: Located<FeedbackPolicyDefinition>?
    /// The `appAppleId` setting.
    public var appAppleId: Located<Int64>?
    /// The `environments` list, each name as written.
    public var environments: Located<[Located<String>]>?
    /// The `transferPolicy` setting as written.
    public var transferPolicy: Located<String>?
    /// The `xcodeCertificate` setting: a path.
    public var xcodeCertificate: Located<String>?
    /// The `webhookURL` setting as written.
    public var webhookURL: Located<String>?
    /// The `webhookSecretFile` setting: a path.
    public var webhookSecretFile: Located<String>?
    /// The `serverAPIKeyId` setting: the App Store Server API key's id.
    public var serverAPIKeyId: Located<String>?
    /// The `serverAPIIssuerId` setting: the team's issuer id.
    public var serverAPIIssuerId: Located<String>?
    /// The `serverAPIKeyFile` setting: a path.
    public var serverAPIKeyFile: Located<String>?
    /// The `answerConsumptionRequests` setting.
    public var answerConsumptionRequests: Located<Bool>?
    /// The `sampleContentProvided` setting.
    public var sampleContentProvided: Located<Bool>?
    /// The `refundPreference` setting as written.
    public var refundPreference: Located<String>?
    /// The `sandboxUnlocks` setting.
    public var sandboxUnlocks: Located<Bool>?
    /// The `requireDeviceId` setting.
    public var requireDeviceId: Located<Bool>?
    /// The `playPackageName` setting.
    public var playPackageName: Located<String>?
    /// The `playLicenseKey` setting: base64 of the licence key.
    public var playLicenseKey: Located<String>?
    /// The `playPushAudience` setting.
    public var playPushAudience: Located<String>?
    /// The `playPushServiceAccount` setting.
    public var playPushServiceAccount: Located<String>?
    /// The `playServiceAccountKeyFile` setting: a path.
    public var playServiceAccountKeyFile: Located<String>?
}

/// A `feedbackPolicy` as a source spells it, before the rules check its bounds.
public struct FeedbackPolicyDefinition: Sendable {
    /// `suspectAfterInstalls`, `quarantineAfterInstalls`, `installsPerNetwork`, `windowHours` and
    /// `graceHours`, by key.
    public var integers: [String: Located<Int64>] = [:]
    /// `minimumInvalidRate`, `quarantineBudget`, `storeWideShare`: shares between 0 and 1.
    public var reals: [String: Located<Double>] = [:]
}

/// What one source file holds.
public struct SourceDefinition: Sendable {
    /// The app settings the file sets.
    public var settings: AppSettingsDefinition
    /// The file's products, each checked on its own.
    public var products: CheckedProducts
    /// The file's content items, in source order.
    public var content: [ContentItemDefinition] = []
    /// Whether the file is Apple's plain array of identifiers, which cannot give a product a
    /// status: the history rules then name `catalog convert`.
    public var isIdentifierArray = false
}

/// A source file's products after the rules that concern each product alone. Decoders check
/// each product as they decode it (``append(_:into:)``): a big file's products are checked on
/// the decoding thread while the parser reads on, and are never held both as definitions and
/// as products. The rules across products and files run on the app (``CatalogRules``).
public struct CheckedProducts: Sendable, CustomStringConvertible {
    /// The products whose own rules found no error, in source order.
    public private(set) var products: [Product] = []
    /// The identifiers of the products that their own rules rejected, in source order: the
    /// duplicate rule still counts them.
    public private(set) var rejectedIDs: [Located<String>] = []
    /// How many products their own rules rejected, with an identifier or without.
    public private(set) var rejectedCount = 0
    /// Each product's own `platforms` list as checked, with where it was written: whether the
    /// app lists those platforms is known only once every file's settings are read.
    public private(set) var platformLists: [Located<[Platform]>] = []
    /// Every identifier written in the file, valid or not, in source order: for an app of one
    /// file, the duplicate rule is done by the end of decoding.
    private(set) var identifiers = IdentifierRegister()

    /// No products yet.
    public init() {}

    /// Checks `definition` by the rules that concern it alone, into `diagnostics`, and keeps
    /// what the rules across products need.
    public mutating func append(_ definition: ProductDefinition, into diagnostics: inout [Diagnostic]) {
        var checked = Self.check(definition, into: &diagnostics)
        keep(&checked)
    }

    /// A product checked by its own rules and not yet kept: checking needs nothing of the file's
    /// other products, so it can run on another thread than keeping, which takes products in
    /// source order.
    struct Checked: Sendable {
        fileprivate var id: Located<String>?
        fileprivate var file: String
        fileprivate var product: Product?
        fileprivate var platforms: Located<[Platform]>?
    }

    /// `definition` checked by the rules that concern it alone, into `diagnostics`, for ``keep(_:)``.
    static func check(_ definition: ProductDefinition, into diagnostics: inout [Diagnostic]) -> Checked {
        let (product, platforms) = CatalogRules.check(definition, into: &diagnostics)
        let list = platforms.flatMap { platforms in definition.platforms.map { Located(platforms, at: $0.position) } }
        return Checked(id: definition.id, file: definition.file, product: product, platforms: list)
    }

    /// Keeps a product ``check(_:into:)`` checked, after those before it in the source, taking
    /// its product out of `checked` (moved, not copied: a product is a score of fields, each a retain).
    mutating func keep(_ checked: inout Checked) {
        if let id = checked.id {
            identifiers.note(
                id.value, at: SourceLocation(file: checked.file, position: id.position),
                product: checked.product == nil ? nil : products.count)
        }
        if let list = checked.platforms { platformLists.append(list) }
        guard let product = checked.product.take() else {
            rejectedCount += 1
            if let id = checked.id { rejectedIDs.append(id) }
            return
        }
        products.append(product)
    }

    /// The index in ``products`` of the first product defined with `id`, if its own rules kept it.
    func index(of id: String) -> Int? { identifiers.product(named: id) }

    public var description: String {
        "products: \(products), rejected: \(rejectedCount) \(rejectedIDs), platform lists: \(platformLists)"
    }
}

/// A content item as a source spells it, before the rules run (docs/catalog-format.md, "Content"):
/// files sold with a product, or a dated item of a subscription group.
public struct ContentItemDefinition: Sendable {
    /// The file as diagnostics name it.
    public var file: String
    /// The position of the item's dict or element.
    public var position: SourcePosition
    /// The item's id, unique in the app.
    public var id: Located<String>?
    /// The product whose holders may download it.
    public var product: Located<String>?
    /// The subscription group (its catalog name, such as `news.plus`) whose subscribers may download it.
    public var group: Located<String>?
    /// When a group's item was published.
    public var published: Located<Timestamp>?
    /// The folder, inside the app's content folder, that `files` are relative to.
    public var folder: Located<String>?
    /// The item's files, each relative to `folder` (or to the content folder).
    public var files: Located<[Located<String>]>?
    /// Keys present with a value the decoder already reported as malformed.
    public var malformedKeys: Set<String> = []

    /// An item that starts at `position` in `file`, with no field yet.
    public init(file: String, position: SourcePosition) {
        self.file = file
        self.position = position
    }
}
