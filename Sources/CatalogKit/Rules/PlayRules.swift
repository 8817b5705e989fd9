import PropertyList

/// Google Play's rules for a product's `play` counterpart (docs/catalog-format.md, "Google Play"),
/// as Google's documentation states them: product ids start with a lower-case letter or digit and
/// hold lower-case letters, digits, `_` and `.`; base plan, offer and purchase option ids follow
/// RFC 1034 (lower-case letters, digits and `-`, at most 63 characters).
public enum PlayRules {
    /// The longest base plan, offer or purchase option id.
    public static let maximumPlanIdentifierLength = 63
    /// The product id length past which the catalog warns: Play Console's form stops there.
    public static let advisedProductIdentifierLength = 40

    /// Why `id` cannot be a Play product id, or nil.
    public static func productIdProblem(_ id: String) -> String? {
        guard let first = id.utf8.first else { return "Play product id is empty" }
        if !(isLowerOrDigit(first)) {
            return "Play product id '\(id)' must start with a lower-case letter or a digit"
        }
        if let bad = id.unicodeScalars.first(where: { !($0.isASCII && (isLowerOrDigit(UInt8($0.value)) || $0 == "_" || $0 == ".")) }) {
            return "Play product id '\(id)' contains '\(bad)'; only lower-case letters, digits, '_' and '.' are allowed"
        }
        return nil
    }

    /// Why `id` cannot be a base plan, offer or purchase option id (`kind` names which), or nil.
    public static func planIdProblem(_ id: String, kind: String) -> String? {
        guard let first = id.utf8.first else { return "\(kind) id is empty" }
        if !isLowerOrDigit(first) { return "\(kind) id '\(id)' must start with a lower-case letter or a digit" }
        if let bad = id.unicodeScalars.first(where: { !($0.isASCII && (isLowerOrDigit(UInt8($0.value)) || $0 == "-")) }) {
            return "\(kind) id '\(id)' contains '\(bad)'; only lower-case letters, digits and '-' are allowed"
        }
        if id.utf8.count > maximumPlanIdentifierLength {
            return "\(kind) id is \(id.utf8.count) characters long; the limit is \(maximumPlanIdentifierLength)"
        }
        return nil
    }

    /// Whether `name` is an Android package name: two or more parts separated by dots, each a
    /// letter followed by letters, digits or `_`.
    public static func isPackageName(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count >= 2
            && parts.allSatisfy { part in
                guard let first = part.utf8.first, isLetter(first) else { return false }
                return part.utf8.allSatisfy { isLetter($0) || (0x30...0x39).contains($0) || $0 == UInt8(ascii: "_") }
            }
    }

    /// A product's `play` as its rules accept it for a product of `type` (nil: not written), or nil
    /// with the diagnostics said.
    static func check(_ definition: PlayDefinition, type: ProductType?, file: String, into diagnostics: inout [Diagnostic]) -> PlayProduct?
    {
        var valid = true
        func error(_ message: String, at position: SourcePosition) {
            diagnostics.append(.error(message, file: file, at: position))
            valid = false
        }
        guard let productId = definition.productId else {
            error("play has no 'productId'", at: definition.position)
            return nil
        }
        if let problem = productIdProblem(productId.value) {
            error(problem, at: productId.position)
        } else if productId.value.utf8.count > advisedProductIdentifierLength {
            diagnostics.append(
                .warning(
                    "Play product id is \(productId.value.utf8.count) characters long; Play Console takes \(advisedProductIdentifierLength)",
                    file: file, at: productId.position))
        }
        for (value, kind) in [
            (definition.basePlan, "base plan"), (definition.offer, "offer"), (definition.purchaseOption, "purchase option"),
        ] {
            if let value, let problem = planIdProblem(value.value, kind: kind) { error(problem, at: value.position) }
        }
        // A subscription is bought as a base plan; a one-time product has purchase options instead.
        switch type {
        case .autoRenewable?:
            if definition.basePlan == nil {
                error(
                    "an auto-renewable product's play needs a 'basePlan': Google Play sells a subscription by its base plan",
                    at: definition.position)
            }
        case .consumable?, .nonConsumable?:
            if let basePlan = definition.basePlan {
                error("only subscriptions have a base plan; this product is \(type!.rawValue)", at: basePlan.position)
            }
        case .nonRenewing?, nil:
            break  // a prepaid base plan, or a one-time product that grants a period
        }
        if let offer = definition.offer, definition.basePlan == nil {
            error("an offer belongs to a base plan; add 'basePlan'", at: offer.position)
        }
        if let option = definition.purchaseOption, definition.basePlan != nil {
            error("a purchase option belongs to a one-time product, not a base plan", at: option.position)
        }
        guard valid else { return nil }
        return PlayProduct(
            productId: productId.value, basePlan: definition.basePlan?.value, offer: definition.offer?.value,
            purchaseOption: definition.purchaseOption?.value)
    }

    /// The rules across an app's products: one product per Play product and base plan (or purchase
    /// option), since a purchase names only those; and a Play product id either a subscription's or a
    /// one-time product's, never both.
    static func checkAcrossProducts(_ products: [Product], into diagnostics: inout [Diagnostic]) {
        struct Key: Hashable {
            var productId: String
            var plan: String?
            var option: String?
        }
        var first: [Key: Int] = [:]
        var isSubscription: [String: Int] = [:]
        for index in products.indices {
            // The stored box read by index: the computed `play` would copy the product, whole.
            guard let play = products[index].playStorage?.value else { continue }
            let location = products[index].location
            func place(_ other: Int) -> String {
                let earlier = products[other].location
                return earlier.file == location.file ? "\(earlier.position)" : "\(earlier)"
            }
            let key = Key(productId: play.productId, plan: play.basePlan, option: play.purchaseOption)
            if let earlier = first[key] {
                let what =
                    play.basePlan.map { "Play product '\(play.productId)' with base plan '\($0)'" } ?? "Play product '\(play.productId)'"
                diagnostics.append(
                    .error(
                        "\(what) is already product '\(products[earlier].id)' (at \(place(earlier))); a Play purchase must name one product",
                        file: location.file, at: location.position))
            } else {
                first[key] = index
            }
            if let earlier = isSubscription[play.productId],
                (products[earlier].playStorage?.value.basePlan != nil) != (play.basePlan != nil)
            {
                diagnostics.append(
                    .error(
                        "Play product '\(play.productId)' is a subscription in one product and a one-time product in '\(products[earlier].id)' (at \(place(earlier))); Google Play has one kind per id",
                        file: location.file, at: location.position))
            } else if isSubscription[play.productId] == nil {
                isSubscription[play.productId] = index
            }
        }
    }

    private static func isLowerOrDigit(_ byte: UInt8) -> Bool {
        (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (0x61...0x7A).contains(byte) || (0x41...0x5A).contains(byte)
    }
}
