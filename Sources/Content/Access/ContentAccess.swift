import Foundation
import Ledger

/// How an item of content is sold: with a product, or as a dated item of a subscription group.
public enum ContentAvailability: Sendable, Hashable {
    /// Files that come with a product (a level pack, a season): theirs while they hold the product.
    case product(String)
    /// A dated item of a subscription group (a magazine's issue), published at `published`.
    case subscriptionGroup(String, published: Date)
}

/// Why a customer may download an item: the rule and the transaction that grants it, so support
/// and the dashboard can say why.
public enum ContentGrantReason: Sendable, Hashable {
    /// They hold the product at the instant of the request: a non-consumable bought and not revoked,
    /// or a subscription product with a period active then (its grace period included).
    case holdsProduct(productId: String, transactionId: String)
    /// The item was published while this period of the group was active (its grace period included).
    case publishedDuringPeriod(transactionId: String)
    /// The item was the group's current one when this period, their first in the group, began.
    case currentAtFirstPeriod(transactionId: String)
}

/// An item a customer may download, and why.
public struct ContentGrant: Sendable, Hashable {
    /// The item.
    public var itemId: String
    /// The rule that grants it.
    public var reason: ContentGrantReason
    /// The environment of the evidence that grants it; nil until a caller that reads a customer's
    /// ledgers names it (``ContentAccess`` sees one environment's purchases and periods at a time).
    public var environment: LedgerEnvironment?

    /// A grant of `itemId` for `reason`, by evidence of `environment`.
    public init(itemId: String, reason: ContentGrantReason, environment: LedgerEnvironment? = nil) {
        self.itemId = itemId
        self.reason = reason
        self.environment = environment
    }
}

/// Who may download what: the one place the access rules live (docs/content.md, "Access rules").
///
/// It reads the ledger's purchases and periods as `Purchases` derives them, and nothing else: no
/// clock (the instant is given), no store. The rules:
///
/// - **A product's content** goes to whoever holds the product at the instant: a non-consumable
///   bought by then and not revoked by then (`LedgerPurchase.isHeld(at:)`), or, for a subscription
///   product, a period of it active then (`SubscriptionPeriod.isActive(at:)`, which counts a billing
///   grace period and ends at a refund or an upgrade). Family Sharing counts like a purchase until
///   Apple revokes it.
/// - **Consumables** have no lasting content: a consumable purchase grants nothing.
/// - **A group's dated items**, each published by the instant, go to whoever had a period of the
///   group active when it was published, plus the items current when their first period in the
///   group began (the latest published at or before that start; several if they share that date).
///   Active is the ledger's notion: a grace period counts, a billing retry without one does not.
///   An upgrade or a downgrade within the group keeps the coverage continuous, since both periods
///   belong to the group.
/// - **A revoked period counts for nothing** once its revocation date has passed: Apple asks that a
///   revoked transaction be treated as if it had never been bought, so a refunded month takes back
///   the issues it gave and can no longer be a first period. A period ended by an upgrade is not
///   revoked in this sense, even if the App Store dated a revocation with the upgrade.
public enum ContentAccess {
    /// The items of `items` (by id) that a customer with `purchases` and `periods` may download at
    /// `instant`, one grant per item, by item id.
    public static func grants(
        purchases: [LedgerPurchase], periods: [SubscriptionPeriod], at instant: Date, items: [String: ContentAvailability]
    ) -> [ContentGrant] {
        // Of the group's periods, those that still count: begun, with an end, and not revoked by now.
        func counting(_ group: String) -> [SubscriptionPeriod] {
            periods.filter { period in
                period.subscriptionGroup == group && period.start <= instant && period.end != nil
                    && !isVoided(period, at: instant)
            }.sorted { ($0.start, $0.transactionId) < ($1.start, $1.transactionId) }
        }
        var periodsOfGroup: [String: [SubscriptionPeriod]] = [:]
        // The latest publication date at or before each group's first counting period: its current item(s).
        var currentDateOfGroup: [String: (date: Date, transactionId: String)] = [:]
        for case .subscriptionGroup(let group, _) in items.values where periodsOfGroup[group] == nil {
            let groupPeriods = counting(group)
            periodsOfGroup[group] = groupPeriods
            guard let first = groupPeriods.first else { continue }
            let current = items.values.compactMap { availability -> Date? in
                guard case .subscriptionGroup(group, let published) = availability, published <= first.start else { return nil }
                return published
            }.max()
            if let current { currentDateOfGroup[group] = (current, first.transactionId) }
        }

        var grants: [ContentGrant] = []
        for (id, availability) in items {
            let reason: ContentGrantReason?
            switch availability {
            case .product(let product):
                reason = holder(of: product, purchases: purchases, periods: periods, at: instant)
            case .subscriptionGroup(let group, let published):
                guard published <= instant else { continue }
                if let period = periodsOfGroup[group, default: []].first(where: { $0.isActive(at: published) }) {
                    reason = .publishedDuringPeriod(transactionId: period.transactionId)
                } else if let current = currentDateOfGroup[group], current.date == published {
                    reason = .currentAtFirstPeriod(transactionId: current.transactionId)
                } else {
                    reason = nil
                }
            }
            if let reason { grants.append(ContentGrant(itemId: id, reason: reason)) }
        }
        return grants.sorted { $0.itemId < $1.itemId }
    }

    /// The same, reading the purchases and periods of `ledger`, each grant naming its environment;
    /// none when the ledger's environment does not unlock (``Ledger/unlocks``).
    public static func grants(ledger: Ledger, at instant: Date, items: [String: ContentAvailability]) -> [ContentGrant] {
        guard ledger.unlocks else { return [] }
        return grants(purchases: ledger.purchases, periods: ledger.periods, at: instant, items: items).map { grant in
            var grant = grant
            grant.environment = ledger.environment
            return grant
        }
    }

    /// What makes the customer hold `product` at `instant`, if anything: the earliest-bought
    /// non-consumable purchase held then, else the earliest period of it active then.
    private static func holder(
        of product: String, purchases: [LedgerPurchase], periods: [SubscriptionPeriod], at instant: Date
    ) -> ContentGrantReason? {
        let bought = purchases.filter { $0.productId == product && $0.kind == .nonConsumable && $0.isHeld(at: instant) }
            .min { ($0.purchaseDate, $0.transactionId) < ($1.purchaseDate, $1.transactionId) }
        if let bought { return .holdsProduct(productId: product, transactionId: bought.transactionId) }
        let subscribed = periods.filter { $0.productId == product && $0.isActive(at: instant) }
            .min { ($0.start, $0.transactionId) < ($1.start, $1.transactionId) }
        if let subscribed { return .holdsProduct(productId: product, transactionId: subscribed.transactionId) }
        return nil
    }

    /// Whether `period` was revoked (refunded, or taken back from Family Sharing) by `instant`, and
    /// so counts as never bought. An upgrade's end is not a revocation.
    private static func isVoided(_ period: SubscriptionPeriod, at instant: Date) -> Bool {
        guard let revoked = period.revocationDate, !period.isUpgraded else { return false }
        return revoked <= instant
    }
}
