import CatalogKit
import Testing
import Time

@Suite struct TokenSecretTests {
    @Test func secretsAreRandomAndOnlyTheirHashMatches() {
        let first = TokenSecret.generate()
        let second = TokenSecret.generate()
        #expect(first != second)
        #expect(first.hasPrefix("cat_") && first.count == 4 + 43, "256 bits in base64url without padding")
        #expect(
            first.utf8.allSatisfy {
                $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") || ($0 < 128 && Character(Unicode.Scalar($0)).isLetter)
                    || ($0 < 128 && Character(Unicode.Scalar($0)).isNumber)
            })
        let token = EditorToken(
            name: "alice", role: .editor, secretHash: TokenSecret.hash(first), createdAt: Timestamp(secondsSince1970: 0))
        #expect(token.secretHash.count == 64 && !token.secretHash.contains(first))
        #expect(TokenSecret.hash(first) == token.secretHash)
        #expect(TokenSecret.hash(second) != token.secretHash)
        #expect(TokenSecret.hash(String(first.dropLast())) != token.secretHash)
        #expect(TokenSecret.hash("") != token.secretHash)
    }

    @Test(arguments: [
        ("alice", true), ("ci-bot_2", true), ("a@b.c", true), ("", false), ("two words", false), (String(repeating: "a", count: 65), false),
    ])
    func tokenNames(_ name: String, _ valid: Bool) {
        #expect((TokenSecret.nameProblem(name) == nil) == valid)
    }
}
