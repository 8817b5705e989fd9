import Foundation
import Ledger

// The payloads the App Store signs, with Apple's field names (App Store Server API reference), so
// that a developer who knows Apple's documentation knows these. Every field is optional, as in Apple's
// library: which ones are present depends on the product type, the environment and the year the
// evidence was signed. Dates are Apple's milliseconds since 1970, decoded to `Date`.

/// A signed transaction: `JWSTransactionDecodedPayload`.
public struct JWSTransactionDecodedPayload: Codable, Sendable, Hashable {
    /// The original purchase's transaction id: the same for every renewal of a subscription.
    public var originalTransactionId: String?
    /// This transaction's id.
    public var transactionId: String?
    /// The id of a subscription's purchase event across devices, renewals included.
    public var webOrderLineItemId: String?
    /// The app's bundle identifier.
    public var bundleId: String?
    /// The product identifier.
    public var productId: String?
    /// The subscription group, for subscriptions.
    public var subscriptionGroupIdentifier: String?
    /// When the App Store charged the account (for a renewal, the renewal).
    public var purchaseDate: Date?
    /// When the original transaction was bought.
    public var originalPurchaseDate: Date?
    /// When a subscription period expires or renews.
    public var expiresDate: Date?
    /// How many were bought.
    public var quantity: Int?
    /// The product type.
    public var type: ProductType?
    /// The UUID the app set on the purchase, if it set one.
    public var appAccountToken: String?
    /// Purchased, or shared by Family Sharing.
    public var inAppOwnershipType: InAppOwnershipType?
    /// When the App Store signed this payload.
    public var signedDate: Date?
    /// Why a refund or revocation happened.
    public var revocationReason: RevocationReason?
    /// When Apple refunded or revoked it.
    public var revocationDate: Date?
    /// Whether the customer upgraded to another subscription.
    public var isUpgraded: Bool?
    /// The kind of offer, if any.
    public var offerType: OfferType?
    /// The offer's identifier (promotional offer or offer code).
    public var offerIdentifier: String?
    /// The environment.
    public var environment: AppStoreEnvironment?
    /// The storefront's three-letter code.
    public var storefront: String?
    /// The storefront's Apple id.
    public var storefrontId: String?
    /// Purchase or renewal.
    public var transactionReason: TransactionReason?
    /// ISO 4217 currency of `price`.
    public var currency: String?
    /// The price in milliunits of `currency`.
    public var price: Int64?
    /// The offer's discount type.
    public var offerDiscountType: OfferDiscountType?
    /// The Apple account's per-app id (iOS 18.4 and later).
    public var appTransactionId: String?
    /// The offer's duration (ISO 8601).
    public var offerPeriod: String?
}

/// A subscription's signed renewal information: `JWSRenewalInfoDecodedPayload`. It carries no bundle
/// id: it is bound to an app through its original transaction.
public struct JWSRenewalInfoDecodedPayload: Codable, Sendable, Hashable {
    /// Why the subscription expired.
    public var expirationIntent: ExpirationIntent?
    /// The subscription's original transaction id.
    public var originalTransactionId: String?
    /// The product the subscription renews to.
    public var autoRenewProductId: String?
    /// The current product.
    public var productId: String?
    /// Whether it renews.
    public var autoRenewStatus: AutoRenewStatus?
    /// Whether the App Store is still trying to bill.
    public var isInBillingRetryPeriod: Bool?
    /// A price increase's status.
    public var priceIncreaseStatus: PriceIncreaseStatus?
    /// When the billing grace period ends.
    public var gracePeriodExpiresDate: Date?
    /// The offer at the next renewal, if any.
    public var offerType: OfferType?
    /// That offer's identifier.
    public var offerIdentifier: String?
    /// When the App Store signed this payload.
    public var signedDate: Date?
    /// The environment.
    public var environment: AppStoreEnvironment?
    /// When the current run of renewals without a gap began.
    public var recentSubscriptionStartDate: Date?
    /// When the subscription next renews.
    public var renewalDate: Date?
    /// ISO 4217 currency of `renewalPrice`.
    public var currency: String?
    /// The next renewal's price in milliunits.
    public var renewalPrice: Int64?
    /// The next renewal's offer discount type.
    public var offerDiscountType: OfferDiscountType?
    /// Win-back offers the customer may redeem.
    public var eligibleWinBackOfferIds: [String]?
    /// The UUID the app set on the purchase, if it set one.
    public var appAccountToken: String?
    /// The Apple account's per-app id.
    public var appTransactionId: String?
    /// The next renewal offer's duration (ISO 8601).
    public var offerPeriod: String?
}

