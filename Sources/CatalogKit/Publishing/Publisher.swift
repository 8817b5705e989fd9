import Content
import FeedSigning
import Foundation
import Time

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
        // The previous revision's snapshot is read and indexed by id from the start, beside
        // everything else the plan does until the diff needs it: read beside the content and the
        // history only, it ended after the feeds were hashed, with the other core idle
        // (docs/benchmarks.md, "The rebuild's memory").
        let previousSnapshot = previous.map { previous in
            Aside { [tree] in Result { try tree.productSnapshotComparison(app, revision: previous.revision) } }
        }
        let restored = try note.rollbackOf.map { try tree.manifest(app, revision: $0) }
        let purchaseSettings = PurchaseRecord(settingsOf: catalog)
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
        let selected = planner.select(at: changedAt)
        let scheduled = moments.scheduled.map { (from: $0, state: planner.select(at: $0)) }

        // Hashing the feeds keeps both cores busy for a big catalog but ends unevenly; the rest of
        // the plan, which needs only the sale flags, runs beside it rather than after it on one
        // core (docs/benchmarks.md, "The build's idle cores").
        let known = renderer.known
        let (hashed, besideResult) = concurrently(
            {
                let current = planner.plan(
                    selected, stampTime: changedAt, directoryPrefix: "",
                    previous: { previous?.record(for: $0) },
                    stampSources: { variant in [previous, restored].compactMap { $0?.record(for: variant) } })
                var schedule: [ScheduledVariants] = []
                var before = current.records
                for (offset, (at, state)) in scheduled.enumerated() {
                    let records = planner.plan(
                        state, stampTime: at, directoryPrefix: "scheduled/\(offset + 1)/",
                        previous: { variant in before.first { $0.platform == variant.platformKey && $0.band == variant.bandKey } },
                        stampSources: { variant in [previous, restored].compactMap { $0?.scheduledRecord(at: at, for: variant) } }
                    ).records
                    schedule.append(ScheduledVariants(from: at, variants: records))
                    before = records
                }
                return (current: current, schedule: schedule, outputs: planner.outputs)
            },
            { [tree] in
                Result {
                    try Self.planBesideFeeds(
                        catalog, in: tree, previous: previous, previousSnapshot: previousSnapshot, revision: revision, at: changedAt,
                        visible: (now: selected.sellable, known: known, scheduled: scheduled.map { ($0.from, $0.state.sellable) }))
                }
            })
        let beside = try besideResult.get()
        let records = hashed.current.records
        let schedule = hashed.schedule
        let changed = hashed.current.changed
        let content = beside.content
        let previousContent = beside.previousContent
        let quarantined = beside.quarantined

        let sameVariants =
            previous.map { $0.variants.map { "\($0.platform)/\($0.band)" } == records.map { "\($0.platform)/\($0.band)" } } ?? false
        let sameSchedule = previous.map { ($0.schedule ?? []).map(\.fingerprint) == schedule.map(\.fingerprint) } ?? false
        // The purchase endpoints of every node read the app's settings from the revision's record,
        // so settings that change are a new revision even when no feed does. The records are
        // compared last, only when nothing else changed: a big catalog's is megabytes to encode
        // and to read (11 MB for 100,000 products; encoding the new one and comparing it with the
        // previous one were 36 ms of a rebuild's CPU), for an answer nothing else needs
        // (docs/benchmarks.md, "The rebuild's memory"). A revision published before records carried one gets it in place
        // (``publish(_:)``): the server read the current sources' settings for it, which is what
        // the record says.
        let isUnchanged =
            sameVariants && sameSchedule && changed == 0 && content?.manifest == previousContent
            && previous.map {
                tree.purchaseRecordBytes(app, revision: $0.revision).map { $0 == purchaseSettings.encoded(listing: catalog.products) }
                    ?? true
            } ?? false

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
            isUnchanged: isUnchanged, diff: beside.diff, manifest: manifest, history: beside.history,
            changedFeedCount: changed, totalFeedCount: records.count * 2,
            scheduledChanges: schedule.map(\.from), scheduleEndsBefore: moments.firstUnscheduled,
            sellableCount: selected.sellable.count(where: { $0 }), knownCount: renderer.known.count, feedbackChanges: feedbackChanges,
            content: content, contentChange: ContentChange.between(previousContent, content?.manifest), renderer: renderer,
            outputs: hashed.outputs, gzippedSnapshot: beside.gzippedSnapshot, purchaseSettings: purchaseSettings)
    }

    /// What a plan needs besides the feeds' hashes, made while they are hashed.
    private struct BesideFeeds: Sendable {
        var previousContent: ContentManifest?
        var content: PlannedContent?
        var history: IdentifierHistory
        var diff: ProductDiff
        var gzippedSnapshot: [UInt8]?
        var quarantined: [Product]
    }

    /// The content's hashes, the identifier history, the diff and the quarantine of `catalog`:
    /// everything of a plan that needs no feed hashed, only which products are visible (`visible`:
    /// on sale now, known now, and on sale at each scheduled moment).
    private static func planBesideFeeds(
        _ catalog: AppCatalog, in tree: PublicTree, previous: RevisionManifest?,
        previousSnapshot: Aside<Result<ProductDiff.Comparison<Gzip.Lines>, any Error>>?, revision: Int, at changedAt: Timestamp,
        visible: (now: [Bool], known: [Int], scheduled: [(from: Timestamp, sellable: [Bool])])
    ) throws -> BesideFeeds {
        let (previousContent, content, history) = try planContentAndHistory(
            catalog, in: tree, previous: previous, revision: revision, at: changedAt, visible: visible)

        // The diff compares each product's snapshot line, as it is encoded, with the previous
        // revision's; the lines are gzipped as they are made, for publish to write (a first
        // publication needs none, and publish encodes them). Neither the lines nor a copy of each
        // are held: for a big catalog they were at the build's peak of memory.
        var gzippedSnapshot: [UInt8]?
        let diff: ProductDiff
        if var comparison = try previousSnapshot?.get().get() {
            gzippedSnapshot = try Self.compressedSnapshot(catalog.products, encodingAside: true) { index, line in
                try comparison.compare(id: catalog.products[index].id, json: line)
            }
            diff = comparison.finished()
        } else {
            diff = ProductDiff(added: catalog.products.indices.map { catalog.products[$0].id })
        }
        // A quarantine always changes the rich feed (its known list), so the revision records it.
        // By index: `filter` hands the closure a copy of every product.
        let quarantined = catalog.products.indices.filter { catalog.products.isQuarantined(at: $0) }.map { catalog.products[$0] }
        return BesideFeeds(
            previousContent: previousContent, content: content, history: history, diff: diff,
            gzippedSnapshot: gzippedSnapshot, quarantined: quarantined)
    }

    /// The content's plan and the identifier history with this revision's visible products recorded.
    private static func planContentAndHistory(
        _ catalog: AppCatalog, in tree: PublicTree, previous: RevisionManifest?, revision: Int, at changedAt: Timestamp,
        visible: (now: [Bool], known: [Int], scheduled: [(from: Timestamp, sellable: [Bool])])
    ) throws -> (previousContent: ContentManifest?, content: PlannedContent?, history: IdentifierHistory) {
        let app = catalog.app
        // Content: every file hashed, the manifest numbered from the previous revision's. A change
        // of content alone is a new revision; its feeds keep their bytes and validators.
        let previousContent = try previous.flatMap { try tree.contentManifest(app, revision: $0.revision) }
        let content = try ContentPublishing.plan(
            catalog.content, following: previousContent, cache: .read(ContentDigestCache.url(in: tree, app: app)))

        // Every identifier this revision shows, now or by its schedule, is published from the
        // moment it first appears: feedback's grace period counts from then.
        var history =
            try previous.map { try catalog.publishedHistory?.take(readFrom: $0.revision) ?? tree.history(app, revision: $0.revision) }
            ?? IdentifierHistory()
        history.reserveCapacity(forMore: catalog.products.count)
        var visibleNow = visible.now
        for index in visible.known { visibleNow[index] = true }
        for index in catalog.products.indices where visibleNow[index] {
            history.record(
                catalog.products[index].id, revision: revision, at: changedAt, retired: catalog.products[index].status == .retired)
        }
        for state in visible.scheduled {
            for index in catalog.products.indices where state.sellable[index] {
                history.record(catalog.products[index].id, revision: revision, at: state.from, retired: false)
            }
        }

        return (previousContent, content, history)
    }
}
