import CatalogKit
import Content
import Foundation
import Logging
import NIOPosix
import ServiceLifecycle

#if canImport(Glibc)
    import Glibc
#endif

/// A serving replica's feeds (`catalog serve --feeds store`): writes what the shared store holds
/// into the replica's own tree, which the reload service then serves as it serves `public/`.
///
/// It catches up at once and at every announcement, and polls too: a notification lost with its
/// connection, or sent while it reconnected, delays a publication by one poll at most, never loses it.
public struct PublicationFollowerService: Service {
    let store: any PublicationStore
    let tree: PublicTree
    let pollInterval: Duration
    let metrics: ServerMetrics
    let logger: Logger

    public init(
        store: any PublicationStore, tree: PublicTree, pollInterval: Duration = .seconds(2), metrics: ServerMetrics, logger: Logger
    ) {
        self.store = store
        self.tree = tree
        self.pollInterval = pollInterval
        self.metrics = metrics
        self.logger = logger
    }

    /// Writes every change the tree lacks; the number of files written.
    ///
    /// A file whose bytes do not hash to the SHA-256 recorded with them is refused before it is
    /// written (`CatalogError.corruptPublication`), and the catch-up stops there: the tree keeps
    /// the publications it holds, whole (each app's manifest comes last), and serves them.
    ///
    /// An app's current files (its manifest, which makes a revision current, and the signatures
    /// and copies beside it) are written only once that revision's content is in the tree's
    /// content store: every blob its content manifest names, read from the store in chunks and
    /// verified as it is written (docs/content.md, "Replicas"). An app whose content cannot be
    /// had keeps its current revision, whole, and the others move on; the store change is not
    /// recorded then, so the next catch-up tries again. Blobs no kept content manifest names are
    /// removed.
    @discardableResult
    public static func catchUp(store: any PublicationStore, tree: PublicTree) async throws -> Int {
        var written = 0
        let held = tree.storeChange
        // Each app's current files, in the order the store hands them (its manifest last).
        // Each app the changes touch, with its current files in the order the store hands them
        // (its manifest last).
        var current: [(app: String, files: [PublishedFile])] = []
        let last = try await store.publishedChanges(after: held) { file in
            try verify(file)
            if !current.contains(where: { $0.app == file.app }) { current.append((file.app, [])) }
            if file.revision == nil {
                if let index = current.firstIndex(where: { $0.app == file.app }) { current[index].files.append(file) }
                return
            }
            // Disk writes (each fsynced) on NIO's blocking pool, not on the threads that run tasks.
            try await NIOThreadPool.singleton.runIfActive { try tree.apply(file) }
            written += 1
        }
        var failure: (any Error)?
        for (app, files) in current {
            do {
                // The revision current once these files are written: the one a new manifest
                // names, else the one the tree has (whose content manifest may be what changed).
                let revision: Int?
                if let manifest = files.last(where: \.isCurrentManifest), let bytes = manifest.bytes {
                    revision = try JSONDecoder().decode(RevisionManifest.self, from: Data(bytes)).revision
                } else {
                    revision = try tree.currentManifest(app)?.revision
                }
                if let revision { try await store.receiveContent(app: app, revision: revision, into: tree) }
                for file in files {
                    try await NIOThreadPool.singleton.runIfActive { try tree.apply(file) }
                    written += 1
                }
            } catch {
                failure = failure ?? error
            }
        }
        if written > 0 {
            try await NIOThreadPool.singleton.runIfActive {
                try BlobStore(root: tree.content).prune(keepingNamesIn: try tree.keptContentManifests())
            }
        }
        if let failure { throw failure }
        if last != held { try tree.setStoreChange(last) }
        return written
    }

