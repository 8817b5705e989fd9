import AppStore
import CatalogKit
import Content
import Foundation
import Hummingbird
import Ledger

extension PurchaseEndpoints {
    /// `GET /v1/admin/apps/{app}/customers/{id}/content[?at=]` (docs/editor-api.md): what the
    /// customer with the key `id` may download of the published `revision`'s content at `at`, and
    /// why, as ``CustomerContent`` decides it for the content endpoint; with no signed URLs (support
    /// signs one with `catalog content url`).
    func customerContentDocument(app: String, id: String, revision: Int?, at: Date, tree: PublicTree) async -> Response {
        guard let revision else { return JSONError.response(.notFound, "no published app '\(app)'") }
        let config: AppPurchases
        switch await settings.app(app, revision: revision) {
        case .failure(let error): return JSONError.response(.serviceUnavailable, "\(error)")
        case .success(let found): config = found
        }
        let manifest: ContentManifest
        switch tree.servedContentManifest(app, revision: revision) {
        case .failure(let error): return JSONError.response(.internalServerError, "\(error)")
        case .success(let found): manifest = found
        }
        let record: CustomerRecord
        do {
            guard let found = try await store.customer(app: app, id: id) else {
                return JSONError.response(.notFound, "no customer of '\(app)' has the key '\(id)'")
            }
            record = found
        } catch {
            return JSONError.response(.serviceUnavailable, "the purchase store does not answer")
        }
        let grants = CustomerContent.grants(
            record: record, catalog: config.catalog, groups: config.subscriptionGroups, manifest: manifest, at: at)
        let refusals = CustomerContent.refusals(
            record: record, catalog: config.catalog, groups: config.subscriptionGroups, manifest: manifest, granted: grants, at: at)
        return Self.ok(
            ServiceJSON.encode(
                CustomerContentAnswer(
                    customer: record.id, at: at, revision: revision, manifest: manifest, grants: grants, refusals: refusals)))
    }
}

/// `GET /v1/admin/apps/{app}/customers/{id}/content`'s answer, for the dashboard's customer page:
/// each item of the revision's content manifest the customer may download, with the rule and the
/// transaction that grant it, and each they may not, with why in words.
struct CustomerContentAnswer: Codable, Sendable, Equatable {
    var customer: Int64
    var at: String
    var revision: Int
    /// How many items the revision's content manifest has: 0 when the app delivers no content.
    var offered: Int
    var items: [Item]
    var refused: [Refused]

    /// One item granted.
    struct Item: Codable, Sendable, Equatable {
        var item: String
        var version: Int
        /// `holds-product`, `published-during-period` or `current-at-first-period`.
        var rule: String
        /// The transaction that grants it.
        var transactionId: String
        /// The product held, for `holds-product`.
        var productId: String?
        /// The environment of the evidence that grants it.
        var environment: String?
        /// The rule in words (``CustomerContent/explain(_:)``).
        var why: String
        /// How many files the item has, and their bytes together.
        var files: Int
        var bytes: Int64
    }

    /// One item refused.
    struct Refused: Codable, Sendable, Equatable {
        var item: String
        var version: Int
        /// Why, in words (``CustomerContent/refusals(record:catalog:groups:manifest:granted:at:)``).
        var reason: String
    }

    init(customer: Int64, at: Date, revision: Int, manifest: ContentManifest, grants: [ContentGrant], refusals: [String: String]) {
        self.customer = customer
        self.at = CustomerAnswer.rfc3339(at)
        self.revision = revision
        offered = manifest.items.count
        let grantOf = Dictionary(grants.map { ($0.itemId, $0) }, uniquingKeysWith: { first, _ in first })
        let sorted = manifest.items.sorted { $0.id < $1.id }
        items = sorted.compactMap { item in
            guard let grant = grantOf[item.id] else { return nil }
            let (rule, transaction, product) = ContentListAnswer.rule(grant.reason)
            return Item(
                item: item.id, version: item.version, rule: rule, transactionId: transaction, productId: product,
                environment: grant.environment?.rawValue, why: CustomerContent.explain(grant.reason), files: item.files.count,
                bytes: item.files.reduce(0) { $0 + $1.size })
        }
        refused = sorted.compactMap { item in
            guard grantOf[item.id] == nil else { return nil }
            return Refused(item: item.id, version: item.version, reason: refusals[item.id] ?? "the access rules do not grant it")
        }
    }
}
