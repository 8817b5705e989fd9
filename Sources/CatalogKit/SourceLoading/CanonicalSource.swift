import PropertyList
import Time

/// An app's definitions rebuilt from product snapshots (a revision's `products.jsonl.gz`), as the
/// full-form root dict that ``SourcePlist`` writes: what a rollback writes back into `catalog/`.
///
/// Snapshot keys are the source keys, so each JSON value becomes the plist value that the source
/// decoder turns back into the same JSON, and publishing the written file renders the same feed
/// bytes. The `quarantine` key is left out: verdicts live in the feedback file, not in the
/// definitions. The app's purchase settings and content items are not in a snapshot: a rollback
/// keeps them as the current sources write them (``keep(settingsAndContentOf:)``).
struct CanonicalSource {
    var app: String
    /// The app's `platforms` setting; left out when empty.
    var platforms: [Platform] = []
    var feedbackPolicy = FeedbackPolicy()
    private var products: [PropertyListNode] = []
    /// The purchase settings (`appAppleId` to `webhookSecretFile`), each as the sources wrote it.
    private var purchaseSettings = PropertyListDictionary()
    /// The content items, each as the sources wrote it.
    private var content: [PropertyListNode] = []

    init(app: String) {
        self.app = app
    }

    /// Adds a product from its snapshot JSON, with `status` in place of its own when given.
    mutating func append(snapshot json: [UInt8], status: ProductStatus? = nil) throws {
        var product = try json.withUnsafeBufferPointer { buffer in
            var scanner = JSONScanner(buffer)
            guard try scanner.peekKind() == .object else { throw JSONScanner.SyntaxError(message: "a product must be an object") }
            let value = try Self.value(&scanner, key: nil, isProduct: true)
            try scanner.expectEnd()
            guard case .dictionary(let dictionary) = value else { throw JSONScanner.SyntaxError(message: "a product must be an object") }
            return dictionary
        }
        product.set(ProductDiff.quarantineKey, nil)
        if let status { product.set("status", .string(status.rawValue)) }
        products.append(PropertyListNode(.dictionary(product), at: .startOfFile))
    }

    /// Takes the purchase settings and content items of `sources` as written, in whichever of
    /// its files they are: only the keys written, so that a default stays a default (an app that
    /// sets no purchase setting does not start taking purchases).
    mutating func keep(settingsAndContentOf sources: AppSources) {
        func string(_ value: Located<String>) -> PropertyListValue { .string(value.value) }
        func strings(_ list: Located<[Located<String>]>) -> PropertyListValue {
            .array(list.value.map { PropertyListNode(.string($0.value), at: .startOfFile) })
        }
        for definition in sources.definitions {
            let settings = definition.settings
            // The rules allow each setting in one file only, so no file overrides another here.
            let written: [(String, PropertyListValue?)] = [
                ("appAppleId", settings.appAppleId.map { .integer($0.value) }),
                ("environments", settings.environments.map(strings)),
                ("transferPolicy", settings.transferPolicy.map(string)),
                ("xcodeCertificate", settings.xcodeCertificate.map(string)),
                ("webhookURL", settings.webhookURL.map(string)),
                ("webhookSecretFile", settings.webhookSecretFile.map(string)),
                ("serverAPIKeyId", settings.serverAPIKeyId.map(string)),
                ("serverAPIIssuerId", settings.serverAPIIssuerId.map(string)),
                ("serverAPIKeyFile", settings.serverAPIKeyFile.map(string)),
                ("answerConsumptionRequests", settings.answerConsumptionRequests.map { .boolean($0.value) }),
                ("sampleContentProvided", settings.sampleContentProvided.map { .boolean($0.value) }),
                ("refundPreference", settings.refundPreference.map(string)),
                ("sandboxUnlocks", settings.sandboxUnlocks.map { .boolean($0.value) }),
                ("requireDeviceId", settings.requireDeviceId.map { .boolean($0.value) }),
                ("playPackageName", settings.playPackageName.map(string)),
                ("playLicenseKey", settings.playLicenseKey.map(string)),
                ("playPushAudience", settings.playPushAudience.map(string)),
                ("playPushServiceAccount", settings.playPushServiceAccount.map(string)),
                ("playServiceAccountKeyFile", settings.playServiceAccountKeyFile.map(string)),
            ]
            for (key, value) in written {
                if let value, purchaseSettings[key] == nil { purchaseSettings.set(key, value) }
            }
            for item in definition.content {
                var dictionary = PropertyListDictionary()
                let keys: [(String, PropertyListValue?)] = [
                    ("id", item.id.map(string)), ("product", item.product.map(string)), ("group", item.group.map(string)),
                    ("published", item.published.map { .date($0.value) }), ("folder", item.folder.map(string)),
                    ("files", item.files.map(strings)),
                ]
                for (key, value) in keys { dictionary.set(key, value) }
                content.append(PropertyListNode(.dictionary(dictionary), at: .startOfFile))
            }
        }
    }

