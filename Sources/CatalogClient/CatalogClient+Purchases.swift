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
    /// or the server's `Retry-After`); a definitive refusal (another 4xx) drops it, and the delivery
    /// says why (``PurchaseDelivery/refused``). The server records evidence once however often it
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
    /// - Returns: An id for the queued purchase, which ``PurchaseDelivery/Refusal/purchaseId`` names.
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
    /// on this install. ``CustomerEntitlements/readAt`` says how old the answer is.
    public func entitlements() async -> CustomerEntitlements {
        await purchases.cached()
    }

    /// Asks the server for the customer's entitlements now: sends the queued purchases if any, or
    /// else presents the last purchase it accepted again (the server answers purchases with the
    /// customer's entitlements; the app holds no token for reading customers).
    ///
    /// When the server cannot be reached or refuses, the answer is the kept one
    /// (``CustomerEntitlements/Source/cache``) with ``CustomerEntitlements/error`` saying why. Under
    /// the app's `transfer` policy, presenting a purchase again moves it to this customer, as a
    /// restore does; under `keep` (the default) a purchase another customer holds is refused
    /// (``CatalogClientError/serverCode`` `bound-to-another-customer`).
    public func refreshEntitlements() async -> CustomerEntitlements {
        await purchases.refresh()
    }
}

#if canImport(StoreKit)
    extension CatalogClient {
        /// Queues a StoreKit 2 purchase (its `jwsRepresentation`) for the server, as
        /// ``sendPurchase(signedTransaction:appTransaction:appAccountToken:)`` does.
        ///
        /// An unverified result is sent too: the server verifies for itself, and counts what it refuses.
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
