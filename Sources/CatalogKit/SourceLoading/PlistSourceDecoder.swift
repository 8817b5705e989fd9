import Dispatch
import Foundation
import PropertyList
import Time

/// Turns an Apple XML property list into a ``SourceDefinition``.
///
/// Two shapes: Apple's `product_ids.plist` (a root array of identifier strings) and the
/// full form (a root dict with app settings and a `products` array of product dicts).
/// The `products` array is streamed, so a file of any size is decoded product by product.
struct PlistSourceDecoder {
    let reader: PropertyListReader
    /// Whether products are first read in place (``PlainProductReader``); off only in tests,
    /// which compare both ways.
    var readsPlainProducts = true
    /// Products recorded a batch at a time for decoding (``ProductPipeline``).
    var batchSize = 256
    /// Batches that may wait to be decoded on the pipeline's queue before the parser decodes the
    /// next one itself; 0 has the parser decode every batch (tests compare the ways).
    var queuedBatches = 8

    func decode(_ source: SourceFile, into diagnostics: inout [Diagnostic]) -> SourceDefinition? {
        let file = source.path
        // The parser records the products and reads on, while a second core decodes and checks
        // them: in place when there is nothing to report (most products), else built into
        // values first.
        let pipeline = ProductPipeline(
            path: file, queuedBatches: queuedBatches,
            plain: { [readsPlainProducts] cursor in
                readsPlainProducts ? try? PlainProductReader(file: file).product(&cursor) : nil
            },
            decode: { node, problems in decodeProduct(node, file: file, into: &problems) })
        let result = reader.read(source, streamingArray: "products", batchesOf: batchSize) { pipeline.submit($0) }
        var (products, problems) = pipeline.finish()
        diagnostics += result.diagnostics
        diagnostics += problems
        guard let root = result.root else { return nil }
        var settings = AppSettingsDefinition(file: file)
        var content: [ContentItemDefinition] = []
        switch root.value {
        case .array(let items):
            // Apple's minimal form: identifiers only. An array of dicts is another app's shape.
            if let first = items.first, case .dictionary = first.value {
                diagnostics.append(
                    Self.anotherShape("its root is an array of dictionaries, not of identifier strings", file: file, at: root.position))
                return nil
            }
            for item in items {
                guard case .string(let id) = item.value else {
                    diagnostics.append(
                        .error("expected a product identifier <string>, found \(item.value.kindName)", file: file, at: item.position))
                    continue
                }
                var product = ProductDefinition(file: file, position: item.position)
                product.id = Located(id, at: item.position)
                products.append(product, into: &diagnostics)
            }
        case .dictionary(let dictionary):
            // A dict without 'products' and with keys that are no setting is a product list of
            // another shape (StoreHelper's `Products`, Apple's sample dictionary): published as it
            // is, the app would have no products.
            let unknown = dictionary.entries.filter { !Self.settingKeys.contains($0.key) }
            if dictionary["products"] == nil, let first = unknown.first {
                let keys = unknown.prefix(3).map { "'\($0.key)'" }.joined(separator: ", ") + (unknown.count > 3 ? ", …" : "")
                diagnostics.append(
                    Self.anotherShape(
                        "it has no 'products' and its keys (\(keys)) are not catalog settings", file: file, at: first.keyPosition))
                return nil
            }
            for entry in dictionary.entries {
                switch entry.key {
                case "app": settings.app = entry.value.string(key: "app", file: file, into: &diagnostics)
                case "platforms": settings.platforms = entry.value.stringArray(key: "platforms", file: file, into: &diagnostics)
                case "feedbackPolicy": settings.feedbackPolicy = feedbackPolicy(entry.value, file: file, into: &diagnostics)
                case "appAppleId": settings.appAppleId = entry.value.integer(key: "appAppleId", file: file, into: &diagnostics)
                case "environments":
                    settings.environments = entry.value.stringArray(key: "environments", file: file, into: &diagnostics)
                case "transferPolicy":
                    settings.transferPolicy = entry.value.string(key: "transferPolicy", file: file, into: &diagnostics)
                case "xcodeCertificate":
                    settings.xcodeCertificate = entry.value.string(key: "xcodeCertificate", file: file, into: &diagnostics)
                case "webhookURL": settings.webhookURL = entry.value.string(key: "webhookURL", file: file, into: &diagnostics)
                case "webhookSecretFile":
                    settings.webhookSecretFile = entry.value.string(key: "webhookSecretFile", file: file, into: &diagnostics)
                case "serverAPIKeyId":
                    settings.serverAPIKeyId = entry.value.string(key: "serverAPIKeyId", file: file, into: &diagnostics)
                case "serverAPIIssuerId":
                    settings.serverAPIIssuerId = entry.value.string(key: "serverAPIIssuerId", file: file, into: &diagnostics)
                case "serverAPIKeyFile":
                    settings.serverAPIKeyFile = entry.value.string(key: "serverAPIKeyFile", file: file, into: &diagnostics)
                case "answerConsumptionRequests":
                    settings.answerConsumptionRequests = entry.value.boolean(
                        key: "answerConsumptionRequests", file: file, into: &diagnostics)
                case "sampleContentProvided":
                    settings.sampleContentProvided = entry.value.boolean(key: "sampleContentProvided", file: file, into: &diagnostics)
                case "refundPreference":
                    settings.refundPreference = entry.value.string(key: "refundPreference", file: file, into: &diagnostics)
                case "sandboxUnlocks":
                    settings.sandboxUnlocks = entry.value.boolean(key: "sandboxUnlocks", file: file, into: &diagnostics)
                case "requireDeviceId":
                    settings.requireDeviceId = entry.value.boolean(key: "requireDeviceId", file: file, into: &diagnostics)
                case "playPackageName", "playLicenseKey", "playPushAudience", "playPushServiceAccount", "playServiceAccountKeyFile":
                    let value = entry.value.string(key: entry.key, file: file, into: &diagnostics)
                    switch entry.key {
                    case "playPackageName": settings.playPackageName = value
                    case "playLicenseKey": settings.playLicenseKey = value
                    case "playPushAudience": settings.playPushAudience = value
                    case "playPushServiceAccount": settings.playPushServiceAccount = value
                    default: settings.playServiceAccountKeyFile = value
                    }
                case "content": content = contentItems(entry.value, file: file, into: &diagnostics)
                case "products":
                    // Its elements were streamed to decodeProduct as they were read; only its kind is left to check.
                    guard case .array = entry.value.value else {
                        diagnostics.append(
                            .error(
                                "'products' must be an <array> of product dicts, found \(entry.value.value.kindName)", file: file,
                                at: entry.value.position))
                        break
                    }
                default:
                    diagnostics.append(.warning("unknown app setting '\(entry.key)' is ignored", file: file, at: entry.keyPosition))
                }
            }
        default:
            diagnostics.append(
                .error(
                    "the root must be an <array> of product identifiers or a <dict> with app settings and 'products', found \(root.value.kindName)",
                    file: file, at: root.position))
            return nil
        }
        var definition = SourceDefinition(settings: settings, products: products, content: content)
        if case .array = root.value { definition.isIdentifierArray = true }
        return definition
    }

