import Foundation

/// The layout of `public/`, of its private records beside it, and reading what is published.
///
/// `public/` holds only what may be public: it is meant to be copied as it is to any static host.
/// ```
/// v1/apps/<app>/manifest.json                 current manifest, replaced last
/// v1/apps/<app>/products.json[.gz]            default variant, for static hosting
/// v1/apps/<app>/catalog.json[.gz]
/// v1/apps/<app>/revisions/<n>/                immutable once renamed into place
///     manifest.json
///     products.json[.gz]  catalog.json[.gz]   default variant
///     variants/<platform|any>/<band|any>/products.json[.gz], catalog.json[.gz]
/// ```
/// What each revision keeps that is not for the public (drafts and reference names in the
/// product snapshot, identifiers not yet on sale, feeds scheduled for later) is in the records
/// tree, `public.records/` beside `public/` by default, renamed into place before the revision:
/// ```
/// v1/apps/<app>/revisions/<n>/
///     identifiers.tsv  products.jsonl.gz (every product, every field)
///     scheduled/<k>/…                         the feeds from each scheduled moment ahead
/// ```
/// A tree published before the split is read where it is, and `catalog build` moves its
/// records out (``moveRecordsOutOfPublic(_:)``).
public struct PublicTree: Sendable {
    /// The public folder (`public/`): what may be copied as it is to a static host.
    public let root: URL
    /// The private records; never under `root`.
    public let records: URL
    /// The content store: purchased content's files, named by SHA-256 (`sha256/ab/abcdef…`);
    /// `public.content/` beside `public/`, never under it, never copied to a host.
    public var content: URL {
        let records = records.standardizedFileURL
        let name =
            records.lastPathComponent.hasSuffix(".records")
            ? String(records.lastPathComponent.dropLast(".records".count)) + ".content" : records.lastPathComponent + ".content"
        return records.deletingLastPathComponent().appendingPathComponent(name, isDirectory: true)
    }

    /// Every product with every field, one JSON object per line, gzip-compressed.
    public static let snapshotName = "products.jsonl.gz"
    /// A revision's content manifest, in its records (``contentManifestURL(_:_:)``).
    public static let contentManifestName = "content.json"
    /// The files and folders of a revision that belong in the records tree.
    static let recordNames = ["identifiers.tsv", snapshotName, "scheduled"]

    /// The tree at `root`, with its records in `records`, by default beside it (``defaultRecords(for:)``).
    public init(root: URL, records: URL? = nil) {
        self.root = root
        self.records = records ?? Self.defaultRecords(for: root)
    }

    /// `public.records` beside `public`.
    public static func defaultRecords(for root: URL) -> URL {
        let root = root.standardizedFileURL
        return root.deletingLastPathComponent().appendingPathComponent(root.lastPathComponent + ".records", isDirectory: true)
    }

    /// `v1/apps/<app>/revisions` in the records tree.
    public func recordsRevisionsDirectory(_ app: String) -> URL {
        records.appendingPathComponent("v1/apps", isDirectory: true).appendingPathComponent(app, isDirectory: true)
            .appendingPathComponent("revisions", isDirectory: true)
    }

    /// One revision's records: `v1/apps/<app>/revisions/<n>` in the records tree.
    public func recordsDirectory(_ app: String, _ revision: Int) -> URL {
        recordsRevisionsDirectory(app).appendingPathComponent(String(revision), isDirectory: true)
    }

    /// A revision's content manifest, `v1/apps/<app>/revisions/<n>/content.json` in the records
    /// tree: the items, versions, files, sizes and digests that revision delivers (absent when it
    /// delivers none). It travels to replicas with the other records.
    public func contentManifestURL(_ app: String, _ revision: Int) -> URL {
        recordsDirectory(app, revision).appendingPathComponent(Self.contentManifestName)
    }

    /// A record file of a revision: in the records tree, or where a tree published before the
    /// split kept it.
    private func recordURL(_ app: String, _ revision: Int, _ relativePath: String) -> URL {
        let url = recordsDirectory(app, revision).appendingPathComponent(relativePath)
        let legacy = revisionDirectory(app, revision).appendingPathComponent(relativePath)
        return !FileManager.default.fileExists(atPath: url.path) && FileManager.default.fileExists(atPath: legacy.path) ? legacy : url
    }

