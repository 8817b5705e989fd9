import Foundation

#if canImport(StoreKit)
    import StoreKit
#endif

extension CatalogClient {
    // MARK: - Purchases

    /// Queues a completed purchase for the server to verify and record, and sends it in the background.
    ///
    /// The purchase is on disk before this returns, so it reaches the server even if the app is
    /// killed right after: on the next launch, or when ``sendPendingPurchases()`` runs. Network
    /// failures, 5xx and 429 keep it queued and retry with back-off (``Configuration/purchaseBackoff``,
    /// or the server's `Retry-After`); a definitive refusal (another 4xx) takes it out of the queue,
    /// and the delivery says why (``PurchaseDelivery/refused``), as ``refusedPurchases()`` does until
    /// the app removes it. The server records evidence once however often it
    /// arrives, so a resend after a crash changes nothing.
    ///
    /// - Parameters:
    ///   - signedTransaction: StoreKit 2's `Transaction` `jwsRepresentation` (`VerificationResult`'s),
    ///     however the app got it: on Apple platforms, `sendPurchase(_:appAccountToken:)` takes the
    ///     `VerificationResult` itself.
    ///   - appTransaction: `AppTransaction.shared`'s `jwsRepresentation`, which names the Apple
    ///     account (`appTransactionId`) to the server. When nil, the client fetches it itself where
    ///     StoreKit 2 has it (iOS 16 and later); it is never required.
    ///   - appAccountToken: The customer's account in the app, when it has one and did not set it on
    ///     the purchase (a token StoreKit signed in the transaction wins over this one).
    /// - Returns: An id for the queued purchase, which ``RefusedPurchase/purchaseId`` names.
    /// - Throws: ``CatalogClientError/Code-swift.struct/rejected`` when `signedTransaction` is not a
    ///   compact JWS of at most 64 KiB; ``CatalogClientError/Code-swift.struct/storage`` when it
    ///   cannot be queued.
    @discardableResult
    public func sendPurchase(
        signedTransaction: String, appTransaction: String? = nil, appAccountToken: UUID? = nil
    ) async throws(CatalogClientError) -> String {
        var appTransaction = appTransaction
        if appTransaction == nil { appTransaction = await Self.currentAppTransaction() }
        return try await purchases.enqueue(
            signedTransaction: signedTransaction, appTransaction: appTransaction, appAccountToken: appAccountToken)
    }

    /// Sends the queued purchases now, unless the server asked to wait (429 or 5xx with
    /// `Retry-After`, or a back-off after failures) and that time has not come.
    ///
    /// The client does this by itself when ``Configuration/sendsPurchasesAutomatically`` is on.
    /// Each accepted purchase updates the entitlements kept for offline use.
    @discardableResult
    public func sendPendingPurchases() async -> PurchaseDelivery {
        await purchases.sendPending()
    }

    /// The customer's entitlements as the server last answered them, kept on disk: no request.
    ///
    /// ``CustomerEntitlements/source`` is ``CustomerEntitlements/Source/cache``, or
    /// ``CustomerEntitlements/Source/unknown`` (nothing granted) when no purchase was ever accepted
    /// on this install: on a fresh install, run ``restorePurchases(from:syncing:appAccountToken:)``.
    /// ``CustomerEntitlements/readAt`` says how old the answer is.
    ///
    /// The server answers per customer. Purchases made without an app account token are each a
    /// customer of their own until an account claims one, so an install may have been answered
    /// several: their entitlements are merged, read at the oldest answer's time. An answer for
    /// another app account (someone else signed in to the app) replaces the previous account's.
    public func entitlements() async -> CustomerEntitlements {
        await purchases.cached()
    }

    /// Asks the server for the customer's entitlements now: sends the queued purchases if any, then
    /// presents again each kept customer's last accepted purchase that the queue did not just answer
    /// (the server answers purchases with the customer's entitlements; the app holds no token for
    /// reading customers).
    ///
    /// When the server cannot be reached or refuses, the answer is the kept one
    /// (``CustomerEntitlements/Source/cache``) with ``CustomerEntitlements/error`` saying why. Under
    /// the app's `transfer` policy, presenting a purchase again moves it to this customer, as a
    /// restore does; under `keep` (the default) a purchase another customer holds is refused
    /// (``CatalogClientError/Code-swift.struct/boundToAnotherCustomer``). A fresh install has
    /// nothing to present: ``restorePurchases(from:syncing:appAccountToken:)`` presents what the
    /// store holds.
    public func refreshEntitlements() async -> CustomerEntitlements {
        await purchases.refresh()
    }

    /// The purchases the server refused for good that the app has not removed yet, oldest first.
    ///
    /// A refusal reaches the app in the ``PurchaseDelivery`` of the round that sent the purchase;
    /// when that round was the background loop's (``Configuration/sendsPurchasesAutomatically``),
    /// or the app was killed meanwhile, it is here. Show the ones that
    /// ``RefusedPurchase/isBoundToAnotherCustomer`` ("this purchase belongs to another account",
    /// with ``RefusedPurchase/entitlements``, what this account does own), then remove them with
    /// ``removeRefusedPurchases(_:)``. At most 50 are kept, the oldest dropped first.
    public func refusedPurchases() async -> [RefusedPurchase] {
        await purchases.refusals()
    }

    /// Forgets the refusals of `purchaseIds` (``RefusedPurchase/purchaseId``), once the app has shown
    /// them. Refusals that arrived since the app read the list stay.
    public func removeRefusedPurchases(_ purchaseIds: [String]) async {
        await purchases.removeRefusals(Set(purchaseIds))
    }

    // MARK: - Restoring

