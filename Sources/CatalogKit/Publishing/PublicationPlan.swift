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
    /// The revision's content: its manifest (`content.json` in its records) and the files its
    /// blobs are put from; nil when it delivers none.
    public var content: PlannedContent?
    /// How the content differs from the current revision's; nil when it does not.
    public var contentChange: ContentChange?

    let renderer: FeedRenderer
    /// One entry per distinct selection of products: the folder its files go to.
    let outputs: [PlannedOutput]
    /// The product snapshot, gzipped as its records keep it (`products.jsonl.gz`), when planning
    /// already encoded it for the diff.
    let gzippedSnapshot: [UInt8]?
    /// The revision's purchase record (``PurchaseRecord``) without its products: they are the
    /// catalog's, written again from it by ``purchaseRecord``. A big catalog's record is megabytes,
    /// which a plan held until publishing at the build's peak of memory.
    let purchaseSettings: PurchaseRecord
}

extension PublicationPlan {
    /// The bytes of the revision's purchase record, as written to its records.
    var purchaseRecord: [UInt8] {
        purchaseSettings.encoded(listing: renderer.catalog.products)
    }

    /// Each product's snapshot line as this plan publishes it: what a rollback compares with
    /// the revision it restores.
    var snapshotLines: [(id: String, json: ArraySlice<UInt8>)] {
        Publisher.lines(of: Publisher.snapshot(renderer.catalog.products), renderer.catalog.products)
    }
}

/// Files shared by every variant that selects exactly these products.
struct PlannedOutput: Sendable {
    var directory: String
    var selection: FeedSelection
    var catalogRevision: Int
    var catalogPublishedAt: Timestamp
}