    /// Moves the records a tree published before the split keeps under `public/` to the records
    /// tree (a copy already there wins, and the public one is removed). Callers hold the build lock.
    public func moveRecordsOutOfPublic(_ app: String) throws {
        let fileManager = FileManager.default
        for name in (try? fileManager.contentsOfDirectory(atPath: revisionsDirectory(app).path)) ?? [] {
            guard let revision = Int(name) else { continue }
            for record in Self.recordNames {
                let legacy = revisionDirectory(app, revision).appendingPathComponent(record)
                guard fileManager.fileExists(atPath: legacy.path) else { continue }
                let target = recordsDirectory(app, revision).appendingPathComponent(record)
                if fileManager.fileExists(atPath: target.path) {
                    try fileManager.removeItem(at: legacy)
                } else {
                    try fileManager.createDirectory(at: recordsDirectory(app, revision), withIntermediateDirectories: true)
                    try fileManager.moveItem(at: legacy, to: target)
                    try AtomicFile.syncDirectory(recordsDirectory(app, revision))
                }
                try AtomicFile.syncDirectory(revisionDirectory(app, revision))
            }
        }
    }

    /// `v1/apps` under `root`: one folder per app.
    public var appsDirectory: URL { root.appendingPathComponent("v1/apps", isDirectory: true) }

    /// `v1/apps/<app>`: the app's current manifest and the static copies of its default feeds.
    public func appDirectory(_ app: String) -> URL {
        appsDirectory.appendingPathComponent(app, isDirectory: true)
    }

    /// `v1/apps/<app>/revisions`: one folder per published revision.
    public func revisionsDirectory(_ app: String) -> URL {
        appDirectory(app).appendingPathComponent("revisions", isDirectory: true)
    }

    /// One revision's public files, `v1/apps/<app>/revisions/<n>`, immutable once renamed into place.
    public func revisionDirectory(_ app: String, _ revision: Int) -> URL {
        revisionsDirectory(app).appendingPathComponent(String(revision), isDirectory: true)
    }

    /// `v1/apps/<app>/manifest.json`: a copy of the newest revision's manifest, replaced last.
    public func currentManifestURL(_ app: String) -> URL {
        appDirectory(app).appendingPathComponent("manifest.json")
    }