    /// Presents every purchase the store holds for this Apple account to the server, with the app's
    /// AppTransaction and account, so that a reinstalled app or a second device knows what the
    /// customer owns and can download it.
    ///
    /// The source's current entitlements (StoreKit's `Transaction.currentEntitlements`) go one by one
    /// to `POST v1/apps/<app>/purchases`, each with the source's AppTransaction and
    /// `appAccountToken`; the server records each against its customer and answers that customer.
    /// The answers are kept as an accepted purchase's are: ``entitlements()`` merges them from now
    /// on, ``refreshEntitlements()`` presents them again, and ``ContentDownloadManager`` shows them
    /// to ask for content (``ContentEvidence/lastAcceptedPurchase``).
    ///
    /// A purchase the server refuses is in ``PurchaseRestore/refused``; one that
    /// ``RefusedPurchase/isBoundToAnotherCustomer`` belongs to another account of the app. A failure
    /// worth trying again (no network, 5xx, 429) stops the restore with
    /// ``PurchaseRestore/error``: nothing is queued, since the store still holds the purchases and the
    /// next restore presents them all again (the server records each once however often it comes).
    ///
    /// - Parameters:
    ///   - source: Where the signed transactions come from: on Apple platforms
    ///     `StoreKitTransactionSource()`, which `restorePurchases(syncing:appAccountToken:)` passes.
    ///   - syncing: Call the source's ``SignedTransactionSource/sync()`` first (`AppStore.sync()`,
    ///     which may ask the person to sign in to the App Store). Only when the person asked, with a
    ///     "Restore Purchases" button: at launch, restore without it.
    ///   - appAccountToken: The app's account for the person, when it has one. A token the App
    ///     Store signed in a transaction wins over it (the server binds by what Apple signed).
    public func restorePurchases(
        from source: some SignedTransactionSource, syncing: Bool = false, appAccountToken: UUID? = nil
    ) async -> PurchaseRestore {
        var syncFailure: CatalogClientError?
        if syncing {
            do { try await source.sync() } catch {
                // StoreKit also says `userCancelled` when it is offline: what the device holds still goes.
                let failure = CatalogClientError(code: .storeKit, message: "the store could not sync: \(error)")
                configuration.log("restore: \(failure.message)")
                syncFailure = failure
            }
        }
        let transactions: [String]
        do { transactions = try await source.currentEntitlements() } catch {
            let failure = CatalogClientError(code: .storeKit, message: "the store's current entitlements could not be read: \(error)")
            var kept = await purchases.cached()
            kept.error = failure
            return PurchaseRestore(entitlements: kept, error: failure)
        }
        // The AppTransaction is never required: without it, the purchases still name their customer.
        let appTransaction = transactions.isEmpty ? nil : try? await source.appTransaction()
        var restore = await purchases.restore(transactions, appTransaction: appTransaction, appAccountToken: appAccountToken)
        restore.error = restore.error ?? syncFailure
        return restore
    }
}

#if canImport(StoreKit)
    extension CatalogClient {
        /// Queues a StoreKit 2 purchase (its `jwsRepresentation`) for the server, as
        /// ``sendPurchase(signedTransaction:appTransaction:appAccountToken:)`` does.
        ///
        /// An unverified result is sent too: the server verifies for itself, and counts what it refuses.
        /// Set the app account on the purchase itself, so that the App Store signs it (on visionOS,
        /// which has no `purchase(options:)`, through SwiftUI's `PurchaseAction` or
        /// `purchase(confirmIn:options:)`: <doc:VerifyPurchases>).
        ///
        /// ```swift
        /// let result = try await product.purchase(options: [.appAccountToken(account)])
        /// if case .success(let verification) = result {
        ///     try await catalog.sendPurchase(verification)
        ///     if case .verified(let transaction) = verification { await transaction.finish() }
        /// }
        /// ```
        @discardableResult
        public func sendPurchase(
            _ verification: VerificationResult<Transaction>, appAccountToken: UUID? = nil
        ) async throws(CatalogClientError) -> String {
            try await sendPurchase(signedTransaction: verification.jwsRepresentation, appAccountToken: appAccountToken)
        }

        /// Restores from StoreKit 2: ``restorePurchases(from:syncing:appAccountToken:)`` with
        /// ``StoreKitTransactionSource``.
        ///
        /// ```swift
        /// // At launch on an install that knows nothing yet: no sync, no sign-in prompt.
        /// if await catalog.entitlements().source == .unknown { _ = await catalog.restorePurchases() }
        ///
        /// // The "Restore Purchases" button: AppStore.sync() first, then the restore.
        /// let restored = await catalog.restorePurchases(syncing: true, appAccountToken: account)
        /// ```
        public func restorePurchases(syncing: Bool = false, appAccountToken: UUID? = nil) async -> PurchaseRestore {
            await restorePurchases(from: StoreKitTransactionSource(), syncing: syncing, appAccountToken: appAccountToken)
        }

        /// Listens to `Transaction.updates` (renewals, purchases made on another device, Ask to Buy,
        /// refunds) for as long as the returned task runs, and queues each for the server.
        ///
        /// Start it at launch, as Apple asks, and keep the task. With `finishing`, each verified
        /// transaction is finished once it is queued on disk: the queue, not StoreKit, then makes
        /// sure the server gets it.
        public nonisolated func sendTransactionUpdates(finishing: Bool = true) -> Task<Void, Never> {
            Task {
                for await verification in Transaction.updates {
                    do {
                        try await self.sendPurchase(verification)
                        if finishing, case .verified(let transaction) = verification { await transaction.finish() }
                    } catch {
                        self.configuration.log("purchase not queued: \(error)")
                    }
                }
            }
        }
    }
#endif
