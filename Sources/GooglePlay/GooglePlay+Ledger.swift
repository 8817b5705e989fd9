import CatalogKit
import Foundation
import Ledger

// Google Play as the ledger's second store: what the Play Developer API answers, in the ledger's
// terms (docs/google-play.md, "Play's states in the ledger"). The API is the authority: an answer
// is a version of each order it names, dated when Google gave it, and the latest version wins.

/// The catalog as Play purchases find it: each Play product and base plan (or purchase option) to
/// the catalog product it is, with what the mapping needs of that product.
public struct PlayCatalog: Sendable, Hashable {
    /// A catalog product sold on Google Play.
    public struct Item: Sendable, Hashable {
        /// The catalog's product id: what the ledger names the purchase by, and unlocks from.
        public var id: String
        /// The catalog's type.
        public var type: ProductType?
        /// A subscription's group.
        public var group: String?
        /// A subscription's billing period: Google says when a period ends, and the ledger dates
        /// its start one period before.
        public var period: ISO8601Period?

        /// An item.
        public init(id: String, type: ProductType?, group: String? = nil, period: ISO8601Period? = nil) {
            self.id = id
            self.type = type
            self.group = group
            self.period = period
        }
    }

    struct Key: Hashable {
        var productId: String
        /// The base plan, or the purchase option.
        var plan: String?
    }

    var items: [Key: Item] = [:]
    /// Each Play product id's first item, in the record's order.
    var firstItems: [String: Item] = [:]
    /// The Play product ids sold as subscriptions (with a base plan).
    var subscriptions: Set<String> = []

    /// An empty catalog: every Play product is named by its own id.
    public init() {}

    /// The Play products of a revision's purchase record.
    public init(_ record: PurchaseRecord) {
        for product in record.products {
            guard let play = product.play else { continue }
            let period = (product.period ?? product.duration).flatMap(ISO8601Period.init)
            add(
                Item(id: product.id, type: product.type, group: product.group, period: period), productId: play.productId,
                plan: play.basePlan ?? play.purchaseOption)
        }
    }

    /// Adds `item` as Play's `productId` with the base plan or purchase option `plan`.
    public mutating func add(_ item: Item, productId: String, plan: String?) {
        items[Key(productId: productId, plan: plan)] = item
        if firstItems[productId] == nil { firstItems[productId] = item }
        if item.type == .autoRenewable || (plan != nil && item.type == .nonRenewing) { subscriptions.insert(productId) }
    }

    /// Whether Play sells `productId` as a subscription: what its purchase is asked about, and acknowledged, as.
    public func isSubscription(_ productId: String) -> Bool { subscriptions.contains(productId) }

    /// Whether the catalog sells Play's `productId` at all.
    public func knows(_ productId: String) -> Bool { firstItems[productId] != nil }

    /// What Google must be told of a new purchase of `productId` (the subscription's, or a one-time
    /// product's), or asked after a notification of a change (`isChange`): one rule, wherever a
    /// purchase is first seen.
    public func acknowledgementAction(productId: String, isSubscription: Bool, isChange: Bool = false) -> StoreAcknowledgement.Action {
        switch (isSubscription, isChange) {
        case (true, true): .refreshSubscription
        case (false, true): .refreshProduct
        case (true, false): .acknowledgeSubscription
        // Before Google is asked, the purchase option is not known: the product's first one says.
        case (false, false): firstItems[productId]?.type == .consumable ? .consumeProduct : .acknowledgeProduct
        }
    }

    /// The item a Play purchase of `productId` with `plan` is: that pair's, else the product's
    /// without a plan (a one-time product's default purchase option).
    public func item(productId: String, plan: String?) -> Item? {
        items[Key(productId: productId, plan: plan)] ?? items[Key(productId: productId, plan: nil)]
    }
}

/// What one answer of the Play Developer API makes of a purchase in the ledger.
public struct PlayLedgerValues: Sendable, Hashable {
    /// One version of each order the answer names.
    public var transactions: [Kept<LedgerTransaction>] = []
    /// A subscription's renewal state.
    public var states: [Kept<SubscriptionState>] = []
    /// The change the answer's subscription state is, for the developer's webhook: expired, in a
    /// grace period, on hold. Nil for the others: each order then says (started, renewed, refunded).
    public var event: WebhookEventType?

