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

    /// Long inputs, decoded four characters at a time, agree with Foundation; so does a collection
    /// without contiguous storage.
    @Test func decodesLongInputsAndAnyCollection() {
        for length in [300, 3_001, 12_002] {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ $0 >> 3) }
            let text = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.decode(bytes: Array(text.utf8)) == bytes, "\(length) bytes")
            let characters = Array(text.utf8)
            #expect(Base64URL.decode(bytes: characters.indices.lazy.map { characters[$0] }) == bytes, "\(length) bytes, not contiguous")
        }
    }

    @Test(arguments: [
        "AB", "AAB", "A", "AAAAA", "AA==", "A+", "A/", "A A", "ä", "*AAA", "A*AA", "AA*A", "AAA*", "AAAAAAA*AAAA", "AAAA*A", "AAAAA*",
        "AAAAAA*", "AAAA\u{0}AAA",
    ])
    func refusesNonCanonicalOrForeignSpellings(text: String) {
        #expect(Base64URL.decode(bytes: Array(text.utf8)) == nil)
        #expect(Base64URL.decode(text) == nil)
    }

    @Test func trimsOnlyASCIIWhitespace() {
        #expect(Array(trimmingASCIIWhitespace(Array(" \n\tab c\r\n".utf8))) == Array("ab c".utf8))
        #expect(trimmingASCIIWhitespace(Array("  ".utf8)).isEmpty)
    }
}
