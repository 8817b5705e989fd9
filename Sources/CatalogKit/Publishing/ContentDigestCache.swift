import Content
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The digests of content files already hashed, so that a build (and every periodic publication
/// of `catalog serve`) does not read gigabytes of unchanged content again to learn they did not change.
///
/// An entry is taken only when the file is still the same file with the same bytes as far as the
/// kernel can tell without reading it: same device and inode, size, modification time and
/// status-change time (to the nanosecond). The status-change time cannot be set back by a program,
/// so a file rewritten with the same size and a restored modification time still misses (as git's
/// index does). A file changed within two seconds of being hashed is not recorded: timestamps tick
/// coarser than writes, so such a file could change again without its times moving. Whatever the
/// cache says, a blob is only ever stored after its bytes are hashed against the planned digest.
struct ContentDigestCache: Sendable, Hashable {
    /// What identifies a file's bytes without reading them.
    struct Identity: Hashable, Sendable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modified: Int64
        var changed: Int64
    }

    struct Entry: Hashable, Sendable {
        var identity: Identity
        var digest: ContentDigest
    }

    /// Entries by canonical path.
    private(set) var entries: [String: Entry] = [:]
    /// Whether entries were added or replaced since it was read.
    private(set) var isChanged = false

    /// The cache file of `app`: `cache/<app>.tsv` in the tree's content store, beside the blobs
    /// (which the store only ever looks for under `sha256/`).
    static func url(in tree: PublicTree, app: String) -> URL {
        tree.content.appendingPathComponent("cache", isDirectory: true).appendingPathComponent("\(app).tsv")
    }

    /// The file's identity now, or nil when it cannot be read.
    static func identity(of url: URL) -> Identity? {
        var status = stat()
        guard stat(url.path, &status) == 0 else { return nil }
        #if canImport(Darwin)
            let (modified, changed) = (status.st_mtimespec, status.st_ctimespec)
        #else
            let (modified, changed) = (status.st_mtim, status.st_ctim)
        #endif
        return Identity(
            device: UInt64(status.st_dev), inode: UInt64(status.st_ino), size: Int64(status.st_size),
            modified: Int64(modified.tv_sec) * 1_000_000_000 + Int64(modified.tv_nsec),
            changed: Int64(changed.tv_sec) * 1_000_000_000 + Int64(changed.tv_nsec))
    }

    /// The digest recorded for `path`, if its identity is still `identity`.
    func digest(of path: String, identity: Identity) -> ContentDigest? {
        guard let entry = entries[path], entry.identity == identity else { return nil }
        return entry.digest
    }

    /// Records that the file at `path`, whose identity was `identity` before it was hashed, has
    /// `digest`; a file changed less than two seconds before `now` is left out.
    mutating func record(_ digest: ContentDigest, of path: String, identity: Identity, now: Date) {
        let recent = Int64((now.timeIntervalSince1970 - 2) * 1_000_000_000)
        // A path that would break its line is left out, looked for byte by byte: as Characters,
        // "\r\n" is not "\n", and a path ending in "\r" joined the next line when read back.
        guard identity.changed < recent, identity.modified < recent,
            !path.utf8.contains(where: { $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: "\t") })
        else { return }
        let entry = Entry(identity: identity, digest: digest)
        guard entries[path] != entry else { return }
        entries[path] = entry
        isChanged = true
    }

    /// Keeps only the entries of `paths`: files no item names any more are forgotten.
    mutating func keep(only paths: Set<String>) {
        let before = entries.count
        entries = entries.filter { paths.contains($0.key) }
        if entries.count != before { isChanged = true }
    }

    /// The cache in `url`; empty when there is none or it does not read (it is only a cache).
    static func read(_ url: URL) -> ContentDigestCache {
        var cache = ContentDigestCache()
        guard let data = FileManager.default.contents(atPath: url.path) else { return cache }
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: "\t", maxSplits: 6, omittingEmptySubsequences: false)
            guard fields.count == 7, let digest = ContentDigest(hex: fields[0]), let device = UInt64(fields[1]),
                let inode = UInt64(fields[2]), let size = Int64(fields[3]), let modified = Int64(fields[4]),
                let changed = Int64(fields[5])
            else { continue }
            cache.entries[String(fields[6])] = Entry(
                identity: Identity(device: device, inode: inode, size: size, modified: modified, changed: changed), digest: digest)
        }
        return cache
    }

    /// Writes the cache to `url`, atomically, when it changed.
    func write(to url: URL) throws {
        guard isChanged else { return }
        var text = ""
        for (path, entry) in entries.sorted(by: { $0.key < $1.key }) {
            let identity = entry.identity
            text +=
                "\(entry.digest.hex)\t\(identity.device)\t\(identity.inode)\t\(identity.size)\t\(identity.modified)\t\(identity.changed)\t\(path)\n"
        }
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try AtomicFile.write(Array(text.utf8), to: url)
    }
}
