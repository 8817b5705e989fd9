import Foundation
import PropertyList

/// The rules of docs/contract.md section 1, applied to one app's decoded sources.
///
/// Every rule is a diagnostic at the place it concerns; all of them run, so one pass reports
/// every problem. The result is an ``AppCatalog`` when no rule found an error.
public enum CatalogRules {
    /// The longest product identifier, in characters.
    public static let maximumIdentifierLength = 100
    /// The longest reference name, in characters, as in App Store Connect.
    public static let maximumReferenceNameLength = 64

    /// The rules across an app's products and files; each product's own rules ran as its file
    /// was decoded (``CheckedProducts``).
    public static func check(_ sources: AppSources) -> (catalog: AppCatalog?, diagnostics: [Diagnostic]) {
        // A single file's products are taken as they are: a big catalog is not copied.
        let products =
            sources.definitions.count == 1 ? sources.definitions[0].products.products : sources.definitions.flatMap(\.products.products)
        // The content's rules read the content folder and need nothing the other rules find:
        // they run beside them, their diagnostics put where they always were, after them.
        let (checked, (content, contentDiagnostics)) = concurrently(
            { checkAcrossProducts(sources, products) },
            {
                var found: [Diagnostic] = []
                let content = ContentRules.check(sources, products: products, into: &found)
                return (content, found)
            })
        let diagnostics = checked.diagnostics + contentDiagnostics
        guard !diagnostics.containsErrors, sources.definitions.allSatisfy({ $0.products.rejectedCount == 0 }) else {
            return (nil, diagnostics)
        }
        var catalog = AppCatalog(
            app: sources.app, platforms: checked.platforms.sorted(), feedbackPolicy: checked.settings.policy, products: products,
            files: sources.definitions.map(\.settings.file), purchaseSettings: checked.settings.purchases)
        catalog.content = content
        return (catalog, diagnostics)
    }

    /// The rules across products and files, but the content's: the merged settings, each
    /// identifier once, and the platforms the feeds distinguish.
    private static func checkAcrossProducts(
        _ sources: AppSources, _ products: [Product]
    ) -> (settings: MergedSettings, platforms: Set<Platform>, diagnostics: [Diagnostic]) {
        var diagnostics: [Diagnostic] = []
        let settings = mergedSettings(sources, into: &diagnostics)
        checkDuplicates(sources.definitions, into: &diagnostics)
        // The feeds distinguish every platform named anywhere: the app's list and the products'.
        var platforms = Set(settings.platforms)
        for definition in sources.definitions {
            // Products mostly list the platforms the one before them listed: each list is added
            // once, not hashed again for every product.
            var added: [Platform] = []
            for list in definition.products.platformLists {
                if list.value != added {
                    platforms.formUnion(list.value)
                    added = list.value
                }
                guard !settings.platforms.isEmpty else { continue }
                for platform in list.value where !settings.platforms.contains(platform) {
                    diagnostics.append(
                        .warning(
                            "platform '\(platform.name)' is not one of the app's platforms (\(settings.platforms.map(\.name).joined(separator: ", "))); add it there if the app ships on \(platform.name)",
                            file: definition.settings.file, at: list.position))
                }
            }
        }
        if settings.takesPurchases {
            // Only an app that takes purchases needs a duration on its non-renewing products: the
            // feeds need none, and StoreKit configuration files (imported and exported) have none.
            for definition in sources.definitions {
                // Products read in place: `for product in` would copy each, whole.
                let products = definition.products.products
                for index in products.indices where products[index].type == .nonRenewing && products[index].duration == nil {
                    diagnostics.append(
                        .error(
                            "non-renewing product '\(products[index].id)' needs a duration, such as P1M: the app has purchase settings, and the App Store keeps no period for this type",
                            file: products[index].location.file, at: products[index].location.position))
                }
            }
        }
        // Products read in place, by index and by their stored fields: a closure given each, or a
        // computed property read (`play`, `isSoldOnAndroid`), would copy it, whole.
        if products.indices.contains(where: { products[$0].playStorage != nil }) {
            PlayRules.checkAcrossProducts(products, into: &diagnostics)
        }
        // Android has feeds of its own as soon as a product is sold on Google Play.
        if let first = products.indices.first(where: { products.isSoldOnAndroid(at: $0) }) {
            platforms.insert(.android)
            if !settings.platforms.isEmpty, !settings.platforms.contains(.android) {
                diagnostics.append(
                    .warning(
                        "product '\(products[first].id)' is sold on Google Play but Android is not one of the app's platforms (\(settings.platforms.map(\.name).joined(separator: ", "))); add it there",
                        file: products[first].location.file, at: products[first].location.position))
            }
        }
        return (settings, platforms, diagnostics)
    }

