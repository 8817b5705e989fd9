import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Android)
    import Android
#endif

/// Files that are either wholly the old content or wholly the new, whenever the process dies.
enum DurableFile {
    /// Writes `data` to a temporary file beside `url`, flushes it to disk, then renames it over
    /// `url`: rename(2) within a directory is atomic, so a reader (or the next launch, after the app
    /// was killed) never sees half a file.
    static func write(_ data: Data, to url: URL) throws(CatalogClientError) {
        let directory = url.deletingLastPathComponent()
        let temporary = directory.appendingPathComponent("\(temporaryPrefix)\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: temporary.path, contents: nil) else {
            throw CatalogClientError(code: .storage, message: "cannot create a file in \(directory.path)")
        }
        do {
            let handle = try FileHandle(forWritingTo: temporary)
            defer { try? handle.close() }
            try handle.write(contentsOf: data)
            try handle.synchronize()
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw CatalogClientError(code: .storage, message: "cannot write \(url.path): \(error)")
        }
        guard rename(temporary.path, url.path) == 0 else {
            let reason = String(cString: strerror(errno))
            try? FileManager.default.removeItem(at: temporary)
            throw CatalogClientError(code: .storage, message: "cannot rename into \(url.path): \(reason)")
        }
        // The rename itself is durable only once the directory is: without this, a report the
        // caller was told is queued could vanish in a power cut.
        let descriptor = open(directory.path, O_RDONLY)
        guard descriptor >= 0 else {
            throw CatalogClientError(code: .storage, message: "cannot open \(directory.path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else {
            throw CatalogClientError(code: .storage, message: "cannot make \(url.path) durable: \(String(cString: strerror(errno)))")
        }
    }

    /// Files a killed process left half-written start with this, and are never read.
    static let temporaryPrefix = ".tmp-"

    /// The name of a file queued now in an outbox, `<milliseconds>-<id>.json`: milliseconds since
    /// 1970, each later than the last this process gave, so that files queued within one
    /// millisecond still sort in the order they were queued (by their random ids they did not).
    static func queuedName(id: String) -> String {
        String(format: "%015lld", queueClock.next()) + "-\(id).json"
    }

    private static let queueClock = QueueClock()

    /// The milliseconds of ``queuedName(id:)``: the time, or one more than the last given.
    private final class QueueClock: @unchecked Sendable {
        private let lock = NSLock()
        private var last: Int64 = 0

        func next() -> Int64 {
            lock.withLock {
                last = max(Int64(Date().timeIntervalSince1970 * 1000), last + 1)
                return last
            }
        }
    }

    static func makeDirectory(_ url: URL) throws(CatalogClientError) {
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        } catch {
            throw CatalogClientError(code: .storage, message: "cannot create \(url.path): \(error)")
        }
    }

    /// The queued `.json` files of an outbox's `directory`, oldest first (their names start with the
    /// time they were queued); half-written ones from a killed process are skipped.
    static func queued(in directory: URL) -> [URL] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".json") && !$0.hasPrefix(temporaryPrefix) }.sorted()
            .map { directory.appendingPathComponent($0) }
    }

    /// Removes the oldest queued files of `directory` beyond `limit`; the files it removed.
    static func trimQueue(in directory: URL, keeping limit: Int) -> [URL] {
        let files = queued(in: directory)
        guard files.count > limit else { return [] }
        let dropped = Array(files.prefix(files.count - limit))
        for file in dropped { try? FileManager.default.removeItem(at: file) }
        return dropped
    }
}
