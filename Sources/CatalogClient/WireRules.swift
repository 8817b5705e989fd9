/// What the server accepts in a feed query and a report, checked before sending: a value the
/// server would refuse costs the whole request (a 400 drops a report with all its identifiers,
/// and a feed request falls back), so the client leaves such a value out instead.
enum WireRules {
    /// A product identifier: 1 to 100 of `[A-Za-z0-9._-]`.
    static func isIdentifier(_ text: String) -> Bool {
        (1...100).contains(text.utf8.count)
            && text.utf8.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") }
    }

    /// An app version such as `2.3.1`: one to four numbers. `CFBundleShortVersionString` may hold
    /// more (`2.3 beta`), which the server refuses; such a version is not sent.
    static func appVersion(_ text: String?) -> String? {
        guard let text, text.utf8.count <= 32 else { return nil }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...4).contains(parts.count), parts.allSatisfy({ (1...9).contains($0.utf8.count) && $0.utf8.allSatisfy(isDigit) }) else {
            return nil
        }
        return text
    }

    /// A storefront such as `USA`: 1 to 16 letters or digits.
    static func storefront(_ text: String?) -> String? {
        guard let text, (1...16).contains(text.utf8.count), text.utf8.allSatisfy(isAlphanumeric) else { return nil }
        return text
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        isDigit(byte) || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
    }
}