    /// The keys of the full form's root dict.
    static let settingKeys: Set<String> = [
        "app", "platforms", "feedbackPolicy", "appAppleId", "environments", "transferPolicy", "xcodeCertificate", "webhookURL",
        "webhookSecretFile", "serverAPIKeyId", "serverAPIIssuerId", "serverAPIKeyFile", "answerConsumptionRequests",
        "sampleContentProvided", "refundPreference", "sandboxUnlocks", "requireDeviceId", "playPackageName", "playLicenseKey",
        "playPushAudience", "playPushServiceAccount", "playServiceAccountKeyFile", "products", "content",
    ]

    /// The error for a file that would publish no products because it is a product list of
    /// another shape: it names the command that converts it.
    static func anotherShape(_ why: String, file: String, at position: SourcePosition) -> Diagnostic {
        // catalog/<app>.plist, or a file of a folder app catalog/<app>/….
        let path = file as NSString
        let folder = (path.deletingLastPathComponent as NSString).lastPathComponent
        let app = folder.contains(".") ? folder : (path.lastPathComponent as NSString).deletingPathExtension
        return .error(
            "this file defines no products: \(why); if it is a product list of another shape, convert it with 'catalog import plist FILE --app \(app)' (move it out of the catalog first)",
            file: file, at: position)
    }

