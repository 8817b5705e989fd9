import Foundation

/// What tells one version of a file from the next without reading it: a key file replaced on disk
/// (another inode, size or modification time) is read again by the next call, so that a rotated
/// key is used without a restart.
public struct FileIdentity: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modified: Int64
    var modifiedNanoseconds: Int64

    /// The identity of the file at `path` now; nil when it cannot be read (`errno` says why).
    public init?(_ path: String) {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        device = UInt64(status.st_dev)
        inode = UInt64(status.st_ino)
        size = Int64(status.st_size)
        modified = Int64(status.st_mtim.tv_sec)
        modifiedNanoseconds = Int64(status.st_mtim.tv_nsec)
    }
}
