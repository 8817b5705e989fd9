import PropertyList

/// What the `.storekit` mapping shares between reading and writing (docs/storekit.md).
enum StoreKitMapping {
    static let supportedMajorVersions: ClosedRange<Int64> = 1...5

    /// Xcode's product types and the catalog's.
    static let types: [String: ProductType] = [
        "Consumable": .consumable, "NonConsumable": .nonConsumable, "NonRenewingSubscription": .nonRenewing,
        "RecurringSubscription": .autoRenewable,
    ]

    static func storeKitType(_ type: ProductType) -> String {
        switch type {
        case .consumable: "Consumable"
        case .nonConsumable: "NonConsumable"
        case .nonRenewing: "NonRenewingSubscription"
        case .autoRenewable: "RecurringSubscription"
        }
    }

    /// Subscription offers, kept in `metadata` under these same names. Format 5 added the plural
    /// `introductoryOffers` (one per billing plan) beside the singular one, which it keeps as a
    /// copy of the up-front plan's.
    static let offerKeys = ["introductoryOffer", "introductoryOffers", "adHocOffers", "codeOffers", "winbackOffers"]

    /// What a subscription is billed as (format 5): up front, or monthly over a 12-month commitment.
    static let billingPlansKey = "billingPlans"

    /// The `metadata` keys of a subscription that only format 5 can hold: an export that has any
    /// of them writes format 5, otherwise format 4, which current Xcode versions open.
    static let format5Keys = [billingPlansKey, "introductoryOffers"]

    /// The `metadata` keys that come from a `.storekit` file: an import with `--overwrite`
    /// replaces (or removes) exactly these and leaves the editor's other metadata alone.
    static let metadataKeys = ["displayPrice", "familyShareable", "localizations", "groupLocalizations", billingPlansKey] + offerKeys
}

/// One product of an imported file (`.storekit` or a product list), mapped onto a catalog product dict.
struct ImportedProduct: Sendable {
    var id: String
    /// Where it starts in the imported file.
    var position: SourcePosition
    /// `id`, `type`, `referenceName`, `subscription` and `metadata`, as a source plist holds them.
    var fields: PropertyListDictionary
}

/// Reads an Xcode StoreKit configuration file (versions 1 to 5) into catalog product dicts.
///
/// Wrong kinds, unknown types and versions, and duplicate product ids are errors at their place
/// in the file; keys with no place in the catalog (settings, `appPolicies`, Xcode's internal
/// ids) are dropped, and keys this version does not know are warnings.
struct StoreKitDecoder {
    let file: String
    private let lines: LineIndex
    private let bytes: [UInt8]
    private(set) var diagnostics: [Diagnostic] = []
    private var firstPosition: [String: SourcePosition] = [:]

    init(file: String, bytes: [UInt8]) {
        self.file = file
        self.bytes = bytes
        lines = LineIndex(bytes)
    }

    mutating func decode() -> [ImportedProduct] {
        let root: JSONNode
        do {
            root = try JSONTree.parse(bytes)
        } catch {
            diagnostics.append(
                .error("not a .storekit file: the JSON is malformed: \(error.message)", file: file, at: position(error.offset)))
            return []
        }
        guard case .object(let members) = root.value else {
            self.error("not a .storekit file: the root must be an object, found \(root.value.kindName)", at: root)
            return []
        }
        guard checkVersion(root) else { return [] }
        var products: [ImportedProduct] = []
        for (key, node) in members {
            switch key {
            case "version", "identifier":
                break  // checked above; the file's own id means nothing to the catalog
            case "settings":
                // Test settings and account-specific ids (`_developerTeamID`, …) stay in Xcode.
                if case .object = node.value {} else { error("'settings' must be an object, found \(node.value.kindName)", at: node) }
            case "appPolicies":
                warning("'appPolicies' has no place in the catalog and is ignored", at: node)
            case "products", "nonRenewingSubscriptions":
                for item in array(node, key: key) {
                    if let product = product(item, group: nil) { products.append(product) }
                }
            case "subscriptionGroups":
                for group in array(node, key: key) { products += self.group(group) }
            default:
                warning("unknown key '\(key)' is ignored", at: node)
            }
        }
        return products
    }

