import Foundation

/// What the ledger knows of a catalog product: what it unlocks and, for a non-renewing
/// subscription, how long a purchase of it lasts (stores keep no period for that type).
public struct LedgerProduct: Sendable, Hashable {
    /// The entitlements a purchase unlocks (the catalog's default is the product's own id).
    public var entitlements: [String]
    /// A non-renewing subscription's period; nil for the other types.
    public var duration: ISO8601Period?

    /// A product that unlocks `entitlements`, lasting `duration` when it is a non-renewing subscription.
    public init(entitlements: [String], duration: ISO8601Period? = nil) {
        self.entitlements = entitlements
        self.duration = duration
    }
}

/// The catalog as the ledger sees it: products by id, and which environments unlock. A product it
/// does not know unlocks its own id and, when non-renewing, no period.
public struct LedgerCatalog: Sendable, Hashable {
    /// The products by identifier.
    public var products: [String: LedgerProduct]
    /// Whether sandbox and Xcode evidence unlocks anything (the app's `sandboxUnlocks`).
    public var sandboxUnlocks: Bool

    /// A catalog of `products`; sandbox and Xcode evidence unlocks unless `sandboxUnlocks` is false.
    public init(products: [String: LedgerProduct] = [:], sandboxUnlocks: Bool = true) {
        self.products = products
        self.sandboxUnlocks = sandboxUnlocks
    }

    /// What a purchase of `productId` unlocks.
    public func entitlements(of productId: String) -> [String] { products[productId]?.entitlements ?? [productId] }

    /// The one rule for which environments' evidence unlocks entitlements, credits and content
    /// (docs/purchases.md, "Environments"): production always; the sandbox and Xcode unless the app
    /// sets `sandboxUnlocks` to false. Evidence of an environment that does not unlock is still
    /// accepted into the ledger (its purchases and periods are shown), and grants nothing.
    public func unlocks(_ environment: LedgerEnvironment) -> Bool {
        environment == .production || sandboxUnlocks
    }
}

/// One purchase: one transaction id, in the version its store signed last.
public struct LedgerPurchase: Sendable, Hashable, Codable {
    /// The transaction.
    public var transactionId: String
    /// The store it was bought in.
    public var marketplace: Marketplace
    /// The purchase's key in its store (a subscription's: the same for every renewal).
    public var purchaseKey: String?
    /// The product.
    public var productId: String
    /// The product's kind.
    public var kind: PurchaseKind?
    /// When the store charged the account.
    public var purchaseDate: Date
    /// How many were bought (a consumable's credit).
    public var quantity: Int
    /// Bought, or shared by Family Sharing.
    public var ownership: Ownership?
    /// When its store refunded or revoked it, if it did.
    public var revocationDate: Date?
    /// Why.
    public var revocationReason: RevocationReason?
    /// The environment.
    public var environment: LedgerEnvironment?
    /// When the store signed the version kept.
    public var signedDate: Date?

    /// Whether it counts at `instant`: bought by then and not revoked by then.
    public func isHeld(at instant: Date) -> Bool {
        purchaseDate <= instant && (revocationDate.map { instant < $0 } ?? true)
    }
}

/// One period of a subscription: an auto-renewable transaction (a purchase or a renewal), or a
/// non-renewing purchase with the catalog's `duration`.
public struct SubscriptionPeriod: Sendable, Hashable, Codable {
    /// The transaction that paid for the period.
    public var transactionId: String
    /// The store it was bought in.
    public var marketplace: Marketplace
    /// The subscription's purchase key (the same for every renewal, and across upgrades within a group).
    public var purchaseKey: String?
    /// The product.
    public var productId: String
    /// The subscription group (auto-renewable only).
    public var subscriptionGroup: String?
    /// The product's kind.
    public var kind: PurchaseKind?
    /// When the period began: the transaction's `purchaseDate`.
    public var start: Date
    /// When it ended or ends: the earliest of expiry, revocation and an upgrade's start; nil when
    /// nothing says (a non-renewing product the catalog gives no duration: it unlocks nothing).
    public var end: Date?
    /// When it expires, as its store signed (for a non-renewing one, start plus `duration`).
    public var expiresDate: Date?
    /// The offer's kind, if one applied.
    public var offerType: OfferType?
    /// The offer's identifier.
    public var offerIdentifier: String?
    /// The offer's discount type.
    public var offerDiscountType: OfferDiscountType?
    /// Bought, or shared by Family Sharing.
    public var ownership: Ownership?
    /// When the store refunded or revoked it.
    public var revocationDate: Date?
    /// Why.
    public var revocationReason: RevocationReason?
    /// Whether the customer upgraded out of it (it then ends at the upgrade's start).
    public var isUpgraded: Bool
    /// When the billing grace period after it ends, if the store granted one: access lasts until then.
    public var gracePeriodExpiresDate: Date?
    /// Whether the store was still trying to bill its renewal when it last said so.
    public var isInBillingRetryPeriod: Bool
    /// The environment.
    public var environment: LedgerEnvironment?

