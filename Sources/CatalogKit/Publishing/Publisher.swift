import FeedSigning
import Foundation
import Time

/// What `catalog build` will do for one app, computed before anything is written.
public struct PublicationPlan: Sendable {
    /// The app's bundle identifier.
    public var app: String
    /// The app's current manifest; nil before its first publication.
    public var previous: RevisionManifest?
    /// The revision this plan publishes, or the current one when nothing changed.
    public var revision: Int
    /// When the revision is published: now, but later than any Last-Modified the app published before,
    /// or the current revision's time when nothing changed.
    public var publishedAt: Timestamp
    /// True when the output is byte-identical to the current revision: nothing is written.
    public var isUnchanged: Bool
    /// Product-level changes since the current revision; every product is added on a first publication.
    public var diff: ProductDiff
    /// The manifest to write; its gzip records are filled in when publishing.
    public var manifest: RevisionManifest
    /// Every identifier published, this revision's included: written with it as `identifiers.tsv`.
    public var history: IdentifierHistory
    /// Feeds (one per variant and kind) whose bytes differ from the current revision's.
    public var changedFeedCount: Int
    /// Feeds published now: two per variant (scheduled ones not counted).
    public var totalFeedCount: Int
    /// The moments ahead at which the published feeds switch by themselves (see ``ScheduleRules``).
    public var scheduledChanges: [Timestamp]
    /// A change the schedule stops short of: the catalog must be built again before it.
    public var scheduleEndsBefore: Timestamp?
    /// Products on sale now in at least one variant.
    public var sellableCount: Int
    /// Products listed as known in the rich feed: removed, retired or quarantined.
    public var knownCount: Int
    /// Quarantines this plan publishes or lifts, compared with the current revision.
    public var feedbackChanges: [VerdictChange]

    let renderer: FeedRenderer
    /// One entry per distinct selection of products: the folder its files go to.
    let outputs: [PlannedOutput]
    /// The product snapshot (`products.jsonl`), when planning already encoded it for the diff.
    let snapshot: [UInt8]?
}

extension PublicationPlan {
    /// Each product's snapshot line as this plan publishes it: what a rollback compares with
    /// the revision it restores.
    var snapshotLines: [(id: String, json: [UInt8])] {
        Publisher.lines(of: snapshot ?? Publisher.snapshot(renderer.catalog.products), renderer.catalog.products)
    }
}

/// Files shared by every variant that selects exactly these products.
struct PlannedOutput: Sendable {
    var directory: String
    var selection: [Int]
    var catalogRevision: Int
    var catalogPublishedAt: Timestamp
}

/// Plans the feeds of one state (now, or a scheduled moment): groups variants by selection,
/// renders each new selection once for its validators, and reuses files and stamps wherever the
/// same products were already planned.
struct StatePlanner {
    let app: String
    let renderer: FeedRenderer
    let revision: Int
    private(set) var outputs: [PlannedOutput] = []
    /// Outputs already planned, by selection, with their validators.
    private var planned: [[Int]: (output: PlannedOutput, result: GroupResult)] = [:]

    init(app: String, renderer: FeedRenderer, revision: Int) {
        self.app = app
        self.renderer = renderer
        self.revision = revision
    }

    struct GroupResult: Sendable {
        var productsHash: String
        var productsBytes: Int
        var contentHash: String
        var catalogHash: String
        var catalogBytes: Int
    }

