/// Why a piece of a store's evidence was refused: a stable `code` to branch and count on, and a
/// `reason` that says exactly why, for people. The codes never change once shipped; each store's
/// adapter refuses with them (the App Store's adds Apple's old `verifyReceipt` status where one means
/// the same).
public struct PurchaseRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    /// A refusal's class, stable across releases: new ones are added, none is renamed.
    public struct Code: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        /// The code as written in answers and logs.
        public var rawValue: String

        /// Makes a code from its written form.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// Not evidence of a form we read: not a compact JWS, bad base64, not JSON, not PKCS#7, fields of
        /// the wrong type, a required field missing. Apple's 21002.
        public static let malformed = Code(rawValue: "malformed")
        /// Not signed by the App Store: a signature that does not verify, an algorithm other than ES256,
        /// a chain that does not reach a trusted root at the evidence's own date, a missing marker OID, a
        /// device hash that does not match. Apple's 21003.
        public static let notAuthenticated = Code(rawValue: "not-authenticated")
        /// Sandbox evidence sent to an app that accepts production only. Apple's 21007.
        public static let sandboxEvidence = Code(rawValue: "sandbox-evidence")
        /// Production evidence sent to an app that accepts the sandbox only. Apple's 21008.
        public static let productionEvidence = Code(rawValue: "production-evidence")
        /// Evidence in an environment the app does not accept at all (Xcode without its certificate, or
        /// an environment this verifier does not know).
        public static let environmentNotAccepted = Code(rawValue: "environment-not-accepted")
        /// Genuine evidence, but of another app: bundle id or `appAppleId` differ from the app's settings,
        /// or a nested token is bound to another app or environment than its notification.
        public static let wrongApp = Code(rawValue: "wrong-app")
        /// Genuine evidence of a product the app's catalog does not know. Judged by the caller, which
        /// holds the catalog; the code is here so that every refusal has one vocabulary.
        public static let unknownProduct = Code(rawValue: "unknown-product")
        /// Genuine evidence already bound to another customer. Judged by the ledger; the code is here for
        /// the same reason.
        public static let boundToAnotherCustomer = Code(rawValue: "bound-to-another-customer")

        /// The written form.
        public var description: String { rawValue }
    }

    /// The class of refusal.
    public var code: Code
    /// Says exactly why; it quotes at most a short, bounded piece of the input.
    public var reason: String

    /// Makes a refusal.
    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    /// `code: reason`.
    public var description: String { "\(code): \(reason)" }

    /// Quotes at most `limit` characters of untrusted text, so that a reason stays short whatever the input.
    public static func excerpt(_ text: String, limit: Int = 64) -> String {
        let cut = text.prefix(limit)
        return "\"" + cut + (cut.count < text.count ? "…" : "") + "\""
    }
}
