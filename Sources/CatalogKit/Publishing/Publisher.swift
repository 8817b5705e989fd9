import Foundation
import PropertyList

/// What `catalog build` will do for one app, computed before anything is written.
public struct PublicationPlan: Sendable {
    public var app: String
    public var previous: RevisionManifest?
    /// The revision this plan publishes, or the current one when nothing changed.
    public var revision: Int
    public var publishedAt: Timestamp
    /// True when the output is byte-identical to the current revision: nothing is written.
    public var isUnchanged: Bool
    public var diff: ProductDiff
    public var manifest: RevisionManifest
    public var history: IdentifierHistory
    /// Feed files to write, relative to the revision folder, identity bytes; gzip copies are made on publish.
    var feeds: [(path: String, bytes: [UInt8])]
    var productSnapshot: [UInt8]
    /// How many feed files (identity) changed bytes.
    public var changedFeedCount: Int
    public var totalFeedCount: Int { feeds.count }
    public var sellableCount: Int
    public var knownCount: Int
}

/// Publishes validated catalogs into `public/` as immutable, numbered revisions.
///
/// Validators come from content: each feed's ETag is a hash of its bytes, and its
/// Last-Modified is when those bytes were first published. Unchanged bytes keep both;
/// changed bytes get a Last-Modified later than any the app published before, even within
/// the same second. Publishing is atomic: the revision folder is written aside, fsynced
/// and renamed into place, then the static copies are replaced, and the manifest last.
public struct Publisher: Sendable {
    public let tree: PublicTree
    /// Called before each write step with its name; tests throw from it to simulate a crash there.
    public var beforeStep: @Sendable (String) throws -> Void = { _ in }

    public init(publicDirectory: URL) {
        tree = PublicTree(root: publicDirectory)
    }

    /// Renders the feeds of `catalog` at `moment` and compares them with what is published.
    public func plan(_ catalog: AppCatalog, at moment: Timestamp) throws -> PublicationPlan {
        let app = catalog.app
        let previous = try tree.currentManifest(app)
        let previousHistory = try previous.map { try tree.history(app, revision: $0.revision) } ?? IdentifierHistory()
        let renderer = FeedRenderer(catalog: catalog)
        let revision = (previous?.revision ?? 0) + 1

        // Last-Modified for changed bytes: now, but always after everything published before.
        let latestPrevious = previous?.variants.flatMap { [$0.products.lastModified, $0.catalog.lastModified] }.max()
        let changedAt = Timestamp(secondsSince1970: max(moment.secondsSince1970, (latestPrevious?.secondsSince1970 ?? .min) + 1))

        var variants: [VariantRecord] = []
        var feeds: [(String, [UInt8])] = []
        var changed = 0
        var published = Set<String>()
        var sellable = Set<String>()
        var known: [String] = []
        let placeholderGzip = EncodedRecord(sha256: "", bytes: 0)
        for variant in renderer.selector.variants {
            let rendered = renderer.render(variant, at: moment)
            sellable.formUnion(rendered.sellableIDs)
            if variant == .all { known = rendered.knownIDs }
            let old = previous?.record(for: variant)

            let productsHash = ContentHash.sha256Hex(rendered.products)
            let productsUnchanged = old?.products.sha256 == productsHash
            let contentHash = ContentHash.sha256Hex(rendered.catalogBody)
            // Unchanged content keeps the revision details it was published with, hence its exact bytes.
            let catalogUnchanged = old?.catalogContentSHA256 == contentHash
            let catalogRevision = catalogUnchanged ? old!.catalogRevision : revision
            let catalogTime = catalogUnchanged ? old!.catalogPublishedAt : moment
            let catalogBytes = FeedRenderer.catalogJSON(app: app, revision: catalogRevision, publishedAt: catalogTime, body: rendered.catalogBody)
            let catalogHash = ContentHash.sha256Hex(catalogBytes)
            changed += (productsUnchanged ? 0 : 1) + (catalogUnchanged ? 0 : 1)

            let directory = variant.relativeDirectory
            feeds.append((directory + "products.json", rendered.products))
            feeds.append((directory + "catalog.json", catalogBytes))
            variants.append(VariantRecord(
                platform: variant.platformKey, band: variant.bandKey, directory: directory,
                products: FeedRecord(
                    sha256: productsHash, bytes: rendered.products.count,
                    lastModified: productsUnchanged ? old!.products.lastModified : changedAt, gzip: old.flatMap { productsUnchanged ? $0.products.gzip : nil } ?? placeholderGzip),
                catalog: FeedRecord(
                    sha256: catalogHash, bytes: catalogBytes.count,
                    lastModified: catalogUnchanged ? old!.catalog.lastModified : changedAt, gzip: old.flatMap { catalogUnchanged ? $0.catalog.gzip : nil } ?? placeholderGzip),
                catalogContentSHA256: contentHash, catalogRevision: catalogRevision, catalogPublishedAt: catalogTime))
            published.formUnion(rendered.sellableIDs)
            published.formUnion(rendered.knownIDs)
        }

        let sameVariants = previous.map { $0.variants.map(\.directory) == variants.map(\.directory) } ?? false
        let isUnchanged = sameVariants && changed == 0

        var history = previousHistory
        let retired = Set(catalog.products.filter { $0.status == .retired }.map(\.id))
        for product in catalog.products where published.contains(product.id) {
            history.record(product.id, revision: revision, at: moment, retired: retired.contains(product.id))
        }

        var snapshot: [UInt8] = []
        snapshot.reserveCapacity(renderer.productJSON.reduce(0) { $0 + $1.count + 1 })
        for json in renderer.productJSON {
            snapshot.append(contentsOf: json)
            snapshot.append(0x0A)
        }

        let diff = try ProductDiff(
            old: previous.map { try tree.productSnapshot(app, revision: $0.revision) } ?? [],
            new: zip(catalog.products, renderer.productJSON).map { ($0.id, $1) })
        let manifest = RevisionManifest(
            format: RevisionManifest.currentFormat, app: app, revision: isUnchanged ? previous!.revision : revision,
            publishedAt: isUnchanged ? previous!.publishedAt : moment,
            platforms: renderer.selector.platforms, bands: renderer.selector.bands.map(\.description), variants: variants)
        return PublicationPlan(
            app: app, previous: previous, revision: manifest.revision, publishedAt: manifest.publishedAt,
            isUnchanged: isUnchanged, diff: diff, manifest: manifest, history: history, feeds: feeds,
            productSnapshot: snapshot, changedFeedCount: changed, sellableCount: sellable.count, knownCount: known.count)
    }

