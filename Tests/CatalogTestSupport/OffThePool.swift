import Dispatch

/// Runs blocking work (a process and the wait for it, a blocking socket) on a thread of its own,
/// never on the few threads that run every test's tasks: blocked, they would stall the servers
/// and clients of other tests, and of the test itself, into timeouts.
public func offThePool<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
    }
}
