import FeedSigning
import Foundation
import Ledger
import Testing

@testable import AppStore

/// The one base64url (FeedSigning's, which every JWS goes through): Foundation's answers, and one spelling per value.
@Suite struct Base64URLTests {
    @Test func decodesWhatFoundationEncodes() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            let text = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.decode(bytes: Array(text.utf8)) == bytes, "\(length) bytes")
            #expect(Base64URL.encode(bytes) == text, "\(length) bytes")
            #expect(Base64URL.decode(text) == Data(bytes), "\(length) bytes")
        }
    }

    @Test(arguments: ["AB", "AAB", "A", "AAAAA", "AA==", "A+", "A/", "A A", "ä"])
    func refusesNonCanonicalOrForeignSpellings(text: String) {
        #expect(Base64URL.decode(bytes: Array(text.utf8)) == nil)
        #expect(Base64URL.decode(text) == nil)
    }

    @Test func trimsOnlyASCIIWhitespace() {
        #expect(Array(trimmingASCIIWhitespace(Array(" \n\tab c\r\n".utf8))) == Array("ab c".utf8))
        #expect(trimmingASCIIWhitespace(Array("  ".utf8)).isEmpty)
    }
}