    /// Each identifier once per app. A file's own identifiers were noted as it was decoded; the
    /// files after the first are noted again, after it, in file order.
    private static func checkDuplicates(_ definitions: [SourceDefinition], into diagnostics: inout [Diagnostic]) {
        guard var register = definitions.first?.products.identifiers else { return }
        for definition in definitions.dropFirst() {
            let file = definition.settings.file
            let products = definition.products.products
            // In source order: the products kept and the ids of those rejected, merged by position.
            var rejected = definition.products.rejectedIDs[...]
            // Products read in place: `for product in` would copy each, whole.
            for index in products.indices {
                while let id = rejected.first, id.position < products[index].location.position {
                    register.note(id.value, at: SourceLocation(file: file, position: id.position))
                    rejected.removeFirst()
                }
                register.note(products[index].id, at: products[index].location)
            }
            for id in rejected { register.note(id.value, at: SourceLocation(file: file, position: id.position)) }
        }
        diagnostics += register.duplicates
    }

    private struct MergedSettings {
        var platforms: [Platform] = []
        var policy = FeedbackPolicy()
        var purchases = PurchaseSettings()
        /// Whether any file sets a purchase setting: the app takes purchases.
        var takesPurchases = false
    }

    /// App settings may sit in any one file of a folder; two files setting the same one is an error.
    private static func mergedSettings(_ sources: AppSources, into diagnostics: inout [Diagnostic]) -> MergedSettings {
        var merged = MergedSettings()
        var platformsSetIn: SourceLocation?
        var policySetIn: SourceLocation?
        var purchaseSettings = PurchaseSettingsRules()
        for definition in sources.definitions {
            let settings = definition.settings
            let file = settings.file
            if let app = settings.app, app.value != sources.app {
                diagnostics.append(
                    .error("app '\(app.value)' does not match the file name; expected '\(sources.app)'", file: file, at: app.position))
            }
            if let platforms = settings.platforms {
                if let earlier = platformsSetIn {
                    diagnostics.append(.error("app platforms are already set at \(earlier)", file: file, at: platforms.position))
                } else {
                    platformsSetIn = SourceLocation(file: file, position: platforms.position)
                    merged.platforms = checkPlatforms(platforms, file: file, into: &diagnostics)
                    if platforms.value.isEmpty {
                        diagnostics.append(
                            .error(
                                "app platforms list is empty; list the platforms the app ships on, or leave the key out", file: file,
                                at: platforms.position))
                    }
                }
            }
            if let policy = settings.feedbackPolicy {
                if let earlier = policySetIn {
                    diagnostics.append(.error("feedbackPolicy is already set at \(earlier)", file: file, at: policy.position))
                } else {
                    policySetIn = SourceLocation(file: file, position: policy.position)
                    merged.policy = FeedbackPolicyRules.check(policy, file: file, into: &diagnostics)
                }
            }
            purchaseSettings.read(settings, into: &diagnostics)
        }
        merged.purchases = purchaseSettings.check(into: &diagnostics)
        merged.takesPurchases = purchaseSettings.isSet
        return merged
    }

    private static func checkPlatforms(_ list: Located<[Located<String>]>, file: String, into diagnostics: inout [Diagnostic]) -> [Platform]
    {
        var result: [Platform] = []
        for name in list.value {
            guard let platform = Platform(name: name.value) else {
                diagnostics.append(
                    .error("unknown platform '\(name.value)'; expected \(Platform.expectedList)", file: file, at: name.position))
                continue
            }
            if result.contains(platform) {
                diagnostics.append(.warning("platform '\(name.value)' is listed twice", file: file, at: name.position))
                continue
            }
            result.append(platform)
        }
        return result.sorted()
    }

