import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a client knows of the server's `variants.json`.
enum VariantIndexState: Sendable {
    /// Not asked yet in this process.
    case unknown
    /// The server answered 404 or 410: it predates variant paths, and feeds are asked for with the
    /// query form until the app is launched again.
    case absent
    /// The index, as last received or kept on disk.
    case known(FeedVariants)
}

extension CatalogClient {
    /// The index kept from before (in memory, or in the feed cache on disk), without a request.
    func keptVariantIndex() -> FeedVariants? {
        switch variantIndexState {
        case .absent: return nil
        case .known(let index): return index
        case .unknown:
            guard let kept = cache.load(configuration.variantIndexURL).flatMap({ FeedVariants(json: $0.body) }) else { return nil }
            variantIndexState = .known(kept)
            return kept
        }
    }

    /// The index, revalidated with its validators unless its `max-age` still runs: the kept one
    /// when the server cannot be asked, nil when there is none or the server has none (404, 410).
    ///
    /// The index is not signed, and need not be: a feed's signature binds the variants it serves
    /// and the app's platforms and bands, and is checked against the platform and version the app
    /// asked for, so an index that lies leads to a refused feed, never to another variant's list.
    func currentVariantIndex() async -> FeedVariants? {
        if case .absent = variantIndexState { return nil }
        let url = configuration.variantIndexURL
        let cached = cache.load(url)
        let kept = cached.flatMap { FeedVariants(json: $0.body) }
        if let cached, let kept, cached.isFresh(at: Date()) { return kept }
        var request = URLRequest(url: url)
        if kept != nil, let tag = cached?.header.entityTag { request.setValue(tag, forHTTPHeaderField: "If-None-Match") }
        if kept != nil, let date = cached?.header.lastModified { request.setValue(date, forHTTPHeaderField: "If-Modified-Since") }
        let requestedAt = Date()
        guard case .success(let answer) = await transport.send(request) else { return kept }
        let lifetime = CachePolicy(cacheControl: answer.header("Cache-Control"), age: answer.header("Age")).freshnessLifetime
        var entry: CachedFeed
        let index: FeedVariants
        switch answer.status {
        case 200:
            guard let received = FeedVariants(json: answer.body) else {
                configuration.log("\(url.absoluteString) is not a variant index; the last one kept is used")
                return kept
            }
            index = received
            entry = CachedFeed(
                header: .init(
                    url: url.absoluteString, entityTag: answer.header("ETag"), lastModified: answer.header("Last-Modified"),
                    validatedAt: requestedAt, freshUntil: nil, signature: nil),
                body: answer.body)
        case 304:
            guard let cached, let kept else { return nil }
            (entry, index) = (cached, kept)
            entry.header.entityTag = answer.header("ETag") ?? cached.header.entityTag
        case 404, 410:
            variantIndexState = .absent
            cache.remove(url)
            configuration.log(
                "\(url.absoluteString) answered \(answer.status): this server has no variant paths (catalog serve or a catalog build older than them); feeds are asked for with ?platform=&appVersion="
            )
            return nil
        default:
            return kept
        }
        entry.header.validatedAt = requestedAt
        entry.header.freshnessLifetime = lifetime
        entry.header.freshUntil = lifetime.map { requestedAt.addingTimeInterval($0) }
        do { try cache.store(entry, for: url) } catch { configuration.log("variant index not cached: \(error)") }
        variantIndexState = .known(index)
        return index
    }
}
