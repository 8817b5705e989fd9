/// A key a customer is found by: the app's own account id (shared by every store), or a key one
/// store assigns, namespaced by that store (docs/purchases.md, "Customers").
public struct CustomerKey: Sendable, Hashable, Codable, CustomStringConvertible {
    /// What the key is.
    public struct Kind: RawRepresentable, Sendable, Hashable, Codable {
        /// The stored name.
        public var rawValue: String
        /// Makes a kind from its stored name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The app's own account id, the same whichever store sold: the App Store's `appAccountToken`
        /// (a UUID the app sets on the purchase), Google Play's `obfuscatedAccountId`.
        public static let appAccount = Self(rawValue: "appAccount")
        /// A store's id of the buyer's account for this app (the App Store's `appTransactionId`).
        public static let storeAccount = Self(rawValue: "storeAccount")
        /// A purchase's key in its store (the App Store's original transaction id): what names a
        /// customer when nothing names it better.
        public static let purchase = Self(rawValue: "purchase")
    }

    /// The store whose key it is; nil for an app account, which every store shares.
    public var marketplace: Marketplace?
    /// What the key is.
    public var kind: Kind
    /// Its value (an app account is lower-cased: the App Store's is a UUID, and a token is one
    /// account however an app spells it).
    public var value: String

    /// A key of `kind` with `value`, in `marketplace` (ignored for an app account).
    public init(kind: Kind, value: String, marketplace: Marketplace? = .appStore) {
        self.kind = kind
        self.marketplace = kind == .appAccount ? nil : marketplace
        self.value = kind == .appAccount ? value.lowercased() : value
    }

    /// An app account's key.
    public static func appAccount(_ value: String) -> CustomerKey { CustomerKey(kind: .appAccount, value: value) }

    /// The customer a transaction names: its app account (the one the store signed, else the one
    /// sent beside it), else its store account, else its purchase; nil when it names none of them.
    public static func of(_ transaction: LedgerTransaction, appAccount sent: String? = nil) -> CustomerKey? {
        if let account = nonEmpty(transaction.appAccount) ?? nonEmpty(sent) { return .appAccount(account) }
        if let account = nonEmpty(transaction.storeAccount) {
            return CustomerKey(kind: .storeAccount, value: account, marketplace: transaction.marketplace)
        }
        if let purchase = transaction.purchase {
            return CustomerKey(kind: .purchase, value: purchase, marketplace: transaction.marketplace)
        }
        return nil
    }

    private static func nonEmpty(_ text: String?) -> String? {
        guard let text, !text.isEmpty else { return nil }
        return text
    }

    /// The name answers give the kind, in its store's words: `appAccountToken`, and the App Store's
    /// `appTransactionId` and `originalTransactionId` (docs/purchases.md, "Reading a customer").
    public var kindName: String {
        switch (marketplace, kind) {
        case (_, .appAccount): "appAccountToken"
        case (.appStore?, .storeAccount): "appTransactionId"
        case (.appStore?, .purchase): "originalTransactionId"
        case (.googlePlay?, .purchase): "purchaseToken"
        default: (marketplace.map { $0.rawValue + "." } ?? "") + kind.rawValue
        }
    }

    /// `kind:value`, in the answers' words.
    public var description: String { "\(kindName):\(value)" }
}
