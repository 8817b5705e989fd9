import CatalogKit
import Synchronization

/// Commits reports that arrive together in one transaction: while one commit waits for the
/// disk, the reports that arrive queue up and go in the next. Durability then costs one flush
/// per batch instead of one per request, and each caller still returns only once its own
/// report is committed.
///
/// The queue is bounded: while the store stalls, a report past `maximumQueued` fails at once
/// with ``CommitQueueFull`` (the endpoint answers 503 with `Retry-After`), so memory stays
/// bounded and nothing acknowledged is ever dropped.
public final class GroupCommitter: Sendable {
    private let store: any ReportStore
    private let maximumBatch: Int
    private let maximumQueued: Int
    private let state = Mutex(State())
    /// Told each batch's size and how long its commit took (for `/metrics`).
    private let observer: (@Sendable (_ batch: Int, _ duration: Duration) -> Void)?
    #if DEBUG
        private let acknowledgeBeforeCommit: Bool
    #endif

    /// Called once the report's transaction is durable (or has failed), on the commit loop's
    /// thread: hop elsewhere before doing real work.
    public typealias Completion = @Sendable (Result<StoreOutcome, any Error>) -> Void

    private struct State {
        var pending: [(InvalidIdentifierReport, Completion)] = []
        var committing = false
    }

    public init(
        store: any ReportStore, maximumBatch: Int = 4096, maximumQueued: Int = 20_000,
        observer: (@Sendable (_ batch: Int, _ duration: Duration) -> Void)? = nil
    ) {
        self.store = store
        self.maximumBatch = maximumBatch
        self.maximumQueued = maximumQueued
        self.observer = observer
        #if DEBUG
            self.acknowledgeBeforeCommit = false
        #endif
    }

    #if DEBUG
        /// A deliberately broken mode, in debug builds only (never in a release binary), for
        /// `scripts/crash-test --broken` to prove that it catches a server that answers before the
        /// commit: each batch is answered, then committed 200 ms later.
        public init(
            store: any ReportStore, maximumQueued: Int = 20_000, acknowledgeBeforeCommit: Bool,
            observer: (@Sendable (_ batch: Int, _ duration: Duration) -> Void)? = nil
        ) {
            self.store = store
            self.maximumBatch = 4096
            self.maximumQueued = maximumQueued
            self.observer = observer
            self.acknowledgeBeforeCommit = acknowledgeBeforeCommit
        }
    #endif

    /// Stores `report` with whatever else is waiting; returns once that transaction is durable.
    public func submit(_ report: InvalidIdentifierReport) async throws -> StoreOutcome {
        try await withCheckedThrowingContinuation { continuation in
            submit(report) { continuation.resume(with: $0) }
        }
    }

    /// Stores `report` with whatever else is waiting; `completion` once that transaction is durable.
    public func submit(_ report: InvalidIdentifierReport, completion: @escaping Completion) {
        let start: Bool? = state.withLock { state in
            guard state.pending.count < maximumQueued else { return nil }
            state.pending.append((report, completion))
            guard !state.committing else { return false }
            state.committing = true
            return true
        }
        switch start {
        case nil: completion(.failure(CommitQueueFull()))
        case true?: commitNext()
        case false?: break
        }
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
        #if DEBUG
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
        #endif
        let started = ContinuousClock.now
        store.store(batch.map(\.0)) { result in
            self.observer?(batch.count, ContinuousClock.now - started)
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

/// The commit queue is full: the store has stalled for longer than the queue holds reports.
public struct CommitQueueFull: Error, CustomStringConvertible {
    public init() {}
    public var description: String { "too many reports are waiting for the store" }
}
