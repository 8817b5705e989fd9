import PropertyList

/// Writes an app's catalog as an Xcode StoreKit configuration file for local testing: format 4,
/// which current Xcode versions open, unless a subscription has billing plans or per-plan
/// introductory offers, which only format 5 (Xcode 26) holds.
///
/// The bytes depend on the catalog alone, never on the clock or on hashing order: keys are
/// sorted, and the ids Xcode wants (`identifier`, `internalID`, group `id`) are derived from the
/// app, product and group names. That keeps exports byte-stable and diffable, and keeps
/// account-specific values (team and app ids, App Store Connect ids) out of a file that is
/// committed and shared.
enum StoreKitEncoder {
    /// Products the app sells or could sell again: `retired` ones are off sale for good, and
    /// Xcode offering them would only test purchases that can never happen. Quarantine and
    /// sale windows are left out of the choice: they change with time, and the file should not.
    static func isExported(_ product: Product) -> Bool {
        // A product sold only on Android is not the App Store's: StoreKit testing never sees it.
        product.status != .retired && product.platforms?.allSatisfy({ $0 == .android }) != true
    }

    static func encode(_ catalog: AppCatalog) -> (bytes: [UInt8], format: Int, diagnostics: [Diagnostic]) {
        var diagnostics: [Diagnostic] = []
        let exported = catalog.products.filter(isExported)
        let metadata = exported.map { $0.metadataJSON.flatMap { try? JSONTree.parse($0).value } ?? .object([]) }
        let format = metadata.contains { object in StoreKitMapping.format5Keys.contains { object[$0] != nil } } ? 5 : 4
        var ids = InternalIDs()
        var products: [JSONNode] = []
        var nonRenewing: [JSONNode] = []
        var groups: [(name: String, localizations: JSONValue?, subscriptions: [JSONNode])] = []
        for (product, metadata) in zip(exported, metadata) {
            guard let type = product.type else {
                diagnostics.append(
                    .warning(
                        "product '\(product.id)' has no type, which Xcode needs; it is left out of the .storekit file",
                        file: product.location.file, at: product.location.position))
                continue
            }
            var object: [(key: String, value: JSONValue)] = [
                ("displayPrice", displayPrice(metadata["displayPrice"]?.value)),
                ("familyShareable", familyShareable(metadata["familyShareable"]?.value)),
                ("internalID", .string(ids.make("product|\(product.id)"))),
                ("localizations", metadata["localizations"]?.value ?? .array([])),
                ("productID", .string(product.id)),
                // Xcode needs a name; the catalog allows none. The id, cut to the catalog's limit,
                // so that importing the file back passes the rules.
                ("referenceName", .string(product.referenceName ?? String(product.id.prefix(CatalogRules.maximumReferenceNameLength)))),
                ("type", .string(StoreKitMapping.storeKitType(type))),
            ]
            guard type == .autoRenewable, let subscription = product.subscription else {
                if type == .nonRenewing { nonRenewing.append(node(object)) } else { products.append(node(object)) }
                continue
            }
            let groupID = ids.group(subscription.group)
            for key in StoreKitMapping.offerKeys where format == 5 || key != "introductoryOffers" {
                let offers = offers(metadata[key]?.value, key: key, product: product.id, ids: &ids)
                // Format 4 writes a missing introductory offer as null; format 5 leaves the key out.
                if key == "introductoryOffer" && offers == nil && format == 5 { continue }
                object.append((key, offers ?? (key == "introductoryOffer" ? .null : .array([]))))
            }
            if format == 5 {
                // Xcode writes at least the up-front plan, at the subscription's price.
                let price = displayPrice(metadata["displayPrice"]?.value)
                let upFront: JSONValue = .array([
                    node([
                        ("billingPlanType", .string("BILLED_UPFRONT")), ("commitmentDisplayPrice", price), ("displayPrice", price),
                        ("isEnabled", .boolean(true)),
                    ])
                ])
                let plans = metadata[StoreKitMapping.billingPlansKey]?.value ?? upFront
                object.append(
                    (
                        StoreKitMapping.billingPlansKey,
                        offers(plans, key: StoreKitMapping.billingPlansKey, product: product.id, ids: &ids) ?? .array([])
                    ))
            }
            object += [
                // Rank 1 when the catalog gives none: Xcode needs a level, and 1 is the top one.
                ("groupNumber", .integer(subscription.rank ?? 1)),
                ("recurringSubscriptionPeriod", .string(subscription.period)),
                ("subscriptionGroupID", .string(groupID)),
            ]
            let entry = node(object)
            if let index = groups.firstIndex(where: { $0.name == subscription.group }) {
                groups[index].subscriptions.append(entry)
                if groups[index].localizations == nil { groups[index].localizations = metadata["groupLocalizations"]?.value }
            } else {
                groups.append((subscription.group, metadata["groupLocalizations"]?.value, [entry]))
            }
        }
        let groupNodes = groups.map { group in
            node([
                ("id", .string(ids.group(group.name))),
                ("localizations", group.localizations ?? .array([])),
                ("name", .string(group.name)),
                ("subscriptions", .array(group.subscriptions)),
            ])
        }
        let root = node([
            ("identifier", .string(InternalIDs.hash("app|\(catalog.app)"))),
            ("nonRenewingSubscriptions", .array(nonRenewing)),
            ("products", .array(products)),
            // Test settings are each developer's own, and the `_`-prefixed ones name their account.
            ("settings", .object([])),
            ("subscriptionGroups", .array(groupNodes)),
            ("version", node([("major", .integer(Int64(format))), ("minor", .integer(0))]).value),
        ])
        return (JSONTree.render(root.value), format, diagnostics)
    }

