import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes that either happen completely or not at all, and survive a power cut once done:
/// write aside, fsync the file, rename over the target, fsync the directory.
public enum AtomicFile {
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
    public static func writeDurably(_ bytes: some ContiguousBytes, to url: URL) throws {
        let descriptor = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw CatalogError.io(path: url.path, message: "cannot create: \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var written = 0
        try bytes.withUnsafeBytes { buffer in
            while written < buffer.count {
                let count = Glibc.write(descriptor, buffer.baseAddress! + written, buffer.count - written)
                if count < 0 {
                    if errno == EINTR { continue }
                    throw CatalogError.io(path: url.path, message: "cannot write: \(String(cString: strerror(errno)))")
                }
                written += count
            }
        }
        guard fsync(descriptor) == 0 else {
            throw CatalogError.io(path: url.path, message: "cannot fsync: \(String(cString: strerror(errno)))")
        }
    }

    /// Makes a rename or creation in `directory` durable.
    public static func syncDirectory(_ directory: URL) throws {
        let descriptor = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw CatalogError.io(path: directory.path, message: "cannot open directory: \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        _ = fsync(descriptor)
    }

    /// Makes `url` a hard link to `source`, replacing it atomically: readers see the old file or
    /// the new one, never a missing or partial one.
    public static func link(_ source: URL, to url: URL) throws {
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
        try syncDirectory(url.deletingLastPathComponent())
    }

    public static func renameDurably(_ source: URL, to destination: URL) throws {
        guard rename(source.path, destination.path) == 0 else {
            throw CatalogError.io(path: destination.path, message: "cannot rename: \(String(cString: strerror(errno)))")
        }
        try syncDirectory(destination.deletingLastPathComponent())
    }
}
