import Foundation

// What the Google Play Developer API answers (androidpublisher v3), the fields the server reads,
// named as Google names them. Every field is optional: Google leaves out what is unset. Enumerations
// are kept as the strings Google sends, so that a value added tomorrow is carried, not refused;
// int64 values arrive as JSON strings, and times as RFC 3339 with 0 to 9 fractional digits.

/// `purchases.subscriptionsv2.get`: a subscription purchase's state now.
public struct PlaySubscriptionPurchase: Codable, Sendable, Hashable {
    /// The states Google names (`subscriptionState`).
    public enum State {
        /// Bought by a slow method, not paid yet: grants nothing.
        public static let pending = "SUBSCRIPTION_STATE_PENDING"
        /// Paid and renewing, or paid for a prepaid period.
        public static let active = "SUBSCRIPTION_STATE_ACTIVE"
        /// Paused by the customer: no access until it resumes.
        public static let paused = "SUBSCRIPTION_STATE_PAUSED"
        /// A renewal failed; Google retries and access continues until `expiryTime`.
        public static let inGracePeriod = "SUBSCRIPTION_STATE_IN_GRACE_PERIOD"
        /// A renewal failed and the grace period ended: no access while Google retries.
        public static let onHold = "SUBSCRIPTION_STATE_ON_HOLD"
        /// Will not renew; access until `expiryTime`.
        public static let canceled = "SUBSCRIPTION_STATE_CANCELED"
        /// Over.
        public static let expired = "SUBSCRIPTION_STATE_EXPIRED"
        /// A pending purchase that was never paid.
        public static let pendingPurchaseCanceled = "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED"
    }

    /// One item of the purchase (one, unless the subscription has add-ons).
    public struct LineItem: Codable, Sendable, Hashable {
        /// The Play product id.
        public var productId: String?
        /// When the current period ends (in a grace period, when the grace period does).
        public var expiryTime: String?
        /// The order that paid for the current period (`GPA.…`, renewals `GPA.…..1`).
        public var latestSuccessfulOrderId: String?
        /// Set for an auto-renewing base plan.
        public var autoRenewingPlan: AutoRenewingPlan?
        /// Set for a prepaid base plan.
        public var prepaidPlan: PrepaidPlan?
        /// The base plan and offer bought.
        public var offerDetails: OfferDetails?
    }

    /// An auto-renewing base plan's item.
    public struct AutoRenewingPlan: Codable, Sendable, Hashable {
        /// Whether it renews at the end of the period.
        public var autoRenewEnabled: Bool?
    }

    /// A prepaid base plan's item.
    public struct PrepaidPlan: Codable, Sendable, Hashable {
        /// From when the customer may top it up.
        public var allowExtendAfterTime: String?
    }

    /// The base plan and offer of an item.
    public struct OfferDetails: Codable, Sendable, Hashable {
        /// The base plan.
        public var basePlanId: String?
        /// The offer, if one applied.
        public var offerId: String?
    }

    /// Why a subscription was cancelled: which of these is present says who cancelled.
    public struct CanceledStateContext: Codable, Sendable, Hashable {
        /// The customer cancelled.
        public var userInitiatedCancellation: UserCancellation?
        /// Google cancelled (a failed renewal that was not recovered, say).
        public var systemInitiatedCancellation: Empty?
        /// The developer cancelled (through the API).
        public var developerInitiatedCancellation: Empty?
        /// It was replaced by another subscription: an upgrade or a downgrade.
        public var replacementCancellation: Empty?
    }

    /// The customer's cancellation.
    public struct UserCancellation: Codable, Sendable, Hashable {
        /// When.
        public var cancelTime: String?
    }

    /// A paused subscription's context.
    public struct PausedStateContext: Codable, Sendable, Hashable {
        /// When it resumes by itself.
        public var autoResumeTime: String?
    }

    /// The app's own ids for the buyer, as the app set them at purchase.
    public struct ExternalAccountIdentifiers: Codable, Sendable, Hashable {
        /// `setObfuscatedAccountId`: the app's account.
        public var obfuscatedExternalAccountId: String?
        /// `setObfuscatedProfileId`.
        public var obfuscatedExternalProfileId: String?
    }

    /// An object Google sends empty: its presence is the information.
    public struct Empty: Codable, Sendable, Hashable {}

