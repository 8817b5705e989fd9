import Foundation
import Time

/// Plans the feeds of one state (now, or a scheduled moment): groups variants by selection,
/// renders each new selection once for its validators, and reuses files and stamps wherever the
/// same products were already planned.
struct StatePlanner {
    let app: String
    let renderer: FeedRenderer
    let revision: Int
    private(set) var outputs: [PlannedOutput] = []
    /// Outputs already planned, by selection, with their validators.
    private var planned: [FeedSelection: (output: PlannedOutput, result: GroupResult)] = [:]

    init(app: String, renderer: FeedRenderer, revision: Int) {
        self.app = app
        self.renderer = renderer
        self.revision = revision
    }

    struct GroupResult: Sendable {
        var productsHash: String
        var productsBytes: Int
        var catalogHash: String
        var catalogBytes: Int
    }

    /// Which products each variant sells at `moment`, the variants that sell the same grouped.
    /// A pass over every product per variant and no rendering: what needs only the sale flags
    /// (the identifier history) then runs beside the hashing of the feeds.
    func select(at moment: Timestamp) -> SelectedState {
        var groups: [VariantGroup] = []
        var groupIndex: [FeedSelection: Int] = [:]
        // Each variant's selection is a pass over every product: one variant per core at a time.
        let variants = renderer.selector.variants
        let renderer = self.renderer
        let selections = parallelMap(variants) { renderer.selection($0, at: moment) }
        for (variant, selection) in zip(variants, selections) {
            if let index = groupIndex[selection] {
                groups[index].variants.append(variant)
            } else {
                groupIndex[selection] = groups.count
                groups.append(VariantGroup(variants: [variant], selection: selection))
            }
        }
        // Whether each product is on sale in some variant: flags, not a set, since every
        // variant's selection of a big catalog goes through here.
        var sellable = [Bool](repeating: false, count: renderer.catalog.products.count)
        for group in groups {
            for index in group.selection.products { sellable[index] = true }
        }
        return SelectedState(groups: groups, sellable: sellable)
    }

    /// The records of a selected state: each selection not planned before hashed as it is rendered.
    ///
    /// - Parameters:
    ///   - stampTime: the publication time new rich-feed content carries, and the Last-Modified
    ///     of feeds whose bytes differ from `previous`.
    ///   - previous: what each variant served just before this state, for validators.
    ///   - stampSources: records whose rich-feed stamp may be reused if their content is the same,
    ///     preferred in order.
    mutating func plan(
        _ state: SelectedState, stampTime: Timestamp, directoryPrefix: String,
        previous: (Variant) -> VariantRecord?, stampSources: (Variant) -> [VariantRecord]
    ) -> (records: [VariantRecord], changed: Int) {
        let groups = state.groups
        let renderer = self.renderer
        // Hash each new selection's feeds as they are rendered, never holding them: publish
        // renders again, into buffers that are written and let go one output at a time.
        let fresh = groups.filter { planned[$0.selection] == nil }
        let sources = fresh.map { $0.variants.flatMap(stampSources) }
        let app = self.app
        let newRevision = revision
        let results = parallelMap(Array(zip(fresh, sources))) { group, sources -> (GroupResult, Int, Timestamp) in
            // Rich-feed bytes carry the revision that first published them: a variant that already
            // served this exact content keeps its stamp. The new content is hashed under the new
            // stamp and under each source's of the same size, from one rendering: with a source's
            // stamp it hashes to that source's own digest exactly when the content is the same. A
            // first build has no source, and a source of another size cannot be those bytes, so
            // those feeds are hashed once: a rich feed of 100,000 products is 14 MB, and hashing it
            // twice was the largest part of what a rebuild adds to a first build
            // (docs/benchmarks.md, "The rebuild's memory").
            var bodyBytes = 0
            if !sources.isEmpty { renderer.catalogBody(group.selection) { bodyBytes += $0.count } }
            let sourceStamps = sources.map { CatalogStamp(app: app, revision: $0.catalogRevision, publishedAt: $0.catalogPublishedAt) }
            var stamps = [CatalogStamp(app: app, revision: newRevision, publishedAt: stampTime)]
            for (source, stamp) in zip(sources, sourceStamps)
            where !stamps.contains(stamp) && FeedRenderer.catalogHead(stamp).count + bodyBytes == source.catalog.bytes {
                stamps.append(stamp)
            }
            let hashes = ContentHash.sha256Hex(heads: stamps.map(FeedRenderer.catalogHead)) { renderer.catalogBody(group.selection, $0) }
            // The first source, in order of preference, whose own bytes the new content makes.
            let kept =
                zip(sources, sourceStamps).lazy.compactMap { source, stamp in
                    stamps.firstIndex(of: stamp).flatMap { hashes[$0].sha256 == source.catalog.sha256 ? $0 : nil }
                }.first ?? 0
            let products = ContentHash.sha256Hex { renderer.productsFeed(group.selection, $0) }
            let result = GroupResult(
                productsHash: products.sha256, productsBytes: products.count,
                catalogHash: hashes[kept].sha256, catalogBytes: hashes[kept].count)
            return (result, stamps[kept].revision, stamps[kept].publishedAt)
        }
        for (group, (result, stampRevision, stampTime)) in zip(fresh, results) {
            let output = PlannedOutput(
                directory: directoryPrefix + group.variants[0].relativeDirectory, selection: group.selection,
                catalogRevision: stampRevision, catalogPublishedAt: stampTime)
            outputs.append(output)
            planned[group.selection] = (output, result)
        }

        var records: [VariantRecord] = []
        var changed = 0
        for group in groups {
            guard let (output, result) = planned[group.selection] else { continue }
            for variant in group.variants {
                let old = previous(variant)
                let productsSame = old?.products.sha256 == result.productsHash
                let catalogSame = old?.catalog.sha256 == result.catalogHash
                changed += (productsSame ? 0 : 1) + (catalogSame ? 0 : 1)
                records.append(
                    VariantRecord(
                        platform: variant.platformKey, band: variant.bandKey, directory: output.directory,
                        products: FeedRecord(
                            sha256: result.productsHash, bytes: result.productsBytes,
                            lastModified: (productsSame ? old?.products.lastModified : nil) ?? stampTime,
                            gzip: EncodedRecord(sha256: "", bytes: 0)),
                        catalog: FeedRecord(
                            sha256: result.catalogHash, bytes: result.catalogBytes,
                            lastModified: (catalogSame ? old?.catalog.lastModified : nil) ?? stampTime,
                            gzip: EncodedRecord(sha256: "", bytes: 0)),
                        catalogContentSHA256: "", catalogRevision: output.catalogRevision,
                        catalogPublishedAt: output.catalogPublishedAt))
            }
        }
        // In variant order, the default first.
        let order = Dictionary(
            uniqueKeysWithValues: renderer.selector.variants.enumerated().map { ("\($1.platformKey)/\($1.bandKey)", $0) })
        records.sort { order["\($0.platform)/\($0.band)", default: 0] < order["\($1.platform)/\($1.band)", default: 0] }
        return (records, changed)
    }
}

/// What every variant sells at one moment (``StatePlanner/select(at:)``).
struct SelectedState: Sendable {
    /// The variants, grouped by what they sell.
    var groups: [VariantGroup]
    /// Whether each product, by index in the catalog, is on sale in some variant.
    var sellable: [Bool]
}

/// Variants that select exactly the same products, named the same way.
struct VariantGroup: Sendable {
    var variants: [Variant]
    var selection: FeedSelection
}