    private mutating func checkVersion(_ root: JSONNode) -> Bool {
        guard let version = root.value["version"] else {
            error("not a .storekit file: it has no 'version'", at: root)
            return false
        }
        guard case .integer(let major) = version.value["major"]?.value else {
            error("'version' must be an object with an integer 'major'", at: version)
            return false
        }
        var minor: Int64 = 0
        if case .integer(let number) = version.value["minor"]?.value { minor = number }
        guard StoreKitMapping.supportedMajorVersions.contains(major) else {
            error("unsupported .storekit version \(major).\(minor); this tool reads versions 1 to 5", at: version)
            return false
        }
        return true
    }

    private mutating func group(_ node: JSONNode) -> [ImportedProduct] {
        guard case .object(let members) = node.value else {
            error("a subscription group must be an object, found \(node.value.kindName)", at: node)
            return []
        }
        var name: String?
        var localizations: PropertyListValue?
        var subscriptions: [JSONNode] = []
        for (key, value) in members {
            switch key {
            case "name": name = string(value, key: key)
            case "id": _ = string(value, key: key)  // Xcode's or App Store Connect's id: account-specific
            case "localizations": localizations = objects(value, key: key)
            case "subscriptions": subscriptions = array(value, key: key)
            default: warning("unknown subscription group key '\(key)' is ignored", at: value)
            }
        }
        return subscriptions.compactMap { product($0, group: (name, localizations)) }
    }

    private mutating func product(_ node: JSONNode, group: (name: String?, localizations: PropertyListValue?)?) -> ImportedProduct? {
        guard case .object(let members) = node.value else {
            error("a product must be an object, found \(node.value.kindName)", at: node)
            return nil
        }
        var fields = PropertyListDictionary()
        var metadata = PropertyListDictionary()
        var subscription = PropertyListDictionary()
        var id: String?
        var type: ProductType?
        for (key, value) in members where !isNull(value) {
            switch key {
            case "productID": id = string(value, key: key)
            case "type":
                guard let text = string(value, key: key) else { break }
                type = StoreKitMapping.types[text]
                if type == nil {
                    error(
                        "unknown product type '\(text)'; expected Consumable, NonConsumable, NonRenewingSubscription or RecurringSubscription",
                        at: value)
                }
            case "referenceName":
                // Xcode leaves it empty until one is typed; the catalog has no empty names.
                if let name = string(value, key: key), !name.isEmpty { fields.set("referenceName", .string(name)) }
            case "displayPrice": metadata.set(key, string(value, key: key).map { .string($0) })
            case "familyShareable":
                guard case .boolean(let flag) = value.value else {
                    error("'familyShareable' must be a boolean, found \(value.value.kindName)", at: value)
                    break
                }
                metadata.set(key, .boolean(flag))
            case "localizations": metadata.set(key, objects(value, key: key))
            case "groupNumber":
                guard case .integer(let rank) = value.value else {
                    error("'groupNumber' must be an integer, found \(value.value.kindName)", at: value)
                    break
                }
                subscription.set("rank", .integer(rank))
            case "recurringSubscriptionPeriod": subscription.set("period", string(value, key: key).map { .string($0) })
            case "introductoryOffer":
                guard case .object = value.value else {
                    error("'introductoryOffer' must be an object or null, found \(value.value.kindName)", at: value)
                    break
                }
                metadata.set(key, plistValue(value))
            case "adHocOffers", "codeOffers", "winbackOffers", "introductoryOffers", StoreKitMapping.billingPlansKey:
                metadata.set(key, objects(value, key: key))
            case "internalID", "subscriptionGroupID":
                break  // Xcode's or App Store Connect's ids: account-specific, made anew on export
            default:
                warning("unknown product key '\(key)' is ignored", at: value)
            }
        }
        guard let id else {
            if members.first(where: { $0.key == "productID" }) == nil { error("product has no 'productID'", at: node) }
            return nil
        }
        if let first = firstPosition[id] {
            error("duplicate product id '\(id)' (first at \(first))", at: node)
            return nil
        }
        firstPosition[id] = position(node.offset)
        guard members.contains(where: { $0.key == "type" }) else {
            error("product '\(id)' has no 'type'", at: node)
            return nil
        }
        if let group {
            if let type, type != .autoRenewable {
                error("product '\(id)' is in a subscription group but its type is not RecurringSubscription", at: node)
            }
            subscription.set("group", group.name.map { .string($0) })
            if let localizations = group.localizations { metadata.set("groupLocalizations", localizations) }
        } else if type == .autoRenewable {
            error("RecurringSubscription '\(id)' must be in subscriptionGroups[].subscriptions, which gives its group", at: node)
        }
        fields.set("id", .string(id))
        fields.set("type", type.map { .string($0.rawValue) })
        if group != nil { fields.set("subscription", .dictionary(subscription)) }
        // One order whatever the file's, so that importing the same products writes the same bytes.
        metadata.entries.sort {
            StoreKitMapping.metadataKeys.firstIndex(of: $0.key)! < StoreKitMapping.metadataKeys.firstIndex(of: $1.key)!
        }
        if !metadata.entries.isEmpty { fields.set("metadata", .dictionary(metadata)) }
        return ImportedProduct(id: id, position: position(node.offset), fields: fields)
    }