/// What the App Store signs about the app's download: `AppTransaction`.
public struct AppTransaction: Codable, Sendable, Hashable {
    /// The environment (Apple names it `receiptType` here).
    public var receiptType: AppStoreEnvironment?
    /// The app's Apple id (absent or 0 outside production).
    public var appAppleId: Int64?
    /// The app's bundle identifier.
    public var bundleId: String?
    /// The app version the AppTransaction was made for.
    public var applicationVersion: String?
    /// The version's external identifier.
    public var versionExternalIdentifier: Int64?
    /// When the App Store made it: the date its chain is checked at.
    public var receiptCreationDate: Date?
    /// When the account first got the app.
    public var originalPurchaseDate: Date?
    /// The app version the account first got.
    public var originalApplicationVersion: String?
    /// The device verification value.
    public var deviceVerification: String?
    /// The nonce of the device verification value.
    public var deviceVerificationNonce: String?
    /// When the app was pre-ordered, if it was.
    public var preorderDate: Date?
    /// The Apple account's per-app id.
    public var appTransactionId: String?
    /// The platform the account first got the app on.
    public var originalPlatform: String?
}

extension AppTransaction {
    /// Decodes Apple's fields. `appTransactionId` is documented as a string; a JSON integer is taken
    /// too (and written back as its decimal digits), so that an AppTransaction that sends a number is
    /// not refused for the spelling of an id. A fraction or any other type is still malformed.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        receiptType = try container.decodeIfPresent(AppStoreEnvironment.self, forKey: .receiptType)
        appAppleId = try container.decodeIfPresent(Int64.self, forKey: .appAppleId)
        bundleId = try container.decodeIfPresent(String.self, forKey: .bundleId)
        applicationVersion = try container.decodeIfPresent(String.self, forKey: .applicationVersion)
        versionExternalIdentifier = try container.decodeIfPresent(Int64.self, forKey: .versionExternalIdentifier)
        receiptCreationDate = try container.decodeIfPresent(Date.self, forKey: .receiptCreationDate)
        originalPurchaseDate = try container.decodeIfPresent(Date.self, forKey: .originalPurchaseDate)
        originalApplicationVersion = try container.decodeIfPresent(String.self, forKey: .originalApplicationVersion)
        deviceVerification = try container.decodeIfPresent(String.self, forKey: .deviceVerification)
        deviceVerificationNonce = try container.decodeIfPresent(String.self, forKey: .deviceVerificationNonce)
        preorderDate = try container.decodeIfPresent(Date.self, forKey: .preorderDate)
        appTransactionId = try container.decodeIfPresent(StringOrIntegerID.self, forKey: .appTransactionId)?.value
        originalPlatform = try container.decodeIfPresent(String.self, forKey: .originalPlatform)
    }
}

/// An id sent as a JSON string, or as a JSON integer (taken as its decimal digits); nothing else.
struct StringOrIntegerID: Decodable {
    var value: String

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let string = try? container.decode(String.self) {
            value = string
        } else {
            value = String(try container.decode(Int64.self))
        }
    }
}

