import Foundation
import Ledger

/// A legacy app receipt's content (the ASN.1 payload of its PKCS#7 envelope), with Apple's field
/// numbers. Dates are kept as the receipt writes them (RFC 3339 text) and parsed beside.
public struct AppReceipt: Sendable, Hashable {
    /// Field 0: "Production", "ProductionSandbox" or "Xcode", as the receipt spells it.
    public var receiptType: String?
    /// Field 1: the app's Apple id (0 outside production).
    public var appItemId: Int64?
    /// Field 2: the bundle identifier.
    public var bundleId: String?
    /// Field 3: the app version.
    public var applicationVersion: String?
    /// Field 4: the opaque value hashed with the device identifier.
    public var opaqueValue: [UInt8]
    /// Field 5: SHA-1 of device identifier, opaque value and bundle id.
    public var sha1Hash: [UInt8]
    /// Field 12: when the receipt was made, the date its chain is checked at.
    public var receiptCreationDate: Date?
    /// Field 19: the version first bought.
    public var originalApplicationVersion: String?
    /// Field 21: when the receipt expires (Volume Purchase Program).
    public var expirationDate: Date?
    /// Field 17, each: one entry per in-app purchase.
    public var inApp: [InAppPurchase]

    /// The environment in the names StoreKit 2 uses (ProductionSandbox is the sandbox).
    public var environment: AppStoreEnvironment? {
        switch receiptType {
        case "Production": .production
        case "ProductionSandbox", "Sandbox": .sandbox
        case "Xcode": .xcode
        case let other?: AppStoreEnvironment(rawValue: other)
        case nil: nil
        }
    }

    /// One in-app purchase entry (fields 1701–1722).
    public struct InAppPurchase: Sendable, Hashable {
        /// 1701.
        public var quantity: Int64?
        /// 1702.
        public var productId: String?
        /// 1703.
        public var transactionId: String?
        /// 1705.
        public var originalTransactionId: String?
        /// 1704.
        public var purchaseDate: Date?
        /// 1706.
        public var originalPurchaseDate: Date?
        /// 1708: a subscription period's end.
        public var subscriptionExpirationDate: Date?
        /// 1711.
        public var webOrderLineItemId: Int64?
        /// 1712: when Apple refunded it.
        public var cancellationDate: Date?
        /// 1713.
        public var isTrialPeriod: Bool?
        /// 1719.
        public var isInIntroOfferPeriod: Bool?
        /// 1721: the promotional offer's identifier.
        public var promotionalOfferIdentifier: String?
    }
}
