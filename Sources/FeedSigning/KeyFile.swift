import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Why a key file was not written: which file, and what the system said.
public struct KeyFileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file that was to be written.
    public var path: String
    /// What went wrong.
    public var message: String

    /// An error about `path`.
    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    public var description: String { "\(path): \(message)" }
}

/// Writes key files as secrets must be written: with their mode from the first byte, durably, and
/// never over another key.
///
/// The bytes go to a new file beside the target, opened `O_CREAT | O_EXCL | O_NOFOLLOW` with the
/// mode and set to exactly that mode (`fchmod`, whatever the umask) before a byte is written, then
/// fsynced; only then does the file take its name: `link(2)` for a new key, which fails if anything
/// (a key, a symbolic link) is there already, or `rename(2)` to replace one on purpose. Writing the
/// bytes and setting the mode afterwards, as `FileManager.createFile(atPath:contents:attributes:)`
/// does, leaves a window in which a private key is readable under the umask's mode (0644 under
/// the usual 022).
public enum KeyFile {
    /// Creates `url` with `data` and `mode` (0600 for a private key); refuses when anything exists
    /// at `url`, so that a key is never overwritten.
    public static func create(_ data: Data, at url: URL, mode: mode_t = 0o600) throws(KeyFileError) {
        try write(data, to: url, mode: mode, replacing: false)
    }

    /// Replaces the key file at `url` with `data` and `mode`, atomically: readers see the old key
    /// or the new one, never a missing or partial file, and never one with a wider mode.
    public static func replace(_ data: Data, at url: URL, mode: mode_t = 0o600) throws(KeyFileError) {
        try write(data, to: url, mode: mode, replacing: true)
    }

    private static func write(_ data: Data, to url: URL, mode: mode_t, replacing: Bool) throws(KeyFileError) {
        let path = url.path
        func failure(_ action: String) -> KeyFileError {
            KeyFileError(path: path, message: "cannot \(action): \(String(cString: strerror(errno)))")
        }
        if !replacing && exists(path) {
            throw KeyFileError(path: path, message: "exists; keys are never overwritten")
        }
        let directory = url.deletingLastPathComponent().path
        let temporary = directory + "/.\(url.lastPathComponent).\(UInt64.random(in: 0...UInt64.max)).tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw failure("create a file in \(directory)") }
        var written = false
        defer { if !written { unlink(temporary) } }
        do {
            defer { close(descriptor) }
            // The umask can only narrow the mode open(2) gives; fchmod makes it exactly `mode`,
            // still before any byte is written.
            guard fchmod(descriptor, mode) == 0 else { throw failure("set the mode") }
            do {
                try FileHandle(fileDescriptor: descriptor, closeOnDealloc: false).write(contentsOf: data)
            } catch {
                throw KeyFileError(path: path, message: "cannot write: \(error.localizedDescription)")
            }
            guard fsync(descriptor) == 0 else { throw failure("fsync") }
        }
        if replacing {
            guard rename(temporary, path) == 0 else { throw failure("rename into place") }
        } else {
            // link(2) refuses an existing name, even one created since the check above.
            guard link(temporary, path) == 0 else {
                if errno == EEXIST { throw KeyFileError(path: path, message: "exists; keys are never overwritten") }
                throw failure("link into place")
            }
            unlink(temporary)
        }
        written = true
        let folder = open(directory, O_RDONLY | O_CLOEXEC)
        guard folder >= 0 else { throw failure("open the directory to make the file durable") }
        defer { close(folder) }
        guard fsync(folder) == 0 else { throw failure("make the directory durable (fsync)") }
    }

    /// Whether anything, a dangling symbolic link included, is at `path`.
    private static func exists(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0
    }
}
