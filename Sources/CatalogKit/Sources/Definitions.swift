import PropertyList

/// A value as written in a source, with where it was written.
public struct Located<Value: Sendable>: Sendable {
    public var value: Value
    public var position: SourcePosition

    public init(_ value: Value, at position: SourcePosition) {
        self.value = value
        self.position = position
    }
}

/// A product as a source file spells it, before the rules run: both formats decode to this,
/// so that each rule exists once, whatever the format.
public struct ProductDefinition: Sendable {
    public var file: String
    public var position: SourcePosition
    public var id: Located<String>?
    public var type: Located<String>?
    public var referenceName: Located<String>?
    public var status: Located<String>?
    public var platforms: Located<[Located<String>]>?
    public var minimumAppVersion: Located<String>?
    public var availableFrom: Located<Timestamp>?
    public var availableUntil: Located<Timestamp>?
    public var subscription: SubscriptionDefinition?
    public var displayOrder: Located<Int64>?
    public var metadataJSON: [UInt8]?
    /// Keys present in the source with a value the decoder already reported as malformed:
    /// rules must not report them again as missing.
    public var malformedKeys: Set<String> = []

    public init(file: String, position: SourcePosition) {
        self.file = file
        self.position = position
    }
}

public struct SubscriptionDefinition: Sendable {
    public var position: SourcePosition
    public var group: Located<String>?
    public var period: Located<String>?
    public var rank: Located<Int64>?
}

/// App settings as one source file spells them.
public struct AppSettingsDefinition: Sendable {
    public var file: String
    public var app: Located<String>?
    public var platforms: Located<[Located<String>]>?
    public var feedbackPolicy: Located<FeedbackPolicyDefinition>?
}

public struct FeedbackPolicyDefinition: Sendable {
    public var integers: [String: Located<Int64>] = [:]
    /// `minimumInvalidRate`, `quarantineBudget`, `storeWideShare`: shares between 0 and 1.
    public var reals: [String: Located<Double>] = [:]
}

/// What one source file holds.
public struct SourceDefinition: Sendable {
    public var settings: AppSettingsDefinition
    public var products: CheckedProducts
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

    public init() {}

    /// Checks `definition` by the rules that concern it alone, into `diagnostics`, and keeps
    /// what the rules across products need.
    public mutating func append(_ definition: ProductDefinition, into diagnostics: inout [Diagnostic]) {
        let (product, platforms) = CatalogRules.check(definition, into: &diagnostics)
        if let id = definition.id { identifiers.note(id.value, at: SourceLocation(file: definition.file, position: id.position)) }
        if let platforms, let list = definition.platforms { platformLists.append(Located(platforms, at: list.position)) }
        guard let product else {
            rejectedCount += 1
            if let id = definition.id { rejectedIDs.append(id) }
            return
        }
        products.append(product)
    }

    public var description: String {
        "products: \(products), rejected: \(rejectedCount) \(rejectedIDs), platform lists: \(platformLists)"
    }
}