/// A notification's `data`: the app and the signed transaction and renewal info it is about.
public struct NotificationData: Codable, Sendable, Hashable {
    /// The environment.
    public var environment: AppStoreEnvironment?
    /// The app's Apple id (production only).
    public var appAppleId: Int64?
    /// The app's bundle identifier.
    public var bundleId: String?
    /// The app's build version.
    public var bundleVersion: String?
    /// The transaction, a JWS of its own.
    public var signedTransactionInfo: String?
    /// The renewal info, a JWS of its own.
    public var signedRenewalInfo: String?
    /// The subscription's status.
    public var status: SubscriptionStatus?
    /// Why the customer asked for a refund (CONSUMPTION_REQUEST).
    public var consumptionRequestReason: String?
}

/// A notification's `summary`: the result of a renewal-date extension for all subscribers.
public struct NotificationSummary: Codable, Sendable, Hashable {
    /// The environment.
    public var environment: AppStoreEnvironment?
    /// The app's Apple id.
    public var appAppleId: Int64?
    /// The app's bundle identifier.
    public var bundleId: String?
    /// The product extended.
    public var productId: String?
    /// The request this summarises.
    public var requestIdentifier: String?
    /// The storefronts included.
    public var storefrontCountryCodes: [String]?
    /// How many subscriptions were extended.
    public var succeededCount: Int64?
    /// How many could not be.
    public var failedCount: Int64?
}

/// A notification's `externalPurchaseToken`.
public struct ExternalPurchaseToken: Codable, Sendable, Hashable {
    /// The token's id.
    public var externalPurchaseId: String?
    /// When it was made.
    public var tokenCreationDate: Date?
    /// The app's Apple id.
    public var appAppleId: Int64?
    /// The app's bundle identifier.
    public var bundleId: String?
}

/// A notification's `appData`: the app, and its signed AppTransaction (notifications about the app
/// rather than a purchase, e.g. RESCIND_CONSENT).
public struct NotificationAppData: Codable, Sendable, Hashable {
    /// The environment.
    public var environment: AppStoreEnvironment?
    /// The app's Apple id.
    public var appAppleId: Int64?
    /// The app's bundle identifier.
    public var bundleId: String?
    /// The AppTransaction, a JWS of its own.
    public var signedAppTransactionInfo: String?
}

/// An App Store Server Notification V2, decoded: `ResponseBodyV2DecodedPayload`.
public struct ResponseBodyV2DecodedPayload: Codable, Sendable, Hashable {
    /// What happened.
    public var notificationType: NotificationTypeV2?
    /// Details of what happened.
    public var subtype: Subtype?
    /// The notification's id: the same for every retry of one notification.
    public var notificationUUID: String?
    /// The app, transaction and renewal info (most types).
    public var data: NotificationData?
    /// The notification format's version ("2.0").
    public var version: String?
    /// When the App Store signed it.
    public var signedDate: Date?
    /// The summary (RENEWAL_EXTENSION with subtype SUMMARY).
    public var summary: NotificationSummary?
    /// The external purchase token (EXTERNAL_PURCHASE_TOKEN).
    public var externalPurchaseToken: ExternalPurchaseToken?
    /// The app data (notifications about the app itself).
    public var appData: NotificationAppData?

    /// The environment, bundle id and Apple id the notification names, from whichever part it carries.
    public var app: (environment: AppStoreEnvironment?, bundleId: String?, appAppleId: Int64?) {
        if let data { return (data.environment, data.bundleId, data.appAppleId) }
        if let summary { return (summary.environment, summary.bundleId, summary.appAppleId) }
        if let token = externalPurchaseToken {
            // Apple's library reads the environment of a token notification from its id's prefix.
            let environment: AppStoreEnvironment? =
                token.externalPurchaseId.map { $0.hasPrefix("SANDBOX") ? .sandbox : .production }
            return (environment, token.bundleId, token.appAppleId)
        }
        if let appData { return (appData.environment, appData.bundleId, appData.appAppleId) }
        return (nil, nil, nil)
    }
}
