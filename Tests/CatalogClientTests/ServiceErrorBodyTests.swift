import Foundation
import Testing

@testable import CatalogClient

/// The one reader of the server's error body: what it takes for one, and what it leaves.
@Suite struct ServiceErrorBodyTests {
    @Test func readsTheMessageAndTheCode() {
        let body = ServiceErrorBody(Data(#"{"error":{"message":"forged","code":"forged-signature","status":21002}}"#.utf8))
        #expect(body == ServiceErrorBody(message: "forged", code: "forged-signature"))
        #expect(ServiceErrorBody(Data(#"{"error":{"message":"no app"}}"#.utf8)) == ServiceErrorBody(message: "no app", code: nil))
        // A code of another type is no code; the message still stands.
        #expect(ServiceErrorBody(Data(#"{"error":{"message":"m","code":7}}"#.utf8)) == ServiceErrorBody(message: "m", code: nil))
    }

    @Test(arguments: [
        "<html>404</html>", #"{"error":"not found"}"#, #"{"message":"x"}"#, #"{"error":{"message":3}}"#, "", "[]",
    ])
    func anythingElseIsNoServiceError(text: String) {
        #expect(ServiceErrorBody(Data(text.utf8)) == nil)
    }
}