    private func decodeProduct(_ node: PropertyListNode, file: String, into diagnostics: inout [Diagnostic]) -> ProductDefinition? {
        guard case .dictionary(let dictionary) = node.value else {
            diagnostics.append(.error("a product must be a <dict>, found \(node.value.kindName)", file: file, at: node.position))
            return nil
        }
        var product = ProductDefinition(file: file, position: node.position)
        for entry in dictionary.entries {
            let value = entry.value
            let before = diagnostics.count
            let name = entry.key
            switch ProductKey(rawValue: name) {
            case .id: product.id = value.string(key: name, file: file, into: &diagnostics)
            case .type: product.type = value.string(key: name, file: file, into: &diagnostics)
            case .referenceName: product.referenceName = value.string(key: name, file: file, into: &diagnostics)
            case .status: product.status = value.string(key: name, file: file, into: &diagnostics)
            case .platforms: product.platforms = value.stringArray(key: name, file: file, into: &diagnostics)
            case .minimumAppVersion: product.minimumAppVersion = value.string(key: name, file: file, into: &diagnostics)
            case .availableFrom: product.availableFrom = value.date(key: name, file: file, into: &diagnostics)
            case .availableUntil: product.availableUntil = value.date(key: name, file: file, into: &diagnostics)
            case .displayOrder: product.displayOrder = value.integer(key: name, file: file, into: &diagnostics)
            case .subscription: product.subscription = subscription(value, file: file, into: &diagnostics)
            case .entitlements: product.entitlements = value.stringArray(key: name, file: file, into: &diagnostics)
            case .duration: product.duration = value.string(key: name, file: file, into: &diagnostics)
            case .play: product.play = play(value, file: file, into: &diagnostics)
            case .metadata:
                guard case .dictionary = value.value else {
                    diagnostics.append(.error("'metadata' must be a <dict>, found \(value.value.kindName)", file: file, at: value.position))
                    break
                }
                var writer = JSONWriter()
                if writeJSON(value, to: &writer, file: file, into: &diagnostics) { product.metadataJSON = writer.compactBytes }
            case nil:
                diagnostics.append(.warning("unknown product key '\(name)' is ignored", file: file, at: entry.keyPosition))
            }
            if diagnostics[before...].contains(where: { $0.severity == .error }) { product.malformedKeys.insert(entry.key) }
        }
        return product
    }

    /// The `content` array: one dict per item (docs/catalog-format.md, "Content").
    private func contentItems(_ node: PropertyListNode, file: String, into diagnostics: inout [Diagnostic]) -> [ContentItemDefinition] {
        guard case .array(let items) = node.value else {
            diagnostics.append(
                .error("'content' must be an <array> of item dicts, found \(node.value.kindName)", file: file, at: node.position))
            return []
        }
        var result: [ContentItemDefinition] = []
        for node in items {
            guard case .dictionary(let dictionary) = node.value else {
                diagnostics.append(.error("a content item must be a <dict>, found \(node.value.kindName)", file: file, at: node.position))
                continue
            }
            var item = ContentItemDefinition(file: file, position: node.position)
            for entry in dictionary.entries {
                let before = diagnostics.count
                let value = entry.value
                switch entry.key {
                case "id": item.id = value.string(key: entry.key, file: file, into: &diagnostics)
                case "product": item.product = value.string(key: entry.key, file: file, into: &diagnostics)
                case "group": item.group = value.string(key: entry.key, file: file, into: &diagnostics)
                case "published": item.published = value.date(key: entry.key, file: file, into: &diagnostics)
                case "folder": item.folder = value.string(key: entry.key, file: file, into: &diagnostics)
                case "files": item.files = value.stringArray(key: entry.key, file: file, into: &diagnostics)
                default:
                    diagnostics.append(.warning("unknown content item key '\(entry.key)' is ignored", file: file, at: entry.keyPosition))
                }
                if diagnostics[before...].contains(where: { $0.severity == .error }) { item.malformedKeys.insert(entry.key) }
            }
            result.append(item)
        }
        return result
    }