    /// The file's bytes.
    var encoded: [UInt8] {
        var root = PropertyListDictionary()
        root.set("app", .string(app))
        if !platforms.isEmpty { root.set("platforms", .array(platforms.map { PropertyListNode(.string($0.name), at: .startOfFile) })) }
        root.set("feedbackPolicy", policy)
        for entry in purchaseSettings.entries { root.set(entry.key, entry.value.value) }
        root.set("products", .array(products))
        if !content.isEmpty { root.set("content", .array(content)) }
        return SourcePlist.encode(root)
    }

    /// Only the thresholds that differ from the defaults: the file says what the editor chose.
    private var policy: PropertyListValue? {
        let defaults = FeedbackPolicy()
        var policy = PropertyListDictionary()
        for (key, value, standard) in [
            ("suspectAfterInstalls", feedbackPolicy.suspectAfterInstalls, defaults.suspectAfterInstalls),
            ("quarantineAfterInstalls", feedbackPolicy.quarantineAfterInstalls, defaults.quarantineAfterInstalls),
            ("windowHours", feedbackPolicy.windowHours, defaults.windowHours),
            ("graceHours", feedbackPolicy.graceHours, defaults.graceHours),
            ("installsPerNetwork", feedbackPolicy.installsPerNetwork, defaults.installsPerNetwork),
        ] where value != standard {
            policy.set(key, .integer(value))
        }
        for (key, value, standard) in [
            ("minimumInvalidRate", feedbackPolicy.minimumInvalidRate, defaults.minimumInvalidRate),
            ("quarantineBudget", feedbackPolicy.quarantineBudget, defaults.quarantineBudget),
            ("storeWideShare", feedbackPolicy.storeWideShare, defaults.storeWideShare),
        ] where value != standard {
            policy.set(key, .real(value))
        }
        return policy.entries.isEmpty ? nil : .dictionary(policy)
    }

    /// Dates the decoder reads as `<date>`; in the snapshot they are ISO 8601 strings.
    private static let dateKeys: Set<String> = ["availableFrom", "availableUntil"]

    /// Any JSON value as a plist value: numbers with a fraction or exponent as `<real>` (the
    /// JSON writer prints reals so), others as `<integer>`; a product's own date keys as `<date>`
    /// (a metadata member of the same name stays a string, as written).
    private static func value(_ scanner: inout JSONScanner, key: String?, isProduct: Bool = false) throws -> PropertyListValue {
        switch try scanner.peekKind() {
        case .object:
            var dictionary = PropertyListDictionary()
            try scanner.readObject { member, scanner in dictionary.set(member, try value(&scanner, key: isProduct ? member : nil)) }
            return .dictionary(dictionary)
        case .array:
            var items: [PropertyListNode] = []
            try scanner.readArray { _, scanner in items.append(PropertyListNode(try value(&scanner, key: nil), at: .startOfFile)) }
            return .array(items)
        case .string:
            let text = try scanner.readString()
            if let key, dateKeys.contains(key), let moment = Timestamp(iso8601: text) { return .date(moment) }
            return .string(text)
        case .number:
            let text = try scanner.readNumber()
            if let integer = Int64(text) { return .integer(integer) }
            guard let real = Double(text), real.isFinite else { throw JSONScanner.SyntaxError(message: "number \(text) has no plist form") }
            return .real(real)
        case .boolean:
            return .boolean(try scanner.readBoolean())
        case .null:
            throw JSONScanner.SyntaxError(message: "null has no plist form")
        }
    }
}