    /// These values as evidence of `app` to record.
    public func submission(
        app: String, receivedAt: Date, source: EvidenceSource, appAccount: String? = nil,
        transferPolicy: PurchaseTransferPolicy = .keep, sendsWebhooks: Bool = true
    ) -> PurchaseSubmission {
        PurchaseSubmission(
            app: app, receivedAt: receivedAt, source: source, storeEvent: event, transactions: transactions, states: states,
            appAccount: appAccount, transferPolicy: transferPolicy, sendsWebhooks: sendsWebhooks)
    }
}

extension RevocationReason {
    /// A Play voided purchase's `voidedReason` in Apple's terms: a defective product or one not
    /// received is the app's issue; every other reason is not.
    public init(playVoidedReason reason: Int64?) {
        self = reason == 2 || reason == 3 ? .appIssue : .other
    }
}

extension PlaySubscriptionPurchase {
    /// The ledger's values of this answer about `token`, given at `answeredAt`: a version of the order
    /// that paid each item's current period, and the subscription's renewal state. A pending
    /// subscription, or one whose item has no paid order, gives nothing: it grants nothing.
    ///
    /// - A period ends at the item's `expiryTime` (in a grace period Google moves it to the grace
    ///   period's end, and access lasts until then), and starts at the subscription's `startTime`
    ///   for its first order, one billing period before it ends for a renewal (never before the start).
    /// - A subscription replaced by another (an upgrade or a downgrade, whose purchase names it as
    ///   `linkedPurchaseToken`) is marked upgraded: its period ends where the new one's begins.
    /// - An order in `voided` is revoked at its voiding time.
    public func ledgerValues(
        token: String, answeredAt: Date, catalog: PlayCatalog, voided: [String: PlayVoidedPurchase] = [:]
    ) -> PlayLedgerValues {
        var values = PlayLedgerValues()
        switch subscriptionState {
        case State.pending?, State.pendingPurchaseCanceled?, nil: return values
        default: break
        }
        let environment: LedgerEnvironment = testPurchase == nil ? .production : .sandbox
        let start = startTime.flatMap(RFC3339.parse)
        var latestExpiry: Date?
        for item in lineItems ?? [] {
            guard let order = item.latestSuccessfulOrderId, !order.isEmpty, let playProduct = item.productId,
                let expires = item.expiryTime.flatMap(RFC3339.parse), let start
            else { continue }
            let product = catalog.item(productId: playProduct, plan: item.offerDetails?.basePlanId)
            // A renewal's order is the first's with `..n` after it.
            let isRenewal = order.contains("..")
            var begins = start
            if isRenewal, let period = product?.period {
                begins = max(start, period.subtracted(from: expires))
            }
            let void = voided[order]
            let transaction = LedgerTransaction(
                marketplace: .googlePlay, transactionId: order, purchaseKey: token, productId: product?.id ?? playProduct,
                subscriptionGroup: product?.group ?? playProduct, purchaseDate: begins, expiresDate: expires, quantity: 1,
                kind: .autoRenewableSubscription, appAccount: externalAccountIdentifiers?.obfuscatedExternalAccountId,
                ownership: .purchased, signedDate: answeredAt,
                revocationReason: void.map { RevocationReason(playVoidedReason: $0.voidedReason?.value) },
                revocationDate: void?.voidedTimeMillis.map { Date(timeIntervalSince1970: Double($0.value) / 1000) },
                isUpgraded: canceledStateContext?.replacementCancellation != nil ? true : nil,
                offerIdentifier: item.offerDetails?.offerId, environment: environment)
            values.transactions.append(Kept(transaction, json: PlayKeptJSON.encode(transaction, token: token, answer: self)))
            latestExpiry = max(latestExpiry ?? expires, expires)
        }
        switch subscriptionState {
        case State.expired?: values.event = .expired
        case State.inGracePeriod?: values.event = .inGracePeriod
        case State.onHold?: values.event = .billingRetry
        default: break
        }
        // Google retries a failed renewal in a grace period (access continues) and on hold (it does not).
        if let expires = latestExpiry, lineItems?.contains(where: { $0.autoRenewingPlan != nil }) == true {
            let retrying = subscriptionState == State.inGracePeriod || subscriptionState == State.onHold
            let state = SubscriptionState(
                marketplace: .googlePlay, purchaseKey: token, signedDate: answeredAt, environment: environment,
                isInBillingRetryPeriod: retrying, gracePeriodExpiresDate: subscriptionState == State.inGracePeriod ? expires : nil)
            values.states.append(Kept(state, json: PlayKeptJSON.encode(state, token: token, answer: self)))
        }
        return values
    }
}

