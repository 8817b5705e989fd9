import Foundation

#if canImport(StoreKit)
    import StoreKit
#endif

/// Where a restore gets the purchases to present: the signed transactions the store holds for this
/// Apple account, and the app's signed AppTransaction.
///
/// On Apple platforms `StoreKitTransactionSource` reads them from StoreKit 2, and
/// `restorePurchases(syncing:appAccountToken:)` uses it. Anywhere else (a test, Linux, a tool that
/// holds transactions from elsewhere) pass a source of your own to
/// ``CatalogClient/restorePurchases(from:syncing:appAccountToken:)``: the restore itself is the same
/// code everywhere, and StoreKit is only read through this protocol.
public protocol SignedTransactionSource: Sendable {
    /// The `jwsRepresentation` of each transaction that entitles the customer now: StoreKit's
    /// `Transaction.currentEntitlements` (non-consumables, active subscriptions, non-renewing
    /// subscriptions; not refunded ones, not finished consumables).
    func currentEntitlements() async throws -> [String]

    /// The app's signed AppTransaction (`AppTransaction.shared`'s `jwsRepresentation`), which names
    /// the Apple account to the server; nil where the system has none.
    func appTransaction() async throws -> String?

    /// Brings the device's transactions up to date with the store (StoreKit's `AppStore.sync()`).
    ///
    /// StoreKit may ask the person to sign in to the App Store: the client calls this only when a
    /// restore is asked for with `syncing: true`, which an app does only when the person asked for it.
    func sync() async throws
}

#if canImport(StoreKit)
    /// StoreKit 2 as a ``SignedTransactionSource``: `Transaction.currentEntitlements`,
    /// `AppTransaction.shared` and `AppStore.sync()`, passed through unchanged.
    ///
    /// Every call it makes exists on every platform the package supports (iOS 15, macOS 15, tvOS 15,
    /// watchOS 8, visionOS 1), except `AppTransaction`, which is iOS 16, tvOS 16 and watchOS 9: on
    /// older systems the restore presents the transactions without it.
    public struct StoreKitTransactionSource: SignedTransactionSource {
        /// The source of the signed-in Apple account's transactions on this device.
        public init() {}

        /// `Transaction.currentEntitlements`' `jwsRepresentation`s; unverified ones too, since the
        /// server verifies each for itself.
        public func currentEntitlements() async throws -> [String] {
            var signed: [String] = []
            for await verification in Transaction.currentEntitlements {
                signed.append(verification.jwsRepresentation)
            }
            return signed
        }

        /// `AppTransaction.shared`'s `jwsRepresentation`, where the system has it.
        public func appTransaction() async throws -> String? {
            guard #available(iOS 16.0, macOS 13.0, tvOS 16.0, watchOS 9.0, visionOS 1.0, *) else { return nil }
            return try await AppTransaction.shared.jwsRepresentation
        }

        /// `AppStore.sync()`: it may ask the person to sign in, so only on their request.
        public func sync() async throws {
            try await AppStore.sync()
        }
    }
#endif