    private func subscription(_ node: PropertyListNode, file: String, into diagnostics: inout [Diagnostic]) -> SubscriptionDefinition? {
        guard case .dictionary(let dictionary) = node.value else {
            diagnostics.append(.error("'subscription' must be a <dict>, found \(node.value.kindName)", file: file, at: node.position))
            return nil
        }
        var result = SubscriptionDefinition(position: node.position)
        for entry in dictionary.entries {
            switch SubscriptionKey(rawValue: entry.key) {
            case .group: result.group = entry.value.string(key: entry.key, file: file, into: &diagnostics)
            case .period: result.period = entry.value.string(key: entry.key, file: file, into: &diagnostics)
            case .rank: result.rank = entry.value.integer(key: entry.key, file: file, into: &diagnostics)
            case nil:
                diagnostics.append(.warning("unknown subscription key '\(entry.key)' is ignored", file: file, at: entry.keyPosition))
            }
        }
        return result
    }

    private func play(_ node: PropertyListNode, file: String, into diagnostics: inout [Diagnostic]) -> PlayDefinition? {
        guard case .dictionary(let dictionary) = node.value else {
            diagnostics.append(.error("'play' must be a <dict>, found \(node.value.kindName)", file: file, at: node.position))
            return nil
        }
        var result = PlayDefinition(position: node.position)
        for entry in dictionary.entries {
            let value = entry.value.string(key: entry.key, file: file, into: &diagnostics)
            switch PlayKey(rawValue: entry.key) {
            case .productId: result.productId = value
            case .basePlan: result.basePlan = value
            case .offer: result.offer = value
            case .purchaseOption: result.purchaseOption = value
            case nil:
                diagnostics.append(.warning("unknown play key '\(entry.key)' is ignored", file: file, at: entry.keyPosition))
            }
        }
        return result
    }

    private func feedbackPolicy(_ node: PropertyListNode, file: String, into diagnostics: inout [Diagnostic]) -> Located<
        FeedbackPolicyDefinition
    >? {
        guard case .dictionary(let dictionary) = node.value else {
            diagnostics.append(.error("'feedbackPolicy' must be a <dict>, found \(node.value.kindName)", file: file, at: node.position))
            return nil
        }
        var policy = FeedbackPolicyDefinition()
        for entry in dictionary.entries {
            if FeedbackPolicyRules.realKeys.contains(entry.key) {
                switch entry.value.value {
                case .real(let rate): policy.reals[entry.key] = Located(rate, at: entry.value.position)
                case .integer(let rate): policy.reals[entry.key] = Located(Double(rate), at: entry.value.position)
                default:
                    diagnostics.append(
                        .error(
                            "'\(entry.key)' must be a <real>, found \(entry.value.value.kindName)", file: file,
                            at: entry.value.position))
                }
            } else if FeedbackPolicyRules.integerKeys.contains(entry.key) {
                policy.integers[entry.key] = entry.value.integer(key: entry.key, file: file, into: &diagnostics)
            } else {
                diagnostics.append(.warning("unknown feedbackPolicy key '\(entry.key)' is ignored", file: file, at: entry.keyPosition))
            }
        }
        return Located(policy, at: node.position)
    }

    /// Encodes a plist value as JSON; false (with a diagnostic) when it has no JSON form.
    private func writeJSON(_ node: PropertyListNode, to writer: inout JSONWriter, file: String, into diagnostics: inout [Diagnostic])
        -> Bool
    {
        switch node.value {
        case .real(let value) where !value.isFinite:
            diagnostics.append(.error("metadata value \(value) has no JSON form; use a finite number", file: file, at: node.position))
            return false
        case .string, .integer, .real, .boolean, .date, .data:
            writeJSONScalar(node.value, to: &writer)
        case .array(let items):
            writer.beginArray()
            for item in items {
                guard writeJSON(item, to: &writer, file: file, into: &diagnostics) else { return false }
            }
            writer.endArray()
        case .dictionary(let dictionary):
            writer.beginObject()
            for entry in dictionary.entries {
                writer.key(entry.key)
                guard writeJSON(entry.value, to: &writer, file: file, into: &diagnostics) else { return false }
            }
            writer.endObject()
        }
        return true
    }
}

