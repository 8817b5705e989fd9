import Content
import FeedSigning
import Foundation
import Time

// Writing a planned revision: staging, rendering on all cores, the durable renames, the static copies.
extension Publisher {
    /// Writes a plan's revision; does nothing else for an unchanged plan.
    /// Every publish, unchanged or not, first moves the records of a tree published before the
    /// records split out of `public/`.
    public func publish(_ plan: PublicationPlan) throws {
        try tree.moveRecordsOutOfPublic(plan.app)
        // Only a cache: a build that cannot write it hashes the files again next time.
        let digestCache = ContentDigestCache.url(in: tree, app: plan.app)
        guard !plan.isUnchanged else {
            // A blob of the current revision that went missing (a disk restored from an older
            // backup) is put back: only missing ones are read.
            if let planned = plan.content { try putBlobs(planned, cachingDigestsIn: digestCache) }
            // A tree published before variants had paths of their own gets them from any build,
            // and a revision published before purchase records its record.
            if let current = plan.previous {
                try linkStaticCopies(plan.app, manifest: current)
                let record = tree.purchaseRecordURL(plan.app, current.revision)
                if !FileManager.default.fileExists(atPath: record.path) {
                    try FileManager.default.createDirectory(at: record.deletingLastPathComponent(), withIntermediateDirectories: true)
                    try AtomicFile.write(plan.purchaseRecord, to: record)
                }
            }
            return
        }
        let app = plan.app
        let fileManager = FileManager.default
        let revisions = tree.revisionsDirectory(app)
        let recordRevisions = tree.recordsRevisionsDirectory(app)
        try fileManager.createDirectory(at: revisions, withIntermediateDirectories: true)
        try fileManager.createDirectory(at: recordRevisions, withIntermediateDirectories: true)
        try removeLeftovers(of: app)

        // A folder with this number can only be left by a build that crashed before its
        // manifest: no reader ever saw it, so it is safe to replace.
        let final = tree.revisionDirectory(app, plan.revision)
        let finalRecords = tree.recordsDirectory(app, plan.revision)
        for folder in [final, finalRecords] where fileManager.fileExists(atPath: folder.path) { try fileManager.removeItem(at: folder) }
        let staging = revisions.appendingPathComponent(".\(plan.revision).staging", isDirectory: true)
        // What is not for the public (see PublicTree) is staged in the records tree.
        let recordsStaging = recordRevisions.appendingPathComponent(".\(plan.revision).staging", isDirectory: true)
        try fileManager.createDirectory(at: staging, withIntermediateDirectories: true)
        try fileManager.createDirectory(at: recordsStaging, withIntermediateDirectories: true)
        try beforeStep("stage")

        // Render, compress and write each distinct output, two at a time on two cores; the
        // revision's own records are written beside the outputs rather than after all: the product
        // snapshot (the longest, so first) and the other records each a task of their own, so that
        // neither is the build's tail.
        let renderer = plan.renderer
        let step = beforeStep
        let history = plan.history
        let gzippedSnapshot = plan.gzippedSnapshot
        let content = plan.content
        let signer = signer
        let manifestToSign = plan.manifest
        let signedAt = clock()
        @Sendable func publishTask(_ task: PublishTask) -> Result<(EncodedRecord, EncodedRecord)?, any Error> {
            Result {
                let output: PlannedOutput
                switch task {
                case .snapshot:
                    try AtomicFile.writeDurably(
                        try gzippedSnapshot ?? Self.compressedSnapshot(renderer.catalog.products),
                        to: recordsStaging.appendingPathComponent(PublicTree.snapshotName))
                    return nil
                case .records:
                    try AtomicFile.writeDurably(history.tsv, to: recordsStaging.appendingPathComponent("identifiers.tsv"))
                    try AtomicFile.writeDurably(plan.purchaseRecord, to: recordsStaging.appendingPathComponent(PurchaseRecord.fileName))
                    if let content {
                        try AtomicFile.writeDurably(
                            [UInt8](content.manifest.encoded()), to: recordsStaging.appendingPathComponent(PublicTree.contentManifestName))
                    }
                    return nil
                case .output(let planned):
                    output = planned
                }
                let stamp = CatalogStamp(app: app, revision: output.catalogRevision, publishedAt: output.catalogPublishedAt)
                // Feeds scheduled for later are not public before their moment.
                let base = output.directory.hasPrefix("scheduled/") ? recordsStaging : staging
                let directory = base.appendingPathComponent(output.directory, isDirectory: true)
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                var records: [EncodedRecord] = []
                let feeds: [(FeedKind, (FeedPieces) -> Void)] = [
                    (.products, { renderer.productsFeed(output.selection, $0) }),
                    (.catalog, { renderer.catalogFeed(output.selection, stamp: stamp, $0) }),
                ]
                for (kind, feed) in feeds {
                    let name = kind.rawValue
                    let signatures = try signer.map {
                        try RevisionSignatures.sign(
                            kind: kind, directory: output.directory, manifest: manifestToSign, signer: $0, now: signedAt)
                    }
                    for (path, signature) in signatures ?? [] {
                        let url = (path.hasPrefix("scheduled/") ? recordsStaging : staging).appendingPathComponent(path)
                        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                        try AtomicFile.writeDurably(Array(signature.utf8), to: url)
                    }
                    let compressed = try Self.writeFeed(feed, to: directory.appendingPathComponent(name))
                    try AtomicFile.writeDurably(compressed, to: directory.appendingPathComponent(name + ".gz"))
                    try step("staged \(output.directory)\(name)")
                    records.append(EncodedRecord(sha256: ContentHash.sha256Hex(compressed), bytes: compressed.count))
                }
                return (records[0], records[1])
            }
        }
        // Until the revision is in place, its blobs are in the store and no revision names them.
        let wasSwept = try content != nil && ContentPublishing.takeSweptMark(in: tree)
        // The biggest outputs first, as the threads take tasks in order: the last task to start
        // is then the smallest, and the build's tail the shortest.
        let outputs = plan.outputs.sorted { $0.selection.products.count > $1.selection.products.count }
        let tasks = [PublishTask.snapshot, .records] + outputs.map(PublishTask.output)
        // The content's blobs are copied beside the feeds: they need only be in place, and
        // durable, before the revision is (a thousand files were a fifth of a big build's
        // publishing, on both cores, before any feed was rendered).
        let (results, blobs) = concurrently(
            { parallelMap(tasks, publishTask) },
            { Result { if let content { try self.putBlobs(content, cachingDigestsIn: digestCache) } } })
        // Whoever sees the revision's content.json finds every file it names.
        try blobs.get()
        // Each output's gzip records, in the order of `outputs`; errors thrown in turn.
        let written = try results.compactMap { try $0.get() }

        var manifest = plan.manifest
        let gzipByDirectory = Dictionary(uniqueKeysWithValues: zip(outputs.map(\.directory), written))
        func fillGzip(_ records: inout [VariantRecord]) throws {
            for index in records.indices {
                guard let gzip = gzipByDirectory[records[index].directory] else {
                    throw CatalogError.io(path: records[index].directory, message: "no output planned for this variant")
                }
                records[index].products.gzip = gzip.0
                records[index].catalog.gzip = gzip.1
            }
        }
        try fillGzip(&manifest.variants)
        if var schedule = manifest.schedule {
            for index in schedule.indices { try fillGzip(&schedule[index].variants) }
            manifest.schedule = schedule
        }
        let manifestBytes = try encode(manifest)
        try AtomicFile.writeDurably(manifestBytes, to: staging.appendingPathComponent("manifest.json"))
        try beforeStep("staged manifest")
        // The records first: whoever sees the revision finds its records.
        try syncDirectories(under: recordsStaging)
        try AtomicFile.renameDurably(recordsStaging, to: finalRecords)
        try beforeStep("records in place")
        try syncDirectories(under: staging)
        try AtomicFile.renameDurably(staging, to: final)
        if wasSwept { ContentPublishing.markSwept(in: tree) }
        try beforeStep("revision in place")

        try linkStaticCopies(app, manifest: manifest)
        try AtomicFile.write(manifestBytes, to: tree.currentManifestURL(app))
        try beforeStep("manifest")
    }

