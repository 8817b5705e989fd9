import Foundation
import Time

/// `catalog rollback` as a function.
///
/// A rollback republishes an old revision's content as a new revision, and writes that content
/// back into `catalog/` as one canonical property list: the sources stay the truth, so the next
/// plain `catalog build` publishes nothing new, and committing the sources records the rollback.
extension CatalogWorkflow {
    /// What a rollback did.
    public struct Rollback: Sendable {
        /// The new revision (or, when the content equals the current revision's, nothing to publish).
        public var plan: PublicationPlan
        /// The revision whose content was restored.
        public var restored: Int
        /// The source file written and the ones it replaced, as display paths.
        public var written: String
        /// The source files the written one replaced, as display paths.
        public var removed: [String]
        /// Identifiers that differ from the restored revision because App Store identifiers can
        /// never be reused: published since, or retired since, they stay retired.
        public var keptRetired: [String]
        /// How the feedback file's verdicts, which a rollback leaves alone, differ from the
        /// restored revision's: only `quarantined` and `released` are filled.
        public var verdicts: ProductDiff
    }

    /// Restores revision `revision` of `app`: its definitions into the sources, then a new
    /// revision from them, whose feeds have the restored revision's bytes and ETags wherever the
    /// rules above leave the content the same. Holds the build lock throughout; on any failure
    /// the sources are put back as they were.
    public func rollback(
        app: String, to revision: Int, at moment: Timestamp, author: String?, message: String?,
        publisher configure: (inout Publisher) -> Void = { _ in }
    ) throws -> Rollback {
        _ = try publishedRevision(app)
        let lock = try BuildLock(publicDirectory: publicDirectory)
        defer { withExtendedLifetime(lock) {} }
        // Read under the lock: a build may have published meanwhile.
        let current = try publishedRevision(app)
        guard (1...current).contains(revision) else {
            throw HistoryError.missing("'\(app)' has no revision \(revision); its revisions are 1 to \(current)")
        }
        let tree = PublicTree(root: publicDirectory)
        let before = validate()
        guard let sources = before.catalogs.first(where: { $0.app == app }) else {
            throw HistoryError(
                description: "the sources of '\(app)' have errors; a rollback keeps their feedback policy and verdicts, so fix them first",
                diagnostics: before.diagnostics)
        }
        // The restored products, then those published since, all kept by the identifier rules.
        let restored = try tree.productSnapshot(app, revision: revision)
        let history = try tree.history(app, revision: current)
        var source = CanonicalSource(app: app)
        source.platforms = try tree.manifest(app, revision: revision).platforms
        source.feedbackPolicy = sources.feedbackPolicy
        // A rollback restores products only: the purchase settings and content items stay as the
        // sources now write them (docs/history.md), read as written so defaults stay defaults.
        guard
            let asWritten = CatalogLoader(limits: limits).load(directory: catalogDirectory, displayPath: catalogDisplayPath).apps
                .first(where: { $0.app == app })
        else {
            throw HistoryError(description: "the sources of '\(app)' vanished during the rollback")
        }
        source.keep(settingsAndContentOf: asWritten)
        var forced = Set<String>()
        for entry in restored {
            let retired = history[entry.id]?.retiredRevision != nil
            if retired { forced.insert(entry.id) }
            try source.append(snapshot: entry.json, status: retired ? .retired : nil)
        }
        let restoredIDs = Set(restored.map(\.id))
        for entry in try tree.productSnapshot(app, revision: current) where !restoredIDs.contains(entry.id) {
            forced.insert(entry.id)
            try source.append(snapshot: entry.json, status: .retired)
        }

        let replaced = try replaceSources(of: app, with: source.encoded)
        do {
            let validation = validate()
            guard let catalog = validation.catalogs.first(where: { $0.app == app }) else {
                throw HistoryError(
                    description: "revision \(revision) of '\(app)' does not validate as sources", diagnostics: validation.diagnostics)
            }
            var publisher = makePublisher()
            configure(&publisher)
            let plan = try publisher.plan(
                catalog, at: moment, note: RevisionNote(author: author, message: message ?? "rollback to \(revision)", rollbackOf: revision)
            )
            // The written sources must give back the restored definitions, but for the identifier rules.
            let fromRestored = try ProductDiff(oldLines: restored, newLines: plan.snapshotLines)
            let differing = fromRestored.added + fromRestored.changed.map(\.id) + fromRestored.removed
            if let unexpected = differing.first(where: { !forced.contains($0) }) {
                throw HistoryError(description: "cannot restore revision \(revision) of '\(app)' exactly: '\(unexpected)' would differ")
            }
            try publisher.publish(plan)
            var verdicts = ProductDiff(added: [])
            verdicts.quarantined = fromRestored.quarantined
            verdicts.released = fromRestored.released
            return Rollback(
                plan: plan, restored: revision, written: replaced.written, removed: replaced.removed,
                keptRetired: differing.filter(forced.contains), verdicts: verdicts)
        } catch {
            try replaced.putBack()
            throw error
        }
    }