    /// The rules that concern one product alone: the product when they found no error, and its
    /// own platforms list as checked (the app's platforms are compared with it later).
    static func check(_ definition: ProductDefinition, into diagnostics: inout [Diagnostic]) -> (Product?, platforms: [Platform]?) {
        let file = definition.file
        var valid = true
        func error(_ message: String, at position: SourcePosition) {
            diagnostics.append(.error(message, file: file, at: position))
            valid = false
        }
        func warning(_ message: String, at position: SourcePosition) {
            diagnostics.append(.warning(message, file: file, at: position))
        }

        guard let id = definition.id else {
            if !definition.malformedKeys.contains("id") { error("product has no 'id'", at: definition.position) }
            return (nil, nil)
        }
        if let problem = IdentifierRules.problem(id.value) {
            error(problem, at: id.position)
        } else {
            for advice in IdentifierRules.warnings(id.value) { warning(advice, at: id.position) }
        }

        var type: ProductType?
        if let text = definition.type {
            type = ProductType(rawValue: text.value)
            if type == nil { error("unknown product type '\(text.value)'; expected \(ProductType.expectedList)", at: text.position) }
        }
        var status = ProductStatus.cleared
        if let text = definition.status {
            if let known = ProductStatus(rawValue: text.value) {
                status = known
            } else {
                error("unknown status '\(text.value)'; expected \(ProductStatus.expectedList)", at: text.position)
            }
        }
        if let name = definition.referenceName, name.value.utf8.count > maximumReferenceNameLength,
            name.value.count > maximumReferenceNameLength
        {
            error("reference name is \(name.value.count) characters long; the limit is \(maximumReferenceNameLength)", at: name.position)
        }
        if let name = definition.referenceName, name.value.allSatisfy(\.isWhitespace) {
            error("reference name is empty", at: name.position)
        }

        var platforms: [Platform]?
        if let list = definition.platforms {
            let before = diagnostics.count
            platforms = checkPlatforms(list, file: file, into: &diagnostics)
            if diagnostics[before...].contains(where: { $0.severity == .error }) { valid = false }
            if list.value.isEmpty { error("platforms list is empty; leave it out to sell on every platform of the app", at: list.position) }
            if platforms?.contains(.android) == true, definition.play == nil, !definition.malformedKeys.contains("play") {
                error(
                    "product '\(id.value)' is sold on Android and needs 'play', the product an Android app buys on Google Play",
                    at: list.position)
            }
        }

        var minimumAppVersion: AppVersion?
        if let text = definition.minimumAppVersion {
            minimumAppVersion = AppVersion(text.value)
            if minimumAppVersion == nil {
                error("'\(text.value)' is not an app version; expected 1 to 4 numbers separated by dots, such as 2.3.1", at: text.position)
            }
        }
        if let from = definition.availableFrom, let until = definition.availableUntil, from.value >= until.value {
            error("availableUntil (\(until.value)) must be later than availableFrom (\(from.value))", at: until.position)
        }

        var subscription: Subscription?
        let typeIsMissing = definition.type == nil
        if let definition = definition.subscription {
            if let type, type != .autoRenewable {
                error("only auto-renewable products have a subscription; this one is \(type.rawValue)", at: definition.position)
            } else if typeIsMissing {
                error("a product with a subscription needs type 'auto-renewable'", at: definition.position)
            }
            if definition.group == nil { error("subscription has no 'group'", at: definition.position) }
            if let group = definition.group, group.value.allSatisfy(\.isWhitespace) {
                error("subscription group is empty", at: group.position)
            }
            if definition.period == nil { error("subscription has no 'period'", at: definition.position) }
            if let period = definition.period, !SubscriptionPeriod.isValid(period.value) {
                error(
                    "'\(period.value)' is not a subscription period; expected an ISO 8601 duration such as P1W, P1M, P3M, P6M or P1Y",
                    at: period.position)
            }
            if let rank = definition.rank, rank.value < 1 {
                error("subscription rank must be 1 or more", at: rank.position)
            }
            if let group = definition.group, let period = definition.period {
                subscription = Subscription(group: group.value, period: period.value, rank: definition.rank?.value)
            }
        } else if type == .autoRenewable {
            error("auto-renewable product '\(id.value)' needs a subscription with a group and a period", at: definition.position)
        }

        let entitlements = definition.entitlements.map { PurchaseSettingsRules.checkEntitlements($0, file: file, into: &diagnostics) }
        if let entitlements, entitlements.valid == false { valid = false }
        if let duration = definition.duration {
            if let type, type != .nonRenewing {
                error("only non-renewing subscriptions have a duration; this one is \(type.rawValue)", at: duration.position)
            } else if typeIsMissing {
                error("a product with a duration needs type 'non-renewing'", at: duration.position)
            }
            if !SubscriptionPeriod.isValid(duration.value) {
                error(
                    "'\(duration.value)' is not a duration; expected an ISO 8601 duration such as P1W, P1M, P3M, P6M or P1Y",
                    at: duration.position)
            }
        }

        var play: PlayProduct?
        if let definition = definition.play {
            play = PlayRules.check(definition, type: type, file: file, into: &diagnostics)
            if play == nil { valid = false }
        }

        guard valid else { return (nil, platforms) }
        var product = Product(
            id: id.value, type: type, referenceName: definition.referenceName?.value, status: status,
            platforms: platforms, minimumAppVersion: minimumAppVersion,
            availableFrom: definition.availableFrom?.value, availableUntil: definition.availableUntil?.value,
            subscription: subscription, displayOrder: definition.displayOrder?.value,
            metadataJSON: definition.metadataJSON,
            location: SourceLocation(file: file, position: id.position))
        product.entitlements = entitlements?.names
        product.duration = definition.duration?.value
        product.play = play
        return (product, platforms)
    }
}

