import Foundation
import Ledger

// Apple's enumerations as open sets: each is a RawRepresentable value with Apple's known values as
// constants, so that a value Apple adds tomorrow decodes, is kept and can be stored, rather than
// failing the whole payload the way a closed Swift enum would.

// The values the ledger shares with every store (`LedgerEnvironment`, `PurchaseKind`, `Ownership`,
// `OfferType`, `OfferDiscountType`, `RevocationReason`) are the ledger's, spelt as Apple spells them
// (the answers' vocabulary); these names are Apple's for two of them.

/// The store environment evidence was made in: Apple's `environment` (`receiptType` in an AppTransaction).
public typealias AppStoreEnvironment = LedgerEnvironment

/// `type` of a transaction.
public typealias ProductType = PurchaseKind

/// `inAppOwnershipType`: bought by the account, or shared with it by Family Sharing.
public typealias InAppOwnershipType = Ownership

/// `transactionReason`: a purchase the customer made, or a renewal the store made.
public struct TransactionReason: RawRepresentable, Codable, Sendable, Hashable {
    /// Apple's spelling.
    public var rawValue: String
    /// Makes a value from Apple's spelling.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Bought, or upgraded, by the customer.
    public static let purchase = Self(rawValue: "PURCHASE")
    /// Renewed by the App Store.
    public static let renewal = Self(rawValue: "RENEWAL")
}

/// `autoRenewStatus` (a number on the wire).
public struct AutoRenewStatus: RawRepresentable, Codable, Sendable, Hashable {
    /// Apple's number.
    public var rawValue: Int
    /// Makes a value from Apple's number.
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// Auto-renewal is off.
    public static let off = Self(rawValue: 0)
    /// Auto-renewal is on.
    public static let on = Self(rawValue: 1)
}

/// `expirationIntent` (a number on the wire).
public struct ExpirationIntent: RawRepresentable, Codable, Sendable, Hashable {
    /// Apple's number.
    public var rawValue: Int
    /// Makes a value from Apple's number.
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// The customer cancelled.
    public static let customerCancelled = Self(rawValue: 1)
    /// A billing error.
    public static let billingError = Self(rawValue: 2)
    /// The customer did not consent to a price increase.
    public static let customerDidNotConsentToPriceIncrease = Self(rawValue: 3)
    /// The product was not for sale at renewal.
    public static let productNotAvailable = Self(rawValue: 4)
    /// Another reason.
    public static let other = Self(rawValue: 5)
}

/// `priceIncreaseStatus` (a number on the wire).
public struct PriceIncreaseStatus: RawRepresentable, Codable, Sendable, Hashable {
    /// Apple's number.
    public var rawValue: Int
    /// Makes a value from Apple's number.
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// The customer has not responded.
    public static let customerHasNotResponded = Self(rawValue: 0)
    /// The customer consented, or was notified of an increase that needs no consent.
    public static let customerConsentedOrWasNotifiedWithoutNeedingConsent = Self(rawValue: 1)
}

/// `status` of a subscription in a notification's `data` (a number on the wire).
public struct SubscriptionStatus: RawRepresentable, Codable, Sendable, Hashable {
    /// Apple's number.
    public var rawValue: Int
    /// Makes a value from Apple's number.
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// Active.
    public static let active = Self(rawValue: 1)
    /// Expired.
    public static let expired = Self(rawValue: 2)
    /// In the billing retry period.
    public static let billingRetry = Self(rawValue: 3)
    /// In the billing grace period.
    public static let billingGracePeriod = Self(rawValue: 4)
    /// Revoked.
    public static let revoked = Self(rawValue: 5)
}

