import CDirectIO
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes that either happen completely or not at all, and survive a power cut once done:
/// write aside, fsync the file, rename over the target, fsync the directory.
public enum AtomicFile {
    /// Replaces `url` with `bytes` atomically and durably: written aside and fsynced, renamed over
    /// `url`, then the directory fsynced.
    public static func write(_ bytes: some ContiguousBytes, to url: URL) throws {
        let temporary = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp")
        try writeDurably(bytes, to: temporary)
        guard rename(temporary.path, url.path) == 0 else {
            let message = String(cString: strerror(errno))
            unlink(temporary.path)
            throw CatalogError.io(path: url.path, message: "cannot rename into place: \(message)")
        }
        try syncDirectory(url.deletingLastPathComponent())
    }

    /// Creates `url` (which must not exist), writes `bytes` and fsyncs it.
    ///
    /// Big files go to the disk directly (O_DIRECT), past the page cache: a big build writes
    /// about 100 MB of feeds that nothing reads back soon, and copying them into fresh page-cache
    /// pages was a third of its writing time. Small files, and file systems that refuse O_DIRECT,
    /// are written through the page cache as usual.
    public static func writeDurably(_ bytes: some ContiguousBytes, to url: URL) throws {
        try bytes.withUnsafeBytes { buffer in
            try writeDurably(to: url, expectedBytes: buffer.count) { append in append(buffer) }
        }
    }

    /// The same for bytes handed over piece by piece by `produce`, `expectedBytes` of them or
    /// about: they are gathered a mebibyte at a time, and never held whole. A failed write ends the
    /// writing, and is thrown once `produce` returns. `eachChunk`, if any, sees every mebibyte
    /// gathered (the last one shorter), on this thread while it is written on another: a big
    /// feed's gzip copy is made from them as the feed goes to the disk.
    static func writeDurably(
        to url: URL, expectedBytes: Int, _ produce: (_ append: @escaping (UnsafeRawBufferPointer) -> Void) -> Void,
        eachChunk: ((UnsafeRawBufferPointer) throws -> Void)? = nil
    ) throws {
        let flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC
        var direct = expectedBytes >= ChunkedWrite.minimumDirectBytes
        var descriptor = open(url.path, flags | (direct ? cdirectio_open_flag() : 0), 0o644)
        if descriptor < 0 && direct && errno == EINVAL {
            direct = false
            descriptor = open(url.path, flags, 0o644)
        }
        guard descriptor >= 0 else {
            throw CatalogError.io(path: url.path, message: "cannot create: \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        let write = ChunkedWrite(descriptor: descriptor, direct: direct, path: url.path, eachChunk: eachChunk)
        var failure: (any Error)?
        produce { piece in
            guard failure == nil else { return }
            do { try write.append(piece) } catch { failure = error }
        }
        if let failure { throw failure }
        try write.finish()
    }

    /// Makes a rename or creation in `directory` durable. A failed fsync is an error: the rename
    /// may not survive a crash, and the caller must not report the file as published.
    public static func syncDirectory(_ directory: URL) throws {
        let descriptor = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw CatalogError.io(path: directory.path, message: "cannot open directory: \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else {
            throw CatalogError.io(
                path: directory.path, message: "cannot make the directory durable (fsync): \(String(cString: strerror(errno)))")
        }
    }

    /// Makes `url` a hard link to `source`, replacing it atomically: readers see the old file or
    /// the new one, never a missing or partial one.
    public static func link(_ source: URL, to url: URL) throws {
        try linkLeavingDirectoryUnsynced(source, to: url)
        try syncDirectory(url.deletingLastPathComponent())
    }

    /// ``link(_:to:)`` without its fsync of the directory: for several links into one directory,
    /// which the caller then syncs once (``syncDirectory(_:)``) before it counts on any of them.
    static func linkLeavingDirectoryUnsynced(_ source: URL, to url: URL) throws {
        let temporary = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp")
        guard Glibc.link(source.path, temporary.path) == 0 else {
            throw CatalogError.io(path: url.path, message: "cannot link: \(String(cString: strerror(errno)))")
        }
        guard rename(temporary.path, url.path) == 0 else {
            let message = String(cString: strerror(errno))
            unlink(temporary.path)
            throw CatalogError.io(path: url.path, message: "cannot rename into place: \(message)")
        }
    }

    /// Renames `source` to `destination`, then fsyncs the destination's directory so that the rename
    /// survives a crash.
    public static func renameDurably(_ source: URL, to destination: URL) throws {
        guard rename(source.path, destination.path) == 0 else {
            throw CatalogError.io(path: destination.path, message: "cannot rename: \(String(cString: strerror(errno)))")
        }
        try syncDirectory(destination.deletingLastPathComponent())
    }
}

/// A file written a chunk at a time from one aligned buffer: with O_DIRECT, whole aligned blocks,
/// the last one padded and the file cut back to its real size; without, ordinary writes. A file
/// system that turns direct writes down, or a short direct write, ends the direct path and the
/// rest is written the ordinary way. A file through the page cache that nothing reads on the way
/// is written as it comes, without a buffer.
///
/// `@unchecked Sendable`: while a chunk is written on another thread, this one only reads the
/// chunk, and waits for the write before anything changes.
private final class ChunkedWrite: @unchecked Sendable {
    /// Below this, the page cache's copy costs less than setting up a direct write.
    static let minimumDirectBytes = 1 << 20
    /// Block and buffer alignment: 4096 satisfies both 512- and 4096-byte sector devices.
    static let alignment = 4096
    /// The size of the fastest gzip copy's pieces: a feed compressed as it is written, a chunk at
    /// a time, gets the same copy as when it is compressed whole.
    static let chunkBytes = Gzip.fastestPieceBytes

    private let descriptor: Int32
    private var direct: Bool
    private let path: String
    /// What sees each chunk; called on the thread that appends.
    private let eachChunk: ((UnsafeRawBufferPointer) throws -> Void)?
    /// The chunk being gathered; nil for a file written as it comes.
    private let chunk: UnsafeMutableRawBufferPointer?
    /// Bytes in `chunk` not yet written.
    private var gathered = 0
    /// Bytes of the file written.
    private var written = 0

    init(descriptor: Int32, direct: Bool, path: String, eachChunk: ((UnsafeRawBufferPointer) throws -> Void)?) {
        self.descriptor = descriptor
        self.direct = direct
        self.path = path
        self.eachChunk = eachChunk
        chunk =
            direct || eachChunk != nil ? UnsafeMutableRawBufferPointer.allocate(byteCount: Self.chunkBytes, alignment: Self.alignment) : nil
    }

    deinit { chunk?.deallocate() }

    private func failure(_ action: String) -> CatalogError {
        .io(path: path, message: "cannot \(action): \(String(cString: strerror(errno)))")
    }

    /// Gathers `piece`, writing each chunk it fills; written at once when nothing is gathered.
    func append(_ piece: UnsafeRawBufferPointer) throws {
        guard let chunk else { return try writeAll(piece) }
        var piece = piece
        while !piece.isEmpty {
            let count = min(piece.count, chunk.count - gathered)
            UnsafeMutableRawBufferPointer(rebasing: chunk[gathered..<gathered + count])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: piece[..<count]))
            gathered += count
            piece = UnsafeRawBufferPointer(rebasing: piece[count...])
            if gathered == chunk.count { try flush() }
        }
    }