    /// The sources of `app` as they were before a rollback replaced them.
    private struct ReplacedSources {
        var written: String
        var removed: [String]
        /// Each file's former bytes, nil for a file that did not exist.
        var former: [(url: URL, bytes: Data?)]
        /// A folder app's content folder, moved to the single-file app's place: (from, to).
        var movedContent: (from: URL, to: URL)?

        func putBack() throws {
            for (url, bytes) in former {
                if let bytes {
                    try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                    try AtomicFile.write(bytes, to: url)
                } else if FileManager.default.fileExists(atPath: url.path) {
                    try FileManager.default.removeItem(at: url)
                }
            }
            if let (from, to) = movedContent {
                try FileManager.default.createDirectory(at: from.deletingLastPathComponent(), withIntermediateDirectories: true)
                try FileManager.default.moveItem(at: to, to: from)
            }
        }
    }

    /// Writes `bytes` as `<app>.plist` and removes the app's other sources (`<app>.xml`, the
    /// source files of an `<app>/` folder): one app, one canonical file. The feedback file stays.
    /// A folder app's content folder `<app>/content/` moves to `<app>.content/`, where a
    /// single-file app's content lives (docs/catalog-format.md, "Content").
    private func replaceSources(of app: String, with bytes: [UInt8]) throws -> ReplacedSources {
        let fileManager = FileManager.default
        let base = catalogDisplayPath.hasSuffix("/") ? String(catalogDisplayPath.dropLast()) : catalogDisplayPath
        let plist = catalogDirectory.appendingPathComponent("\(app).plist")
        var others = [(url: catalogDirectory.appendingPathComponent("\(app).xml"), display: "\(base)/\(app).xml")]
        let folder = catalogDirectory.appendingPathComponent(app, isDirectory: true)
        for name in ((try? fileManager.contentsOfDirectory(atPath: folder.path)) ?? []).sorted() where CatalogLoader.isSource(name) {
            others.append((folder.appendingPathComponent(name), "\(base)/\(app)/\(name)"))
        }
        others = others.filter { fileManager.fileExists(atPath: $0.url.path) }
        let former = ([plist] + others.map(\.url)).map { (url: $0, bytes: fileManager.contents(atPath: $0.path)) }
        var replaced = ReplacedSources(written: "\(base)/\(app).plist", removed: [], former: former)
        do {
            try AtomicFile.write(bytes, to: plist)
            for other in others {
                try fileManager.removeItem(at: other.url)
                replaced.removed.append(other.display)
            }
            let content = folder.appendingPathComponent(CatalogLoader.contentFolderName, isDirectory: true)
            if fileManager.fileExists(atPath: content.path) {
                let destination = catalogDirectory.appendingPathComponent(app + CatalogLoader.contentSuffix, isDirectory: true)
                guard !fileManager.fileExists(atPath: destination.path) else {
                    throw HistoryError(
                        description:
                            "cannot move \(base)/\(app)/\(CatalogLoader.contentFolderName)/ to \(base)/\(app)\(CatalogLoader.contentSuffix)/, which exists already; merge or remove one and roll back again"
                    )
                }
                try fileManager.moveItem(at: content, to: destination)
                replaced.movedContent = (content, destination)
            }
            // An emptied folder would only earn a warning on every run.
            if (try? fileManager.contentsOfDirectory(atPath: folder.path))?.isEmpty == true { try fileManager.removeItem(at: folder) }
        } catch {
            try replaced.putBack()
            throw error
        }
        return replaced
    }
}
