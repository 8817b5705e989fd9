import AppStore
import Foundation
import Ledger

extension AppStoreTestPKI {
    /// A payload object (``transaction(_:)``, ``renewalInfo(_:)``…) decoded as the verifier would
    /// decode it once verified: for the tests of what comes after verification (stores, ledger).
    public static func decoded<Payload: Decodable>(_ payload: [String: any Sendable], as type: Payload.Type = Payload.self) -> Payload {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        // The fixtures are the test's own: a failure here is a broken test, not a refusal to test.
        do {
            return try decoder.decode(Payload.self, from: json(payload))
        } catch {
            preconditionFailure("a fixture does not decode: \(error)")
        }
    }
}
