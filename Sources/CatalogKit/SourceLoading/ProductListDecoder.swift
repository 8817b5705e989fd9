import PropertyList

/// Reads the product lists apps already ship as property lists (docs/editing.md, "Product lists
/// apps already ship") into catalog product dicts, and says which shape it recognised.
///
/// The shapes, from public apps and SDKs:
/// - Apple's `product_ids.plist`: an array of identifier strings.
/// - Apple's StoreKit sample `Products.plist`: a dict of identifier to display string (emoji), or
///   in its current form of display name to identifier.
/// - StoreHelper's `Products.plist`: `Products` (identifiers) and `Subscriptions` (groups, each a
///   `Group` and its `Products`).
/// - A dict of group name to identifiers.
/// - An array of product dicts with an identifier key (`ProductId`, `productIdentifier`, `id`, …)
///   and a type (`Type` as App Store Connect spells it, or a `consumable` flag).
/// - A dict of identifier to product dict (`Title`, `ProductType` 0, 1, 2).
///
/// Subscriptions come without a period, which the catalog requires of one: they are imported
/// without a type, their group kept in `metadata.subscriptionGroup`, with a warning that says so.
struct ProductListDecoder {
    enum Shape: String, Sendable {
        case identifierArray = "an array of product identifiers (Apple's product_ids.plist)"
        case identifierToLabel = "a dictionary of product identifier to display string (Apple's StoreKit sample, 2021)"
        case labelToIdentifier = "a dictionary of display name to product identifier (Apple's StoreKit sample, current)"
        case productsAndSubscriptions = "'Products' and 'Subscriptions' groups (StoreHelper)"
        case groups = "a dictionary of group name to product identifiers"
        case productDictionaries = "an array of product dictionaries with an identifier key"
        case keyedProductDictionaries = "a dictionary of product identifier to product dictionary"
    }

    /// The metadata keys an import writes: `--overwrite` replaces exactly these.
    static let metadataKeys = ["label", "subscriptionGroup", "group"]

    /// Keys that name the identifier in a product dictionary, as apps spell them.
    static let identifierKeys = [
        "id", "productId", "ProductId", "productID", "ProductID", "productIdentifier", "ProductIdentifier", "identifier", "Identifier",
    ]
    static let nameKeys = ["referenceName", "Name", "name", "Title", "title", "displayName", "DisplayName"]

    let file: String
    private(set) var diagnostics: [Diagnostic] = []
    private(set) var shape: Shape?
    private var firstPosition: [String: SourcePosition] = [:]

    init(file: String) {
        self.file = file
    }

    mutating func decode(_ root: PropertyListNode) -> [ImportedProduct] {
        switch root.value {
        case .array(let items) where items.allSatisfy({ if case .string = $0.value { true } else { false } }):
            shape = .identifierArray
            return items.compactMap { item in string(item).flatMap { product($0, at: item.position) } }
        case .array(let items) where items.allSatisfy({ if case .dictionary = $0.value { true } else { false } }):
            shape = .productDictionaries
            return items.compactMap { item -> ImportedProduct? in
                guard case .dictionary(let fields) = item.value else { return nil }
                return productDictionary(fields, id: nil, at: item.position)
            }
        case .dictionary(let dictionary):
            return decode(dictionary, at: root.position)
        default:
            unrecognised(at: root.position, "its root is \(root.value.kindName)")
            return []
        }
    }

