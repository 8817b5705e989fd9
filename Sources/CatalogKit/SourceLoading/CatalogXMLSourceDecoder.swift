import Foundation
import PropertyList
import Time

/// Turns a catalog XML file (namespace `urn:iap-catalog:1`, schema in `Resources/catalog.xsd`)
/// into a ``SourceDefinition``: the hardened reader first, then the XSD, then the model.
struct CatalogXMLSourceDecoder {
    static let namespace = "urn:iap-catalog:1"
    let reader: XMLElementReader

    /// The XSD shipped with the package, compiled once per process.
    static let schema: Result<XMLSchema, any Error> = {
        guard let url = Bundle.module.url(forResource: "catalog", withExtension: "xsd"),
            let data = try? Data(contentsOf: url)
        else { return .failure(CatalogError.missingResource("catalog.xsd")) }
        return Result { try XMLSchema(bytes: [UInt8](data)) }
    }()

    func decode(_ source: SourceFile, root: XMLElement, into diagnostics: inout [Diagnostic]) -> SourceDefinition? {
        let file = source.path
        switch Self.schema {
        case .failure(let error):
            diagnostics.append(.error("cannot check catalog XML: \(error)", file: file, at: .startOfFile))
            return nil
        case .success(let schema):
            let violations = schema.validate(source)
            if !violations.isEmpty {
                diagnostics += violations
                return nil
            }
        }
        var settings = AppSettingsDefinition(file: file)
        settings.app = root.located("app")
        settings.appAppleId = integer(root, "appAppleId", file: file, into: &diagnostics)
        settings.transferPolicy = root.located("transferPolicy")
        settings.xcodeCertificate = root.located("xcodeCertificate")
        settings.webhookURL = root.located("webhookURL")
        settings.webhookSecretFile = root.located("webhookSecretFile")
        settings.serverAPIKeyId = root.located("serverAPIKeyId")
        settings.serverAPIIssuerId = root.located("serverAPIIssuerId")
        settings.serverAPIKeyFile = root.located("serverAPIKeyFile")
        settings.refundPreference = root.located("refundPreference")
        settings.playPackageName = root.located("playPackageName")
        settings.playLicenseKey = root.located("playLicenseKey")
        settings.playPushAudience = root.located("playPushAudience")
        settings.playPushServiceAccount = root.located("playPushServiceAccount")
        settings.playServiceAccountKeyFile = root.located("playServiceAccountKeyFile")
        // xs:boolean: the schema has admitted only true, false, 1 or 0.
        settings.answerConsumptionRequests = root.located("answerConsumptionRequests").map {
            Located($0.value == "true" || $0.value == "1", at: $0.position)
        }
        settings.sampleContentProvided = root.located("sampleContentProvided").map {
            Located($0.value == "true" || $0.value == "1", at: $0.position)
        }
        // xs:boolean: the schema has admitted only true, false, 1 or 0.
        settings.sandboxUnlocks = root.located("sandboxUnlocks").map { Located($0.value == "true" || $0.value == "1", at: $0.position) }
        settings.requireDeviceId = root.located("requireDeviceId").map {
            Located($0.value == "true" || $0.value == "1", at: $0.position)
        }
        var products = CheckedProducts()
        var content: [ContentItemDefinition] = []
        for child in root.children {
            switch child.name {
            case "platforms": settings.platforms = list(child)
            case "feedbackPolicy": settings.feedbackPolicy = feedbackPolicy(child, file: file, into: &diagnostics)
            case "environments": settings.environments = list(child)
            case "product":
                let definition = product(child, file: file, into: &diagnostics)
                products.append(definition, into: &diagnostics)
            case "content": content.append(contentItem(child, file: file, into: &diagnostics))
            default: break  // the schema admits nothing else
            }
        }
        return SourceDefinition(settings: settings, products: products, content: content)
    }

    /// A `<content>` element: one item, its sale in attributes and its files as `<file>` children.
    private func contentItem(_ element: XMLElement, file: String, into diagnostics: inout [Diagnostic]) -> ContentItemDefinition {
        var item = ContentItemDefinition(file: file, position: element.position)
        item.id = element.located("id")
        item.product = element.located("product")
        item.group = element.located("group")
        item.folder = element.located("folder")
        let before = diagnostics.count
        item.published = date(element, "published", file: file, into: &diagnostics)
        if diagnostics.count > before { item.malformedKeys.insert("published") }
        // A path is taken as written: spaces at its ends are part of a file name.
        item.files = Located(element.children.filter { $0.name == "file" }.map { Located($0.text, at: $0.position) }, at: element.position)
        return item
    }

