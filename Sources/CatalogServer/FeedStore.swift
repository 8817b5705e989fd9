import CatalogKit
import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The ``FeedIndex`` requests are answered from, replaced whole when `catalog build` publishes.
///
/// A request takes the current index once and uses only it, so its body, ETag and
/// Last-Modified always come from the same revision, even while a reload swaps the index.
public final class FeedStore: Sendable {
    public let tree: PublicTree
    private let state: Mutex<(index: FeedIndex, signature: [String])>

    /// Loads what is published now.
    public init(tree: PublicTree, logger: Logger) {
        self.tree = tree
        let signature = FeedStore.signature(of: tree)
        let (index, problems) = FeedIndex.load(tree)
        for problem in problems { logger.error("feed.load.failed", metadata: ["feed.problem": "\(problem)"]) }
        state = Mutex((index, signature))
    }

    public var index: FeedIndex { state.withLock { $0.index } }

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
        state.withLock { $0 = (index, signature) }
        for (app, served) in apps where previous.apps[app]?.manifest.revision != served.manifest.revision {
            logger.info("feed.reloaded", metadata: ["feed.app": "\(app)", "feed.revision": "\(served.manifest.revision)"])
        }
        return true
    }

    /// Each manifest's identity: it is replaced by rename, so a new publication is a new inode.
    static func signature(of tree: PublicTree) -> [String] {
        tree.publishedApps().map { app in
            var info = stat()
            guard stat(tree.currentManifestURL(app).path, &info) == 0 else { return app }
            return "\(app):\(info.st_ino):\(info.st_size):\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)"
        }
    }
}
