import Dispatch
import PropertyList

/// Turns an Apple XML property list into a ``SourceDefinition``.
///
/// Two shapes: Apple's `product_ids.plist` (a root array of identifier strings) and the
/// full form (a root dict with app settings and a `products` array of product dicts).
/// The `products` array is streamed, so a file of any size is decoded product by product.
struct PlistSourceDecoder {
    let reader: PropertyListReader

    func decode(_ source: SourceFile, into diagnostics: inout [Diagnostic]) -> SourceDefinition? {
        let file = source.path
        // The parser records the products and reads on, while a second core builds and decodes
        // them: on a big catalog, building values is the larger half of reading.
        let pipeline = ProductPipeline(builder: RecordedElementBuilder(path: file)) { node, problems in
            decodeProduct(node, file: file, into: &problems)
        }
        let result = reader.read(source, streamingArray: "products", batchesOf: 256) { pipeline.submit($0) }
        var (products, problems) = pipeline.finish()
        diagnostics += result.diagnostics
        diagnostics += problems
        guard let root = result.root else { return nil }
        var settings = AppSettingsDefinition(file: file)
        switch root.value {
        case .array(let items):
            // Apple's minimal form: identifiers only.
            for item in items {
                guard case .string(let id) = item.value else {
                    diagnostics.append(
                        .error("expected a product identifier <string>, found \(item.value.kindName)", file: file, at: item.position))
                    continue
                }
                var product = ProductDefinition(file: file, position: item.position)
                product.id = Located(id, at: item.position)
                products.append(product)
            }
        case .dictionary(let dictionary):
            for entry in dictionary.entries {
                switch entry.key {
                case "app": settings.app = entry.value.string(key: "app", file: file, into: &diagnostics)
                case "platforms": settings.platforms = entry.value.stringArray(key: "platforms", file: file, into: &diagnostics)
                case "feedbackPolicy": settings.feedbackPolicy = feedbackPolicy(entry.value, file: file, into: &diagnostics)
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
        return SourceDefinition(settings: settings, products: products)
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
            switch entry.key {
            case "id": product.id = value.string(key: "id", file: file, into: &diagnostics)
            case "type": product.type = value.string(key: "type", file: file, into: &diagnostics)
            case "referenceName": product.referenceName = value.string(key: "referenceName", file: file, into: &diagnostics)
            case "status": product.status = value.string(key: "status", file: file, into: &diagnostics)
            case "platforms": product.platforms = value.stringArray(key: "platforms", file: file, into: &diagnostics)
            case "minimumAppVersion": product.minimumAppVersion = value.string(key: "minimumAppVersion", file: file, into: &diagnostics)
            case "availableFrom": product.availableFrom = value.date(key: "availableFrom", file: file, into: &diagnostics)
            case "availableUntil": product.availableUntil = value.date(key: "availableUntil", file: file, into: &diagnostics)
            case "displayOrder": product.displayOrder = value.integer(key: "displayOrder", file: file, into: &diagnostics)
            case "subscription": product.subscription = subscription(value, file: file, into: &diagnostics)
            case "metadata":
                guard case .dictionary = value.value else {
                    diagnostics.append(.error("'metadata' must be a <dict>, found \(value.value.kindName)", file: file, at: value.position))
                    break
                }
                var writer = JSONWriter()
                if writeJSON(value, to: &writer, file: file, into: &diagnostics) { product.metadataJSON = writer.compactBytes }
            default:
                diagnostics.append(.warning("unknown product key '\(entry.key)' is ignored", file: file, at: entry.keyPosition))
            }
            if diagnostics[before...].contains(where: { $0.severity == .error }) { product.malformedKeys.insert(entry.key) }
        }
        return product
    }

    private func subscription(_ node: PropertyListNode, file: String, into diagnostics: inout [Diagnostic]) -> SubscriptionDefinition? {
        guard case .dictionary(let dictionary) = node.value else {
            diagnostics.append(.error("'subscription' must be a <dict>, found \(node.value.kindName)", file: file, at: node.position))
            return nil
        }
        var result = SubscriptionDefinition(position: node.position)
        for entry in dictionary.entries {
            switch entry.key {
            case "group": result.group = entry.value.string(key: "group", file: file, into: &diagnostics)
            case "period": result.period = entry.value.string(key: "period", file: file, into: &diagnostics)
            case "rank": result.rank = entry.value.integer(key: "rank", file: file, into: &diagnostics)
            default:
                diagnostics.append(.warning("unknown subscription key '\(entry.key)' is ignored", file: file, at: entry.keyPosition))
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
            if entry.key == "minimumInvalidRate" {
                switch entry.value.value {
                case .real(let rate): policy.minimumInvalidRate = Located(rate, at: entry.value.position)
                case .integer(let rate): policy.minimumInvalidRate = Located(Double(rate), at: entry.value.position)
                default:
                    diagnostics.append(
                        .error(
                            "'minimumInvalidRate' must be a <real>, found \(entry.value.value.kindName)", file: file,
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
        case .string(let value): writer.string(value)
        case .integer(let value): writer.integer(value)
        case .real(let value):
            guard value.isFinite else {
                diagnostics.append(.error("metadata value \(value) has no JSON form; use a finite number", file: file, at: node.position))
                return false
            }
            writer.real(value)
        case .boolean(let value): writer.boolean(value)
        case .date(let value): writer.string(value.iso8601)
        case .data(let bytes): writer.string(Base64.encode(bytes))
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

/// Builds and decodes recorded products on a serial queue, in the order they were submitted.
///
/// `@unchecked Sendable`: the builder, `products` and `problems` are touched only on `queue`
/// until ``finish()`` has waited for it.
private final class ProductPipeline: @unchecked Sendable {
    private let queue = DispatchQueue(label: "catalog.products")
    /// Batches submitted and not yet decoded: when decoding falls behind, the parser waits
    /// rather than recording the whole file ahead.
    private let inFlight = DispatchSemaphore(value: 8)
    private let builder: RecordedElementBuilder
    private let decode: (PropertyListNode, inout [Diagnostic]) -> ProductDefinition?
    private var products: [ProductDefinition] = []
    private var problems: [Diagnostic] = []

    init(builder: RecordedElementBuilder, decode: @escaping (PropertyListNode, inout [Diagnostic]) -> ProductDefinition?) {
        self.builder = builder
        self.decode = decode
    }

    func submit(_ batch: RecordedElements) {
        inFlight.wait()
        queue.async {
            self.problems += self.builder.build(batch) { node in
                if let product = self.decode(node, &self.problems) { self.products.append(product) }
            }
            self.inFlight.signal()
        }
    }

    func finish() -> (products: [ProductDefinition], problems: [Diagnostic]) {
        queue.sync { (products, problems) }
    }
}