    /// - Parameters:
    ///   - stampTime: the publication time new rich-feed content carries, and the Last-Modified
    ///     of feeds whose bytes differ from `previous`.
    ///   - previous: what each variant served just before this state, for validators.
    ///   - stampSources: records whose rich-feed stamp may be reused if their content is the same,
    ///     preferred in order.
    mutating func plan(
        at moment: Timestamp, stampTime: Timestamp, directoryPrefix: String,
        previous: (Variant) -> VariantRecord?, stampSources: (Variant) -> [VariantRecord]
    ) -> (records: [VariantRecord], changed: Int, sellable: [Bool]) {
        var groups: [VariantGroup] = []
        var groupIndex: [[Int]: Int] = [:]
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
        // Hash each new selection's feeds as they are rendered, never holding them: publish
        // renders again, into buffers that are written and let go one output at a time.
        let fresh = groups.filter { planned[$0.selection] == nil }
        let sources = fresh.map { $0.variants.flatMap(stampSources) }
        let app = self.app
        let newRevision = revision
        let results = parallelMap(Array(zip(fresh, sources))) { group, sources -> (GroupResult, Int, Timestamp) in
            // The content alone and the feed with a new stamp, from one rendering: most feeds of
            // a build that changes anything get the new stamp.
            let newStamp = CatalogStamp(app: app, revision: newRevision, publishedAt: stampTime)
            let hashes = ContentHash.sha256Hex(heads: [FeedRenderer.catalogHead(nil), FeedRenderer.catalogHead(newStamp)]) {
                renderer.catalogBody(group.selection, $0)
            }
            let contentHash = hashes[0].sha256
            // Rich-feed bytes carry the revision that first published them: reuse that stamp if
            // a variant already served this exact content.
            let reused = sources.first { $0.catalogContentSHA256 == contentHash }
            let stampRevision = reused?.catalogRevision ?? newRevision
            let stampTime = reused?.catalogPublishedAt ?? stampTime
            let stamp = CatalogStamp(app: app, revision: stampRevision, publishedAt: stampTime)
            let products = ContentHash.sha256Hex { renderer.productsFeed(group.selection, $0) }
            let catalog = reused == nil ? hashes[1] : ContentHash.sha256Hex { renderer.catalogFeed(group.selection, stamp: stamp, $0) }
            let result = GroupResult(
                productsHash: products.sha256, productsBytes: products.count,
                contentHash: contentHash, catalogHash: catalog.sha256, catalogBytes: catalog.count)
            return (result, stampRevision, stampTime)
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
        // Whether each product is on sale in some variant: flags, not a set, since every
        // variant's selection of a big catalog goes through here.
        var sellable = [Bool](repeating: false, count: renderer.catalog.products.count)
        for group in groups {
            for index in group.selection { sellable[index] = true }
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
                        catalogContentSHA256: result.contentHash, catalogRevision: output.catalogRevision,
                        catalogPublishedAt: output.catalogPublishedAt))
            }
        }
        // In variant order, the default first.
        let order = Dictionary(
            uniqueKeysWithValues: renderer.selector.variants.enumerated().map { ("\($1.platformKey)/\($1.bandKey)", $0) })
        records.sort { order["\($0.platform)/\($0.band)", default: 0] < order["\($1.platform)/\($1.band)", default: 0] }
        return (records, changed, sellable)
    }
}

/// Variants that select exactly the same products.
struct VariantGroup: Sendable {
    var variants: [Variant]
    var selection: [Int]
}

/// Publishes validated catalogs into `public/` as immutable, numbered revisions.
///
/// Validators come from content: each feed's ETag is a hash of its bytes, and its
/// Last-Modified is when those bytes were first published at its URL. Unchanged bytes keep
/// both; changed bytes get a Last-Modified later than any the app published before, even
/// within the same second. Publishing is atomic: the revision folder is written aside,
/// fsynced and renamed into place, then the static copies are replaced, and the manifest last.
public struct Publisher: Sendable {
    /// Where it publishes: `public/`, and the records tree beside it.
    public let tree: PublicTree
    /// Called before each write step with its name; tests throw from it to simulate a crash there.
    public var beforeStep: @Sendable (String) throws -> Void = { _ in }
    /// Signs every feed published, when set: a `.jws` beside each (see ``RevisionSignatures``).
    public var signer: FeedSigner?
    /// The wall clock that signatures are issued against (their `iat` and `exp`). It is not the
    /// plan's moment, which may be a chosen one: a signature must be valid from when it is written.
    /// Tests set it to sign at a known time.
    public var clock: @Sendable () -> Date = { Date() }

    /// A publisher into `publicDirectory`, with its records beside it (``PublicTree/defaultRecords(for:)``).
    public init(publicDirectory: URL) {
        tree = PublicTree(root: publicDirectory)
    }

