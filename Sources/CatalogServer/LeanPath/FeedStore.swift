import CatalogKit
import Foundation
import Logging
import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A feed's two bodies as buffers that every connection writes without copying: a response
/// queued on a slow connection holds a reference to these bytes, never a copy of its own.
final class FeedBodies: Sendable {
    let identity: ByteBuffer
    let gzip: ByteBuffer

    init(_ feed: ServedFeed) {
        identity = ByteBuffer(bytes: feed.identity.bytes)
        gzip = ByteBuffer(bytes: feed.gzip.bytes)
    }

    func body(gzip: Bool) -> ByteBuffer { gzip ? self.gzip : identity }
}

/// The ``FeedIndex`` requests are answered from, replaced whole when `catalog build` publishes.
///
/// A request takes the current index once and uses only it, so its body, ETag and
/// Last-Modified always come from the same revision, even while a reload swaps the index.
public final class FeedStore: Sendable {
    public let tree: PublicTree
    private let state: Mutex<State>

    private struct State {
        var index: FeedIndex
        var signature: [String]
        /// The bodies of every feed `index` holds, by feed object (immutable, and kept alive by `index`).
        var bodies: [ObjectIdentifier: FeedBodies]

        init(index: FeedIndex, signature: [String]) {
            self.index = index
            self.signature = signature
            var bodies: [ObjectIdentifier: FeedBodies] = [:]
            for app in index.apps.values {
                for state in app.states {
                    for variant in state.variants.values {
                        for feed in [variant.products, variant.catalog] where bodies[ObjectIdentifier(feed)] == nil {
                            bodies[ObjectIdentifier(feed)] = FeedBodies(feed)
                        }
                    }
                }
            }
            self.bodies = bodies
        }
    }

    /// Loads what is published now.
    public init(tree: PublicTree, logger: Logger) {
        self.tree = tree
        let signature = FeedStore.signature(of: tree)
        let (index, problems) = FeedIndex.load(tree)
        for problem in problems { logger.error("feed.load.failed", metadata: ["feed.problem": "\(problem)"]) }
        state = Mutex(State(index: index, signature: signature))
    }

    public var index: FeedIndex { state.withLock { $0.index } }

    /// How many times the index was replaced. A connection keeps the feed it last answered with
    /// the generation it was found in: while that is still the generation, no lock is taken and
    /// nothing looked up again (``LeanConnectionHandler``).
    var indexGeneration: Int { generation.load(ordering: .acquiring) }
    private let generation = Atomic<Int>(0)

    /// The shared bodies of a feed of the current index (or of one it just replaced: then a copy,
    /// made once for the request that still holds the old feed).
    func bodies(of feed: ServedFeed) -> FeedBodies {
        state.withLock { $0.bodies[ObjectIdentifier(feed)] } ?? FeedBodies(feed)
    }

    /// Loads the published tree again if any app's manifest was replaced since the last load.
    /// An app whose new files do not check out keeps being served from its previous revision.
    @discardableResult
    public func reloadIfChanged(logger: Logger) -> Bool {
        let signature = FeedStore.signature(of: tree)
        guard signature != state.withLock({ $0.signature }) else { return false }
        let (loaded, problems) = FeedIndex.load(tree)
        var apps = loaded.apps
        let previous = index
        for problem in problems { logger.error("feed.reload.failed", metadata: ["feed.problem": "\(problem)"]) }
        for (app, served) in previous.apps where apps[app] == nil && problems.contains(where: { $0.hasPrefix(app + ":") }) {
            apps[app] = served
        }
        let index = FeedIndex(apps: apps)
        let reloaded = State(index: index, signature: signature)
        state.withLock { $0 = reloaded }
        // After the index: whoever sees the new generation finds the new index.
        generation.add(1, ordering: .releasing)
        // The current revision's signatures may have been re-issued: its snapshots are read again.
        snapshots.withLock { cache in
            for (app, served) in apps {
                for kind in FeedKind.allCases {
                    let key = SnapshotKey(app: app, revision: served.manifest.revision, kind: kind)
                    if cache.entries.removeValue(forKey: key) != nil { cache.order.removeAll { $0 == key } }
                }
            }
        }
        for (app, served) in apps where previous.apps[app]?.manifest.revision != served.manifest.revision {
            logger.info("feed.reloaded", metadata: ["feed.app": "\(app)", "feed.revision": "\(served.manifest.revision)"])
        }
        return true
    }