/// ``PlistSourceDecoder``'s product decoding for the common case, read in place from the
/// recording (``PlainElementCursor``) without building values: a product dict whose every key
/// is known and whose every value has the kind its key expects, so that decoding it reports
/// nothing. It gives up (nil) on anything else, and that product is built and decoded the
/// ordinary way, which reports on it; the results of both ways must be the same.
struct PlainProductReader {
    let file: String

    typealias NotPlain = PlainElementCursor.NotPlain

    func product(_ cursor: inout PlainElementCursor) throws(NotPlain) -> ProductDefinition? {
        guard case .startDictionary(let position)? = try cursor.next() else { return nil }
        var product = ProductDefinition(file: file, position: position)
        while let token = try cursor.next() {
            guard case .key(let key, _) = token else { return product }
            switch ProductKey(utf8: key) {
            case .id: product.id = try string(&cursor)
            case .type: product.type = try string(&cursor)
            case .referenceName: product.referenceName = try string(&cursor)
            case .status: product.status = try string(&cursor)
            case .platforms: product.platforms = try stringArray(&cursor)
            case .minimumAppVersion: product.minimumAppVersion = try string(&cursor)
            case .availableFrom: product.availableFrom = try date(&cursor)
            case .availableUntil: product.availableUntil = try date(&cursor)
            case .displayOrder: product.displayOrder = try integer(&cursor)
            case .subscription: product.subscription = try subscription(&cursor)
            case .entitlements: product.entitlements = try stringArray(&cursor)
            case .duration: product.duration = try string(&cursor)
            case .play: product.play = try play(&cursor)
            case .metadata:
                guard case .startDictionary = try cursor.next() else { throw NotPlain() }
                var writer = JSONWriter()
                writer.beginObject()
                try writeJSON(dictionaryFrom: &cursor, to: &writer)
                product.metadataJSON = writer.compactBytes
            case nil:
                return nil
            }
        }
        return nil
    }

    private func string(_ cursor: inout PlainElementCursor) throws(NotPlain) -> Located<String> {
        guard case .string(let bytes, let position)? = try cursor.next() else { throw NotPlain() }
        return Located(String(decoding: bytes, as: UTF8.self), at: position)
    }

    private func integer(_ cursor: inout PlainElementCursor) throws(NotPlain) -> Located<Int64> {
        guard case .value(.integer(let number), let position)? = try cursor.next() else { throw NotPlain() }
        return Located(number, at: position)
    }

    /// A `<date>`, or a `<string>` in its form, as `PropertyListNode.date` takes it.
    private func date(_ cursor: inout PlainElementCursor) throws(NotPlain) -> Located<Timestamp> {
        switch try cursor.next() {
        case .value(.date(let moment), let position)?:
            return Located(moment, at: position)
        case .string(let bytes, let position)?:
            guard let moment = Timestamp(iso8601: String(decoding: bytes, as: UTF8.self)) else { throw NotPlain() }
            return Located(moment, at: position)
        default:
            throw NotPlain()
        }
    }

    private func stringArray(_ cursor: inout PlainElementCursor) throws(NotPlain) -> Located<[Located<String>]> {
        guard case .startArray(let position)? = try cursor.next() else { throw NotPlain() }
        var values: [Located<String>] = []
        while let token = try cursor.next() {
            switch token {
            case .string(let bytes, let position): values.append(Located(String(decoding: bytes, as: UTF8.self), at: position))
            case .end: return Located(values, at: position)
            default: throw NotPlain()
            }
        }
        throw NotPlain()
    }

    private func subscription(_ cursor: inout PlainElementCursor) throws(NotPlain) -> SubscriptionDefinition {
        guard case .startDictionary(let position)? = try cursor.next() else { throw NotPlain() }
        var result = SubscriptionDefinition(position: position)
        while let token = try cursor.next() {
            switch token {
            case .key(let key, _):
                switch SubscriptionKey(utf8: key) {
                case .group: result.group = try string(&cursor)
                case .period: result.period = try string(&cursor)
                case .rank: result.rank = try integer(&cursor)
                case nil: throw NotPlain()
                }
            case .end: return result
            default: throw NotPlain()
            }
        }
        throw NotPlain()
    }

