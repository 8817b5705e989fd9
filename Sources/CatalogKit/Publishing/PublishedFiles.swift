import Foundation

/// One file of a published tree as a shared store keeps it, so that serving replicas write the
/// very same tree (docs/operations.md, "Replicas").
///
/// Paths are relative to the tree: `public/v1/apps/<app>/…` for what is served, `records/v1/apps/<app>/…`
/// for the private records beside it (scheduled feeds, identifier histories).
public struct PublishedFile: Sendable, Equatable {
    /// Where the file goes, `public/…` or `records/…`.
    public var path: String
    /// The app whose folder holds it.
    public var app: String
    /// The revision whose folder holds it; nil for the app's current files (its manifest, the
    /// static copies of its default feeds and their signatures), which each publication replaces.
    public var revision: Int?
    /// The bytes; nil when the file was removed.
    public var bytes: [UInt8]?
    /// The SHA-256 of the bytes (hex), nil for a removed file.
    public var sha256: String?

    /// A file of `app` at `path` whose hash is known (a store keeps it beside the bytes), with the
    /// revision its path names.
    public init(path: String, app: String, bytes: [UInt8]?, sha256: String?) {
        self.path = path
        self.app = app
        self.bytes = bytes
        self.sha256 = sha256
        revision = Self.revision(of: path, app: app)
    }

    /// A file of `app` at `path`, its bytes hashed here.
    public init(path: String, app: String, bytes: [UInt8]?) {
        self.init(path: path, app: app, bytes: bytes, sha256: bytes.map { ContentHash.sha256Hex($0) })
    }

    /// The revision a path names (`…/apps/<app>/revisions/<n>/…`), nil for an app's current files.
    static func revision(of path: String, app: String) -> Int? {
        for root in PublishedFile.roots {
            let prefix = "\(root)/v1/apps/\(app)/revisions/"
            if path.hasPrefix(prefix), let number = path.dropFirst(prefix.count).split(separator: "/").first.flatMap({ Int($0) }) {
                return number
            }
        }
        return nil
    }

    static let roots = ["public", "records"]

    /// The app's current manifest: a replica writes it last, since a server reloads when it changes.
    public var isCurrentManifest: Bool { path == "public/v1/apps/\(app)/manifest.json" }
}

extension PublicTree {
    /// What of `app` differs from what a store holds (`stored`: each path's SHA-256): every file
    /// of a revision the store lacks, the changed files of the current revision (a signature
    /// refresh rewrites them) and of the app's current files, and those of them that were removed.
    /// Older revisions the store holds are never read again: a revision never changes once
    /// published, except its signatures, and only the current one's are refreshed.
    public func publicationChanges(_ app: String, stored: [String: String]) throws -> [PublishedFile] {
        let current = try currentManifest(app)?.revision
        let storedRevisions = Set(stored.keys.compactMap { PublishedFile.revision(of: $0, app: app) })
        var changes: [PublishedFile] = []
        var present: Set<String> = []
        for (root, directory) in [("public", self.root), ("records", records)] {
            let appDirectory = directory.appendingPathComponent("v1/apps/\(app)", isDirectory: true)
            for relative in Self.files(under: appDirectory) {
                let path = "\(root)/v1/apps/\(app)/\(relative)"
                let revision = PublishedFile.revision(of: path, app: app)
                if let revision, revision != current, storedRevisions.contains(revision) { continue }
                present.insert(path)
                let url = appDirectory.appendingPathComponent(relative)
                guard let data = FileManager.default.contents(atPath: url.path) else {
                    throw CatalogError.io(path: url.path, message: "cannot read")
                }
                let file = PublishedFile(path: path, app: app, bytes: [UInt8](data))
                if stored[path] != file.sha256 { changes.append(file) }
            }
        }
        for path in stored.keys where !present.contains(path) {
            let revision = PublishedFile.revision(of: path, app: app)
            if revision == nil || revision == current { changes.append(PublishedFile(path: path, app: app, bytes: nil)) }
        }
        return changes
    }

    /// Writes (or removes) a file a store holds, atomically; refuses a path outside the tree.
    public func apply(_ file: PublishedFile) throws {
        let url = try url(of: file)
        if let bytes = file.bytes {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try AtomicFile.write(bytes, to: url)
        } else if FileManager.default.fileExists(atPath: url.path) {
            try FileManager.default.removeItem(at: url)
        }
    }

