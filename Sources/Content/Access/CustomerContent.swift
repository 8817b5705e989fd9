import Foundation
import Ledger

/// What one customer may download of an app's published content, and why: the ledger of each of
/// the customer's environments that unlocks (``LedgerCatalog/unlocks(_:)``) through
/// ``ContentAccess/grants(ledger:at:items:)``, the one place the rules live. The content endpoint,
/// the dashboard and `catalog content url` all ask here, for grants and for refusals alike.
public enum CustomerContent {
    /// The items of `manifest` that `record` may download at `instant`, one grant per item (the
    /// first environment that grants it, production first), by item id.
    ///
    /// The App Store names a period's group by a number (`subscriptionGroupIdentifier`); the
    /// manifest names the catalog's group. Each period is first given the catalog group of its
    /// product (`groups`, product id to group), so that the two meet; a period of a product the
    /// catalog does not place in a group belongs to none.
    public static func grants(
        record: CustomerRecord, catalog: LedgerCatalog, groups: [String: String], manifest: ContentManifest, at instant: Date
    ) -> [ContentGrant] {
        let items = manifest.availabilities
        var granted: [String: ContentGrant] = [:]
        for ledger in ledgers(record: record, catalog: catalog, groups: groups) {
            for grant in ContentAccess.grants(ledger: ledger, at: instant, items: items) where granted[grant.itemId] == nil {
                granted[grant.itemId] = grant
            }
        }
        return granted.values.sorted { $0.itemId < $1.itemId }
    }

    /// The customer's ledgers (``CustomerRecord/ledgers(catalog:)``), each period given the
    /// catalog group of its product (see ``grants(record:catalog:groups:manifest:at:)``).
    static func ledgers(record: CustomerRecord, catalog: LedgerCatalog, groups: [String: String]) -> [Ledger] {
        record.ledgers(catalog: catalog).map { ledger in
            var ledger = ledger
            for index in ledger.periods.indices {
                ledger.periods[index].subscriptionGroup = groups[ledger.periods[index].productId]
            }
            return ledger
        }
    }

    /// Why an item of `manifest` that ``grants(record:catalog:groups:manifest:at:)`` did not grant
    /// is refused, in plain words for a support person, by item id: the one wording the dashboard,
    /// the content endpoint's support and `catalog content url` give. The decision stays the rules';
    /// this only describes the customer's purchases around the item (a refund of the product, the
    /// group's periods before or after the publication date, evidence of an environment that
    /// unlocks nothing), so it never grants or refuses itself.
    public static func refusals(
        record: CustomerRecord, catalog: LedgerCatalog, groups: [String: String], manifest: ContentManifest, granted: [ContentGrant],
        at instant: Date
    ) -> [String: String] {
        let grantedIds = Set(granted.map(\.itemId))
        let all = ledgers(record: record, catalog: catalog, groups: groups)
        // What evidence of an environment that unlocks nothing would have granted: said as such.
        var lockedEnvironmentOf: [String: LedgerEnvironment] = [:]
        for ledger in all where !ledger.unlocks {
            var unlocked = ledger
            unlocked.unlocks = true
            for grant in ContentAccess.grants(ledger: unlocked, at: instant, items: manifest.availabilities)
            where lockedEnvironmentOf[grant.itemId] == nil {
                lockedEnvironmentOf[grant.itemId] = ledger.environment
            }
        }
        let ledgers = all.filter(\.unlocks)
        let purchases = ledgers.flatMap(\.purchases)
        let periods = ledgers.flatMap(\.periods).filter { $0.start <= instant }
        var reasons: [String: String] = [:]
        for item in manifest.items where !grantedIds.contains(item.id) {
            if let environment = lockedEnvironmentOf[item.id] {
                reasons[item.id] =
                    "only evidence of the \(environment.rawValue) environment would grant it, and this app lets it unlock nothing (sandboxUnlocks is false)"
                continue
            }
            switch item.availability {
            case .product(let product):
                // A period an upgrade ended is not refunded, even when Apple dated a revocation with the upgrade.
                let refunds =
                    purchases.filter { $0.productId == product }.compactMap(\.revocationDate)
                    + periods.filter { $0.productId == product && !$0.isUpgraded }.compactMap(\.revocationDate)
                let refunded = refunds.filter { $0 <= instant }.max()
                // The latest of what happened decides: a period that expired after a refunded one is an expiry.
                let ended = periods.filter { $0.productId == product && $0.revocationDate == nil }.compactMap(\.end).filter {
                    $0 <= instant
                }.max()
                if purchases.contains(where: { $0.productId == product && $0.kind == .consumable }) {
                    reasons[item.id] = "\(product) is a consumable, and consumables give no lasting content"
                } else if let refunded, ended.map({ refunded >= $0 }) ?? true {
                    reasons[item.id] = "\(product) was refunded on \(day(refunded))"
                } else if let ended {
                    reasons[item.id] =
                        "their subscription to \(product) is not active at this instant: its last period ended on \(day(ended))"
                } else if periods.contains(where: { $0.productId == product }) {
                    reasons[item.id] = "their subscription to \(product) is not active at this instant"
                } else {
                    reasons[item.id] = "they do not hold \(product)"
                }
            case .subscriptionGroup(let group, let published):
                let ofGroup = periods.filter { $0.subscriptionGroup == group }
                if published > instant {
                    reasons[item.id] = "not published yet: it is dated \(day(published))"
                } else if ofGroup.isEmpty {
                    reasons[item.id] = "they never subscribed to \(group)"
                } else if let first = ofGroup.map(\.start).min(), published < first {
                    reasons[item.id] =
                        "published on \(day(published)), before their first period of \(group) began on \(day(first)), and not the issue current then"
                } else if let last = ofGroup.compactMap({ $0.end }).max(), published >= last, !ofGroup.contains(where: { $0.end == nil }) {
                    reasons[item.id] = "published on \(day(published)), after their last period of \(group) ended on \(day(last))"
                } else if let refunded = ofGroup.first(where: { period in
                    period.start <= published && published < (period.expiresDate ?? period.end ?? .distantFuture) && !period.isUpgraded
                        && (period.revocationDate.map { $0 <= instant } ?? false)
                }), let date = refunded.revocationDate {
                    reasons[item.id] =
                        "published on \(day(published)), during their period of \(group) that was refunded on \(day(date))"
                } else {
                    reasons[item.id] = "published on \(day(published)), when no period of \(group) was active"
                }
            case nil:
                reasons[item.id] = "the item names neither a product nor a subscription group"
            }
        }
        return reasons
    }

    /// A date as a calendar day in UTC, as support reads it.
    static func day(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate]
        return formatter.string(from: date)
    }

    /// Why an item is granted, in words, for a support person.
    public static func explain(_ reason: ContentGrantReason) -> String {
        switch reason {
        case .holdsProduct(let product, let transaction): "holds \(product) (transaction \(transaction))"
        case .publishedDuringPeriod(let transaction): "published while the period of transaction \(transaction) was active"
        case .currentAtFirstPeriod(let transaction): "the current item when the first period (transaction \(transaction)) began"
        }
    }
}
