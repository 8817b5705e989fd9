import CatalogKit
import Foundation
import Logging
import ServiceLifecycle

/// `catalog serve --signing-key`: re-issues the current feeds' signatures once half their lifetime
/// has run (and at start, for feeds published unsigned or long ago), over the same bytes. The
/// reload service sees the new signatures and serves them; feeds and validators stay as they are.
public struct SignatureRefreshService: Service {
    let workflow: CatalogWorkflow
    let lifetime: TimeInterval
    let logger: Logger

    /// Keeps the signatures of `workflow`'s published feeds, each trusted for `lifetime`, fresh.
    public init(workflow: CatalogWorkflow, lifetime: TimeInterval, logger: Logger) {
        self.workflow = workflow
        self.lifetime = lifetime
        self.logger = logger
    }

    public func run() async throws {
        // Checked often enough that a signature is never served in the last half of its life.
        let interval = Duration.seconds(Int64(max(1, min(3600, lifetime / 4))))
        do {
            try await cancelWhenGracefulShutdown {
                while true {
                    do {
                        let written = try workflow.refreshSignatures(at: Date(), window: lifetime / 2)
                        if written > 0 { logger.info("signatures.refreshed", metadata: ["signature.count": "\(written)"]) }
                    } catch {
                        logger.error("signatures.refresh.failed", metadata: ["error": "\(error)"])
                    }
                    try await Task.sleep(for: interval)
                }
            }
        } catch is CancellationError {
            // Shutting down: each signature is replaced atomically, so a refresh cut short leaves valid ones.
        }
    }
}