    /// Whether it grants access at `instant`: inside [start, end), or in the grace period after an
    /// expiry (never after a revocation or an upgrade, which end it for good).
    public func isActive(at instant: Date) -> Bool {
        guard start <= instant, let end else { return false }
        if instant < end { return true }
        guard let grace = gracePeriodExpiresDate, end == expiresDate, revocationDate == nil, !isUpgraded else { return false }
        return instant < grace
    }
}

/// An entitlement active at an instant, and what grants it.
public struct EntitlementGrant: Sendable, Hashable, Codable {
    /// The entitlement.
    public var entitlement: String
    /// The product that grants it.
    public var productId: String
    /// The transaction that grants it.
    public var transactionId: String
    /// Until when, as far as the ledger knows (nil: a non-consumable, for good unless revoked).
    public var expiresDate: Date?
    /// Whether the grant is a billing grace period's.
    public var inGracePeriod: Bool
}

/// One customer's ledger in one environment: every purchase and every subscription period, derived
/// from the signed evidence alone (docs/purchases.md, "The ledger").
///
/// It is a pure function of the *set* of payloads: of two versions of one transaction (or one
/// subscription's state), the one its store signed last wins, and equal dates are broken
/// by the content, so that evidence that arrives late, twice or shuffled gives the same ledger.
public struct Ledger: Sendable, Hashable, Codable {
    /// The environment the ledger is about; evidence of another is left out (each environment is a
    /// ledger of its own).
    public var environment: LedgerEnvironment
    /// Every purchase, by purchase date then transaction id.
    public var purchases: [LedgerPurchase]
    /// Every subscription period, by start then transaction id.
    public var periods: [SubscriptionPeriod]
    /// The entitlements of each product bought, from the catalog, so the ledger answers alone.
    public var entitlementsByProduct: [String: [String]]
    /// Whether the ledger's environment unlocks anything (``LedgerCatalog/unlocks(_:)``): when it
    /// does not, ``entitlements(at:)`` and ``credits(at:)`` are empty, and no content is granted.
    public var unlocks: Bool