    // MARK: - Values

    private mutating func string(_ node: JSONNode, key: String) -> String? {
        guard case .string(let text) = node.value else {
            error("'\(key)' must be a string, found \(node.value.kindName)", at: node)
            return nil
        }
        return text
    }

    private mutating func array(_ node: JSONNode, key: String) -> [JSONNode] {
        guard case .array(let items) = node.value else {
            error("'\(key)' must be an array, found \(node.value.kindName)", at: node)
            return []
        }
        return items
    }

    /// An array of objects, as a plist array; nil when empty (Xcode writes empty lists that
    /// the catalog need not hold).
    private mutating func objects(_ node: JSONNode, key: String) -> PropertyListValue? {
        let items = array(node, key: key)
        for item in items {
            guard case .object = item.value else {
                error("each entry of '\(key)' must be an object, found \(item.value.kindName)", at: item)
                return nil
            }
        }
        return items.isEmpty ? nil : plistValue(node)
    }

    private func isNull(_ node: JSONNode) -> Bool {
        if case .null = node.value { return true }
        return false
    }

    /// JSON as plist; nulls are left out (a plist has none) and so are Xcode's `internalID`s.
    private func plistValue(_ node: JSONNode) -> PropertyListValue {
        switch node.value {
        case .string(let text): return .string(text)
        case .integer(let number): return .integer(number)
        case .real(let number): return .real(number)
        case .boolean(let flag): return .boolean(flag)
        case .null: return .string("")  // never reached: callers drop nulls first
        case .array(let items):
            return .array(items.filter { !isNull($0) }.map { PropertyListNode(plistValue($0), at: .startOfFile) })
        case .object(let members):
            var dictionary = PropertyListDictionary()
            for (key, value) in members where !isNull(value) && key != "internalID" { dictionary.set(key, plistValue(value)) }
            return .dictionary(dictionary)
        }
    }

    // MARK: - Diagnostics

    private func position(_ offset: Int) -> SourcePosition { lines.position(offset) }

    private mutating func error(_ message: String, at node: JSONNode) {
        diagnostics.append(.error(message, file: file, at: position(node.offset)))
    }

    private mutating func warning(_ message: String, at node: JSONNode) {
        diagnostics.append(.warning(message, file: file, at: position(node.offset)))
    }
}
