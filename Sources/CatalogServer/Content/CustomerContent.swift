import CatalogKit
import Content
import Foundation
import Purchases

/// What one customer may download of an app's published content, and why: the ledger of each of
/// the customer's environments through ``ContentAccess/grants(purchases:periods:at:items:)``, the
/// one place the rules live. The content endpoint and `catalog content url` both ask here.
public enum CustomerContent {
    /// The items of `manifest` that `record` may download at `instant`, one grant per item (the
    /// first environment that grants it), by item id.
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
        for environment in record.environments {
            let ledger = record.ledger(environment: environment, catalog: catalog)
            let periods = ledger.periods.map { period in
                var period = period
                period.subscriptionGroupIdentifier = groups[period.productId]
                return period
            }
            for grant in ContentAccess.grants(purchases: ledger.purchases, periods: periods, at: instant, items: items)
            where granted[grant.itemId] == nil {
                granted[grant.itemId] = grant
            }
        }
        return granted.values.sorted { $0.itemId < $1.itemId }
    }

    /// The content manifest of `app`'s published `revision` (`content.json` in its records); an
    /// empty one when the revision delivers no content.
    public static func manifest(tree: PublicTree, app: String, revision: Int) -> Result<ContentManifest, ContentManifestError> {
        guard let data = FileManager.default.contents(atPath: tree.contentManifestURL(app, revision).path) else {
            return Result { () throws(ContentManifestError) in try ContentManifest(items: []) }
        }
        return Result { () throws(ContentManifestError) in try ContentManifest.decode(data) }
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

extension AppPurchases {
    /// Each auto-renewable product's subscription group in the catalog, by product id.
    public var subscriptionGroups: [String: String] { groupsByProduct }
}