    /// Puts the blobs of `content` that the store lacks, then keeps the digests its plan knew in
    /// `cache`. Bytes that did not hash as planned remove the cache: the next build reads every
    /// file again.
    private func putBlobs(_ content: PlannedContent, cachingDigestsIn cache: URL) throws {
        do {
            try ContentPublishing.putBlobs(content, into: BlobStore(root: tree.content), beforeStep: beforeStep)
        } catch {
            try? FileManager.default.removeItem(at: cache)
            throw error
        }
        try? content.digestCache.write(to: cache)
    }

    /// The static tree of the revision `manifest` describes, in place: every variant at a path of
    /// its own (the default at the app's URL, the others under `variants/<platform>/<band>/`), as
    /// hard links to the revision's immutable files, each swapped in by one atomic rename and
    /// skipped when already current, so that a static host's own validators stay put; then the
    /// variants no longer published are removed, and `variants.json` says which there are. All of
    /// it before the manifest, which is written last.
    func linkStaticCopies(_ app: String, manifest: RevisionManifest) throws {
        let fileManager = FileManager.default
        let appDirectory = tree.appDirectory(app)
        let revision = tree.revisionDirectory(app, manifest.revision)
        let suffix = RevisionSignatures.fileExtension
        let names = [
            "products.json", "products.json.gz", "catalog.json", "catalog.json.gz", "products.json" + suffix, "catalog.json" + suffix,
        ]
        for record in manifest.variants {
            let directory = FeedVariants.directory(key: "\(record.platform)/\(record.band)")
            let target = appDirectory.appendingPathComponent(directory, isDirectory: true)
            if !directory.isEmpty { try fileManager.createDirectory(at: target, withIntermediateDirectories: true) }
            var linked = false
            for name in names {
                let source = revision.appendingPathComponent(record.directory + name)
                let copy = target.appendingPathComponent(name)
                // An unsigned revision leaves no signature of an older one beside its feeds.
                if name.hasSuffix(suffix) && Self.fileSize(source) == nil {
                    if Self.fileSize(copy) != nil { try fileManager.removeItem(at: copy) }
                    continue
                }
                if sameContent(source, copy) { continue }
                try AtomicFile.linkLeavingDirectoryUnsynced(source, to: copy)
                linked = true
                try beforeStep("static \(directory)\(name)")
            }
            // One fsync for the variant's links, not one each: with one each, the links of a
            // 100,000-product build took 21 ms, alone at its end (docs/benchmarks.md, "The build's tail").
            if linked { try AtomicFile.syncDirectory(target) }
        }
        try removeStaleVariants(app, keeping: Set(manifest.variants.map { "\($0.platform)/\($0.band)" }))
        let index = FeedVariants(platforms: manifest.platforms.map(\.rawValue), bands: manifest.bands).encoded()
        let indexURL = appDirectory.appendingPathComponent(FeedVariants.indexName)
        if FileManager.default.contents(atPath: indexURL.path).map({ [UInt8]($0) }) != index {
            try AtomicFile.write(index, to: indexURL)
            try beforeStep("static \(FeedVariants.indexName)")
        }
    }