    /// Apps with a current manifest, sorted.
    public func publishedApps() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: appsDirectory.path)) ?? []
        return names.filter { AppName.problem($0) == nil && FileManager.default.fileExists(atPath: currentManifestURL($0).path) }.sorted()
    }

    /// The current manifest of `app`, nil if it was never published.
    public func currentManifest(_ app: String) throws -> RevisionManifest? {
        let url = currentManifestURL(app)
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        return try decodeManifest(at: url)
    }

    /// The manifest of one revision of `app`.
    ///
    /// - Throws: ``CatalogError/corruptPublication(path:message:)`` when it is unreadable or of another format.
    public func manifest(_ app: String, revision: Int) throws -> RevisionManifest {
        try decodeManifest(at: revisionDirectory(app, revision).appendingPathComponent("manifest.json"))
    }

    private func decodeManifest(at url: URL) throws -> RevisionManifest {
        do {
            let manifest = try JSONDecoder().decode(RevisionManifest.self, from: Data(contentsOf: url))
            guard manifest.format == RevisionManifest.currentFormat else {
                throw CatalogError.corruptPublication(path: url.path, message: "manifest format \(manifest.format) is not supported")
            }
            return manifest
        } catch let error as CatalogError {
            throw error
        } catch {
            throw CatalogError.corruptPublication(path: url.path, message: "\(error)")
        }
    }

    /// The identifier history kept with `revision` (`identifiers.tsv`), from the records tree.
    public func history(_ app: String, revision: Int) throws -> IdentifierHistory {
        let url = recordURL(app, revision, "identifiers.tsv")
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw CatalogError.corruptPublication(path: url.path, message: "missing")
        }
        // Read where Foundation put it: a copy was 5 MB more, and its pages, for 100,000 identifiers.
        return try IdentifierHistory(tsv: data)
    }

    /// A file of `revision` by its path inside the revision: what is scheduled (feeds and their
    /// signatures) is in the records tree, the rest in `public/`.
    func revisionFileURL(_ app: String, _ revision: Int, _ relativePath: String) -> URL {
        relativePath.hasPrefix("scheduled/")
            ? recordURL(app, revision, relativePath) : revisionDirectory(app, revision).appendingPathComponent(relativePath)
    }

    /// The bytes of a feed file of `revision` (a scheduled one from the records tree).
    public func feedBytes(_ app: String, revision: Int, directory: String, name: String) throws -> [UInt8] {
        let url = revisionFileURL(app, revision, directory + name)
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw CatalogError.corruptPublication(path: url.path, message: "missing")
        }
        return [UInt8](data)
    }

    /// The product snapshot of a revision: each product's JSON by id, in source order.
    public func productSnapshot(_ app: String, revision: Int) throws -> [(id: String, json: [UInt8])] {
        var lines: [(id: String, json: [UInt8])] = []
        try forEachSnapshotLine(app, revision: revision) { id, json in lines.append((id, Array(json))) }
        return lines
    }

    /// A revision's product snapshot as a build compares with it: the id of each line, read once,
    /// and its gzip member, from which the lines are read again in step with the new ones
    /// (``ProductDiff/Comparison``). Held as lines, it was 25 MB and more for 100,000 products
    /// for the whole plan, at a rebuild's peak of memory (docs/benchmarks.md, "The rebuild's memory").
    func productSnapshotComparison(_ app: String, revision: Int) throws -> ProductDiff.Comparison<Gzip.Lines> {
        var ids: [String] = []
        let member = try forEachSnapshotLine(app, revision: revision) { id, _ in ids.append(id) }
        return ProductDiff.Comparison(ids: ids, lines: Gzip.Lines(member))
    }

    /// Reads a revision's product snapshot a line at a time, each line lent to `body` with its id,
    /// and returns the gzip member it was read from.
    @discardableResult
    private func forEachSnapshotLine(_ app: String, revision: Int, _ body: (String, UnsafeRawBufferPointer) throws -> Void) throws
        -> [UInt8]
    {
        let url = recordURL(app, revision, Self.snapshotName)
        func corrupt(_ message: String) -> CatalogError { .corruptPublication(path: url.path, message: message) }
        guard let data = FileManager.default.contents(atPath: url.path) else { throw corrupt("missing or not gzip") }
        let member = [UInt8](data)
        let lines = Gzip.Lines(member)
        do {
            while try lines.withNextLine({ line -> Void in
                guard let id = Self.leadingID(of: line) ?? Self.parsedID(of: line) else { throw corrupt("bad line") }
                try body(id, line)
            }) != nil {}
        } catch is Gzip.Invalid {
            throw corrupt("missing or not gzip")
        }
        return member
    }

    /// The id a snapshot line starts with, as ``FeedRenderer/encode(_:for:)`` writes every line
    /// (`{"id":"…"`, an id of letters, digits, '.', '_' and '-' that needs no escape); nil for
    /// any other line. Every build after the first reads the previous snapshot, and parsing each
    /// line whole was half a second of one core for 100,000 products (docs/benchmarks.md, "The
    /// rebuild"); the gzip member's checksum already vouches for the bytes.
    static func leadingID(of line: UnsafeRawBufferPointer) -> String? {
        let prefix: StaticString = #"{"id":""#
        let length = prefix.utf8CodeUnitCount
        guard line.count > length, memcmp(line.baseAddress!, prefix.utf8Start, length) == 0 else { return nil }
        let rest = UnsafeRawBufferPointer(rebasing: line[length...])
        guard let end = rest.firstIndex(of: UInt8(ascii: "\"")), end > 0, !rest[..<end].contains(UInt8(ascii: "\\")) else {
            return nil
        }
        return String(decoding: UnsafeRawBufferPointer(rebasing: rest[..<end]), as: UTF8.self)
    }

    /// The id of a snapshot line read as JSON, for a line not in the form ``leadingID(of:)`` reads.
    private static func parsedID(of line: UnsafeRawBufferPointer) -> String? {
        (try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])?["id"] as? String
    }
}

extension PublicTree {
    /// SHA-256 of `app`'s current manifest file: what the audit log records before and after a
    /// publication, since the manifest names every feed's hash.
    public func currentManifestHash(_ app: String) -> String? {
        FileManager.default.contents(atPath: currentManifestURL(app).path).map { ContentHash.sha256Hex($0) }
    }
}