    // MARK: Revision snapshots and lists

    private struct SnapshotKey: Hashable {
        var app: String
        var revision: Int
        var kind: FeedKind
    }

    /// Snapshots read so far, and revisions found missing: a revision never changes once
    /// published, so each is read and checked once. Bounded; the oldest entry goes first.
    private let snapshots = Mutex<(entries: [SnapshotKey: (feed: ServedFeed, bodies: FeedBodies)?], order: [SnapshotKey])>(([:], []))
    static let snapshotCapacity = 64
    /// Each app's revision list, for the revision it was made at.
    private let revisionLists = Mutex<[String: (revision: Int, json: [UInt8])]>([:])

    /// A revision's default-variant feed, from memory after its first request. The file is read
    /// and hashed on NIO's blocking thread pool, never on the cooperative pool that answers the
    /// editor API and readiness. A revision above the current one is refused without a read.
    func snapshot(_ app: String, revision: Int, kind: FeedKind) async -> (feed: ServedFeed, bodies: FeedBodies)? {
        guard let current = index.apps[app], revision <= current.manifest.revision else { return nil }
        let key = SnapshotKey(app: app, revision: revision, kind: kind)
        if let cached = snapshots.withLock({ $0.entries[key] }) { return cached }
        let tree = self.tree
        let loaded = try? await NIOThreadPool.singleton.runIfActive {
            FeedIndex.snapshot(app, revision: revision, kind: kind, in: tree).map { ($0, FeedBodies($0)) }
        }
        // A failed read (the pool shutting down) is not remembered as a missing revision.
        guard let loaded else { return nil }
        snapshots.withLock { cache in
            if cache.entries.updateValue(loaded, forKey: key) == nil { cache.order.append(key) }
            if cache.order.count > Self.snapshotCapacity { cache.entries[cache.order.removeFirst()] = nil }
        }
        return loaded
    }

    /// The JSON of an app's revisions, newest first, made once per current revision (each
    /// revision's manifest is read then, on the blocking pool), or nil for an unpublished app.
    func revisionList(_ app: String) async -> [UInt8]? {
        guard let current = index.apps[app] else { return nil }
        let revision = current.manifest.revision
        if let cached = revisionLists.withLock({ $0[app] }), cached.revision == revision { return cached.json }
        let tree = self.tree
        guard
            let json = try? await NIOThreadPool.singleton.runIfActive({
                let revisions = stride(from: revision, through: 1, by: -1).compactMap { number in
                    (try? tree.manifest(app, revision: number)).map {
                        RevisionList.Revision(revision: number, publishedAt: $0.publishedAt.iso8601)
                    }
                }
                return ServiceJSON.encode(RevisionList(app: app, revisions: revisions))
            })
        else { return nil }
        revisionLists.withLock { $0[app] = (revision, json) }
        return json
    }

    /// Each manifest's identity: it is replaced by rename, so a new publication is a new inode.
    /// So is the default feed's signature, which a refresh re-issues without a new manifest.
    static func signature(of tree: PublicTree) -> [String] {
        tree.publishedApps().flatMap { app in
            let signature = tree.appDirectory(app).appendingPathComponent(FeedKind.products.rawValue + RevisionSignatures.fileExtension)
            return [tree.currentManifestURL(app), signature].map { url in
                var info = stat()
                guard stat(url.path, &info) == 0 else { return app }
                return "\(app):\(info.st_ino):\(info.st_size):\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)"
            }
        }
    }
}