    private func product(_ element: XMLElement, file: String, into diagnostics: inout [Diagnostic]) -> ProductDefinition {
        var product = ProductDefinition(file: file, position: element.position)
        product.id = element.located("id")
        product.type = element.located("type")
        product.status = element.located("status")
        product.referenceName = element.located("referenceName")
        product.minimumAppVersion = element.located("minimumAppVersion")
        product.availableFrom = date(element, "availableFrom", file: file, into: &diagnostics)
        product.availableUntil = date(element, "availableUntil", file: file, into: &diagnostics)
        product.displayOrder = integer(element, "displayOrder", file: file, into: &diagnostics)
        product.duration = element.located("duration")
        if let platforms = element.child("platforms") { product.platforms = self.list(platforms) }
        if let entitlements = element.child("entitlements") { product.entitlements = self.list(entitlements) }
        if let subscription = element.child("subscription") {
            product.subscription = SubscriptionDefinition(
                position: subscription.position, group: subscription.located("group"),
                period: subscription.located("period"),
                rank: integer(subscription, "rank", file: file, into: &diagnostics))
        }
        if let play = element.child("play") {
            var definition = PlayDefinition(position: play.position)
            definition.productId = play.located("productId")
            definition.basePlan = play.located("basePlan")
            definition.offer = play.located("offer")
            definition.purchaseOption = play.located("purchaseOption")
            product.play = definition
        }
        if let metadata = element.child("metadata") {
            var writer = JSONWriter()
            writer.beginObject()
            var valid = true
            var keys: [String: SourcePosition] = [:]
            for entry in metadata.children {
                let key = entry.attribute("key") ?? ""
                if let first = keys[key] {
                    diagnostics.append(.error("duplicate metadata key '\(key)' (first at \(first))", file: file, at: entry.position))
                    valid = false
                    continue
                }
                keys[key] = entry.position
                writer.key(key)
                switch entry.attribute("type") ?? "string" {
                case "integer":
                    guard let value = Int64(entry.text.trimmingCharacters(in: .whitespaces)) else {
                        diagnostics.append(
                            .error(
                                "metadata entry '\(entry.attribute("key") ?? "")' is not a 64-bit integer", file: file, at: entry.position))
                        valid = false
                        continue
                    }
                    writer.integer(value)
                case "real":
                    guard let value = Double(entry.text.trimmingCharacters(in: .whitespaces)), value.isFinite else {
                        diagnostics.append(
                            .error(
                                "metadata entry '\(entry.attribute("key") ?? "")' is not a finite number", file: file, at: entry.position))
                        valid = false
                        continue
                    }
                    writer.real(value)
                case "boolean":
                    switch entry.text.trimmingCharacters(in: .whitespaces) {
                    case "true": writer.boolean(true)
                    case "false": writer.boolean(false)
                    default:
                        diagnostics.append(
                            .error("metadata entry '\(entry.attribute("key") ?? "")' must be true or false", file: file, at: entry.position)
                        )
                        valid = false
                    }
                default:
                    writer.string(entry.text)
                }
            }
            writer.endObject()
            if valid { product.metadataJSON = writer.compactBytes }
        }
        return product
    }

    /// A list element's children's texts (`platforms`, `entitlements`, `environments`).
    private func list(_ element: XMLElement) -> Located<[Located<String>]> {
        Located(
            element.children.map { Located($0.text.trimmingCharacters(in: .whitespacesAndNewlines), at: $0.position) },
            at: element.position)
    }

    private func feedbackPolicy(_ element: XMLElement, file: String, into diagnostics: inout [Diagnostic]) -> Located<
        FeedbackPolicyDefinition
    > {
        var policy = FeedbackPolicyDefinition()
        for key in FeedbackPolicyRules.integerKeys {
            if let value = integer(element, key, file: file, into: &diagnostics) { policy.integers[key] = value }
        }
        for key in FeedbackPolicyRules.realKeys {
            guard let text = element.attribute(key) else { continue }
            if let rate = Double(text) {
                policy.reals[key] = Located(rate, at: element.position)
            } else {
                diagnostics.append(.error("\(key) '\(text)' is not a number", file: file, at: element.position))
            }
        }
        return Located(policy, at: element.position)
    }

    private func integer(_ element: XMLElement, _ name: String, file: String, into diagnostics: inout [Diagnostic]) -> Located<Int64>? {
        guard let text = element.attribute(name) else { return nil }
        guard let value = Int64(text.trimmingCharacters(in: .whitespaces)) else {
            diagnostics.append(.error("\(name) '\(text)' is not a 64-bit integer", file: file, at: element.position))
            return nil
        }
        return Located(value, at: element.position)
    }

    private func date(_ element: XMLElement, _ name: String, file: String, into diagnostics: inout [Diagnostic]) -> Located<Timestamp>? {
        guard let text = element.attribute(name) else { return nil }
        guard let value = Timestamp(iso8601: text) else {
            diagnostics.append(.error(DateRules.message(key: name, text: text), file: file, at: element.position))
            return nil
        }
        return Located(value, at: element.position)
    }
}

extension XMLElement {
    /// An attribute's value, located at the element (libxml2 does not report attribute positions).
    fileprivate func located(_ name: String) -> Located<String>? {
        attribute(name).map { Located($0, at: position) }
    }
}
