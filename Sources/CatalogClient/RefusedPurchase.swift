import Foundation

/// A purchase the server refused for good: it is not sent again, and nothing it names is granted.
///
/// The one to tell the person about is ``isBoundToAnotherCustomer``: under the app's `keep` policy
/// the purchase belongs to another account of the app ("this purchase belongs to another
/// account"), and ``entitlements`` holds what the account that presented it does own, as the server
/// answered beside the refusal. Other refusals (``CatalogClientError/serverCode`` `not-authenticated`,
/// `wrong-app`, `unknown-product`, …) are for the logs: a forged transaction, another app's, a
/// product the catalog does not publish yet.
///
/// A refusal of a queued purchase is in ``PurchaseDelivery/refused`` of the round that sent it and
/// stays in ``CatalogClient/refusedPurchases()`` until the app removes it, so that one refused by the
/// background loop, or just before the app was killed, still reaches the app. A restore's are in
/// ``PurchaseRestore/refused``.
public struct RefusedPurchase: Sendable, Hashable {
    /// The id ``CatalogClient/sendPurchase(signedTransaction:appTransaction:appAccountToken:)``
    /// returned; for a purchase a restore presented, an id made for it.
    public var purchaseId: String
    /// Why: ``CatalogClientError/Code-swift.struct/boundToAnotherCustomer`` or
    /// ``CatalogClientError/Code-swift.struct/rejected``, with the server's code in
    /// ``CatalogClientError/serverCode`` and its message.
    public var error: CatalogClientError
    /// The transaction's id, as the signed transaction says it, read on the device without checking
    /// the signature: to show which purchase it was, never to grant anything.
    public var transactionId: String?
    /// The transaction's product, read like ``transactionId``.
    public var productId: String?
    /// What the account that presented the purchase does own: the server's answer beside a
    /// `bound-to-another-customer` refusal, when that account (its `appAccountToken`) is a customer.
    /// Nil otherwise. The client keeps it as it keeps an accepted purchase's answer
    /// (``CatalogClient/entitlements()``).
    public var entitlements: CustomerEntitlements?
    /// When the server refused it, by the device's clock.
    public var refusedAt: Date

    /// Whether the purchase belongs to another account of the app: the server refused it with
    /// `bound-to-another-customer` (HTTP 409) under the app's `keep` policy.
    public var isBoundToAnotherCustomer: Bool { error.code == .boundToAnotherCustomer }

    /// A refusal of `purchaseId` for `error`, with what the transaction says of itself.
    init(purchaseId: String, error: CatalogClientError, signedTransaction: String?, entitlements: CustomerEntitlements?, refusedAt: Date) {
        let claims = signedTransaction.flatMap(TransactionClaims.init(jws:))
        self.purchaseId = purchaseId
        self.error = error
        transactionId = claims?.transactionId
        productId = claims?.productId
        self.entitlements = entitlements
        self.refusedAt = refusedAt
    }
}

/// What a signed transaction says about itself, read without checking its signature: for the
/// client's bookkeeping and for showing the person which purchase it was, never for granting (the
/// server verifies). Fields of another type than Apple's are left out rather than failing the read.
struct TransactionClaims: Decodable {
    var transactionId: String?
    var productId: String?
    /// The app account the purchase was made for (`Product.PurchaseOption.appAccountToken`), lower-cased.
    var appAccountToken: String?

    private enum CodingKeys: String, CodingKey { case transactionId, productId, appAccountToken }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        transactionId = try? container.decodeIfPresent(String.self, forKey: .transactionId)
        productId = try? container.decodeIfPresent(String.self, forKey: .productId)
        appAccountToken = (try? container.decodeIfPresent(String.self, forKey: .appAccountToken))?.lowercased()
    }

    /// The claims of a compact JWS's payload; nil when it is not one.
    init?(jws: String) {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(parts[1]),
            let claims = try? JSONDecoder().decode(Self.self, from: payload)
        else { return nil }
        self = claims
    }
}
