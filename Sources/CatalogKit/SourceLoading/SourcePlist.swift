import PropertyList

/// Writes an app's catalog source as a canonical property list: app settings, then products,
/// each with its keys in the order of docs/catalog-format.md. Keys the format does not know are
/// kept, after the known ones, so that rewriting a file never loses what an editor wrote.
///
/// Every tool that writes sources (such as `catalog import storekit`) goes through here, so that
/// a file rewritten twice is byte-identical and diffs show only what changed.
public enum SourcePlist {
    static let settingsOrder = [
        "app", "platforms", "feedbackPolicy", "appAppleId", "environments", "transferPolicy", "xcodeCertificate", "webhookURL",
        "webhookSecretFile", "serverAPIKeyId", "serverAPIIssuerId", "serverAPIKeyFile", "answerConsumptionRequests",
        "sampleContentProvided", "refundPreference", "sandboxUnlocks", "requireDeviceId", "playPackageName", "playLicenseKey",
        "playPushAudience", "playPushServiceAccount", "playServiceAccountKeyFile", "products", "content",
    ]
    static let productOrder = [
        "id", "type", "referenceName", "status", "platforms", "minimumAppVersion", "availableFrom", "availableUntil", "subscription",
        "duration", "play", "entitlements", "displayOrder", "metadata",
    ]
    static let subscriptionOrder = ["group", "period", "rank"]
    static let playOrder = ["productId", "basePlan", "offer", "purchaseOption"]

    /// The whole document for a full-form root dict.
    public static func encode(_ root: PropertyListDictionary) -> [UInt8] {
        var writer = PropertyListWriter()
        writer.beginDictionary()
        for entry in ordered(root, by: settingsOrder) {
            writer.key(entry.key)
            if entry.key == "products", case .array(let products) = entry.value.value {
                writer.beginArray()
                for product in products { writeProduct(product.value, to: &writer) }
                writer.endArray()
            } else {
                writer.value(entry.value.value)
            }
        }
        writer.endDictionary()
        return writer.document
    }

    private static func writeProduct(_ value: PropertyListValue, to writer: inout PropertyListWriter) {
        guard case .dictionary(let product) = value else { return writer.value(value) }
        writer.beginDictionary()
        for entry in ordered(product, by: productOrder) {
            writer.key(entry.key)
            if entry.key == "subscription", case .dictionary(let subscription) = entry.value.value {
                writer.value(.dictionary(PropertyListDictionary(entries: ordered(subscription, by: subscriptionOrder))))
            } else if entry.key == "play", case .dictionary(let play) = entry.value.value {
                writer.value(.dictionary(PropertyListDictionary(entries: ordered(play, by: playOrder))))
            } else {
                writer.value(entry.value.value)
            }
        }
        writer.endDictionary()
    }

    /// Known keys in `order`, then the others as they came.
    private static func ordered(_ dictionary: PropertyListDictionary, by order: [String]) -> [PropertyListDictionary.Entry] {
        let known = order.compactMap { key in dictionary.entries.first { $0.key == key } }
        return known + dictionary.entries.filter { !order.contains($0.key) }
    }
}

extension PropertyListDictionary {
    /// Sets `key` in place (or appends it); nil removes it.
    mutating func set(_ key: String, _ value: PropertyListValue?) {
        guard let value else {
            entries.removeAll { $0.key == key }
            return
        }
        let node = PropertyListNode(value, at: .startOfFile)
        if let index = entries.firstIndex(where: { $0.key == key }) {
            entries[index].value = node
        } else {
            entries.append(Entry(key: key, keyPosition: .startOfFile, value: node))
        }
    }
}