    /// Removes the static copies of variants the current revision no longer has (a platform or
    /// band dropped from the definitions): a static host must answer them 404, as `catalog serve` does.
    private func removeStaleVariants(_ app: String, keeping current: Set<String>) throws {
        let fileManager = FileManager.default
        let variants = tree.appDirectory(app).appendingPathComponent("variants", isDirectory: true)
        for platform in (try? fileManager.contentsOfDirectory(atPath: variants.path)) ?? [] {
            let platformDirectory = variants.appendingPathComponent(platform, isDirectory: true)
            for band in (try? fileManager.contentsOfDirectory(atPath: platformDirectory.path)) ?? []
            where !current.contains("\(platform)/\(band)") {
                try fileManager.removeItem(at: platformDirectory.appendingPathComponent(band, isDirectory: true))
            }
            if ((try? fileManager.contentsOfDirectory(atPath: platformDirectory.path)) ?? []).isEmpty {
                try fileManager.removeItem(at: platformDirectory)
            }
        }
    }

    /// Whether two files hold the same bytes (sizes first, so that changed feeds cost no read).
    private func sameContent(_ first: URL, _ second: URL) -> Bool {
        guard let size = Self.fileSize(first), size == Self.fileSize(second) else { return false }
        return FileManager.default.contentsEqual(atPath: first.path, andPath: second.path)
    }