/// The rule that each identifier is defined once per app: a second definition is an error that
/// points at the first. Every written id counts, valid or not, so that a duplicate is reported
/// in the same run as the first definition's own problems.
struct IdentifierRegister: Sendable {
    /// Where an id was first defined, and the index of that definition's product among the
    /// products its file kept (-1 when its own rules rejected it, or it is another file's): 16
    /// bytes with no reference to count, the file named by its index in `files`.
    private struct First: Sendable {
        var position: SourcePosition
        var file: Int32
        var product: Int32
    }

    private var files: [String] = []
    private var first = IdentifierTable<First>()
    private(set) var duplicates: [Diagnostic] = []

    /// Notes `id`, defined at `location`; `product` is its index among the products kept, if kept.
    mutating func note(_ id: String, at location: SourceLocation, product: Int? = nil) {
        let file = files.last == location.file ? files.count - 1 : files.firstIndex(of: location.file) ?? files.count
        if file == files.count { files.append(location.file) }
        // One lookup per id: a duplicate leaves the first definition in place.
        let noted = First(position: location.position, file: Int32(file), product: Int32(product ?? -1))
        guard let row = first.insert(id, noted) else { return }
        let earlier = first[row: row]
        let earlierFile = files[Int(earlier.file)]
        let place =
            earlierFile == location.file ? "\(earlier.position)" : "\(SourceLocation(file: earlierFile, position: earlier.position))"
        duplicates.append(.error("duplicate product id '\(id)' (first at \(place))", file: location.file, at: location.position))
    }

    /// The index among the products kept of the first definition of `id`, if it was kept: a
    /// product found by id without hashing every id of the catalog again.
    func product(named id: String) -> Int? {
        guard let found = first[id], found.product >= 0 else { return nil }
        return Int(found.product)
    }
}

/// The product-identifier rules: what the App Store accepts, and what other stores reject.
public enum IdentifierRules {
    /// Why `id` is not a valid identifier, or nil.
    public static func problem(_ id: String) -> String? {
        if id.isEmpty { return "product id is empty" }
        if !id.utf8.allSatisfy(isAllowed), let bad = id.unicodeScalars.first(where: { !isAllowed($0) }) {
            return "product id '\(id)' contains '\(bad)'; only letters, digits, '.', '_' and '-' are allowed"
        }
        if id.utf8.count > CatalogRules.maximumIdentifierLength {
            return "product id is \(id.utf8.count) characters long; the limit is \(CatalogRules.maximumIdentifierLength)"
        }
        return nil
    }