    private mutating func decode(_ dictionary: PropertyListDictionary, at position: SourcePosition) -> [ImportedProduct] {
        let entries = dictionary.entries
        if entries.isEmpty {
            unrecognised(at: position, "it is an empty dictionary")
            return []
        }
        if let products = dictionary["Products"], case .array = products.value {
            shape = .productsAndSubscriptions
            var imported = identifiers(products).compactMap { product($0.id, at: $0.position) }
            if let subscriptions = dictionary["Subscriptions"] {
                guard case .array(let groups) = subscriptions.value else {
                    error("'Subscriptions' must be an array of groups, found \(subscriptions.value.kindName)", at: subscriptions.position)
                    return imported
                }
                for group in groups {
                    guard case .dictionary(let fields) = group.value, case .string(let name)? = fields["Group"]?.value,
                        let members = fields["Products"]
                    else {
                        error("each subscription group needs a 'Group' name and its 'Products'", at: group.position)
                        continue
                    }
                    imported += identifiers(members).compactMap { subscription($0.id, group: name, at: $0.position) }
                }
            }
            return imported
        }
        let values = entries.map(\.value.value)
        if values.allSatisfy({ if case .array = $0 { true } else { false } }) {
            shape = .groups
            return entries.flatMap { entry in
                identifiers(entry.value).compactMap { product($0.id, at: $0.position, metadata: [("group", .string(entry.key))]) }
            }
        }
        if values.allSatisfy({ if case .dictionary = $0 { true } else { false } }) {
            shape = .keyedProductDictionaries
            return entries.compactMap { entry -> ImportedProduct? in
                guard case .dictionary(let fields) = entry.value.value else { return nil }
                return productDictionary(fields, id: (entry.key, entry.keyPosition), at: entry.value.position)
            }
        }
        if values.allSatisfy({ if case .string = $0 { true } else { false } }) {
            let keysAreIdentifiers = entries.allSatisfy { Self.looksLikeIdentifier($0.key) }
            let valuesAreIdentifiers = entries.allSatisfy { Self.looksLikeIdentifier(string($0.value) ?? "") }
            switch (keysAreIdentifiers, valuesAreIdentifiers) {
            case (true, false):
                shape = .identifierToLabel
                return entries.compactMap { entry in
                    product(entry.key, at: entry.keyPosition, metadata: string(entry.value).map { [("label", .string($0))] } ?? [])
                }
            case (false, true):
                shape = .labelToIdentifier
                return entries.compactMap { entry in
                    string(entry.value).flatMap { product($0, at: entry.value.position, name: entry.key) }
                }
            case (true, true):
                unrecognised(
                    at: position, "both its keys and its values look like product identifiers, so which are the products is unclear")
                return []
            case (false, false):
                unrecognised(at: position, "neither its keys nor its values all look like product identifiers (such as com.example.gold)")
                return []
            }
        }
        unrecognised(at: position, "its values mix kinds")
        return []
    }

    /// A product dict as apps keep one: an identifier key, a name, and a type.
    private mutating func productDictionary(
        _ fields: PropertyListDictionary, id given: (String, SourcePosition)?, at position: SourcePosition
    ) -> ImportedProduct? {
        let key = Self.identifierKeys.first { fields[$0] != nil }
        guard
            let (id, idPosition) = given ?? key.flatMap({ key in fields[key].flatMap { node in string(node).map { ($0, node.position) } } })
        else {
            error("a product dictionary has no identifier (one of \(Self.identifierKeys.joined(separator: ", ")))", at: position)
            return nil
        }
        let name = Self.nameKeys.lazy.compactMap { fields[$0].flatMap { if case .string(let text) = $0.value { text } else { nil } } }.first
        var type: ProductType?
        var isSubscription = false
        if let node = fields["Type"] ?? fields["type"] {
            switch node.value {
            case .string(let text):
                switch Self.kind(text) {
                case .product(let known): type = known
                case .subscription: isSubscription = true
                case nil:
                    warning("product type '\(text)' is not one the catalog knows; '\(id)' is imported without a type", at: node.position)
                }
            default: warning("'Type' must be a string; '\(id)' is imported without a type", at: node.position)
            }
        } else if let node = fields["consumable"] ?? fields["Consumable"], case .boolean(let flag) = node.value {
            type = flag ? .consumable : .nonConsumable
        } else if let node = fields["ProductType"], case .integer(let number) = node.value {
            // simstorekit's enum: 0 non-consumable, 1 consumable, 2 subscription.
            switch number {
            case 0: type = .nonConsumable
            case 1: type = .consumable
            case 2: isSubscription = true
            default: warning("ProductType \(number) is not 0, 1 or 2; '\(id)' is imported without a type", at: node.position)
            }
        }
        if isSubscription { return subscription(id, group: nil, at: idPosition, name: name) }
        return product(id, at: idPosition, name: name, type: type)
    }