    /// The size of the file at `url`, or nil when there is none: one `stat`, where
    /// `FileManager.attributesOfItem` also reads the owner's and group's names from the system's
    /// user database, and the extended attributes.
    private static func fileSize(_ url: URL) -> Int? {
        var status = stat()
        return stat(url.path, &status) == 0 ? Int(status.st_size) : nil
    }

    /// Staging folders and temporary files left by a build that crashed; callers hold the
    /// build lock, so no other build is writing them.
    private func removeLeftovers(of app: String) throws {
        let fileManager = FileManager.default
        // The static copies of variants are linked in place inside their own folders too.
        let variants = tree.appDirectory(app).appendingPathComponent("variants", isDirectory: true)
        let variantDirectories = ((try? fileManager.contentsOfDirectory(atPath: variants.path)) ?? []).flatMap { platform in
            ((try? fileManager.contentsOfDirectory(atPath: variants.appendingPathComponent(platform).path)) ?? []).map {
                variants.appendingPathComponent(platform).appendingPathComponent($0, isDirectory: true)
            }
        }
        for directory in [tree.revisionsDirectory(app), tree.appDirectory(app), tree.recordsRevisionsDirectory(app)] + variantDirectories {
            for name in (try? fileManager.contentsOfDirectory(atPath: directory.path)) ?? []
            where name.hasPrefix(".") && (name.hasSuffix(".staging") || name.hasSuffix(".tmp")) {
                try fileManager.removeItem(at: directory.appendingPathComponent(name))
            }
        }
    }

    /// One line per product, every field: what history, diffs and rollback read back.
    static func snapshot(_ products: [Product]) -> [UInt8] {
        // Room for lines longer than most, so that a big snapshot is not copied as it grows:
        // capacity that is never written takes no memory.
        var json = JSONWriter(capacity: products.count * 512)
        // Products read in place: `for product in` would copy each, whole.
        for index in products.indices {
            FeedRenderer.write(products[index], for: .snapshot, to: &json)
            json.newline()
        }
        return json.takeBytes()
    }

    /// The snapshot of `products` gzipped as it is encoded, about a mebibyte of lines at a time, each
    /// line given to `eachLine` (without its newline) as it is made: the snapshot is never held
    /// whole (25 MB for 100,000 products, at the build's peak of memory; docs/benchmarks.md,
    /// "The build's peak memory").
    ///
    /// With `encodingAside`, each piece is encoded on another thread while the one before it
    /// goes to `eachLine` and the compressor on this one: the plan's diff, one after the other on
    /// one core, was the tail of a rebuild while the other core waited. Publishing leaves it off:
    /// there the snapshot is one task beside the feeds', and a thread more cost a first build 3%
    /// (docs/benchmarks.md, "The rebuild's diff").
    static func compressedSnapshot(
        _ products: [Product], encodingAside: Bool = false,
        eachLine: (_ index: Int, _ line: ArraySlice<UInt8>) throws -> Void = { _, _ in }
    ) throws -> [UInt8] {
        try Gzip.compressPieces { compress in
            var (current, spare) = (SnapshotPiece(), SnapshotPiece())
            current.fill(products, from: 0)
            while true {
                let (piece, filling) = (current, spare)
                let next = piece.products.upperBound
                func handle() -> Result<Void, any Error> {
                    Result {
                        var start = 0
                        for (index, end) in zip(piece.products, piece.lineEnds) {
                            try eachLine(index, piece.bytes[start..<end])
                            start = end + 1
                        }
                        try piece.bytes.withUnsafeBytes(compress)
                    }
                }
                @Sendable func encodeNext() {
                    if next < products.count { filling.fill(products, from: next) }
                }
                let (handled, _) = encodingAside ? concurrently(handle, encodeNext) : (handle(), encodeNext())
                try handled.get()
                guard next < products.count else { return }
                (current, spare) = (filling, piece)
            }
        }
    }