    /// Refuses a file whose bytes are not those the store recorded the hash of: a row changed
    /// in the database, by hand or by an attacker with its write rights, is never served.
    static func verify(_ file: PublishedFile) throws {
        guard let bytes = file.bytes else { return }
        let actual = ContentHash.sha256Hex(bytes)
        guard let recorded = file.sha256, recorded.lowercased() == actual else {
            throw CatalogError.corruptPublication(
                path: file.path,
                message: "its bytes hash to \(actual), not to the SHA-256 recorded with them (\(file.sha256 ?? "none")); not written")
        }
    }

    public func run() async throws {
        // A replica killed while it wrote a blob left a temporary file, never a blob: those an
        // hour old go (a write in progress is never that old since its last chunk).
        _ = try? BlobStore(root: tree.content).removeTemporaryFiles(writtenBefore: Date().addingTimeInterval(-3600))
        // Wake-ups coalesce: one pending catch-up covers every announcement before it.
        let (wakeUps, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                while !Task.isCancelled {
                    do {
                        try await store.followAnnouncements(
                            listening: {
                                metrics.recordStoreListening(true)
                                wake.yield()  // what was published while not listening
                            },
                            announced: { wake.yield() })
                    } catch  where Task.isCancelled {
                        break
                    } catch {
                        logger.warning("publications.listen.lost", metadata: ["error": "\(error)"])
                    }
                    metrics.recordStoreListening(false)
                    try? await Task.sleep(for: .seconds(1))
                }
            }
            group.addTask {
                while !Task.isCancelled {
                    wake.yield()
                    try? await Task.sleep(for: pollInterval)
                }
            }
            group.addTask {
                for await _ in wakeUps {
                    do {
                        let written = try await Self.catchUp(store: store, tree: tree)
                        metrics.recordStoreCatchUp(change: tree.storeChange)
                        if written > 0 { logger.info("publications.received", metadata: ["files": "\(written)"]) }
                    } catch  where Task.isCancelled {
                        break
                    } catch {
                        // The tree keeps what it has and is served; the next wake-up tries again.
                        if case CatalogError.corruptPublication = error { metrics.recordStoreFileRefused() }
                        metrics.recordStoreCatchUp(change: nil)
                        logger.error("publications.catch-up.failed", metadata: ["error": "\(error)"])
                    }
                }
            }
            try? await gracefulShutdown()
            wake.finish()
            group.cancelAll()
        }
    }
}

/// The editor node's side with a PostgreSQL store (`catalog serve --feeds public`): records in
/// the store whatever of `public/` it lacks, at start and then every `interval`. Publications
/// record themselves as they are made; this catches up those made while the store was down,
/// by a `catalog build` that could not reach it, and signatures re-issued by the refresh.
public struct PublicationExportService: Service {
    let store: any CatalogStore
    let tree: PublicTree
    let interval: Duration
    let logger: Logger

    public init(store: any CatalogStore, tree: PublicTree, interval: Duration = .seconds(5), logger: Logger) {
        self.store = store
        self.tree = tree
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                // Each app's current files as last recorded: unchanged, nothing of the app changed
                // (a publication replaces its manifest, a refresh its signatures), and nothing is read.
                var recorded: [String: [String]] = [:]
                while true {
                    for app in tree.publishedApps() {
                        let fingerprint = Self.fingerprint(of: tree.appDirectory(app))
                        guard recorded[app] != fingerprint else { continue }
                        do {
                            try await store.recordPublication(nil, app: app, tree: tree)
                            recorded[app] = fingerprint
                        } catch {
                            logger.error("publications.record.failed", metadata: ["feed.app": "\(app)", "error": "\(error)"])
                        }
                    }
                    try await Task.sleep(for: interval)
                }
            }
        } catch is CancellationError {
            // Shutting down: a publication is recorded in one transaction or not at all.
        }
    }

    /// The identity of each file in `directory` (files are replaced by rename: a new inode).
    static func fingerprint(of directory: URL) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.sorted().map { name in
            var info = stat()
            guard stat(directory.appendingPathComponent(name).path, &info) == 0 else { return name }
            return "\(name):\(info.st_ino):\(info.st_size):\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)"
        }
    }
}