    /// Derives the ledger of the evidence of `environment` in `transactions` and `states`.
    public init(
        transactions: [LedgerTransaction], states: [SubscriptionState] = [], environment: LedgerEnvironment, catalog: LedgerCatalog
    ) {
        self.environment = environment
        unlocks = catalog.unlocks(environment)
        let latest = Self.latestVersions(transactions.filter { $0.environment == environment }, key: \.versionKey)

        purchases = latest.compactMap { transaction in
            guard let id = transaction.transactionId, let product = transaction.productId, let date = transaction.purchaseDate else {
                return nil
            }
            return LedgerPurchase(
                transactionId: id, marketplace: transaction.marketplace, purchaseKey: transaction.purchaseKey, productId: product,
                kind: transaction.kind, purchaseDate: date, quantity: transaction.quantity ?? 1, ownership: transaction.ownership,
                revocationDate: transaction.revocationDate, revocationReason: transaction.revocationReason,
                environment: transaction.environment, signedDate: transaction.signedDate)
        }.sorted { ($0.purchaseDate, $0.transactionId) < ($1.purchaseDate, $1.transactionId) }

        var periods: [SubscriptionPeriod] = latest.compactMap { transaction in
            guard let id = transaction.transactionId, let product = transaction.productId, let start = transaction.purchaseDate else {
                return nil
            }
            let expires: Date?
            switch transaction.kind {
            case .autoRenewableSubscription?: expires = transaction.expiresDate
            case .nonRenewingSubscription?: expires = catalog.products[product]?.duration?.added(to: start)
            default: return nil
            }
            return SubscriptionPeriod(
                transactionId: id, marketplace: transaction.marketplace, purchaseKey: transaction.purchaseKey, productId: product,
                subscriptionGroup: transaction.subscriptionGroup, kind: transaction.kind, start: start, end: nil, expiresDate: expires,
                offerType: transaction.offerType, offerIdentifier: transaction.offerIdentifier,
                offerDiscountType: transaction.offerDiscountType, ownership: transaction.ownership,
                revocationDate: transaction.revocationDate, revocationReason: transaction.revocationReason,
                isUpgraded: transaction.isUpgraded ?? false, gracePeriodExpiresDate: nil, isInBillingRetryPeriod: false,
                environment: transaction.environment)
        }
        periods.sort { ($0.start, $0.transactionId) < ($1.start, $1.transactionId) }

        for index in periods.indices {
            var period = periods[index]
            // One subscription, one period at a time: a period of the same subscription that starts
            // inside this one (an upgrade, an immediate crossgrade) ends it at its start, whether or
            // not the `isUpgraded` version of this transaction ever arrives (Apple's upgrade
            // notification carries only the new transaction). A version marked `isUpgraded` is also
            // ended by a period of its group that starts inside it, as Apple says it was upgraded.
            var replacedAt: Date?
            if period.kind == .autoRenewableSubscription, let expires = period.expiresDate {
                replacedAt =
                    periods.filter { other in
                        other.transactionId != period.transactionId && other.kind == .autoRenewableSubscription
                            && other.start < expires
                            && (Self.sameSubscription(period, other) && other.start > period.start
                                || period.isUpgraded && Self.sameGroup(period, other) && other.start >= period.start)
                    }.map(\.start).min()
            }
            period.end = [period.expiresDate, period.revocationDate, replacedAt].compactMap { $0 }.min()
            if period.expiresDate == nil { period.end = nil }
            periods[index] = period
        }

        // A subscription's state speaks of its latest period that had begun when it was signed: a
        // billing retry or a grace period signed before a renewal belongs to the period before it,
        // which keeps that history. Of the states of one period, the one signed last is its state.
        var stateOf: [Int: (info: SubscriptionState, order: [UInt8])] = [:]
        for info in states where info.environment == environment {
            guard let key = info.purchaseKey, let signed = info.signedDate else { continue }
            let candidates = periods.indices.filter {
                periods[$0].marketplace == info.marketplace && periods[$0].purchaseKey == key
                    && periods[$0].kind == .autoRenewableSubscription && periods[$0].start <= signed
            }
            guard
                let target = candidates.max(by: {
                    (periods[$0].start, periods[$0].transactionId) < (periods[$1].start, periods[$1].transactionId)
                })
            else { continue }
            let order = Self.canonical(info)
            if let current = stateOf[target], !Self.isLater(info.signedDate, order, than: current.info.signedDate, current.order) {
                continue
            }
            stateOf[target] = (info, order)
        }
        for (target, state) in stateOf {
            periods[target].isInBillingRetryPeriod = state.info.isInBillingRetryPeriod ?? false
            if let grace = state.info.gracePeriodExpiresDate, let expires = periods[target].expiresDate, grace > expires {
                periods[target].gracePeriodExpiresDate = grace
            }
        }
        self.periods = periods

        var unlocks: [String: [String]] = [:]
        for purchase in purchases { unlocks[purchase.productId] = catalog.entitlements(of: purchase.productId) }
        entitlementsByProduct = unlocks
    }

