import Content
import Foundation
import Time

/// Publishing an app's content (docs/content.md, "Publishing"): the files hashed when a build is
/// planned, put into the blob store before the revision that names them, the revision's
/// `content.json` written in its records, and blobs no revision names pruned.
enum ContentPublishing {
    /// The content manifest of `items`, versions numbered from `previous`; with one source file
    /// for each digest, to put it from. Each file is read once to hash it (nothing is stored),
    /// unless `cache` knows it unchanged since it was last hashed. Nil for an app with no items:
    /// its revision delivers no content.
    static func plan(_ items: [CatalogContentItem], following previous: ContentManifest?, cache: ContentDigestCache) throws
        -> PlannedContent?
    {
        guard !items.isEmpty else { return nil }
        var cache = cache
        let now = Date()
        let files = items.flatMap(\.files)
        // Each file's identity before it is read: a file that changes while it is hashed no longer
        // has it, so what was read is never taken as that file's bytes again.
        let identities = files.map { ContentDigestCache.identity(of: $0.source) }
        var digests: [URL: (digest: ContentDigest, size: Int64)] = [:]
        var toHash: [CatalogContentItem.File] = []
        for (file, identity) in zip(files, identities) {
            if let identity, let digest = cache.digest(of: file.source.path, identity: identity) {
                digests[file.source] = (digest, identity.size)
            } else {
                toHash.append(file)
            }
        }
        // Two at a time, on two cores: hashing is most of a content build.
        let hashed = parallelMap(toHash) { file in
            Result { () throws(BlobStoreError) in try BlobStore.digest(ofFileAt: file.source) }
        }
        let identityByPath = Dictionary(zip(files.map(\.source.path), identities), uniquingKeysWith: { first, _ in first })
        for (file, result) in zip(toHash, hashed) {
            do {
                let found = try result.get()
                digests[file.source] = found
                if let identity = identityByPath[file.source.path] ?? nil, identity.size == found.size {
                    cache.record(found.digest, of: file.source.path, identity: identity, now: now)
                }
            } catch {
                throw CatalogError.io(path: file.source.path, message: "cannot read content file: \(error)")
            }
        }
        cache.keep(only: Set(files.map(\.source.path)))
        var sources: [ContentDigest: URL] = [:]
        for file in files {
            if let found = digests[file.source], sources[found.digest] == nil { sources[found.digest] = file.source }
        }
        let manifestItems = items.map { item in
            let (product, group, published): (String?, String?, Date?) =
                switch item.availability {
                case .product(let id): (id, nil, nil)
                case .subscriptionGroup(let group, let published): (nil, group, published)
                }
            return ContentManifest.Item(
                id: item.id, product: product, subscriptionGroup: group, published: published,
                files: item.files.map { file in
                    // Every file was hashed above.
                    let found = digests[file.source] ?? (digest: ContentDigest.of(Data()), size: Int64(0))
                    return ContentManifest.File(path: file.path, size: found.size, sha256: found.digest)
                })
        }
        do {
            return PlannedContent(
                manifest: try ContentManifest(items: manifestItems, following: previous), sources: sources, digestCache: cache)
        } catch {
            throw CatalogError.io(path: items[0].location.file, message: "content does not make a manifest: \(error)")
        }
    }

    /// Puts every blob `content` names and the store lacks, each checked against its planned
    /// digest, before the revision that names them is in place. A blob already stored is its
    /// digest's bytes, so it is neither read nor copied again.
    static func putBlobs(_ content: PlannedContent, into store: BlobStore, beforeStep: (String) throws -> Void) throws {
        let receipts: [BlobStore.Receipt]
        do {
            receipts = try store.putAll(
                contentsOf: content.sources.sorted(by: { $0.key < $1.key }).map { (url: $0.value, expected: $0.key) })
        } catch {
            throw CatalogError.io(path: store.root.path, message: "cannot store content files: \(error)")
        }
        for receipt in receipts where receipt.written { try beforeStep("content \(receipt.digest.hex)") }
    }

    /// Removes the blobs that no revision of any app names, and temporary files a crash left
    /// over an hour ago. Every revision is kept (none is ever pruned), so only blobs of builds
    /// that failed before their revision was in place go. When any revision's manifest does not
    /// read, nothing is removed: keeping a blob is the safe side. Callers hold the build lock.
    ///
    /// While the store bears the swept mark (``sweptMark(in:)``), every blob in it is named, and
    /// no manifest is read: reading all of them cost a build about 7 ms for each revision of an
    /// app of a thousand items (docs/benchmarks.md, "Pruning and the history").
    static func pruneBlobs(in tree: PublicTree, now: Date) -> [ContentDigest] {
        let store = BlobStore(root: tree.content)
        guard FileManager.default.fileExists(atPath: tree.content.path) else { return [] }
        _ = try? store.removeTemporaryFiles(writtenBefore: now.addingTimeInterval(-3600))
        let mark = sweptMark(in: tree)
        guard !FileManager.default.fileExists(atPath: mark.path) else { return [] }
        guard let manifests = try? tree.keptContentManifests(), let removed = try? store.prune(keepingNamesIn: manifests) else {
            return []
        }
        markSwept(in: tree)
        return removed
    }