    /// `androidpublisher#subscriptionPurchaseV2`.
    public var kind: String?
    /// The buyer's country (ISO 3166-1 alpha-2).
    public var regionCode: String?
    /// The items.
    public var lineItems: [LineItem]?
    /// When the subscription began; absent while pending.
    public var startTime: String?
    /// One of ``State``'s values, or one this version does not know.
    public var subscriptionState: String?
    /// The purchase this one replaced (an upgrade, a downgrade, a resubscription).
    public var linkedPurchaseToken: String?
    /// Set while paused.
    public var pausedStateContext: PausedStateContext?
    /// Set once cancelled.
    public var canceledStateContext: CanceledStateContext?
    /// Present, empty, for a license tester's purchase.
    public var testPurchase: Empty?
    /// `ACKNOWLEDGEMENT_STATE_PENDING` or `ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED`.
    public var acknowledgementState: String?
    /// The app's ids for the buyer.
    public var externalAccountIdentifiers: ExternalAccountIdentifiers?
}

/// `purchases.productsv2.getproductpurchasev2`: a one-time product purchase's state now.
public struct PlayProductPurchase: Codable, Sendable, Hashable {
    /// The states Google names (`purchaseStateContext.purchaseState`).
    public enum State {
        /// Paid.
        public static let purchased = "PURCHASED"
        /// Cancelled or refunded (Google spells it with two Ls here).
        public static let cancelled = "CANCELLED"
        /// Bought by a slow method, not paid yet: grants nothing.
        public static let pending = "PENDING"
    }

    /// One product of the purchase.
    public struct LineItem: Codable, Sendable, Hashable {
        /// The Play product id.
        public var productId: String?
        /// How many, and of which purchase option.
        public var productOfferDetails: OfferDetails?
    }

    /// What of the product was bought.
    public struct OfferDetails: Codable, Sendable, Hashable {
        /// How many were bought.
        public var quantity: Int?
        /// How many may still be refunded.
        public var refundableQuantity: Int?
        /// `CONSUMPTION_STATE_YET_TO_BE_CONSUMED` or `CONSUMPTION_STATE_CONSUMED`.
        public var consumptionState: String?
        /// The purchase option (Play Billing Library 8).
        public var purchaseOptionId: String?
        /// The offer, if one applied.
        public var offerId: String?
    }

    /// The purchase's state.
    public struct StateContext: Codable, Sendable, Hashable {
        /// One of ``State``'s values, or one this version does not know.
        public var purchaseState: String?
    }

    /// Set for a test purchase.
    public struct TestContext: Codable, Sendable, Hashable {
        /// `TEST` for a license tester's.
        public var fopType: String?
    }

    /// `androidpublisher#productPurchaseV2`.
    public var kind: String?
    /// The products (one, in practice).
    public var productLineItem: [LineItem]?
    /// The state.
    public var purchaseStateContext: StateContext?
    /// Set for a test purchase.
    public var testPurchaseContext: TestContext?
    /// Google's order id; none for some test purchases.
    public var orderId: String?
    /// The app's account id for the buyer, when it set one.
    public var obfuscatedExternalAccountId: String?
    /// The app's profile id for the buyer, when it set one.
    public var obfuscatedExternalProfileId: String?
    /// `ACKNOWLEDGEMENT_STATE_PENDING` or `ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED`.
    public var acknowledgementState: String?
    /// When the payment completed; absent while pending.
    public var purchaseCompletionTime: String?
    /// The buyer's country.
    public var regionCode: String?
}

/// One entry of `purchases.voidedpurchases.list`: an order Google refunded, charged back or
/// revoked, whose purchase must stop granting.
public struct PlayVoidedPurchase: Codable, Sendable, Hashable {
    /// The purchase's token.
    public var purchaseToken: String?
    /// The voided order (for a subscription, one period's order).
    public var orderId: String?
    /// When it was voided, in milliseconds since 1970 (a JSON string).
    public var voidedTimeMillis: FlexibleInteger?
    /// When it was bought, in milliseconds since 1970.
    public var purchaseTimeMillis: FlexibleInteger?
    /// 0 the user, 1 the developer, 2 Google.
    public var voidedSource: FlexibleInteger?
    /// 0 other, 1 remorse, 2 not received, 3 defective, 4 accidental purchase, 5 fraud, 6 friendly
    /// fraud, 7 chargeback, 8 not acknowledged in time.
    public var voidedReason: FlexibleInteger?
}

/// An integer Google may send as a JSON number or a string (int64 values always as strings, and
/// some documented int32 values too).
public struct FlexibleInteger: Codable, Sendable, Hashable {
    /// The value.
    public var value: Int64

    /// A value.
    public init(_ value: Int64) { self.value = value }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int64.self) {
            value = number
        } else if let text = try? container.decode(String.self), let number = Int64(text) {
            value = number
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an integer or a string of one")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(String(value))
    }
}
