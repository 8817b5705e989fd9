import Foundation

/// `catalog serve`'s error body, `{"error":{"message":…,"code":…}}` (docs/client.md), read with
/// `JSONDecoder` in one place: the client's message, its retry decision and its refusal code all come
/// from here.
struct ServiceErrorBody: Decodable, Sendable, Equatable {
    /// The server's message.
    var message: String
    /// A purchase refusal's stable code; nil when the body has none (or not a string).
    var code: String?

    private enum CodingKeys: String, CodingKey { case error, message, code }

    /// The body's error; nil when `body` is not such an object (a proxy's page, another host's 404).
    init(message: String, code: String?) {
        self.message = message
        self.code = code
    }

    init?(_ body: Data) {
        guard let decoded = try? JSONDecoder().decode(Self.self, from: body) else { return nil }
        self = decoded
    }

    init(from decoder: any Decoder) throws {
        let error = try decoder.container(keyedBy: CodingKeys.self).nestedContainer(keyedBy: CodingKeys.self, forKey: .error)
        message = try error.decode(String.self, forKey: .message)
        // A code of another type is no code: the message still stands, as it did when read by hand.
        code = try? error.decodeIfPresent(String.self, forKey: .code)
    }
}
