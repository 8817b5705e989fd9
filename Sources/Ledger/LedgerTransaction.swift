import Foundation

/// One signed version of one transaction, in the ledger's terms: what every store's adapter makes
/// of the evidence it verified, and what the ledger derives purchases and periods from.
///
/// Stored as JSON with the answers' field names (Apple's: `originalTransactionId` for the purchase's
/// key, `appAccountToken` for the app's account, dates in milliseconds), so that a store keeps beside
/// them whatever else its evidence signed (the App Store's whole payload, say) and every row reads
/// back by name as a `LedgerTransaction` (``LedgerJSON``). The store it came from is not in the JSON:
/// it is the row's (``marketplace``).
public struct LedgerTransaction: Codable, Sendable, Hashable {
    /// The store the purchase was made in.
    public var marketplace: Marketplace = .appStore
    /// This transaction's id (a renewal has its own).
    public var transactionId: String?
    /// The purchase it belongs to: the store's key for it (the App Store's original transaction id),
    /// the same for every renewal of a subscription.
    public var purchaseKey: String?
    /// The product.
    public var productId: String?
    /// The subscription group, for subscriptions.
    public var subscriptionGroup: String?
    /// When the store charged the account (for a renewal, the renewal).
    public var purchaseDate: Date?
    /// When a subscription period expires or renews.
    public var expiresDate: Date?
    /// How many were bought.
    public var quantity: Int?
    /// The product's kind.
    public var kind: PurchaseKind?
    /// The app's own account id that the store signed in the purchase (Apple's `appAccountToken`).
    public var appAccount: String?
    /// Bought, or shared by Family Sharing.
    public var ownership: Ownership?
    /// When the store signed this version.
    public var signedDate: Date?
    /// Why it was refunded or revoked.
    public var revocationReason: RevocationReason?
    /// When it was refunded or revoked.
    public var revocationDate: Date?
    /// Whether the customer upgraded out of it.
    public var isUpgraded: Bool?
    /// The kind of offer, if any.
    public var offerType: OfferType?
    /// The offer's identifier.
    public var offerIdentifier: String?
    /// The offer's discount type.
    public var offerDiscountType: OfferDiscountType?
    /// The environment.
    public var environment: LedgerEnvironment?
    /// The store's id of the buyer's account for this app (Apple's `appTransactionId`, iOS 18.4 and later).
    public var storeAccount: String?

    /// A transaction with the given fields (the others nil).
    public init(
        marketplace: Marketplace = .appStore, transactionId: String?, purchaseKey: String?, productId: String?,
        subscriptionGroup: String? = nil, purchaseDate: Date?, expiresDate: Date? = nil, quantity: Int? = 1, kind: PurchaseKind?,
        appAccount: String? = nil, ownership: Ownership? = .purchased, signedDate: Date?, revocationReason: RevocationReason? = nil,
        revocationDate: Date? = nil, isUpgraded: Bool? = nil, offerType: OfferType? = nil, offerIdentifier: String? = nil,
        offerDiscountType: OfferDiscountType? = nil, environment: LedgerEnvironment?, storeAccount: String? = nil
    ) {
        self.marketplace = marketplace
        self.transactionId = transactionId
        self.purchaseKey = purchaseKey
        self.productId = productId
        self.subscriptionGroup = subscriptionGroup
        self.purchaseDate = purchaseDate
        self.expiresDate = expiresDate
        self.quantity = quantity
        self.kind = kind
        self.appAccount = appAccount
        self.ownership = ownership
        self.signedDate = signedDate
        self.revocationReason = revocationReason
        self.revocationDate = revocationDate
        self.isUpgraded = isUpgraded
        self.offerType = offerType
        self.offerIdentifier = offerIdentifier
        self.offerDiscountType = offerDiscountType
        self.environment = environment
        self.storeAccount = storeAccount
    }

    /// The purchase's key: ``purchaseKey``, else the transaction's own id; nil when it has neither.
    public var purchase: String? {
        if let key = purchaseKey, !key.isEmpty { return key }
        if let id = transactionId, !id.isEmpty { return id }
        return nil
    }

    /// Whether it renews its purchase rather than begins it: the App Store's first transaction is
    /// its own original; Google Play's renewal orders are the first order's id with `..n` after it.
    public var isRenewal: Bool {
        marketplace == .googlePlay ? transactionId?.contains("..") ?? false : purchase != transactionId
    }

    enum CodingKeys: String, CodingKey {
        case transactionId
        case purchaseKey = "originalTransactionId"
        case productId
        case subscriptionGroup = "subscriptionGroupIdentifier"
        case purchaseDate, expiresDate, quantity
        case kind = "type"
        case appAccount = "appAccountToken"
        case ownership = "inAppOwnershipType"
        case signedDate, revocationReason, revocationDate, isUpgraded, offerType, offerIdentifier, offerDiscountType, environment
        case storeAccount = "appTransactionId"
    }
}

/// What a store last said of one subscription's renewal, in the ledger's terms (the App Store's
/// renewal info): whether it is being billed again, and until when a grace period keeps access.
/// Stored with the answers' field names, as ``LedgerTransaction``.
public struct SubscriptionState: Codable, Sendable, Hashable {
    /// The store the subscription was bought in.
    public var marketplace: Marketplace = .appStore
    /// The subscription's purchase key (Apple's original transaction id).
    public var purchaseKey: String?
    /// When the store signed this state.
    public var signedDate: Date?
    /// The environment.
    public var environment: LedgerEnvironment?
    /// Whether the store is still trying to bill the renewal.
    public var isInBillingRetryPeriod: Bool?
    /// When the billing grace period ends.
    public var gracePeriodExpiresDate: Date?

    /// A state with the given fields.
    public init(
        marketplace: Marketplace = .appStore, purchaseKey: String?, signedDate: Date?, environment: LedgerEnvironment?,
        isInBillingRetryPeriod: Bool? = nil, gracePeriodExpiresDate: Date? = nil
    ) {
        self.marketplace = marketplace
        self.purchaseKey = purchaseKey
        self.signedDate = signedDate
        self.environment = environment
        self.isInBillingRetryPeriod = isInBillingRetryPeriod
        self.gracePeriodExpiresDate = gracePeriodExpiresDate
    }

    enum CodingKeys: String, CodingKey {
        case purchaseKey = "originalTransactionId"
        case signedDate, environment, isInBillingRetryPeriod, gracePeriodExpiresDate
    }
}

/// A signed payload as a store keeps it: the ledger's value, and the JSON kept for it, which holds
/// the value's fields by their answer names and whatever else the store signed.
public struct Kept<Value: Sendable & Hashable>: Sendable, Hashable {
    /// What the ledger reads.
    public var value: Value
    /// The JSON the store keeps, once by its SHA-256.
    public var json: String

    /// A value and its JSON.
    public init(_ value: Value, json: String) {
        self.value = value
        self.json = json
    }
}

/// The JSON of stored payloads: sorted keys, dates in milliseconds since 1970 (the stores' own form).
public enum LedgerJSON {
    /// `value` as stored.
    public static func encode<Value: Encodable>(_ value: Value) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .millisecondsSince1970
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// `json` read as `type`, by name; nil when it does not decode.
    public static func decode<Value: Decodable>(_ type: Value.Type, _ json: String) -> Value? {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        return try? decoder.decode(type, from: Data(json.utf8))
    }
}