    /// What a type says: a product type, or an auto-renewable subscription (which needs a period
    /// the file does not give).
    enum Kind: Equatable {
        case product(ProductType)
        case subscription
    }

    /// App Store Connect's, StoreKit's and the catalog's spellings of the four types.
    static func kind(_ text: String) -> Kind? {
        switch text.lowercased().filter(\.isLetter) {
        case "consumable": .product(.consumable)
        case "nonconsumable": .product(.nonConsumable)
        case "nonrenewing", "nonrenewingsubscription": .product(.nonRenewing)
        case "autorenewable", "autorenewablesubscription", "autorenewingsubscription", "recurringsubscription", "subscription":
            .subscription
        default: nil
        }
    }

    /// `com.example.gold`: the identifier characters, and at least one dot, as reverse-DNS ids have.
    static func looksLikeIdentifier(_ text: String) -> Bool {
        text.contains(".") && IdentifierRules.problem(text) == nil
    }

    // MARK: - Products

    private mutating func subscription(_ id: String, group: String?, at position: SourcePosition, name: String? = nil) -> ImportedProduct? {
        warning(
            "'\(id)' is a subscription, but the file gives no period, which the catalog needs: imported without a type; give it type auto-renewable and a subscription dict with its group and period",
            at: position)
        return product(id, at: position, name: name, metadata: group.map { [("subscriptionGroup", .string($0))] } ?? [])
    }

    private mutating func product(
        _ id: String, at position: SourcePosition, name: String? = nil, type: ProductType? = nil,
        metadata: [(String, PropertyListValue)] = []
    ) -> ImportedProduct? {
        if let first = firstPosition[id] {
            error("duplicate product id '\(id)' (first at \(first))", at: position)
            return nil
        }
        firstPosition[id] = position
        var fields = PropertyListDictionary()
        fields.set("id", .string(id))
        fields.set("type", type.map { .string($0.rawValue) })
        // A display name longer than the catalog allows stays in the metadata only.
        if let name, !name.isEmpty, name.utf8.count <= CatalogRules.maximumReferenceNameLength {
            fields.set("referenceName", .string(name))
        }
        var values = PropertyListDictionary()
        for (key, value) in metadata { values.set(key, value) }
        if !values.entries.isEmpty { fields.set("metadata", .dictionary(values)) }
        return ImportedProduct(id: id, position: position, fields: fields)
    }

    private mutating func identifiers(_ node: PropertyListNode) -> [(id: String, position: SourcePosition)] {
        guard case .array(let items) = node.value else {
            error("expected an array of product identifiers, found \(node.value.kindName)", at: node.position)
            return []
        }
        return items.compactMap { item in string(item).map { ($0, item.position) } }
    }

    private mutating func string(_ node: PropertyListNode) -> String? {
        guard case .string(let text) = node.value else {
            error("expected a product identifier <string>, found \(node.value.kindName)", at: node.position)
            return nil
        }
        return text
    }

    // MARK: - Diagnostics

    private mutating func unrecognised(at position: SourcePosition, _ why: String) {
        error(
            "not a product list this tool recognises: \(why); it reads an array of identifiers, Apple's StoreKit sample dictionary, StoreHelper's Products and Subscriptions, a dictionary of groups, or product dictionaries with an identifier key",
            at: position)
    }

    private mutating func error(_ message: String, at position: SourcePosition) {
        diagnostics.append(.error(message, file: file, at: position))
    }

    private mutating func warning(_ message: String, at position: SourcePosition) {
        diagnostics.append(.warning(message, file: file, at: position))
    }
}