    private func play(_ cursor: inout PlainElementCursor) throws(NotPlain) -> PlayDefinition {
        guard case .startDictionary(let position)? = try cursor.next() else { throw NotPlain() }
        var result = PlayDefinition(position: position)
        while let token = try cursor.next() {
            switch token {
            case .key(let key, _):
                switch PlayKey(utf8: key) {
                case .productId: result.productId = try string(&cursor)
                case .basePlan: result.basePlan = try string(&cursor)
                case .offer: result.offer = try string(&cursor)
                case .purchaseOption: result.purchaseOption = try string(&cursor)
                case nil: throw NotPlain()
                }
            case .end: return result
            default: throw NotPlain()
            }
        }
        throw NotPlain()
    }

    /// The members of a dict whose `{` is written, through its `}`: what `writeJSON` writes.
    private func writeJSON(dictionaryFrom cursor: inout PlainElementCursor, to writer: inout JSONWriter) throws(NotPlain) {
        while let token = try cursor.next() {
            switch token {
            case .key(let key, _):
                writer.key(utf8: key)
                try writeJSON(try cursor.next(), from: &cursor, to: &writer)
            case .end:
                writer.endObject()
                return
            default:
                throw NotPlain()
            }
        }
        throw NotPlain()
    }

    private func writeJSON(_ token: PlainElementCursor.Token?, from cursor: inout PlainElementCursor, to writer: inout JSONWriter)
        throws(NotPlain)
    {
        switch token {
        case .string(let bytes, _)?: writer.string(utf8: bytes)
        case .value(.real(let value), _)? where !value.isFinite: throw NotPlain()
        case .value(let value, _)?: writeJSONScalar(value, to: &writer)
        case .startDictionary?:
            writer.beginObject()
            try writeJSON(dictionaryFrom: &cursor, to: &writer)
        case .startArray?:
            writer.beginArray()
            while let item = try cursor.next() {
                if case .end = item {
                    writer.endArray()
                    return
                }
                try writeJSON(item, from: &cursor, to: &writer)
            }
            throw NotPlain()
        case .key?, .end?, nil:
            throw NotPlain()
        }
    }
}

/// The keys of a product dict, for both ways of decoding one.
private enum ProductKey: String, SpelledKey {
    case id, type, referenceName, status, platforms, minimumAppVersion, availableFrom, availableUntil, displayOrder
    case subscription, metadata, entitlements, duration, play
}

/// The keys of a product's `play` dict.
private enum PlayKey: String, SpelledKey {
    case productId, basePlan, offer, purchaseOption
}

/// The keys of a product's `subscription` dict.
private enum SubscriptionKey: String, SpelledKey {
    case group, period, rank
}

/// Keys known by name, found from the bytes of a key read in place.
private protocol SpelledKey: RawRepresentable<String>, CaseIterable {}

extension SpelledKey {
    init?(utf8 bytes: UnsafeBufferPointer<UInt8>) {
        // Compared as memory: this runs for every key of a big catalog, and iterating the
        // String's UTF-8 view cost a sixth of decoding.
        for key in Self.allCases {
            var name = key.rawValue
            let matches = name.withUTF8 { name in
                name.count == bytes.count && (name.isEmpty || memcmp(name.baseAddress!, bytes.baseAddress!, name.count) == 0)
            }
            if matches {
                self = key
                return
            }
        }
        return nil
    }
}

/// A scalar of a product's metadata as JSON. Containers are the caller's to write, and a real
/// must be finite: each way of decoding reports, or gives up on, the others before calling this.
private func writeJSONScalar(_ value: PropertyListValue, to writer: inout JSONWriter) {
    switch value {
    case .string(let value): writer.string(value)
    case .integer(let value): writer.integer(value)
    case .real(let value): writer.real(value)
    case .boolean(let value): writer.boolean(value)
    case .date(let value): writer.string(value.iso8601)
    case .data(let bytes): writer.string(Base64.encode(bytes))
    case .array, .dictionary: preconditionFailure("a container is not a scalar")
    }
}

