import Foundation
import PropertyList
import Time

/// One revision as `catalog history` lists it.
public struct RevisionSummary: Sendable, Codable, Hashable {
    /// The revision number.
    public var revision: Int
    /// When it was published.
    public var publishedAt: Timestamp
    /// Absent for revisions published before authors were recorded.
    public var author: String?
    /// Why it was published, as its publisher wrote it.
    public var message: String?
    /// The revision a rollback republished; nil for any other publication.
    public var rollbackOf: Int?
    /// How many products are new in it, compared with the revision before.
    public var added: Int
    /// How many products of the revision before it no longer has.
    public var removed: Int
    /// How many products' fields changed, quarantines aside.
    public var changed: Int
    /// How many products the feedback loop took off sale in it.
    public var quarantined: Int
    /// How many products' quarantines it lifted.
    public var released: Int

    init(_ manifest: RevisionManifest, diff: ProductDiff) {
        revision = manifest.revision
        publishedAt = manifest.publishedAt
        author = manifest.author
        message = manifest.message
        rollbackOf = manifest.rollbackOf
        added = diff.added.count
        removed = diff.removed.count
        changed = diff.changed.count
        quarantined = diff.quarantined.count
        released = diff.released.count
    }
}

/// Why a history, diff or rollback could not be given: an app or revision that does not exist,
/// or sources with errors.
public struct HistoryError: DiagnosedError, CustomStringConvertible {
    public var description: String
    /// Problems in the sources, when they are the reason.
    public var diagnostics: [Diagnostic] = []
    /// The app or revision asked for does not exist (an HTTP 404), rather than exists in a
    /// state that prevents the request.
    public var isMissing = false

    /// An app or revision that does not exist.
    static func missing(_ description: String) -> HistoryError {
        HistoryError(description: description, isMissing: true)
    }
}

/// `catalog history`, `catalog diff` (and `catalog rollback`, in its own file) as functions.
///
/// Everything is read from the published revisions' manifests and product snapshots, which are
/// immutable: no lock is needed to read them, and a build running meanwhile only adds to them.
extension CatalogWorkflow {
    /// The revisions of `app`, newest first, each with its changes from the one before it.
    /// `limit` bounds how many are read: each costs reading one product snapshot.
    public func history(app: String, limit: Int? = nil) throws -> [RevisionSummary] {
        let tree = PublicTree(root: publicDirectory)
        let current = try publishedRevision(app)
        let oldest = max(1, current - (limit ?? current) + 1)
        // Oldest first, so that each snapshot is read once and compared with the one before it.
        var before = oldest > 1 ? try tree.productSnapshot(app, revision: oldest - 1) : []
        var summaries: [RevisionSummary] = []
        for revision in oldest...current {
            let snapshot = try tree.productSnapshot(app, revision: revision)
            let diff = try ProductDiff(old: before, new: snapshot)
            summaries.append(RevisionSummary(try tree.manifest(app, revision: revision), diff: diff))
            before = snapshot
        }
        return summaries.reversed()
    }

    /// What a diff compares: two revisions, or the current one and what the next build would publish.
    public enum DiffSide: Sendable, Hashable, CustomStringConvertible {
        /// A published revision, by number.
        case revision(Int)
        /// The sources as the next build would publish them.
        case sources

        public var description: String {
            switch self {
            case .revision(let number): "revision \(number)"
            case .sources: "sources"
            }
        }
    }

    /// The product changes between two sides, as `catalog diff` prints them.
    public struct RevisionDiff: Sendable {
        /// The app's bundle identifier.
        public var app: String
        /// Nil when the app was never published (everything in the sources is added).
        public var from: DiffSide?
        /// The newer side.
        public var to: DiffSide
        /// The product changes from `from` to `to`.
        public var diff: ProductDiff
    }

    /// The product changes of `app` from `from` to `to`. With both nil: the current revision
    /// against the sources, planned as `build --dry-run` plans them; with only `from`: that
    /// revision against the current one.
    public func diff(app: String, from: Int? = nil, to: Int? = nil, at moment: Timestamp) throws -> RevisionDiff {
        if let problem = AppName.problem(app) { throw HistoryError.missing(problem) }
        let tree = PublicTree(root: publicDirectory)
        guard let from else {
            let dryRun = try self.build(at: moment, dryRun: true)
            guard let plan = dryRun.plans.first(where: { $0.app == app }) else {
                if dryRun.hasErrors {
                    throw HistoryError(
                        description: "the sources have errors; fix them to see what the next build would publish",
                        diagnostics: dryRun.diagnostics)
                }
                throw HistoryError.missing("unknown app '\(app)': it has no sources in \(catalogDisplayPath) and was never published")
            }
            return RevisionDiff(app: app, from: plan.previous.map { .revision($0.revision) }, to: .sources, diff: plan.diff)
        }
        let current = try publishedRevision(app)
        let to = to ?? current
        for revision in [from, to] where !(1...current).contains(revision) {
            throw HistoryError.missing("'\(app)' has no revision \(revision); its revisions are 1 to \(current)")
        }
        let diff = try ProductDiff(old: tree.productSnapshot(app, revision: from), new: tree.productSnapshot(app, revision: to))
        return RevisionDiff(app: app, from: .revision(from), to: .revision(to), diff: diff)
    }

    /// The current revision of `app`; an error naming the app when it was never published.
    func publishedRevision(_ app: String) throws -> Int {
        if let problem = AppName.problem(app) { throw HistoryError.missing(problem) }
        guard let manifest = try PublicTree(root: publicDirectory).currentManifest(app) else {
            throw HistoryError.missing("unknown app '\(app)': it was never published")
        }
        return manifest.revision
    }
}
