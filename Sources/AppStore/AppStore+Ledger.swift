import Foundation
import Ledger

// The App Store as the ledger's first store: what its verified evidence says, in the ledger's terms.

extension LedgerTransaction {
    /// A verified App Store transaction, in the ledger's terms.
    public init(_ transaction: JWSTransactionDecodedPayload) {
        self.init(
            marketplace: .appStore, transactionId: transaction.transactionId, purchaseKey: transaction.originalTransactionId,
            productId: transaction.productId, subscriptionGroup: transaction.subscriptionGroupIdentifier,
            purchaseDate: transaction.purchaseDate, expiresDate: transaction.expiresDate, quantity: transaction.quantity,
            kind: transaction.type, appAccount: transaction.appAccountToken, ownership: transaction.inAppOwnershipType,
            signedDate: transaction.signedDate, revocationReason: transaction.revocationReason,
            revocationDate: transaction.revocationDate, isUpgraded: transaction.isUpgraded, offerType: transaction.offerType,
            offerIdentifier: transaction.offerIdentifier, offerDiscountType: transaction.offerDiscountType,
            environment: transaction.environment, storeAccount: transaction.appTransactionId)
    }
}

extension SubscriptionState {
    /// A verified App Store renewal info, in the ledger's terms.
    public init(_ renewal: JWSRenewalInfoDecodedPayload) {
        self.init(
            marketplace: .appStore, purchaseKey: renewal.originalTransactionId, signedDate: renewal.signedDate,
            environment: renewal.environment, isInBillingRetryPeriod: renewal.isInBillingRetryPeriod,
            gracePeriodExpiresDate: renewal.gracePeriodExpiresDate)
    }
}

extension Kept<LedgerTransaction> {
    /// A verified transaction as the store keeps it: its ledger value, and Apple's whole payload,
    /// whose field names are the ones the ledger reads back: `signedJSON`, the payload as Apple
    /// signed it, when the caller has it, else the decoded payload written again.
    public init(_ transaction: JWSTransactionDecodedPayload, signedJSON: String? = nil) {
        self.init(LedgerTransaction(transaction), json: signedJSON ?? LedgerJSON.encode(transaction))
    }
}

extension Kept<SubscriptionState> {
    /// A verified renewal info as the store keeps it: `signedJSON`, the payload as Apple signed it,
    /// when the caller has it, else the decoded payload written again.
    public init(_ renewal: JWSRenewalInfoDecodedPayload, signedJSON: String? = nil) {
        self.init(SubscriptionState(renewal), json: signedJSON ?? LedgerJSON.encode(renewal))
    }
}

extension WebhookEventType {
    /// What an App Store notification's type and subtype mean for the developer's webhook
    /// (docs/purchases.md, "Webhooks"); nil for those that change no entitlement (renewal
    /// preferences, price changes, consumption requests, `TEST`, unknown types).
    public static func appStore(notification: String?, subtype: String?) -> WebhookEventType? {
        switch (notification ?? "", subtype ?? "") {
        case ("SUBSCRIBED", _), ("ONE_TIME_CHARGE", _), ("REFUND_REVERSED", _): .started
        // An upgrade takes effect at once, with a new transaction of the new product.
        case ("DID_CHANGE_RENEWAL_PREF", "UPGRADE"), ("OFFER_REDEEMED", "UPGRADE"): .started
        case ("DID_RENEW", _), ("RENEWAL_EXTENDED", _): .renewed
        case ("EXPIRED", _): .expired
        case ("DID_FAIL_TO_RENEW", "GRACE_PERIOD"): .inGracePeriod
        // Apple keeps retrying after the grace period: access is off, the subscription not over.
        case ("DID_FAIL_TO_RENEW", _), ("GRACE_PERIOD_EXPIRED", _): .billingRetry
        case ("REFUND", _), ("REVOKE", _): .refundedOrRevoked
        default: nil
        }
    }
}

extension PurchaseSubmission {
    /// A verified notification as the endpoint records it, and as `catalog purchases rebuild`
    /// replays it: its raw body, its nested transaction and renewal info. Nil when it carries no
    /// `notificationUUID` (at most 128 bytes), which every notification must have.
    public static func notification(
        _ verified: SignedDataVerifier.VerifiedNotification, app: String, body: String, receivedAt: Date,
        transferPolicy: PurchaseTransferPolicy, sendsWebhooks: Bool = true
    ) -> PurchaseSubmission? {
        guard let uuid = verified.payload.notificationUUID, !uuid.isEmpty, uuid.utf8.count <= 128 else { return nil }
        let type = verified.payload.notificationType?.rawValue
        let subtype = verified.payload.subtype?.rawValue
        let raw = RawNotification(
            app: app, marketplace: .appStore, notificationId: uuid, notificationType: type, subtype: subtype,
            environment: verified.payload.app.environment?.rawValue, signedDate: verified.payload.signedDate, receivedAt: receivedAt,
            body: body)
        return PurchaseSubmission(
            app: app, receivedAt: receivedAt, source: .notification, notification: raw,
            storeEvent: .appStore(notification: type, subtype: subtype),
            transactions: verified.transaction.map { [Kept($0, signedJSON: verified.transactionJSON)] } ?? [],
            states: verified.renewalInfo.map { [Kept($0, signedJSON: verified.renewalInfoJSON)] } ?? [],
            transferPolicy: transferPolicy, sendsWebhooks: sendsWebhooks)
    }
}

extension AppReceipt {
    /// The receipt's in-app entries as transactions, typed from the catalog's `types` (a receipt names
    /// none); entries of products it does not know are left out. Their signing date is the receipt's.
    public func transactions(types: [String: ProductType]) -> [JWSTransactionDecodedPayload] {
        inApp.compactMap { entry in
            guard let product = entry.productId, let type = types[product], let id = entry.transactionId else { return nil }
            var transaction = JWSTransactionDecodedPayload()
            transaction.transactionId = id
            transaction.originalTransactionId = entry.originalTransactionId ?? id
            transaction.productId = product
            transaction.type = type
            transaction.quantity = entry.quantity.map(Int.init) ?? 1
            transaction.inAppOwnershipType = .purchased
            transaction.bundleId = bundleId
            transaction.environment = environment
            transaction.purchaseDate = entry.purchaseDate
            transaction.expiresDate = entry.subscriptionExpirationDate
            transaction.revocationDate = entry.cancellationDate
            transaction.signedDate = receiptCreationDate
            return transaction
        }
    }
}