    /// Renders the feeds of `catalog` at `moment` and compares them with what is published.
    /// Feeds are hashed here as they are rendered, never held, and rendered again by
    /// ``publish(_:)``, so a big catalog never has all of its feeds in memory at once.
    public func plan(_ catalog: AppCatalog, at moment: Timestamp, note: RevisionNote = RevisionNote()) throws -> PublicationPlan {
        let app = catalog.app
        let previous = try tree.currentManifest(app)
        let restored = try note.rollbackOf.map { try tree.manifest(app, revision: $0) }
        let renderer = FeedRenderer(catalog: catalog)
        let revision = (previous?.revision ?? 0) + 1

        // Changed bytes get this Last-Modified: now, but after everything published before
        // (scheduled states that have begun included: they were served), and the revision
        // carries the same moment so that feed and revision agree.
        let served = (previous?.variants ?? []) + (previous?.schedule ?? []).filter { $0.from <= moment }.flatMap(\.variants)
        let latestPrevious = served.flatMap { [$0.products.lastModified, $0.catalog.lastModified] }.max()
        let changedAt = Timestamp(secondsSince1970: max(moment.secondsSince1970, (latestPrevious?.secondsSince1970 ?? .min) + 1))

        // The feeds now, then at each scheduled moment ahead, each state compared with the one
        // before it: the previous revision for now, the state just planned for the schedule.
        // The current state is the one at `changedAt`, the moment its changed feeds claim; only
        // later moments are scheduled, so each switch has a Last-Modified of its own.
        let moments = ScheduleRules.moments(of: catalog, after: changedAt)
        var planner = StatePlanner(app: app, renderer: renderer, revision: revision)
        let current = planner.plan(
            at: changedAt, stampTime: changedAt, directoryPrefix: "",
            previous: { previous?.record(for: $0) },
            stampSources: { variant in [previous?.record(for: variant), restored?.record(for: variant)].compactMap { $0 } })
        var schedule: [ScheduledVariants] = []
        var scheduledSellable: [(from: Timestamp, sellable: [Bool])] = []
        var before = current.records
        for (offset, at) in moments.scheduled.enumerated() {
            let state = planner.plan(
                at: at, stampTime: at, directoryPrefix: "scheduled/\(offset + 1)/",
                previous: { variant in before.first { $0.platform == variant.platformKey && $0.band == variant.bandKey } },
                stampSources: { variant in
                    [previous?.scheduledRecord(at: at, for: variant), restored?.scheduledRecord(at: at, for: variant)].compactMap { $0 }
                })
            schedule.append(ScheduledVariants(from: at, variants: state.records))
            scheduledSellable.append((at, state.sellable))
            before = state.records
        }
        let records = current.records
        let outputs = planner.outputs
        let changed = current.changed

        let sameVariants =
            previous.map { $0.variants.map { "\($0.platform)/\($0.band)" } == records.map { "\($0.platform)/\($0.band)" } } ?? false
        let sameSchedule = previous.map { ($0.schedule ?? []).map(\.fingerprint) == schedule.map(\.fingerprint) } ?? false
        let isUnchanged = sameVariants && sameSchedule && changed == 0

        // Every identifier this revision shows, now or by its schedule, is published from the
        // moment it first appears: feedback's grace period counts from then.
        var history = try previous.map { try tree.history(app, revision: $0.revision) } ?? IdentifierHistory()
        history.reserveCapacity(forMore: catalog.products.count)
        var visibleNow = current.sellable
        for index in renderer.known { visibleNow[index] = true }
        for index in catalog.products.indices where visibleNow[index] {
            history.record(
                catalog.products[index].id, revision: revision, at: changedAt, retired: catalog.products[index].status == .retired)
        }
        for state in scheduledSellable {
            for index in catalog.products.indices where state.sellable[index] {
                history.record(catalog.products[index].id, revision: revision, at: state.from, retired: false)
            }
        }

        // The diff compares each product's snapshot line with the previous revision's; the lines
        // made for it are kept for publish, which writes them (a first publication needs none).
        var snapshot: [UInt8]?
        var diff = ProductDiff(added: catalog.products.map(\.id))
        if let previous {
            let encoded = Self.snapshot(catalog.products)
            diff = try ProductDiff(
                old: tree.productSnapshot(app, revision: previous.revision), new: Self.lines(of: encoded, catalog.products))
            snapshot = encoded
        }
        // A quarantine always changes the rich feed (its known list), so the revision records it.
        let quarantined = catalog.products.filter(\.isQuarantined)
        let wasQuarantined = Set(previous?.quarantined ?? [])
        let isQuarantined = Set(quarantined.map(\.id))
        let feedbackChanges =
            quarantined.filter { !wasQuarantined.contains($0.id) }.map {
                VerdictChange(app: app, identifier: $0.id, kind: .quarantined, reason: $0.quarantineReason)
            }
            + (previous?.quarantined ?? []).filter { !isQuarantined.contains($0) }.map {
                VerdictChange(app: app, identifier: $0, kind: .released)
            }
        let manifest = RevisionManifest(
            format: RevisionManifest.currentFormat, app: app,
            revision: (isUnchanged ? previous?.revision : nil) ?? revision,
            publishedAt: (isUnchanged ? previous?.publishedAt : nil) ?? changedAt,
            platforms: renderer.selector.platforms, bands: renderer.selector.bands.map(\.description), variants: records,
            schedule: schedule.isEmpty ? nil : schedule, quarantined: quarantined.isEmpty ? nil : quarantined.map(\.id),
            author: isUnchanged ? previous?.author : note.author, message: isUnchanged ? previous?.message : note.message,
            rollbackOf: isUnchanged ? previous?.rollbackOf : note.rollbackOf)
        return PublicationPlan(
            app: app, previous: previous, revision: manifest.revision, publishedAt: manifest.publishedAt,
            isUnchanged: isUnchanged, diff: diff, manifest: manifest, history: history,
            changedFeedCount: changed, totalFeedCount: records.count * 2,
            scheduledChanges: schedule.map(\.from), scheduleEndsBefore: moments.firstUnscheduled,
            sellableCount: current.sellable.count(where: { $0 }), knownCount: renderer.known.count, feedbackChanges: feedbackChanges,
            renderer: renderer, outputs: outputs, snapshot: snapshot)
    }