    /// Advice on an identifier the App Store accepts but older rules or other stores do not.
    public static func warnings(_ id: String) -> [String] {
        var result: [String] = []
        // Identifiers are ASCII by the time warnings are looked for; bytes are the fast check.
        if id.utf8.contains(UInt8(ascii: "-")) {
            result.append("product id '\(id)' contains '-'; older App Store rules and other stores reject it")
        }
        if id.utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) {
            result.append("product id '\(id)' contains upper case letters; other stores reject them")
        }
        return result
    }

    static func isAllowed(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII && isAllowed(UInt8(scalar.value))
    }

    static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        case 0x2E, 0x5F, 0x2D: true  // . _ -
        default: false
        }
    }
}

/// Dates are written `YYYY-MM-DDTHH:MM:SSZ` in both formats, and reported the same way.
enum DateRules {
    static func message(key: String, text: String) -> String {
        "'\(key)' value '\(text)' is not a date; expected YYYY-MM-DDTHH:MM:SSZ"
    }
}

/// ISO 8601 durations as subscriptions use them: `P` then years, months, weeks and days.
enum SubscriptionPeriod {
    static func isValid(_ text: String) -> Bool {
        var rest = Substring(text)
        guard rest.first == "P", rest.count > 1 else { return false }
        rest = rest.dropFirst()
        var order = ["Y", "M", "W", "D"][...]
        while !rest.isEmpty {
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, digits.count <= 4 else { return false }
            rest = rest.dropFirst(digits.count)
            guard let unit = rest.first, let index = order.firstIndex(of: String(unit)) else { return false }
            order = order[(index + 1)...]
            rest = rest.dropFirst()
        }
        return true
    }
}

/// Checks the feedback thresholds and fills in defaults.
enum FeedbackPolicyRules {
    static let integerKeys = ["suspectAfterInstalls", "quarantineAfterInstalls", "windowHours", "graceHours", "installsPerNetwork"]
    static let realKeys = ["minimumInvalidRate", "quarantineBudget", "storeWideShare"]

    /// Counts of installs or networks: zero would quarantine on no evidence at all.
    private static func isCount(_ key: String) -> Bool { key.hasSuffix("Installs") || key == "installsPerNetwork" }

    static func check(_ definition: Located<FeedbackPolicyDefinition>, file: String, into diagnostics: inout [Diagnostic]) -> FeedbackPolicy
    {
        var policy = FeedbackPolicy()
        let values = definition.value.integers
        for (key, value) in values where value.value < (isCount(key) ? 1 : 0) {
            diagnostics.append(.error("\(key) must be \(isCount(key) ? "1" : "0") or more", file: file, at: value.position))
        }
        if let value = values["suspectAfterInstalls"] { policy.suspectAfterInstalls = value.value }
        if let value = values["quarantineAfterInstalls"] { policy.quarantineAfterInstalls = value.value }
        if let value = values["windowHours"] { policy.windowHours = value.value }
        if let value = values["graceHours"] { policy.graceHours = value.value }
        if let value = values["installsPerNetwork"], value.value >= 1 { policy.installsPerNetwork = value.value }
        for (key, rate) in definition.value.reals.sorted(by: { $0.key < $1.key }) {
            guard (0...1).contains(rate.value) else {
                diagnostics.append(.error("\(key) must be between 0 and 1", file: file, at: rate.position))
                continue
            }
            switch key {
            case "minimumInvalidRate": policy.minimumInvalidRate = rate.value
            case "quarantineBudget": policy.quarantineBudget = rate.value
            default: policy.storeWideShare = rate.value
            }
        }
        if policy.quarantineAfterInstalls < policy.suspectAfterInstalls {
            func shown(_ key: String, _ value: Int64) -> String {
                values[key] == nil ? "\(key) (\(value), the default)" : "\(key) (\(value))"
            }
            diagnostics.append(
                .error(
                    "\(shown("quarantineAfterInstalls", policy.quarantineAfterInstalls)) must not be below \(shown("suspectAfterInstalls", policy.suspectAfterInstalls))",
                    file: file, at: definition.position))
        }
        return policy
    }
}