    /// Writes a plan's revision; does nothing for an unchanged plan.
    public func publish(_ plan: PublicationPlan) throws {
        guard !plan.isUnchanged else { return }
        let app = plan.app
        let fileManager = FileManager.default
        let revisions = tree.revisionsDirectory(app)
        try fileManager.createDirectory(at: revisions, withIntermediateDirectories: true)

        // A folder with this number can only be left by a build that crashed before its
        // manifest: no reader ever saw it, so it is safe to replace.
        let final = tree.revisionDirectory(app, plan.revision)
        if fileManager.fileExists(atPath: final.path) { try fileManager.removeItem(at: final) }
        let staging = revisions.appendingPathComponent(".\(plan.revision).\(getpid()).staging", isDirectory: true)
        if fileManager.fileExists(atPath: staging.path) { try fileManager.removeItem(at: staging) }

        var manifest = plan.manifest
        let compressed = parallelMap(plan.feeds) { Gzip.compress($0.bytes) }
        for index in manifest.variants.indices {
            let products = compressed[index * 2]
            let catalog = compressed[index * 2 + 1]
            manifest.variants[index].products.gzip = EncodedRecord(sha256: ContentHash.sha256Hex(products), bytes: products.count)
            manifest.variants[index].catalog.gzip = EncodedRecord(sha256: ContentHash.sha256Hex(catalog), bytes: catalog.count)
        }
        let manifestBytes = try encode(manifest)

        var files: [(String, [UInt8])] = []
        for (index, feed) in plan.feeds.enumerated() {
            files.append((feed.path, feed.bytes))
            files.append((feed.path + ".gz", compressed[index]))
        }
        files.append(("identifiers.tsv", plan.history.tsv))
        files.append(("products.jsonl", plan.productSnapshot))
        files.append(("manifest.json", manifestBytes))

        try beforeStep("stage")
        for (path, bytes) in files {
            let url = staging.appendingPathComponent(path)
            try fileManager.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try AtomicFile.writeDurably(bytes, to: url)
            try beforeStep("staged \(path)")
        }
        try syncDirectories(under: staging)
        try AtomicFile.renameDurably(staging, to: final)
        try beforeStep("revision in place")

        // The static tree: the default variant at the app's URL, one atomic rename per file.
        let appDirectory = tree.appDirectory(app)
        for (index, feed) in plan.feeds.enumerated() where !feed.path.contains("/") {
            try AtomicFile.write(feed.bytes, to: appDirectory.appendingPathComponent(feed.path))
            try beforeStep("static \(feed.path)")
            try AtomicFile.write(compressed[index], to: appDirectory.appendingPathComponent(feed.path + ".gz"))
            try beforeStep("static \(feed.path).gz")
        }
        try AtomicFile.write(manifestBytes, to: tree.currentManifestURL(app))
        try beforeStep("manifest")
    }

    private func encode(_ manifest: RevisionManifest) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(manifest)) + [0x0A]
    }

    private func syncDirectories(under directory: URL) throws {
        let enumerator = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: [.isDirectoryKey])
        while let url = enumerator?.nextObject() as? URL {
            if (try? url.resourceValues(forKeys: [.isDirectoryKey]).isDirectory) == true {
                try AtomicFile.syncDirectory(url)
            }
        }
        try AtomicFile.syncDirectory(directory)
    }
}

/// Maps on all cores: compressing several feeds is the costly part of a big build.
func parallelMap<Input: Sendable, Output: Sendable>(_ inputs: [Input], _ transform: @Sendable (Input) -> Output) -> [Output] {
    let results = ParallelResults<Output>(count: inputs.count)
    defer { results.buffer.deallocate() }
    DispatchQueue.concurrentPerform(iterations: inputs.count) { index in
        (results.buffer.baseAddress! + index).initialize(to: transform(inputs[index]))
    }
    return (0..<inputs.count).map { (results.buffer.baseAddress! + $0).move() }
}

/// `@unchecked Sendable`: each concurrentPerform iteration initializes only its own slot of a
/// preallocated buffer, and the slots are read only after concurrentPerform has returned.
private final class ParallelResults<Output>: @unchecked Sendable {
    let buffer: UnsafeMutableBufferPointer<Output>
    init(count: Int) { buffer = .allocate(capacity: max(count, 1)) }
}