    /// Writes a plan's revision; does nothing else for an unchanged plan.
    /// Every publish, unchanged or not, first moves the records of a tree published before the
    /// records split out of `public/`.
    public func publish(_ plan: PublicationPlan) throws {
        try tree.moveRecordsOutOfPublic(plan.app)
        guard !plan.isUnchanged else {
            // A tree published before variants had paths of their own gets them from any build.
            if let current = plan.previous { try linkStaticCopies(plan.app, manifest: current) }
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
        // revision's own records (nil) are written beside the first output rather than after all.
        let renderer = plan.renderer
        let step = beforeStep
        let history = plan.history
        let snapshot = plan.snapshot
        let signer = signer
        let manifestToSign = plan.manifest
        let signedAt = clock()
        let tasks = [nil] + plan.outputs.map(Optional.some)
        let results = parallelMap(tasks) { output -> Result<(EncodedRecord, EncodedRecord)?, any Error> in
            Result {
                guard let output else {
                    try AtomicFile.writeDurably(history.tsv, to: recordsStaging.appendingPathComponent("identifiers.tsv"))
                    try AtomicFile.writeDurably(
                        try Gzip.compress(snapshot ?? Self.snapshot(renderer.catalog.products), effort: .fastest),
                        to: recordsStaging.appendingPathComponent(PublicTree.snapshotName))
                    return nil
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
                    let bytes = FeedRenderer.collect(feed)
                    let compressed = try Gzip.compress(bytes, effort: Gzip.feedEffort(forBytes: bytes.count))
                    try AtomicFile.writeDurably(bytes, to: directory.appendingPathComponent(name))
                    try AtomicFile.writeDurably(compressed, to: directory.appendingPathComponent(name + ".gz"))
                    try step("staged \(output.directory)\(name)")
                    records.append(EncodedRecord(sha256: ContentHash.sha256Hex(compressed), bytes: compressed.count))
                }
                return (records[0], records[1])
            }
        }
        // Each output's gzip records, in the order of `plan.outputs`; errors thrown in turn.
        let written = try results.compactMap { try $0.get() }

        var manifest = plan.manifest
        let gzipByDirectory = Dictionary(uniqueKeysWithValues: zip(plan.outputs.map(\.directory), written))
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
        try beforeStep("revision in place")

        try linkStaticCopies(app, manifest: manifest)
        try AtomicFile.write(manifestBytes, to: tree.currentManifestURL(app))
        try beforeStep("manifest")
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
            for name in names {
                let source = revision.appendingPathComponent(record.directory + name)
                let copy = target.appendingPathComponent(name)
                // An unsigned revision leaves no signature of an older one beside its feeds.
                if name.hasSuffix(suffix) && !fileManager.fileExists(atPath: source.path) {
                    if fileManager.fileExists(atPath: copy.path) { try fileManager.removeItem(at: copy) }
                    continue
                }
                if try sameContent(source, copy) { continue }
                try AtomicFile.link(source, to: copy)
                try beforeStep("static \(directory)\(name)")
            }
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
    private func sameContent(_ first: URL, _ second: URL) throws -> Bool {
        let fileManager = FileManager.default
        guard let a = try? fileManager.attributesOfItem(atPath: first.path)[.size] as? Int,
            let b = try? fileManager.attributesOfItem(atPath: second.path)[.size] as? Int, a == b
        else { return false }
        return fileManager.contentsEqual(atPath: first.path, andPath: second.path)
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
        var bytes: [UInt8] = []
        // Room for lines longer than most, so that a big snapshot is not copied as it grows:
        // capacity that is never written takes no memory.
        bytes.reserveCapacity(products.count * 512)
        // Products read in place: `for product in` would copy each, whole.
        for index in products.indices {
            bytes.append(contentsOf: FeedRenderer.encode(products[index], for: .snapshot))
            bytes.append(0x0A)
        }
        return bytes
    }

    /// A snapshot's lines with the identifier of each, as ``PublicTree/productSnapshot(_:revision:)`` reads them back.
    static func lines(of snapshot: [UInt8], _ products: [Product]) -> [(id: String, json: [UInt8])] {
        let lines = snapshot.split(separator: 0x0A, omittingEmptySubsequences: false).dropLast()
        return zip(products, lines).map { ($0.id, Array($1)) }
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

/// Maps on all cores: rendering and compressing feeds is the costly part of a big build.
func parallelMap<Input: Sendable, Output: Sendable>(_ inputs: [Input], _ transform: @Sendable (Input) -> Output) -> [Output] {
    let results = ParallelResults<Output>(count: inputs.count)
    defer { results.buffer.deallocate() }
    DispatchQueue.concurrentPerform(iterations: inputs.count) { index in
        (results.buffer.baseAddress! + index).initialize(to: transform(inputs[index]))
    }
    return (0..<inputs.count).map { (results.buffer.baseAddress! + $0).move() }
}

/// `range` cut into one part per core, in order, for ``parallelMap(_:_:)``.
func coreParts(of range: Range<Int>) -> [Range<Int>] {
    let parts = max(1, min(ProcessInfo.processInfo.activeProcessorCount, range.count))
    return (0..<parts).map { part in
        (range.lowerBound + range.count * part / parts)..<(range.lowerBound + range.count * (part + 1) / parts)
    }
}

/// `@unchecked Sendable`: each concurrentPerform iteration initializes only its own slot of a
/// preallocated buffer, and the slots are read only after concurrentPerform has returned.
private final class ParallelResults<Output>: @unchecked Sendable {
    let buffer: UnsafeMutableBufferPointer<Output>
    init(count: Int) { buffer = .allocate(capacity: max(count, 1)) }
}
