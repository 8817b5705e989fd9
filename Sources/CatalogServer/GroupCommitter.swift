import CatalogKit
import Synchronization

/// Commits items that arrive together in one transaction: while one commit waits for the disk,
/// the items that arrive queue up and go in the next. Durability then costs one flush per batch
/// instead of one per request, and each caller still returns only once its own item is
/// committed. Reports (``init(store:maximumBatch:maximumQueued:observer:)``) and purchases both
/// go through it; `commit` is the store's batch write.
///
/// The queue is bounded: while the store stalls, an item past `maximumQueued` fails at once with
/// ``CommitQueueFull`` (the endpoint answers 503 with `Retry-After`), so memory stays bounded and
/// nothing acknowledged is ever dropped.
public final class GroupCommitter<Item: Sendable, Outcome: Sendable>: Sendable {
    /// Writes a batch in one transaction and answers each item's outcome, in order, once durable.
    public typealias Commit = @Sendable ([Item], @escaping @Sendable (Result<[Outcome], any Error>) -> Void) -> Void
    /// Called once the item's transaction is durable (or has failed), on the commit loop's
    /// thread: hop elsewhere before doing real work.
    public typealias Completion = @Sendable (Result<Outcome, any Error>) -> Void

    private let commit: Commit
    private let maximumBatch: Int
    private let maximumQueued: Int
    private let state = Mutex(State())
    /// Told each batch's size and how long its commit took (for `/metrics`).
    private let observer: (@Sendable (_ batch: Int, _ duration: Duration) -> Void)?
    #if DEBUG
        /// The outcome answered before the commit in the deliberately broken mode; nil otherwise.
        private let acknowledgedEarly: Outcome?
    #endif

    private struct State {
        var pending: [(Item, Completion)] = []
        var committing = false
    }

    /// A committer of batches of at most `maximumBatch` items through `commit`.
    public init(
        maximumBatch: Int, maximumQueued: Int, observer: (@Sendable (_ batch: Int, _ duration: Duration) -> Void)? = nil,
        commit: @escaping Commit
    ) {
        self.commit = commit
        self.maximumBatch = maximumBatch
        self.maximumQueued = maximumQueued
        self.observer = observer
        #if DEBUG
            self.acknowledgedEarly = nil
        #endif
    }

    #if DEBUG
        /// A deliberately broken mode, in debug builds only (never in a release binary), for
        /// `scripts/crash-test --broken` to prove that it catches a server that answers before the
        /// commit: each batch is answered `acknowledgedEarly`, then committed 200 ms later.
        init(
            maximumBatch: Int, maximumQueued: Int, acknowledgedEarly: Outcome,
            observer: (@Sendable (_ batch: Int, _ duration: Duration) -> Void)?, commit: @escaping Commit
        ) {
            self.commit = commit
            self.maximumBatch = maximumBatch
            self.maximumQueued = maximumQueued
            self.observer = observer
            self.acknowledgedEarly = acknowledgedEarly
        }
    #endif

    /// Commits `item` with whatever else is waiting; returns once that transaction is durable.
    public func submit(_ item: Item) async throws -> Outcome {
        try await outcome(of: item).get()
    }

    /// Commits `item` with whatever else is waiting; its outcome once that transaction is durable.
    public func outcome(of item: Item) async -> Result<Outcome, any Error> {
        await withCheckedContinuation { continuation in
            submit(item) { continuation.resume(returning: $0) }
        }
    }

    /// Commits `item` with whatever else is waiting; `completion` once that transaction is durable.
    public func submit(_ item: Item, completion: @escaping Completion) {
        let start: Bool? = state.withLock { state in
            guard state.pending.count < maximumQueued else { return nil }
            state.pending.append((item, completion))
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
            if let acknowledgedEarly {
                // The bug this mode stands for: a write-behind buffer that answers at once and
                // commits what it gathered a little later.
                for (_, completion) in batch { completion(.success(acknowledgedEarly)) }
                Task {
                    try? await Task.sleep(for: .milliseconds(200))
                    commit(batch.map(\.0)) { _ in self.commitNext() }
                }
                return
            }
        #endif
        let started = ContinuousClock.now
        commit(batch.map(\.0)) { result in
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

/// The report store's committer.
public typealias ReportCommitter = GroupCommitter<InvalidIdentifierReport, StoreOutcome>

extension GroupCommitter where Item == InvalidIdentifierReport, Outcome == StoreOutcome {
    /// Commits reports into `store`.
    public convenience init(
        store: any ReportStore, maximumBatch: Int = 4096, maximumQueued: Int = 20_000,
        observer: (@Sendable (_ batch: Int, _ duration: Duration) -> Void)? = nil
    ) {
        self.init(maximumBatch: maximumBatch, maximumQueued: maximumQueued, observer: observer) { store.store($0, completion: $1) }
    }

    #if DEBUG
        /// ``GroupCommitter``'s broken mode for reports: answered `stored`, committed 200 ms later.
        public convenience init(
            store: any ReportStore, maximumQueued: Int = 20_000, acknowledgeBeforeCommit: Bool,
            observer: (@Sendable (_ batch: Int, _ duration: Duration) -> Void)? = nil
        ) {
            if acknowledgeBeforeCommit {
                self.init(maximumBatch: 4096, maximumQueued: maximumQueued, acknowledgedEarly: .stored, observer: observer) {
                    store.store($0, completion: $1)
                }
            } else {
                self.init(store: store, maximumQueued: maximumQueued, observer: observer)
            }
        }
    #endif
}

/// The commit queue is full: the store has stalled for longer than the queue holds items.
public struct CommitQueueFull: Error, CustomStringConvertible {
    public init() {}
    public var description: String { "too many reports are waiting for the store" }
}