    /// Where a store's path goes in this tree. A path is the store's word, but a replica writes
    /// nothing outside its own folders whatever a store says: no `..`, no empty or hidden parts.
    private func url(of file: PublishedFile) throws -> URL {
        let parts = file.path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count > 4, let root = parts.first, PublishedFile.roots.contains(String(root)), parts[1] == "v1", parts[2] == "apps",
            parts[3] == file.app, AppName.problem(file.app) == nil,
            parts.dropFirst().allSatisfy({ !$0.isEmpty && !$0.hasPrefix(".") })
        else { throw CatalogError.corruptPublication(path: file.path, message: "not a path of a published tree") }
        let base = root == "public" ? self.root : records
        return base.appendingPathComponent(parts.dropFirst().joined(separator: "/"))
    }

    /// Every file below `directory`, relative to it; hidden ones (temporary files being written) left out.
    private static func files(under directory: URL) -> [String] {
        guard let enumerator = FileManager.default.enumerator(atPath: directory.path) else { return [] }
        var files: [String] = []
        while let relative = enumerator.nextObject() as? String {
            guard !relative.split(separator: "/").contains(where: { $0.hasPrefix(".") }) else { continue }
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: directory.appendingPathComponent(relative).path, isDirectory: &isDirectory),
                !isDirectory.boolValue
            {
                files.append(relative)
            }
        }
        return files.sorted()
    }

    /// The store's last change this tree holds (a replica's), 0 for none.
    public var storeChange: Int64 {
        (try? String(contentsOf: storeChangeURL, encoding: .utf8)).flatMap { Int64($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            ?? 0
    }

    /// Records that the tree holds everything of the store up to `change`.
    public func setStoreChange(_ change: Int64) throws {
        try FileManager.default.createDirectory(at: records, withIntermediateDirectories: true)
        try AtomicFile.write(Array("\(change)\n".utf8), to: storeChangeURL)
    }

    private var storeChangeURL: URL { records.appendingPathComponent("store-change") }
}

/// A store that keeps every publication beside the audit log, and announces each one, so that
/// serving replicas need no disk of their own (PostgreSQL; docs/operations.md, "Replicas").
public protocol PublicationStore: Sendable {
    /// The SHA-256 of every file the store holds for `app`, by path.
    func publishedFileHashes(app: String) async throws -> [String: String]
    /// Records `files`, the `blobs` among them the store lacks, and `audit` in one transaction,
    /// then announces them: a replica never sees a content manifest whose blobs are missing.
    /// Each blob is read from its file in chunks, and refused (the whole rolled back) unless its
    /// bytes are its size and digest.
    func recordPublication(app: String, files: [PublishedFile], blobs: [PublishedBlob], audit: AuditEntry?) async throws
    /// Hands every file changed after `change` to `receive`, the files of revisions first and each
    /// app's current manifest last, and returns the last change handed over.
    func publishedChanges(after change: Int64, _ receive: (PublishedFile) async throws -> Void) async throws -> Int64
    /// Hands the blob whose SHA-256 is `sha256` (hex) to `receive` in chunks, in order, one chunk
    /// in memory at a time; throws when the store lacks it or a chunk of it.
    func publishedBlob(_ sha256: String, _ receive: ([UInt8]) async throws -> Void) async throws
    /// Calls `announced` for each publication announced, from the moment this returns `listening`
    /// until the connection is lost (it throws) or the task is cancelled.
    func followAnnouncements(listening: @Sendable () -> Void, announced: @Sendable () -> Void) async throws
    /// Runs `body` while this process holds the store-wide lock `name`, waiting for it while
    /// another holds it; cancels `body` if the connection holding it is lost, and takes it again.
    /// Returns when the task is cancelled.
    func whileHoldingLock(_ name: String, _ body: @escaping @Sendable () async throws -> Void) async throws
}

extension PublicationStore {
    /// Records `files` and `audit`, naming no blob.
    public func recordPublication(app: String, files: [PublishedFile], audit: AuditEntry?) async throws {
        try await recordPublication(app: app, files: files, blobs: [], audit: audit)
    }
}

extension EditorStore {
    /// Records a publication: its audit entry, and with a ``PublicationStore`` every file of `app`
    /// the store lacks and every content blob a new content manifest names, in one transaction. Holds the tree's build lock meanwhile, so that what is
    /// read is one publication's tree, never half of the next one's.
    public func recordPublication(_ entry: AuditEntry?, app: String, tree: PublicTree) async throws {
        guard let store = publications else {
            if let entry { try await appendAudit(entry) }
            return
        }
        let lock = try await BuildLock.acquire(publicDirectory: tree.root)
        defer { withExtendedLifetime(lock) {} }
        let stored = try await store.publishedFileHashes(app: app)
        let (files, blobs) = try await onOwnThread {
            let files = try tree.publicationChanges(app, stored: stored)
            return (files, try tree.publishedBlobs(in: files))
        }
        guard !files.isEmpty || entry != nil else { return }
        try await store.recordPublication(app: app, files: files, blobs: blobs, audit: entry)
    }
}