    /// Writes a feed as it is rendered, and returns its gzip copy.
    ///
    /// The feed goes to the disk while its gzip copy is made: a big feed's direct write waits on the
    /// device about as long as compressing it keeps a core busy. A feed of more than a mebibyte is
    /// compressed a mebibyte at a time as it is written (ISA-L at level 1, ``Gzip/Effort/fastest``),
    /// and never held whole: the rich feed of 100,000 products is 14 MB, and two being written at
    /// once were a rebuild's peak of memory (docs/benchmarks.md, "The rebuild's memory"). A smaller
    /// one is gathered, for the smallest copy.
    static func writeFeed(_ feed: (FeedPieces) -> Void, to url: URL) throws -> [UInt8] {
        var count = 0
        feed { count += $0.count }
        guard Gzip.feedEffort(forBytes: count) == .fastest else {
            let bytes = FeedRenderer.collect(feed)
            let (compressing, writing) = concurrently(
                { Result { try Gzip.compress(bytes, effort: .smallest) } }, { Result { try AtomicFile.writeDurably(bytes, to: url) } })
            try writing.get()
            return try compressing.get()
        }
        return try Gzip.compressChunks { compress in
            // The last chunk ends the member: the same copy as the feed compressed whole.
            var compressed = 0
            let compressChunk = { (chunk: UnsafeRawBufferPointer) in
                compressed += chunk.count
                try compress(chunk, compressed == count)
            }
            try withoutActuallyEscaping(compressChunk) { compressChunk in
                try AtomicFile.writeDurably(
                    to: url, expectedBytes: count, { append in feed { append(UnsafeRawBufferPointer($0)) } }, eachChunk: compressChunk)
            }
        }
    }

    /// A snapshot's lines with the identifier of each, as ``PublicTree/productSnapshot(_:revision:)`` reads them back.
    static func lines(of snapshot: [UInt8], _ products: [Product]) -> [(id: String, json: ArraySlice<UInt8>)] {
        let lines = snapshot.split(separator: 0x0A, omittingEmptySubsequences: false).dropLast()
        // By index: `zip(products, …)` would copy every product, whole.
        return zip(products.indices, lines).map { (products[$0].id, $1) }
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

/// One task of publishing a revision, run beside the others (``Publisher/publish(_:)``).
private enum PublishTask: Sendable {
    /// The product snapshot (`products.jsonl.gz`) in the records.
    case snapshot
    /// The other records: identifiers, purchase record, content manifest.
    case records
    /// One distinct output's feeds.
    case output(PlannedOutput)
}

/// Up to about a mebibyte of a product snapshot's lines, each followed by a newline
/// (``Publisher/compressedSnapshot(_:encodingAside:eachLine:)``). Two take turns, one filled
/// while the other is handed on, each keeping its memory from piece to piece.
///
/// `@unchecked Sendable`: each piece is used by one thread at a time, and every step waits for
/// both threads before the pieces change roles.
private final class SnapshotPiece: @unchecked Sendable {
    /// The indices of the products whose lines these are.
    private(set) var products = 0..<0
    /// The lines.
    private(set) var bytes: [UInt8] = []
    /// Where each line ends in `bytes`, its newline excluded.
    private(set) var lineEnds: [Int] = []

    private static let targetBytes = reusableBufferBytes

    init() {
        bytes.reserveCapacity(Self.targetBytes + (1 << 15))
    }

    /// Fills the piece with the lines of `products` from `start`, until they pass
    /// ``targetBytes`` or the products end.
    func fill(_ products: [Product], from start: Int) {
        bytes.removeAll(keepingCapacity: true)
        lineEnds.removeAll(keepingCapacity: true)
        var json = JSONWriter(continuing: &bytes)
        var index = start
        // Products read in place: `for product in` would copy each, whole.
        while index < products.count && json.bytes.count < Self.targetBytes {
            FeedRenderer.write(products[index], for: .snapshot, to: &json)
            lineEnds.append(json.bytes.count)
            json.newline()
            index += 1
        }
        bytes = json.takeBytes()
        self.products = start..<index
    }
}