    /// Writes what is gathered, and hands it to `eachChunk` meanwhile.
    private func flush() throws {
        guard let chunk, gathered > 0 else { return }
        if let eachChunk {
            let bytes = UnsafeRawBufferPointer(rebasing: chunk[..<gathered])
            let (handed, wrote) = concurrently({ Result { try eachChunk(bytes) } }, { [self] in Result { try writeGathered() } })
            try handed.get()
            try wrote.get()
        } else {
            try writeGathered()
        }
        gathered = 0
    }

    /// Writes the gathered bytes of the chunk after what is written.
    private func writeGathered() throws {
        guard let chunk else { return }
        let count = gathered
        var done = 0
        if direct {
            let padded = (count + Self.alignment - 1) / Self.alignment * Self.alignment
            if padded > count { chunk[count..<padded].initializeMemory(as: UInt8.self, repeating: 0) }
            var result: Int
            repeat { result = Glibc.pwrite(descriptor, chunk.baseAddress!, padded, off_t(written)) } while result < 0 && errno == EINTR
            // EINVAL: this file system takes no direct writes, or not with this alignment.
            guard result >= 0 || errno == EINVAL else { throw failure("write") }
            done = max(0, min(result, count))
            written += done
            // A short write ends the direct path: what follows would no longer be aligned.
            if result < padded { try endDirect() }
        }
        try writeAll(UnsafeRawBufferPointer(rebasing: chunk[done..<count]))
    }

    /// Writes `bytes` after what is written, through the page cache.
    private func writeAll(_ bytes: UnsafeRawBufferPointer) throws {
        var done = 0
        while done < bytes.count {
            let result = Glibc.pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(written + done))
            if result < 0 {
                if errno == EINTR { continue }
                throw failure("write")
            }
            done += result
        }
        written += bytes.count
    }

    /// Clears O_DIRECT, the file cut back to what was written in full.
    private func endDirect() throws {
        guard ftruncate(descriptor, off_t(written)) == 0 else { throw failure("truncate") }
        guard fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~cdirectio_open_flag()) == 0 else {
            throw failure("turn off direct writing")
        }
        direct = false
    }

    /// Writes what is left, cuts off the last block's padding and fsyncs the file.
    func finish() throws {
        try flush()
        if direct { guard ftruncate(descriptor, off_t(written)) == 0 else { throw failure("truncate") } }
        guard fsync(descriptor) == 0 else { throw failure("fsync") }
    }
}