/// `notificationType` of an App Store Server Notification V2.
public struct NotificationTypeV2: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
    /// Apple's spelling.
    public var rawValue: String
    /// Makes a value from Apple's spelling.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Apple's spelling.
    public var description: String { rawValue }
    /// A subscription was bought or resubscribed.
    public static let subscribed = Self(rawValue: "SUBSCRIBED")
    /// The customer changed the product the subscription renews to.
    public static let didChangeRenewalPref = Self(rawValue: "DID_CHANGE_RENEWAL_PREF")
    /// Auto-renewal was turned on or off.
    public static let didChangeRenewalStatus = Self(rawValue: "DID_CHANGE_RENEWAL_STATUS")
    /// An offer was redeemed.
    public static let offerRedeemed = Self(rawValue: "OFFER_REDEEMED")
    /// The subscription renewed.
    public static let didRenew = Self(rawValue: "DID_RENEW")
    /// The subscription expired.
    public static let expired = Self(rawValue: "EXPIRED")
    /// A renewal failed for billing.
    public static let didFailToRenew = Self(rawValue: "DID_FAIL_TO_RENEW")
    /// The billing grace period ended.
    public static let gracePeriodExpired = Self(rawValue: "GRACE_PERIOD_EXPIRED")
    /// A price increase was announced or accepted.
    public static let priceIncrease = Self(rawValue: "PRICE_INCREASE")
    /// A purchase was refunded.
    public static let refund = Self(rawValue: "REFUND")
    /// A refund request was declined.
    public static let refundDeclined = Self(rawValue: "REFUND_DECLINED")
    /// Apple asks for consumption information about a refund request.
    public static let consumptionRequest = Self(rawValue: "CONSUMPTION_REQUEST")
    /// A subscription's renewal date was extended.
    public static let renewalExtended = Self(rawValue: "RENEWAL_EXTENDED")
    /// Family Sharing access was revoked.
    public static let revoke = Self(rawValue: "REVOKE")
    /// A test notification asked for through the App Store Server API.
    public static let test = Self(rawValue: "TEST")
    /// A renewal-date extension for all subscribers progressed.
    public static let renewalExtension = Self(rawValue: "RENEWAL_EXTENSION")
    /// A refund was reversed.
    public static let refundReversed = Self(rawValue: "REFUND_REVERSED")
    /// An external purchase token was created or not reported.
    public static let externalPurchaseToken = Self(rawValue: "EXTERNAL_PURCHASE_TOKEN")
    /// A one-time (consumable, non-consumable or non-renewing) purchase.
    public static let oneTimeCharge = Self(rawValue: "ONE_TIME_CHARGE")
    /// The customer withdrew consent (Apple's newer notification).
    public static let rescindConsent = Self(rawValue: "RESCIND_CONSENT")
    /// Advanced Commerce metadata changed.
    public static let metadataUpdate = Self(rawValue: "METADATA_UPDATE")
    /// Advanced Commerce migration.
    public static let migration = Self(rawValue: "MIGRATION")
    /// Advanced Commerce price change.
    public static let priceChange = Self(rawValue: "PRICE_CHANGE")
}

/// `subtype` of an App Store Server Notification V2.
public struct Subtype: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
    /// Apple's spelling.
    public var rawValue: String
    /// Makes a value from Apple's spelling.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Apple's spelling.
    public var description: String { rawValue }
    /// First purchase of the subscription group.
    public static let initialBuy = Self(rawValue: "INITIAL_BUY")
    /// Bought again after it lapsed.
    public static let resubscribe = Self(rawValue: "RESUBSCRIBE")
    /// A downgrade, effective at the next renewal.
    public static let downgrade = Self(rawValue: "DOWNGRADE")
    /// An upgrade, effective now.
    public static let upgrade = Self(rawValue: "UPGRADE")
    /// Auto-renewal turned on.
    public static let autoRenewEnabled = Self(rawValue: "AUTO_RENEW_ENABLED")
    /// Auto-renewal turned off.
    public static let autoRenewDisabled = Self(rawValue: "AUTO_RENEW_DISABLED")
    /// Expired because the customer turned renewal off.
    public static let voluntary = Self(rawValue: "VOLUNTARY")
    /// Expired after the billing retry period.
    public static let billingRetry = Self(rawValue: "BILLING_RETRY")
    /// Expired because the customer refused a price increase.
    public static let priceIncrease = Self(rawValue: "PRICE_INCREASE")
    /// In the billing grace period.
    public static let gracePeriod = Self(rawValue: "GRACE_PERIOD")
    /// A price increase awaits the customer's answer.
    public static let pending = Self(rawValue: "PENDING")
    /// A price increase was accepted.
    public static let accepted = Self(rawValue: "ACCEPTED")
    /// Renewed after a billing retry succeeded.
    public static let billingRecovery = Self(rawValue: "BILLING_RECOVERY")
    /// Expired because the product was not for sale.
    public static let productNotForSale = Self(rawValue: "PRODUCT_NOT_FOR_SALE")
    /// A renewal extension finished for all eligible subscribers.
    public static let summary = Self(rawValue: "SUMMARY")
    /// A renewal extension failed for one subscription.
    public static let failure = Self(rawValue: "FAILURE")
    /// An external purchase token was not reported.
    public static let unreported = Self(rawValue: "UNREPORTED")
    /// An external purchase token is still active.
    public static let activeTokenReminder = Self(rawValue: "ACTIVE_TOKEN_REMINDER")
    /// An Advanced Commerce item was created.
    public static let created = Self(rawValue: "CREATED")
    /// An Advanced Commerce item was modified.
    public static let modified = Self(rawValue: "MODIFIED")
}