/// Builds, decodes and checks recorded products on a serial queue, in the order they were
/// submitted.
///
/// Decoding and checking a batch can take the queue longer than recording it takes the parser,
/// which then used to wait with its core idle. Now, when the queue is a few batches behind, the
/// parser decodes and checks the next batch itself (with a builder of its own), and the queue
/// only keeps it, in its turn (docs/benchmarks.md, "The build on both cores").
///
/// `@unchecked Sendable`: `builder`, `products` and `problems` are touched only on `queue` until
/// ``finish()`` has waited for it; `parserBuilder` only by the parser's thread, in ``submit(_:)``.
/// Both ways decode a batch the same way (``decoded(_:with:)``) and keep it on `queue`.
private final class ProductPipeline: @unchecked Sendable {
    private let queue = DispatchQueue(label: "catalog.products")
    /// Batches submitted and not yet done on `queue`: when it falls this far behind, the parser
    /// decodes the next batch itself, then waits for a place, rather than record the whole file ahead.
    private let inFlight: DispatchSemaphore
    private let queuesDecoding: Bool
    private let builder: RecordedElementBuilder
    private let parserBuilder: RecordedElementBuilder
    private let plain: (inout PlainElementCursor) -> ProductDefinition?
    private let decode: (PropertyListNode, inout [Diagnostic]) -> ProductDefinition?
    private var products = CheckedProducts()
    private var problems: [Diagnostic] = []

    /// - Parameters:
    ///   - path: the file, for the builders' diagnostics.
    ///   - queuedBatches: batches that may wait on the queue; 0 has the parser decode them all.
    ///   - plain: decodes a product read in place, or nil to have it built and decoded by `decode`.
    init(
        path: String, queuedBatches: Int, plain: @escaping (inout PlainElementCursor) -> ProductDefinition?,
        decode: @escaping (PropertyListNode, inout [Diagnostic]) -> ProductDefinition?
    ) {
        inFlight = DispatchSemaphore(value: max(1, queuedBatches))
        queuesDecoding = queuedBatches > 0
        builder = RecordedElementBuilder(path: path)
        parserBuilder = RecordedElementBuilder(path: path)
        self.plain = plain
        self.decode = decode
    }

    /// Called by the parser's thread only, one batch after another.
    func submit(_ batch: RecordedElements) {
        if queuesDecoding, inFlight.wait(timeout: .now()) == .success {
            queue.async { self.keep(self.decoded(batch, with: self.builder)) }
            return
        }
        // The queue is behind: decoded and checked here, and kept there in this batch's turn.
        let decoded = decoded(batch, with: parserBuilder)
        inFlight.wait()
        queue.async { self.keep(decoded) }
    }

    /// `batch`'s products decoded and checked, and its problems, in source order: the builder's
    /// own problems after its products', as building reports them.
    private func decoded(_ batch: RecordedElements, with builder: RecordedElementBuilder) -> DecodedBatch {
        let decoded = DecodedBatch()
        decoded.checked.reserveCapacity(batch.count)
        let readPlain = { (cursor: inout PlainElementCursor) -> Bool in
            guard let product = self.plain(&cursor) else { return false }
            decoded.checked.append(CheckedProducts.check(product, into: &decoded.problems))
            return true
        }
        let built = builder.build(batch, readingPlain: readPlain) { node in
            if let product = self.decode(node, &decoded.problems) {
                decoded.checked.append(CheckedProducts.check(product, into: &decoded.problems))
            }
        }
        decoded.problems += built
        return decoded
    }

    /// On `queue`: keeps a decoded batch after those before it, and frees its place.
    private func keep(_ decoded: DecodedBatch) {
        for index in decoded.checked.indices { products.keep(&decoded.checked[index]) }
        problems += decoded.problems
        inFlight.signal()
    }

    /// A decoded batch, handed to `queue` to keep (`@unchecked Sendable`: filled before it is
    /// handed over, touched by `queue` only after).
    private final class DecodedBatch: @unchecked Sendable {
        var checked: [CheckedProducts.Checked] = []
        var problems: [Diagnostic] = []
    }

    func finish() -> (products: CheckedProducts, problems: [Diagnostic]) {
        queue.sync { (products, problems) }
    }
}
