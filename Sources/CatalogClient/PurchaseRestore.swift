import Foundation

/// What a restore did: how many purchases the store listed, which the server accepted or refused,
/// and what the customer owns afterwards.
///
/// ``CatalogClient/restorePurchases(from:syncing:appAccountToken:)`` returns it.
public struct PurchaseRestore: Sendable, Hashable {
    /// What the customer owns after the restore, as ``CatalogClient/entitlements()`` answers from
    /// now on: the server's answers to the presented purchases, merged with what this install kept
    /// before. ``CustomerEntitlements/Source/unknown`` when the store listed nothing and nothing was
    /// ever accepted on this install.
    public var entitlements: CustomerEntitlements
    /// Signed transactions the store listed as current entitlements.
    public var found = 0
    /// Those the server accepted.
    public var accepted = 0
    /// Those the server refused for good. One that ``RefusedPurchase/isBoundToAnotherCustomer``
    /// belongs to another account of the app: tell the person so.
    public var refused: [RefusedPurchase] = []
    /// Why the restore is incomplete, when it is: the server could not be reached or asked to wait
    /// (`transport`, `server`: the purchases not presented yet are presented by the next restore),
    /// or the store failed (``CatalogClientError/Code-swift.struct/storeKit``: the sync, which
    /// StoreKit also reports as a cancellation when it is offline, or the list of transactions).
    /// A failed sync alone does not stop the restore: what the device holds is presented anyway.
    public var error: CatalogClientError?
}
