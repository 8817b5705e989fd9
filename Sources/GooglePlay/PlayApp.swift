import CatalogKit
import Foundation
import Ledger

/// What one app's settings make of Google Play's evidence (docs/google-play.md): the verifier of its
/// purchases, its push subscription, its Play catalog and its service account. Read from the
/// revision's purchase record, like the App Store's settings, so that every node binds alike.
public struct PlayApp: Sendable {
    /// The app's package name.
    public let packageName: String
    /// Verifies what the Android app presents; nil when the app names no licence key.
    public let verifier: PlayPurchaseVerifier?
    /// The push subscription's audience and service account; nil when it names none.
    public let push: (audience: String, serviceAccount: String)?
    /// The catalog as Play purchases find it.
    public let catalog: PlayCatalog
    /// The service account's key file, on this node; nil: the Play Developer API is not called.
    public let serviceAccountKeyFile: String?
    /// What happens to a purchase presented by another customer.
    public let transferPolicy: PurchaseTransferPolicy
    /// Whether the app has a webhook (`webhookURL`), for its events.
    public let sendsWebhooks: Bool

    /// The Play settings of `record`; nil when it has none, an error when its licence key is not one.
    public init?(_ record: PurchaseRecord) throws(PlayConfigurationError) {
        guard let play = record.play else { return nil }
        packageName = play.packageName
        verifier = try play.licenseKey.map { key throws(PlayConfigurationError) in
            PlayPurchaseVerifier(packageName: play.packageName, key: try PlayLicenseKey(base64: key))
        }
        if let audience = play.pushAudience, let account = play.pushServiceAccount {
            push = (audience, account)
        } else {
            push = nil
        }
        catalog = PlayCatalog(record)
        serviceAccountKeyFile = play.serviceAccountKeyFile
        transferPolicy = record.transferPolicy == .transfer ? .transfer : .keep
        sendsWebhooks = record.webhookURL != nil
    }
}

/// A Real-time Developer Notification as Pub/Sub pushes it (docs/google-play.md, "Notifications"):
/// the envelope, whose `message.data` is base64 of the notification. The payload is not signed: it
/// says that something changed, and the Play Developer API says what.
public struct PlayPushEnvelope: Decodable, Sendable {
    /// Pub/Sub's message.
    public struct Message: Decodable, Sendable {
        /// Base64 of the notification's JSON.
        public var data: String?
        /// Pub/Sub's id of the message, the same for each redelivery.
        public var messageId: String?
        /// When Pub/Sub published it.
        public var publishTime: String?
    }

    /// The message.
    public var message: Message?
    /// The push subscription (`projects/…/subscriptions/…`).
    public var subscription: String?
}

/// What `message.data` holds: one of a subscription's, a one-time product's, a voided purchase's or
/// a test notification.
public struct PlayDeveloperNotification: Decodable, Sendable {
    /// A subscription changed.
    public struct SubscriptionNotification: Decodable, Sendable {
        /// 1 recovered, 2 renewed, 3 cancelled, 4 purchased, 5 on hold, 6 in grace period, 7 restarted,
        /// 9 deferred, 10 paused, 11 pause schedule changed, 12 revoked, 13 expired, 17 items changed,
        /// 18 cancellation scheduled, 19 price change updated, 20 pending purchase cancelled, ...
        public var notificationType: Int?
        /// The purchase.
        public var purchaseToken: String?
    }

    /// A one-time product changed.
    public struct OneTimeProductNotification: Decodable, Sendable {
        /// 1 purchased, 2 cancelled (a pending purchase never paid).
        public var notificationType: Int?
        /// The purchase.
        public var purchaseToken: String?
        /// The product (`sku`).
        public var sku: String?
    }

    /// An order was voided: refunded, charged back or revoked.
    public struct VoidedPurchaseNotification: Decodable, Sendable {
        /// The purchase.
        public var purchaseToken: String?
        /// The voided order.
        public var orderId: String?
        /// 1 a subscription, 2 a one-time product.
        public var productType: Int?
    }

    /// The app's package name.
    public var packageName: String?
    /// When it happened, in milliseconds since 1970 (a JSON string in Google's examples).
    public var eventTimeMillis: FlexibleInteger?
    /// Set for a subscription's change.
    public var subscriptionNotification: SubscriptionNotification?
    /// Set for a one-time product's.
    public var oneTimeProductNotification: OneTimeProductNotification?
    /// Set for a voided purchase.
    public var voidedPurchaseNotification: VoidedPurchaseNotification?
    /// Set for Play Console's test notification (its content says nothing).
    public var testNotification: [String: String]?

    /// The purchase it is about; nil for a test notification.
    public var purchaseToken: String? {
        subscriptionNotification?.purchaseToken ?? oneTimeProductNotification?.purchaseToken ?? voidedPurchaseNotification?.purchaseToken
    }

    /// Its kind and type, as stored (`subscription.4`, `oneTimeProduct.1`, `voidedPurchase`, `test`).
    public var typeName: String {
        if let type = subscriptionNotification?.notificationType { return "subscription.\(type)" }
        if let type = oneTimeProductNotification?.notificationType { return "oneTimeProduct.\(type)" }
        if voidedPurchaseNotification != nil { return "voidedPurchase" }
        return testNotification != nil ? "test" : "unknown"
    }

    /// Whether it is a new purchase: one Google must hear acknowledged within three days.
    public var isPurchase: Bool {
        subscriptionNotification?.notificationType == 4 || oneTimeProductNotification?.notificationType == 1
    }
}
