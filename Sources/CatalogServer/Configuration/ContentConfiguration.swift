import CatalogKit
import Content
import Foundation

/// How `catalog serve` delivers purchased content (docs/content.md, "The endpoints"): the keys that
/// sign and verify its URLs, and how long the URLs it signs live. `POST …/content` shares the
/// purchases' rate limit (``PurchasesConfiguration/perAddress``): both take the same evidence.
public struct ContentConfiguration: Sendable {
    /// The keys of `--content-keys`; nil: no content is delivered, and both content endpoints
    /// answer 503 saying so.
    public var keyRing: ContentKeyRing?
    /// The file `keyRing` was read from (`--content-keys`): read again when it changes, so that keys
    /// rotate without a restart; nil: `keyRing` stays as given.
    public var keyFile: String?
    /// How long a URL signed by `POST /v1/apps/{app}/content` lives (`--content-url-lifetime`), cut
    /// to the ring's maximum lifetime.
    public var urlLifetime: TimeInterval = 3600

    /// No keys: content is not delivered.
    public init() {}

    /// The longest `--content-url-lifetime`: the ring's maximum, so that every URL it signs verifies.
    public static let maximumURLLifetime = ContentKeyRing.defaultMaximumLifetime

    /// The key ring in the JSON file at `path` (docs/content.md, "Keys"), or a message that says
    /// what is wrong with it.
    public static func keyRing(file path: String) throws(ContentKeyError) -> ContentKeyRing {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ContentKeyError("cannot read the content key file \(path)")
        }
        do {
            return try ContentKeyRing(json: data)
        } catch {
            throw ContentKeyError("\(path): \(error.message)")
        }
    }
}