    /// The file whose presence says that every blob in the content store is named by a revision:
    /// written by the pruning that made it so, taken away while a publication puts blobs, and put
    /// back once that publication's revision is in place. A publication that fails in between
    /// leaves it away, and the next build prunes.
    static func sweptMark(in tree: PublicTree) -> URL { tree.content.appendingPathComponent("swept") }

    /// Takes the swept mark away, durably, before a publication puts blobs; returns whether it was
    /// there, or there is no store yet (nothing in it to prune): only then may the publication put
    /// it back (``markSwept(in:)``).
    static func takeSweptMark(in tree: PublicTree) throws -> Bool {
        guard FileManager.default.fileExists(atPath: tree.content.path) else { return true }
        let mark = sweptMark(in: tree)
        guard unlink(mark.path) == 0 else {
            if errno == ENOENT { return false }
            throw CatalogError.io(path: mark.path, message: "cannot remove: \(String(cString: strerror(errno)))")
        }
        try AtomicFile.syncDirectory(tree.content)
        return true
    }

    /// Writes the swept mark: after a pruning, or once the revision that names a publication's
    /// blobs is in place. Best effort: a mark that is missing only makes the next build prune.
    static func markSwept(in tree: PublicTree) {
        try? AtomicFile.write([UInt8](), to: sweptMark(in: tree))
    }
}

/// How a plan's content differs from the current revision's, by item id.
public struct ContentChange: Sendable, Hashable {
    /// How many items the new revision delivers.
    public var items: Int
    /// Items new in it, or whose files changed (a new version).
    public var changed: [String]
    /// Items it no longer delivers.
    public var removed: [String]

    /// The change from `previous` to `next`; nil when they are the same.
    static func between(_ previous: ContentManifest?, _ next: ContentManifest?) -> ContentChange? {
        guard previous != next else { return nil }
        let before = Dictionary((previous?.items ?? []).map { ($0.id, $0.version) }, uniquingKeysWith: { first, _ in first })
        let after = next?.items ?? []
        let ids = Set(after.map(\.id))
        return ContentChange(
            items: after.count, changed: after.filter { before[$0.id] != $0.version }.map(\.id),
            removed: (previous?.items ?? []).map(\.id).filter { !ids.contains($0) })
    }
}

/// A revision's content as planned: its manifest, and a file to put each blob from.
public struct PlannedContent: Sendable, Hashable {
    /// The manifest the revision publishes as `content.json`.
    public var manifest: ContentManifest
    /// One source file for each digest the manifest names.
    var sources: [ContentDigest: URL]
    /// The digests known after planning, written back when the plan is published.
    var digestCache: ContentDigestCache
}

extension PublicTree {
    /// The content manifest of a revision of `app`; nil when that revision delivers no content.
    ///
    /// - Throws: ``CatalogError/corruptPublication(path:message:)`` when it does not read.
    public func contentManifest(_ app: String, revision: Int) throws -> ContentManifest? {
        let url = contentManifestURL(app, revision)
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        do {
            guard let data = FileManager.default.contents(atPath: url.path) else {
                throw ContentManifestError("cannot read it")
            }
            return try ContentManifest.decode(data)
        } catch {
            throw CatalogError.corruptPublication(path: url.path, message: "\(error)")
        }
    }

    /// The content manifest of `app`'s published `revision` (`content.json` in its records, read by
    /// ``contentManifest(_:revision:)``); an empty one when the revision delivers no content. What
    /// the content endpoints and `catalog content url` decide on.
    public func servedContentManifest(_ app: String, revision: Int) -> Result<ContentManifest, CatalogError> {
        Result { () throws(CatalogError) in
            do {
                return try contentManifest(app, revision: revision) ?? ContentManifest(items: [])
            } catch let error as CatalogError {
                throw error
            } catch {
                throw CatalogError.corruptPublication(path: contentManifestURL(app, revision).path, message: "\(error)")
            }
        }
    }
}

extension CatalogWorkflow {
    /// `catalog content ls` as a function: the content manifest of `app` at `revision` (the
    /// current one when nil), with the revision it is of; a nil manifest when that revision
    /// delivers no content.
    ///
    /// - Throws: ``HistoryError`` (missing) for an app never published or a revision it does not
    ///   have; ``CatalogError/corruptPublication(path:message:)`` for a manifest that does not read.
    public func content(app: String, revision: Int? = nil) throws -> (revision: Int, manifest: ContentManifest?) {
        let tree = PublicTree(root: publicDirectory)
        guard let current = try tree.currentManifest(app) else { throw HistoryError.missing("'\(app)' was never published") }
        let chosen = revision ?? current.revision
        guard (1...current.revision).contains(chosen) else {
            throw HistoryError.missing("'\(app)' has no revision \(chosen); its revisions are 1 to \(current.revision)")
        }
        return (chosen, try tree.contentManifest(app, revision: chosen))
    }
}
