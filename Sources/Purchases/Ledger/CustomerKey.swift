/// Who a purchase belongs to: the app's `appAccountToken` when it set one, else the Apple account's
/// per-app `appTransactionId`, else the purchase's original transaction (docs/purchases.md, "Customers").
public struct CustomerKey: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Which of the three the key is.
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        /// The UUID the app set on the purchase (or sent beside it).
        case appAccountToken
        /// The Apple account's per-app id (iOS 18.4 and later).
        case appTransactionId
        /// The original transaction id, when nothing names the customer better.
        case originalTransactionId
    }

    /// Which key it is.
    public var kind: Kind
    /// Its value, as Apple or the app wrote it (an `appAccountToken` is lower-cased: it is a UUID).
    public var value: String

    /// A key of `kind` with `value`.
    public init(kind: Kind, value: String) {
        self.kind = kind
        self.value = kind == .appAccountToken ? value.lowercased() : value
    }

    /// The customer a transaction names: `appAccountToken` (the one the app sent beside it wins over
    /// none in the transaction, never over one the App Store signed), else `appTransactionId`, else the
    /// original transaction id; nil when it names none of them (malformed evidence).
    public static func of(_ transaction: JWSTransactionDecodedPayload, appAccountToken sent: String? = nil) -> CustomerKey? {
        if let token = nonEmpty(transaction.appAccountToken) ?? nonEmpty(sent) { return CustomerKey(kind: .appAccountToken, value: token) }
        if let id = nonEmpty(transaction.appTransactionId) { return CustomerKey(kind: .appTransactionId, value: id) }
        if let id = nonEmpty(transaction.originalTransactionId) ?? nonEmpty(transaction.transactionId) {
            return CustomerKey(kind: .originalTransactionId, value: id)
        }
        return nil
    }

    private static func nonEmpty(_ text: String?) -> String? {
        guard let text, !text.isEmpty else { return nil }
        return text
    }

    /// `kind:value`.
    public var description: String { "\(kind.rawValue):\(value)" }
}