    /// Xcode wants the price as a string; an editor may have typed a number in the metadata.
    private static func displayPrice(_ value: JSONValue?) -> JSONValue {
        switch value {
        case .string(let text)?: .string(text)
        case .integer(let number)?: .string(String(number))
        case .real(let number)?: .string(number.description)
        default: .string("0.00")
        }
    }

    private static func familyShareable(_ value: JSONValue?) -> JSONValue {
        if case .boolean(let flag)? = value { return .boolean(flag) }
        return .boolean(false)
    }

    /// The offers (or billing plans) kept in metadata, each given a stable `internalID`.
    private static func offers(_ value: JSONValue?, key: String, product: String, ids: inout InternalIDs) -> JSONValue? {
        func withID(_ offer: JSONNode, index: Int) -> JSONNode {
            guard case .object(var members) = offer.value else { return offer }
            members.removeAll { $0.key == "internalID" }
            members.append(("internalID", node(.string(ids.make("offer|\(product)|\(key)|\(index)")))))
            return node(.object(members))
        }
        switch value {
        case .object?: return value.map { withID(node($0), index: 0).value }
        case .array(let items)?: return .array(items.enumerated().map { withID($1, index: $0) })
        default: return nil
        }
    }

    private static func node(_ value: JSONValue) -> JSONNode {
        JSONNode(value: value, offset: 0)
    }

    private static func node(_ object: [(key: String, value: JSONValue)]) -> JSONNode {
        node(.object(object.map { ($0.key, node($0.value)) }))
    }
}

/// The 8-hex-digit ids Xcode gives what it creates, derived from names so that every export
/// of the same catalog gives the same ids, and unique within one file.
private struct InternalIDs {
    private var used: Set<String> = []
    private var groups: [String: String] = [:]

    mutating func make(_ name: String) -> String {
        var id = Self.hash(name)
        var attempt = 1
        while !used.insert(id).inserted {
            id = Self.hash("\(name)|\(attempt)")
            attempt += 1
        }
        return id
    }

    /// One id per group name, the same for the group and its subscriptions' `subscriptionGroupID`.
    mutating func group(_ name: String) -> String {
        if let id = groups[name] { return id }
        let id = make("group|\(name)")
        groups[name] = id
        return id
    }

    /// FNV-1a, 32 bits: stable across runs and platforms, unlike `Hasher`.
    static func hash(_ text: String) -> String {
        var value: UInt32 = 0x811C_9DC5
        for byte in text.utf8 {
            value ^= UInt32(byte)
            value = value &* 0x0100_0193
        }
        let hex = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: 8 - hex.count) + hex
    }
}
