import Foundation

/// The JSON answers of the service that are not feeds, as `Codable` values: what each answer holds is
/// declared once, and `ServiceJSONTests` holds every one of them to its schema in `openapi.yaml`.
///
/// Feeds are not among them: their bytes are hashed into their ETags, so `JSONWriter` spells them out
/// (see its file). Nor are error bodies and the answers of the report path (measured by
/// `scripts/bench-ingest`, where an encoder per report would cost); their schemas are checked all the same.
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
