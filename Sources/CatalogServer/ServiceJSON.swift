import Foundation

/// The JSON answers of the service that are not feeds, as `Codable` values: what each answer holds is
/// declared once, and `ServiceJSONTests` holds every one of them to its schema in `openapi.yaml`.
///
/// Feeds are not among them: their bytes are hashed into their ETags, so `JSONWriter` spells them out
/// (see its file). Nor are error bodies and the answers of the report path (measured by
/// `scripts/bench-ingest`: docs/benchmarks.md, "JSON on the report path"); their schemas are checked all the same.
/// The purchase endpoints' answers (`CustomerAnswer`, `NotificationAnswer`, `RefusalAnswer`) and the
/// webhook body (`WebhookBody`, whose encoded bytes are what is signed) are encoded here.
enum ServiceJSON {
    /// The one encoder configuration of these answers: keys sorted, slashes as they are.
    static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// The value's JSON, keys sorted: Foundation's encoder on Linux writes an object's keys in no fixed
    /// order, and an answer should not change its bytes from one request to the next.
    static func encode(_ value: some Encodable) -> [UInt8] {
        // The types here hold strings, integers and arrays of them, which always encode.
        return (try? [UInt8](encoder.encode(value))) ?? Array(#"{"error":{"message":"unencodable answer"}}"#.utf8)
    }

    /// The value's JSON object with `members` added after its own (sorted) ones, each member's bytes
    /// already one complete JSON value, copied as they are.
    ///
    /// For products, which the feed writer renders (`FeedRenderer.encode(_:for:)`): decoded and
    /// encoded again by Foundation, a real `1.0` in their metadata would come out as `1`, which
    /// `ProductJSON` reads back as an integer, so an editor who sent a product back unchanged would
    /// change its source. `members` keys are plain names, written without escaping.
    static func encode(_ value: some Encodable, appending members: [(key: String, json: [UInt8])]) -> [UInt8] {
        var bytes = encode(value)
        guard bytes.count >= 2, bytes.first == UInt8(ascii: "{"), bytes.last == UInt8(ascii: "}") else { return bytes }
        bytes.removeLast()
        for (key, json) in members {
            if bytes.count > 1 { bytes.append(UInt8(ascii: ",")) }
            bytes += Array("\"\(key)\":".utf8)
            bytes += json
        }
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    /// A JSON array of values that are each already JSON.
    static func array(_ items: [[UInt8]]) -> [UInt8] {
        [UInt8(ascii: "[")] + Array(items.joined(separator: [UInt8(ascii: ",")])) + [UInt8(ascii: "]")]
    }
}

/// `GET /v1/apps`: each published app's current revision.
struct AppList: Codable, Sendable, Equatable {
    /// One app.
    struct App: Codable, Sendable, Equatable {
        var app: String
        var revision: Int
        /// ISO 8601, UTC, to the second.
        var publishedAt: String
    }

    var apps: [App]
}

/// `GET /v1/apps/{app}/revisions`: an app's revisions, newest first.
struct RevisionList: Codable, Sendable, Equatable {
    /// One revision.
    struct Revision: Codable, Sendable, Equatable {
        var revision: Int
        /// ISO 8601, UTC, to the second.
        var publishedAt: String
    }

    var app: String
    var revisions: [Revision]
}