extension PlayProductPurchase {
    /// The ledger's values of this answer about `token`, given at `answeredAt`: one version of its
    /// order. Pending gives nothing; cancelled (refunded) is revoked, at its voiding time when
    /// `voided` has it, else when Google said so. A consumable is credited once per order.
    public func ledgerValues(
        token: String, answeredAt: Date, catalog: PlayCatalog, voided: [String: PlayVoidedPurchase] = [:]
    ) -> PlayLedgerValues {
        var values = PlayLedgerValues()
        let state = purchaseStateContext?.purchaseState
        guard state == State.purchased || state == State.cancelled, let line = productLineItem?.first,
            let playProduct = line.productId, let bought = purchaseCompletionTime.flatMap(RFC3339.parse)
        else { return values }
        let product = catalog.item(productId: playProduct, plan: line.productOfferDetails?.purchaseOptionId)
        // A test purchase may have no order: its token is then its only name.
        let order = orderId.flatMap { $0.isEmpty ? nil : $0 } ?? token
        let void = voided[order] ?? voided[token]
        var revoked = void?.voidedTimeMillis.map { Date(timeIntervalSince1970: Double($0.value) / 1000) }
        if state == State.cancelled, revoked == nil { revoked = answeredAt }
        let transaction = LedgerTransaction(
            marketplace: .googlePlay, transactionId: order, purchaseKey: token, productId: product?.id ?? playProduct,
            purchaseDate: bought, quantity: line.productOfferDetails?.quantity ?? 1,
            kind: product?.type == .consumable ? .consumable : .nonConsumable, appAccount: obfuscatedExternalAccountId,
            ownership: .purchased, signedDate: answeredAt,
            revocationReason: revoked == nil ? nil : RevocationReason(playVoidedReason: void?.voidedReason?.value),
            revocationDate: revoked, offerIdentifier: line.productOfferDetails?.offerId,
            environment: testPurchaseContext == nil ? .production : .sandbox)
        values.transactions.append(Kept(transaction, json: PlayKeptJSON.encode(transaction, token: token, answer: self)))
        return values
    }
}

extension PlayVoidedPurchase {
    /// A version of `latest` (the order's latest version in the ledger) revoked at this voiding
    /// time, signed at `at` (after every version before it); nil when the entry says no time.
    public func revoking(_ latest: LedgerTransaction, at: Date) -> PlayLedgerValues? {
        guard let voided = voidedTimeMillis else { return nil }
        var revoked = latest
        revoked.revocationDate = Date(timeIntervalSince1970: Double(voided.value) / 1000)
        revoked.revocationReason = RevocationReason(playVoidedReason: voidedReason?.value)
        revoked.signedDate = max(at, (latest.signedDate ?? .distantPast).addingTimeInterval(0.001))
        var values = PlayLedgerValues()
        values.transactions = [Kept(revoked, json: PlayKeptJSON.encode(revoked, token: latest.purchaseKey ?? "", answer: self))]
        return values
    }
}

/// The JSON kept for a Play value: the ledger's fields by their answer names (so that the row reads
/// back as the ledger's value), the purchase token, and Google's whole answer under `googlePlay`.
enum PlayKeptJSON {
    private struct Kept<Value: Encodable, Answer: Encodable>: Encodable {
        var value: Value
        var token: String
        var answer: Answer

        enum Keys: String, CodingKey { case purchaseToken, googlePlay }

        func encode(to encoder: any Encoder) throws {
            try value.encode(to: encoder)
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(token, forKey: .purchaseToken)
            try container.encode(answer, forKey: .googlePlay)
        }
    }

    static func encode(_ value: some Encodable, token: String, answer: some Encodable) -> String {
        LedgerJSON.encode(Kept(value: value, token: token, answer: answer))
    }
}
