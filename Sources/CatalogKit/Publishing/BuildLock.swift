import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One build at a time per published tree: two builds racing would both take revision n+1.
///
/// An advisory `flock` on the `public/` directory itself (no lock file to be deployed with the
/// tree), released when the process ends however it ends, so a crashed build never leaves the
/// tree locked.
public final class BuildLock: Sendable {
    private let descriptor: Int32

    /// Waits for the lock on `publicDirectory`, creating the directory if needed.
    public init(publicDirectory: URL) throws {
        try FileManager.default.createDirectory(at: publicDirectory, withIntermediateDirectories: true)
        let path = publicDirectory.path
        descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw CatalogError.io(path: path, message: "cannot open lock: \(String(cString: strerror(errno)))")
        }
        var result: Int32
        repeat { result = flock(descriptor, LOCK_EX) } while result != 0 && errno == EINTR
        guard result == 0 else {
            close(descriptor)
            throw CatalogError.io(path: path, message: "cannot lock: \(String(cString: strerror(errno)))")
        }
    }

    /// Waits for the lock on a thread of its own: a wait on the threads that run tasks would hold
    /// up every other task meanwhile.
    public static func acquire(publicDirectory: URL) async throws -> BuildLock {
        try await onOwnThread { try BuildLock(publicDirectory: publicDirectory) }
    }

    deinit {
        close(descriptor)
    }
}

/// Runs blocking work (a lock's wait, files read and hashed) on a thread of its own: on the few
/// threads that run tasks, it would hold up every other task meanwhile.
func onOwnThread<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
    }
}
