import PropertyList

/// Writes an app's definitions as one canonical property list in the full form: the file that
/// tools write back into `catalog/` (a rollback), for editors to read, diff and commit.
///
/// Products come as their snapshot JSON (``FeedRenderer/Audience/snapshot``), whose keys are the
/// source keys: each is written as the plist value the decoder reads back to the same JSON, so
/// that publishing the written file renders the same feed bytes. The `quarantine` key is left
/// out: verdicts live in the feedback file, not in the definitions.
public struct CanonicalSource: Sendable {
    public var app: String
    /// The app's `platforms` setting; left out when empty.
    public var platforms: [Platform] = []
    public var feedbackPolicy = FeedbackPolicy()
    private var products: [[UInt8]] = []
    private var statusOverrides: [Int: ProductStatus] = [:]

    public init(app: String) {
        self.app = app
    }

    /// Adds a product from its snapshot JSON, with `status` in place of its own when given.
    public mutating func append(snapshot json: [UInt8], status: ProductStatus? = nil) {
        if let status { statusOverrides[products.count] = status }
        products.append(json)
    }

    /// The file's bytes; throws when a snapshot line is not a JSON object.
    public func encoded() throws -> [UInt8] {
        var writer = PropertyListWriter()
        writer.beginDictionary()
        writer.key("app")
        writer.string(app)
        if !platforms.isEmpty {
            writer.key("platforms")
            writer.beginArray()
            for platform in platforms { writer.string(platform.name) }
            writer.endArray()
        }
        writePolicy(&writer)
        writer.key("products")
        writer.beginArray()
        for (index, json) in products.enumerated() {
            try json.withUnsafeBufferPointer { buffer in
                var scanner = JSONScanner(buffer)
                try Self.writeProduct(&scanner, status: statusOverrides[index], to: &writer)
                try scanner.expectEnd()
            }
        }
        writer.endArray()
        writer.endDictionary()
        return writer.document
    }

    /// Only the thresholds that differ from the defaults: the file says what the editor chose.
    private func writePolicy(_ writer: inout PropertyListWriter) {
        let defaults = FeedbackPolicy()
        let integers: [(String, Int64, Int64)] = [
            ("suspectAfterInstalls", feedbackPolicy.suspectAfterInstalls, defaults.suspectAfterInstalls),
            ("quarantineAfterInstalls", feedbackPolicy.quarantineAfterInstalls, defaults.quarantineAfterInstalls),
            ("windowHours", feedbackPolicy.windowHours, defaults.windowHours),
            ("graceHours", feedbackPolicy.graceHours, defaults.graceHours),
        ].filter { $0.1 != $0.2 }
        let rateDiffers = feedbackPolicy.minimumInvalidRate != defaults.minimumInvalidRate
        guard !integers.isEmpty || rateDiffers else { return }
        writer.key("feedbackPolicy")
        writer.beginDictionary()
        for (key, value, _) in integers {
            writer.key(key)
            writer.integer(value)
        }
        if rateDiffers {
            writer.key("minimumInvalidRate")
            writer.real(feedbackPolicy.minimumInvalidRate)
        }
        writer.endDictionary()
    }

    /// Dates the decoder reads as `<date>`; in the snapshot they are ISO 8601 strings.
    private static let dateKeys: Set<String> = ["availableFrom", "availableUntil"]

    private static func writeProduct(_ scanner: inout JSONScanner, status: ProductStatus?, to writer: inout PropertyListWriter) throws {
        guard try scanner.peekKind() == .object else { throw JSONScanner.SyntaxError(message: "a product must be an object") }
        writer.beginDictionary()
        try scanner.readObject { key, scanner in
            if key == ProductDiff.quarantineKey {
                try scanner.skipValue()
                return
            }
            writer.key(key)
            if key == "status", let status {
                _ = try scanner.readString()
                writer.string(status.rawValue)
            } else if dateKeys.contains(key), try scanner.peekKind() == .string {
                let text = try scanner.readString()
                if let moment = Timestamp(iso8601: text) { writer.date(moment) } else { writer.string(text) }
            } else {
                try writeValue(&scanner, to: &writer)
            }
        }
        writer.endDictionary()
    }

    /// Any JSON value as the plist value the source decoder turns back into the same JSON:
    /// numbers with a fraction or exponent as `<real>` (the JSON writer prints them so), others
    /// as `<integer>`.
    private static func writeValue(_ scanner: inout JSONScanner, to writer: inout PropertyListWriter) throws {
        switch try scanner.peekKind() {
        case .object:
            writer.beginDictionary()
            try scanner.readObject { key, scanner in
                writer.key(key)
                try writeValue(&scanner, to: &writer)
            }
            writer.endDictionary()
        case .array:
            writer.beginArray()
            try scanner.readArray { _, scanner in try writeValue(&scanner, to: &writer) }
            writer.endArray()
        case .string:
            writer.string(try scanner.readString())
        case .number:
            let text = try scanner.readNumber()
            if let integer = Int64(text) {
                writer.integer(integer)
            } else if let real = Double(text), real.isFinite {
                writer.real(real)
            } else {
                throw JSONScanner.SyntaxError(message: "number \(text) has no plist form")
            }
        case .boolean:
            writer.boolean(try scanner.readBoolean())
        case .null:
            throw JSONScanner.SyntaxError(message: "null has no plist form")
        }
    }
}
