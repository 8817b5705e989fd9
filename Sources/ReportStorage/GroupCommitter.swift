import CatalogKit
import Synchronization

/// Commits reports that arrive together in one transaction: while one commit waits for the
/// disk, the reports that arrive queue up and go in the next. Durability then costs one flush
/// per batch instead of one per request, and each caller still returns only once its own
/// report is committed.
public final class GroupCommitter: Sendable {
    private let store: any ReportStore
    private let maximumBatch: Int
    private let acknowledgeBeforeCommit: Bool
    private let state = Mutex(State())

    /// Called once the report's transaction is durable (or has failed), on the commit loop's
    /// thread: hop elsewhere before doing real work.
    public typealias Completion = @Sendable (Result<StoreOutcome, any Error>) -> Void

    private struct State {
        var pending: [(InvalidIdentifierReport, Completion)] = []
        var committing = false
    }

    /// - Parameter acknowledgeBeforeCommit: a deliberately broken mode for `scripts/crash-test`
    ///   to prove that it catches a server that answers before the commit: each batch is
    ///   answered, then committed 200 ms later. Never for real use.
    public init(store: any ReportStore, maximumBatch: Int = 4096, acknowledgeBeforeCommit: Bool = false) {
        self.store = store
        self.maximumBatch = maximumBatch
        self.acknowledgeBeforeCommit = acknowledgeBeforeCommit
    }

    /// Stores `report` with whatever else is waiting; returns once that transaction is durable.
    public func submit(_ report: InvalidIdentifierReport) async throws -> StoreOutcome {
        try await withCheckedThrowingContinuation { continuation in
            submit(report) { continuation.resume(with: $0) }
        }
    }

    /// Stores `report` with whatever else is waiting; `completion` once that transaction is durable.
    public func submit(_ report: InvalidIdentifierReport, completion: @escaping Completion) {
        let startCommitting = state.withLock { state in
            state.pending.append((report, completion))
            guard !state.committing else { return false }
            state.committing = true
            return true
        }
        if startCommitting { commitNext() }
    }

    /// Commits what is waiting, then calls itself back for what came meanwhile, until nothing
    /// waits. With the SQLite store every turn after the first runs on its writer's queue: the
    /// next batch starts as soon as the last one is durable and answered, with no task to wait for.
    private func commitNext() {
        let batch = state.withLock { state in
            let batch = Array(state.pending.prefix(maximumBatch))
            state.pending.removeFirst(batch.count)
            if batch.isEmpty { state.committing = false }
            return batch
        }
        guard !batch.isEmpty else { return }
        if acknowledgeBeforeCommit {
            // The bug this mode stands for: a write-behind buffer that answers at once and
            // commits what it gathered a little later.
            for (_, completion) in batch { completion(.success(.stored)) }
            Task {
                try? await Task.sleep(for: .milliseconds(200))
                store.store(batch.map(\.0)) { _ in self.commitNext() }
            }
            return
        }
        store.store(batch.map(\.0)) { result in
            switch result {
            case .success(let outcomes):
                for ((_, completion), outcome) in zip(batch, outcomes) { completion(.success(outcome)) }
            case .failure(let error):
                for (_, completion) in batch { completion(.failure(error)) }
            }
            self.commitNext()
        }
    }
}
