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
            let flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC
            var direct = buffer.count >= DirectWrite.minimumBytes
            var descriptor = open(url.path, flags | (direct ? cdirectio_open_flag() : 0), 0o644)
            if descriptor < 0 && direct && errno == EINVAL {
                direct = false
                descriptor = open(url.path, flags, 0o644)
            }
            guard descriptor >= 0 else {
                throw CatalogError.io(path: url.path, message: "cannot create: \(String(cString: strerror(errno)))")
            }
            defer { close(descriptor) }
            func failure(_ action: String) -> CatalogError {
                .io(path: url.path, message: "cannot \(action): \(String(cString: strerror(errno)))")
            }
            var written = 0
            if direct { written = try DirectWrite.write(buffer, to: descriptor, failure: failure) }
            while written < buffer.count {
                let count = Glibc.pwrite(descriptor, buffer.baseAddress! + written, buffer.count - written, off_t(written))
                if count < 0 {
                    if errno == EINTR { continue }
                    throw failure("write")
                }
                written += count
            }
            guard fsync(descriptor) == 0 else { throw failure("fsync") }
        }
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

/// Writing through a descriptor opened with O_DIRECT: whole, aligned blocks from an aligned
/// buffer, the last one padded and the file cut back to its real size.
private enum DirectWrite {
    /// Below this, the page cache's copy costs less than setting up a direct write.
    static let minimumBytes = 1 << 20
    /// Block and buffer alignment: 4096 satisfies both 512- and 4096-byte sector devices.
    static let alignment = 4096
    static let chunkBytes = 1 << 20

    /// Writes as much of `bytes` as the direct path takes and returns how many were written;
    /// when that is not all (a file system that turns direct writes down, a short write), it
    /// clears O_DIRECT and leaves the rest to the caller's ordinary writes.
    static func write(
        _ bytes: UnsafeRawBufferPointer, to descriptor: Int32, failure: (String) -> CatalogError
    ) throws -> Int {
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkBytes, alignment: alignment)
        defer { chunk.deallocate() }
        var written = 0
        while written < bytes.count {
            let count = min(chunkBytes, bytes.count - written)
            let padded = (count + alignment - 1) / alignment * alignment
            chunk.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[written..<written + count]))
            if padded > count { chunk[count..<padded].initializeMemory(as: UInt8.self, repeating: 0) }
            let result = Glibc.pwrite(descriptor, chunk.baseAddress!, padded, off_t(written))
            if result < 0 && errno == EINTR { continue }
            // EINVAL: this file system takes no direct writes, or not with this alignment.
            if result < 0 && errno == EINVAL { break }
            guard result >= 0 else { throw failure("write") }
            written += min(result, count)
            // A short write ends the direct path: what follows would no longer be aligned.
            if result < padded { break }
        }
        // The padding of the last block is cut off, and so is anything beyond what was written.
        guard ftruncate(descriptor, off_t(written)) == 0 else { throw failure("truncate") }
        if written < bytes.count {
            guard fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~cdirectio_open_flag()) == 0 else {
                throw failure("turn off direct writing")
            }
        }
        return written
    }
}