    /// The entitlements active at `instant`, by entitlement then product then transaction: non-consumables
    /// held then, and subscription periods active then (their grace periods included). Consumables
    /// unlock nothing: they are credits (``credits(at:)``).
    public func entitlements(at instant: Date) -> [EntitlementGrant] {
        guard unlocks else { return [] }
        var grants: [EntitlementGrant] = []
        for purchase in purchases where purchase.kind == .nonConsumable && purchase.isHeld(at: instant) {
            for entitlement in entitlementsByProduct[purchase.productId] ?? [purchase.productId] {
                grants.append(
                    EntitlementGrant(
                        entitlement: entitlement, productId: purchase.productId, transactionId: purchase.transactionId,
                        expiresDate: nil, inGracePeriod: false))
            }
        }
        for period in periods where period.isActive(at: instant) {
            let inGrace = period.end.map { instant >= $0 } ?? false
            for entitlement in entitlementsByProduct[period.productId] ?? [period.productId] {
                grants.append(
                    EntitlementGrant(
                        entitlement: entitlement, productId: period.productId, transactionId: period.transactionId,
                        expiresDate: inGrace ? period.gracePeriodExpiresDate : period.end, inGracePeriod: inGrace))
            }
        }
        return grants.sorted { ($0.entitlement, $0.productId, $0.transactionId) < ($1.entitlement, $1.productId, $1.transactionId) }
    }

    /// The names of the entitlements active at `instant`, sorted, each once.
    public func activeEntitlements(at instant: Date) -> [String] {
        Array(Set(entitlements(at: instant).map(\.entitlement))).sorted()
    }

    /// Each consumable's credit at `instant`: the quantities of its purchases made by then and not
    /// revoked by then, each transaction id counted once however often it was presented.
    public func credits(at instant: Date) -> [String: Int] {
        guard unlocks else { return [:] }
        var credits: [String: Int] = [:]
        for purchase in purchases where purchase.kind == .consumable && purchase.isHeld(at: instant) {
            credits[purchase.productId, default: 0] += purchase.quantity
        }
        return credits
    }

    /// One subscription: its renewals, upgrades and crossgrades share the purchase key.
    private static func sameSubscription(_ a: SubscriptionPeriod, _ b: SubscriptionPeriod) -> Bool {
        a.purchaseKey != nil && a.marketplace == b.marketplace && a.purchaseKey == b.purchaseKey
    }

    private static func sameGroup(_ a: SubscriptionPeriod, _ b: SubscriptionPeriod) -> Bool {
        if let group = a.subscriptionGroup, a.marketplace == b.marketplace, group == b.subscriptionGroup { return true }
        return sameSubscription(a, b)
    }

    /// Of the payloads with the same key, the one signed last. Of two signed at the same instant, one
    /// that revokes wins (a client re-sending the version it had must never undo a refund), and
    /// then the payload's canonical JSON decides, so that the choice never depends on the order of arrival.
    static func latestVersions<Payload: Encodable & SignedPayload>(_ payloads: [Payload], key: KeyPath<Payload, String?>) -> [Payload] {
        var chosen: [String: (payload: Payload, order: [UInt8])] = [:]
        for payload in payloads {
            guard let id = payload[keyPath: key] else { continue }
            // A revoking version sorts after every other one signed at the same instant.
            let order = [payload.revokes ? 1 : 0] + canonical(payload)
            if let current = chosen[id], !isLater(payload.signedDate, order, than: current.payload.signedDate, current.order) { continue }
            chosen[id] = (payload, order)
        }
        return chosen.keys.sorted().compactMap { chosen[$0]?.payload }
    }

    /// Whether a payload signed at `date` with canonical bytes `order` comes after another.
    private static func isLater(_ date: Date?, _ order: [UInt8], than otherDate: Date?, _ otherOrder: [UInt8]) -> Bool {
        let (a, b) = (date ?? .distantPast, otherDate ?? .distantPast)
        return a > b || (a == b && otherOrder.lexicographicallyPrecedes(order))
    }

    /// The payload's JSON with sorted keys: a total order on payloads that arrival cannot change.
    private static func canonical<Payload: Encodable>(_ payload: Payload) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .millisecondsSince1970
        return (try? encoder.encode(payload)).map { [UInt8]($0) } ?? []
    }
}

/// A payload a store dates with `signedDate`.
protocol SignedPayload {
    var signedDate: Date? { get }
    /// Whether this version takes the purchase back (a refund or a revocation).
    var revokes: Bool { get }
}

extension LedgerTransaction: SignedPayload {
    var revokes: Bool { revocationDate != nil }
    /// One transaction of one store: its versions are told apart by ``Ledger/latestVersions(_:key:)``.
    var versionKey: String? { transactionId.map { marketplace.rawValue + "/" + $0 } }
}

extension SubscriptionState: SignedPayload {
    var revokes: Bool { false }
}
