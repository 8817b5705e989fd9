import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(StoreKit)
    import StoreKit
#endif

/// What an app links to get its product identifiers from the catalog and report the ones the
/// App Store calls invalid.
///
/// ```swift
/// let catalog = CatalogClient(configuration: .init(
///     server: URL(string: "https://catalog.example.com")!, app: "com.example.game",
///     fallbackIdentifiers: ["com.example.game.coins"]))
/// let list = await catalog.products()
/// let products = try await Product.products(for: list.identifiers)
/// let invalid = Set(list.identifiers).subtracting(products.map(\.id))
/// try await catalog.reportInvalidIdentifiers(Array(invalid), requested: list.identifiers, environment: .production)
/// ```
///
/// Fetching keeps the last feed on disk with its validators and revalidates it with
/// `If-None-Match` and `If-Modified-Since`, so an unchanged catalog costs a 304 with no body; while
/// the server's `max-age` runs, it makes no request at all. Concurrent calls for the same feed share
/// one request. When the network or the server fails, the answer is the cached list marked stale,
/// or the app's bundled list: never an empty list because of a network error.
///
/// Reports go into a queue on disk first, so they survive the app being killed, and are sent in
/// the background, each with its own `reportId` so that the server counts a retried report once.
/// Purchases go to the server the same way, and its answer, the customer's entitlements, is kept
/// for offline use (<doc:VerifyPurchases>).
public actor CatalogClient {
    /// How this client was set up.
    public nonisolated let configuration: Configuration
    let transport: HTTPTransport
    let cache: FeedCache
    let outbox: ReportOutbox
    let purchases: PurchaseOutbox
    /// Parsed feeds by URL, so that a fresh-cache answer costs neither a read nor a parse.
    private var memory: [URL: MemoryEntry] = [:]
    /// Requests under way by URL: a call for a feed already being fetched waits for that request.
    private var inFlight: [URL: Task<ProductList, Never>] = [:]
    /// The catalog revision last seen, sent with reports so the server knows which feed they saw.
    private var lastRevision: Int?
    /// Signature checks and what they have accepted so far.
    private var trust: FeedTrust
    /// What the client knows of the server's `variants.json` (see ``VariantIndexState``).
    var variantIndexState = VariantIndexState.unknown

    /// A feed as kept in memory: its cached form, parsed, and its verified signature when
    /// signatures are checked.
    private struct MemoryEntry {
        var feed: CachedFeed
        var decoded: DecodedFeed
        var signature: VerifiedFeedSignature?
    }

    /// A client. It starts sending reports an earlier process left queued, if any; the feed cache is
    /// read on first use.
    public init(configuration: Configuration) {
        self.configuration = configuration
        transport = HTTPTransport(timeout: configuration.requestTimeout, maximumResponseBytes: configuration.maximumResponseBytes)
        cache = FeedCache(directory: configuration.cacheDirectory)
        trust = FeedTrust(configuration: configuration)
        let outbox = ReportOutbox(configuration: configuration, transport: transport)
        self.outbox = outbox
        let purchases = PurchaseOutbox(configuration: configuration, transport: transport)
        self.purchases = purchases
        // Reports and purchases an earlier process queued but could not send go out without
        // waiting for a new one.
        Task {
            await outbox.resume()
            await purchases.resume()
        }
    }

    // MARK: - Fetching

    /// The product identifiers for this app, platform and version.
    ///
    /// Answers from the cache without a request while the server's `max-age` runs
    /// (``ProductList/Source-swift.enum/freshCache``); otherwise revalidates (200 or 304), and when
    /// that fails returns the cached list (``ProductList/Source-swift.enum/staleCache``) or the
    /// fallback list (``ProductList/Source-swift.enum/fallback``) with the error.
    ///
    /// - Parameters:
    ///   - platform: The platform whose products to list; the one the app runs on by default.
    ///   - appVersion: The app version whose products to list; the bundle's by default.
    public func products(
        platform: Platform? = Platform.current, appVersion: String? = Configuration.bundleAppVersion
    ) async -> ProductList {
        await products(platform: platform, appVersion: appVersion, revalidate: false)
    }

    /// Like ``products(platform:appVersion:)``, but asks the server even while the cache is fresh:
    /// for pull-to-refresh, or after a push that says the catalog changed.
    public func refresh(
        platform: Platform? = Platform.current, appVersion: String? = Configuration.bundleAppVersion
    ) async -> ProductList {
        await products(platform: platform, appVersion: appVersion, revalidate: true)
    }

    /// The feed of a platform and version from its variant's own path, which any static host
    /// serves: the path comes from the server's `variants.json`, kept with its validators. With an
    /// index kept from before, the feed is asked for at once while the index is revalidated beside
    /// it, so a launch waits for one request, not two; if that answer fails and the index moved
    /// the variant, the new path is asked once. A server without `variants.json` (one that
    /// predates variant paths) gets the query form.
    private func products(platform: Platform?, appVersion: String?, revalidate: Bool) async -> ProductList {
        let variant = RequestedVariant(platform: platform?.rawValue.lowercased(), appVersion: WireRules.appVersion(appVersion))
        let queryForm = configuration.feedURL(platform: platform, appVersion: appVersion)
        guard let kept = keptVariantIndex() else {
            let index = await currentVariantIndex()
            return await products(from: configuration.feedURL(variant, index: index) ?? queryForm, variant: variant, revalidate: revalidate)
        }
        let url = configuration.feedURL(variant, index: kept) ?? queryForm
        if !revalidate, freshEntry(url, variant: variant) != nil {
            return await products(from: url, variant: variant, revalidate: false)
        }
        async let refreshed = currentVariantIndex()
        let answer = await products(from: url, variant: variant, revalidate: revalidate)
        let moved = configuration.feedURL(variant, index: await refreshed) ?? queryForm
        guard answer.error != nil, moved != url else { return answer }
        return await products(from: moved, variant: variant, revalidate: true)
    }

    /// The list at any feed URL (`products.json` or `catalog.json`, from `catalog serve`, a static
    /// host or a CDN), cached and revalidated like ``products(platform:appVersion:)``.
    ///
    /// - Parameters:
    ///   - feedURL: The feed's URL, query included: its platform and appVersion choose the variant,
    ///     or a variant's own path (`…/variants/ios/2.0/products.json`), which names it; the
    ///     signature must cover that variant.
    ///   - revalidate: Ask the server even while the cached feed is fresh.
    public func products(from feedURL: URL, revalidate: Bool) async -> ProductList {
        await products(from: feedURL, variant: nil, revalidate: revalidate)
    }

    /// The cached feed at `url` while it may be used without a request.
    private func freshEntry(_ url: URL, variant: RequestedVariant?) -> MemoryEntry? {
        guard let cached = cachedFeed(url, variant: variant) else { return nil }
        // A signature past its expiry makes a cached feed stale, whatever max-age said: the
        // server (or the static host's .jws) must vouch for it again.
        let signatureCurrent = cached.signature.map { !isExpired($0) } ?? true
        return signatureCurrent && cached.feed.isFresh(at: Date()) ? cached : nil
    }

    /// - Parameter variant: the platform and version the feed must be signed for; nil: the
    ///   ones the URL names (its query, or its variant path).
    private func products(from feedURL: URL, variant: RequestedVariant?, revalidate: Bool) async -> ProductList {
        if !revalidate, let fresh = freshEntry(feedURL, variant: variant) {
            return list(fresh, source: .freshCache, status: nil)
        }
        let cached = cachedFeed(feedURL, variant: variant)
        if let running = inFlight[feedURL] { return await running.value }
        let request = Task { await self.revalidate(feedURL, cached: cached?.feed, variant: variant) }
        inFlight[feedURL] = request
        let answer = await request.value
        inFlight[feedURL] = nil
        return answer
    }

    private func isExpired(_ signature: VerifiedFeedSignature) -> Bool {
        trust.policy.clock().timeIntervalSince1970 > TimeInterval(signature.claims.exp)
    }

    private func cachedFeed(_ url: URL, variant: RequestedVariant?) -> MemoryEntry? {
        if let entry = memory[url] { return entry }
        guard let feed = cache.load(url) else { return nil }
        var signature: VerifiedFeedSignature?
        // The cache is only a file: it is checked like a download, against the revision the data
        // directory says was accepted, before it is parsed or trusted. An expired signature is
        // not a reason to drop it (it is the last verified list); revalidation will ask.
        if trust.isEnabled {
            do {
                signature = try trust.check(
                    feed.header.signature, body: feed.body, url: url, variant: variant, now: trust.policy.clock(),
                    ignoringExpiry: true)
            } catch {
                if trust.policy.mode == .enforce {
                    configuration.log("cached feed \(url.absoluteString) dropped: \(error)")
                    cache.remove(url)
                    return nil
                }
            }
        }
        guard let decoded = try? DecodedFeed(feed.body, kind: FeedKind(url: url)) else {
            cache.remove(url)
            return nil
        }
        let entry = MemoryEntry(feed: feed, decoded: decoded, signature: signature)
        memory[url] = entry
        return entry
    }

    /// One request (with retries) and what its answer means for the list.
    private func revalidate(_ url: URL, cached: CachedFeed?, variant: RequestedVariant?) async -> ProductList {
        var request = URLRequest(url: url)
        if let tag = cached?.header.entityTag { request.setValue(tag, forHTTPHeaderField: "If-None-Match") }
        if let date = cached?.header.lastModified { request.setValue(date, forHTTPHeaderField: "If-Modified-Since") }
        let requestedAt = Date()
        let answer: HTTPAnswer
        switch await sendWithRetries(request) {
        case .success(let received): answer = received
        case .failure(let error): return fallback(url, error: error)
        }
        // RFC 9111 §4.2.3 counts freshness from the request, not the response: the conservative end.
        let policy = CachePolicy(cacheControl: answer.header("Cache-Control"), age: answer.header("Age"))
        var feed: CachedFeed
        let decoded: DecodedFeed
        var judgement = Judgement()
        if answer.status == 304, let cached {
            feed = cached
            // A 304 may carry updated validators (RFC 9111 §4.3.4); absent ones stay as they were.
            feed.header.entityTag = answer.header("ETag") ?? cached.header.entityTag
            feed.header.lastModified = answer.header("Last-Modified") ?? cached.header.lastModified
            guard let entry = memory[url] else { return fallback(url, error: Self.unexpected(answer)) }
            decoded = entry.decoded
            if trust.isEnabled {
                // A re-issued signature comes with the 304 from `catalog serve`; a static host's
                // is in the .jws beside the feed, asked for only when the kept one has expired.
                var signature = answer.header(FeedSigner.httpHeader) ?? cached.header.signature
                if answer.header(FeedSigner.httpHeader) == nil, let kept = entry.signature, isExpired(kept) {
                    signature = await detachedSignature(for: url) ?? signature
                }
                judgement = judge(feed.body, signature: signature, url: url, variant: variant)
                if let refusal = judgement.refusal { return fallback(url, error: refusal) }
                feed.header.signature = signature
            }
        } else if answer.status == 200 {
            var signature: String?
            if trust.isEnabled {
                signature = answer.header(FeedSigner.httpHeader)
                if signature == nil { signature = await detachedSignature(for: url) }
                judgement = judge(answer.body, signature: signature, url: url, variant: variant)
                if let refusal = judgement.refusal { return fallback(url, error: refusal) }
                // The version already accepted: a no-op, the list stays the one the cache holds.
                if let checked = judgement.verified, trust.isCurrent(checked), let entry = memory[url],
                    entry.feed.body != answer.body
                {
                    return list(entry, source: .notModified, status: answer.status)
                }
            }
            do {
                decoded = try DecodedFeed(answer.body, kind: FeedKind(url: url))
            } catch {
                return fallback(url, error: error)
            }
            feed = CachedFeed(
                header: .init(
                    url: url.absoluteString, entityTag: answer.header("ETag"), lastModified: answer.header("Last-Modified"),
                    validatedAt: requestedAt, freshUntil: nil, signature: signature),
                body: answer.body)
        } else {
            return fallback(url, error: Self.unexpected(answer))
        }
        // A 304 without Cache-Control leaves the stored one in force (RFC 9111 §4.3.4).
        let lifetime =
            answer.status == 304 && answer.header("Cache-Control") == nil ? feed.header.freshnessLifetime : policy.freshnessLifetime
        feed.header.validatedAt = requestedAt
        feed.header.freshnessLifetime = lifetime
        feed.header.freshUntil = lifetime.map { requestedAt.addingTimeInterval($0) }
        let entry = MemoryEntry(feed: feed, decoded: decoded, signature: judgement.verified)
        memory[url] = entry
        if policy.noStore {
            cache.remove(url)
        } else {
            do { try cache.store(feed, for: url) } catch { configuration.log("feed cache not written: \(error)") }
        }
        // Only now, with every check passed and the feed in place, is what it taught kept.
        if let checked = judgement.verified {
            do { try trust.commit(checked) } catch { configuration.log("signature state not written: \(error)") }
        }
        var answered = list(entry, source: answer.status == 304 ? .notModified : .network, status: answer.status)
        answered.signatureIssue = judgement.issue
        return answered
    }

    /// What the signature checks made of a feed: verified, refused (enforce), or accepted with an
    /// issue (report).
    private struct Judgement {
        var verified: VerifiedFeedSignature?
        var refusal: CatalogClientError?
        var issue: CatalogClientError?
    }

    private func judge(_ body: Data, signature: String?, url: URL, variant: RequestedVariant?) -> Judgement {
        do {
            return Judgement(verified: try trust.check(signature, body: body, url: url, variant: variant, now: trust.policy.clock()))
        } catch {
            let problem = CatalogClientError(code: .signature, message: "\(url.absoluteString): \(error)")
            if trust.policy.mode == .enforce { return Judgement(refusal: problem) }
            configuration.log("feed used although its signature is not trusted (report mode): \(problem)")
            return Judgement(issue: problem)
        }
    }

    /// The `.jws` a static host keeps beside a feed (the feed's path plus `.jws`, no query).
    private func detachedSignature(for url: URL) async -> String? {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return nil }
        components.query = nil
        components.path += ".jws"
        guard let signatureURL = components.url,
            case .success(let answer) = await transport.send(URLRequest(url: signatureURL)), answer.status == 200,
            answer.body.count <= FeedSignatureVerifier.maximumLength
        else { return nil }
        return String(decoding: answer.body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Sends `request`, retrying transport failures, 5xx and 429 with backoff (or the server's
    /// `Retry-After`, when it is short enough to wait during a launch); a 200 or a 304 is an answer.
    private func sendWithRetries(_ request: URLRequest) async -> Result<HTTPAnswer, CatalogClientError> {
        var lastError = CatalogClientError(code: .transport, message: "no attempt made")
        for attempt in 0..<max(configuration.fetchAttempts, 1) {
            if attempt > 0 {
                let wait = lastError.retryAfter ?? configuration.fetchBackoff.delay(retry: attempt - 1)
                // Waiting longer than a short backoff would hold the app's launch: use the cache.
                if wait > configuration.fetchBackoff.maximum { break }
                try? await Task.sleep(nanoseconds: UInt64(wait * 1_000_000_000))
                if Task.isCancelled { break }
            }
            switch await transport.send(request) {
            case .success(let answer) where answer.status == 200 || answer.status == 304:
                return .success(answer)
            case .success(let answer):
                lastError = Self.unexpected(answer)
                if !lastError.isRetryable { return .failure(lastError) }
            case .failure(let error):
                lastError = error
                // An answer too large comes again as large: no retry.
                if !lastError.isRetryable { return .failure(lastError) }
            }
        }
        return .failure(lastError)
    }

    private func fallback(_ url: URL, error: CatalogClientError) -> ProductList {
        if let cached = memory[url] {
            var list = list(cached, source: .staleCache, status: nil)
            list.status = error.status
            list.error = error
            return list
        }
        var identifiers = configuration.fallbackIdentifiers
        var signedRevision: Int?
        if let bundled = configuration.bundledFeed, let decoded = try? DecodedFeed(bundled.body, kind: FeedKind(url: url)) {
            do {
                if trust.isEnabled {
                    signedRevision = try trust.check(
                        bundled.signature, body: bundled.body, url: url, now: trust.policy.clock(), bundled: true
                    ).claims.rev
                }
                identifiers = decoded.identifiers
            } catch {
                if trust.policy.mode == .enforce {
                    configuration.log("bundled feed not used: \(error)")
                } else {
                    identifiers = decoded.identifiers
                }
            }
        }
        return ProductList(
            identifiers: identifiers, products: nil, known: [], revision: nil, source: .fallback,
            status: error.status, entityTag: nil, lastModified: nil, validatedAt: nil, freshUntil: nil, error: error,
            signedRevision: signedRevision)
    }

    private func list(_ entry: MemoryEntry, source: ProductList.Source, status: Int?) -> ProductList {
        let (decoded, feed) = (entry.decoded, entry.feed)
        if let revision = decoded.revision { lastRevision = revision }
        return ProductList(
            identifiers: decoded.identifiers, products: decoded.products, known: decoded.known, revision: decoded.revision,
            source: source, status: status, entityTag: feed.header.entityTag, lastModified: feed.header.lastModified,
            validatedAt: feed.header.validatedAt, freshUntil: feed.header.freshUntil, error: nil,
            signedRevision: entry.signature?.claims.rev)
    }

    /// An answer other than 200 or 304, as an error that says whether to retry.
    static func unexpected(_ answer: HTTPAnswer) -> CatalogClientError {
        let retryable = answer.status == 429 || answer.status >= 500
        var error = CatalogClientError(
            code: retryable ? .server : .rejected, message: "HTTP \(answer.status): \(serverMessage(answer))", status: answer.status)
        error.retryAfter = retryable ? retryAfterDelay(answer.header("Retry-After"), now: Date()) : nil
        error.serverCode = ServiceErrorBody(answer.body)?.code
        // The refusal an app shows the person ("this purchase belongs to another account"): a code of its own.
        if answer.status == 409 && error.serverCode == "bound-to-another-customer" { error.code = .boundToAnotherCustomer }
        return error
    }

    /// Whether an answer carries `catalog serve`'s error body, `{"error":{"message":…}}`: a 404 with
    /// it is the service refusing (an app it does not publish), one without it is a host that has
    /// no such route at all.
    static func isServiceError(_ answer: HTTPAnswer) -> Bool {
        ServiceErrorBody(answer.body) != nil
    }

    /// The server's `{"error":{"message":…}}`, or the start of whatever else it sent.
    static func serverMessage(_ answer: HTTPAnswer) -> String {
        if let body = ServiceErrorBody(answer.body) { return body.message }
        return String(decoding: answer.body.prefix(200), as: UTF8.self)
    }

    // MARK: - Reporting

    /// Queues a report of identifiers the App Store answered as invalid, and sends it in the
    /// background.
    ///
    /// The report is on disk before this returns, so it is sent even if the app is killed right
    /// after: on the next launch, or when ``sendPendingReports()`` runs. It carries a random
    /// `reportId` (the server stores a retried report once), the install id this client made up
    /// (random, kept in ``Configuration/dataDirectory``, never derived from the device or the user),
    /// the platform, app version and the catalog revision last fetched. Nothing identifies a person.
    ///
    /// - Parameters:
    ///   - invalid: `Product.products(for:)`'s missing identifiers, or `SKProductsResponse.invalidProductIdentifiers`.
    ///     Duplicates are removed; more than 1000 are split into several reports.
    ///   - requested: The identifiers that were asked for, so the server can tell an invalid rate.
    ///   - environment: The store that answered: StoreKit's `AppTransaction.shared` environment.
    ///   - storefront: The storefront's country code, such as `USA` (`Storefront.current?.countryCode`).
    ///   - appTransaction: `AppTransaction.shared`'s `jwsRepresentation`. A server configured with
    ///     Apple's root certificate verifies it and counts the report as from a real install, which
    ///     weighs more than any number of reports from one network. When nil, the client fetches it
    ///     itself where StoreKit 2 is available; it is never required.
    /// - Returns: The `reportId` of each queued report; none when `invalid` is empty.
    @discardableResult
    public func reportInvalidIdentifiers(
        _ invalid: [String], requested: [String]? = nil, environment: StoreEnvironment, storefront: String? = nil,
        appTransaction: String? = nil
    ) async throws(CatalogClientError) -> [String] {
        var appTransaction = appTransaction
        if appTransaction == nil { appTransaction = await Self.currentAppTransaction() }
        return try await outbox.enqueue(
            invalid: invalid, requested: requested, environment: environment, storefront: storefront, feedRevision: lastRevision,
            appTransaction: appTransaction)
    }

    /// The app's signed AppTransaction where StoreKit 2 has one; nil elsewhere (Linux, older
    /// systems) or when StoreKit cannot answer.
    static func currentAppTransaction() async -> String? {
        #if canImport(StoreKit)
            if #available(iOS 16.0, macOS 13.0, tvOS 16.0, watchOS 9.0, visionOS 1.0, *) {
                return try? await AppTransaction.shared.jwsRepresentation
            }
        #endif
        return nil
    }

    /// Sends the queued reports now, unless the server asked to wait (429 or 5xx with
    /// `Retry-After`, or a back-off after failures) and that time has not come.
    ///
    /// The client does this by itself when ``Configuration/sendsReportsAutomatically`` is on; call it
    /// from a background task, or in tests.
    @discardableResult
    public func sendPendingReports() async -> ReportDelivery {
        await outbox.sendPending()
    }
}
