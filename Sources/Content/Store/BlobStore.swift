internal import CDirectIO
import Crypto
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Content files stored by their SHA-256: `root/sha256/ab/abcdef…` (the first two hex digits name a
/// folder, so that no folder holds more than a 256th of the blobs).
///
/// A blob is written once and never changed: aside in `root/tmp/`, fsynced, renamed into place,
/// its folder fsynced, so that a crash leaves either no blob or the whole one. A file already
/// stored is not copied again. The digest is computed from the bytes as they are written, and a
/// blob whose bytes do not hash to the digest expected is never put in place. Blobs no manifest
/// names can be listed and pruned (docs/content.md, "The blob store").
public struct BlobStore: Sendable {
    /// The store's folder.
    public let root: URL

    /// How much is read and written at a time.
    static let chunkBytes = 1 << 20

    /// A store in `root` (created when first written to).
    public init(root: URL) { self.root = root }

    /// What ``put(contentsOf:expected:)`` did.
    public struct Receipt: Sendable, Hashable {
        /// The blob's digest.
        public var digest: ContentDigest
        /// Its size in bytes.
        public var size: Int64
        /// Whether this call wrote it (false: it was already stored, and nothing was written).
        public var written: Bool

        /// A receipt for the blob of `digest`, `size` bytes, `written` or found.
        public init(digest: ContentDigest, size: Int64, written: Bool) {
            self.digest = digest
            self.size = size
            self.written = written
        }
    }

    /// Where the blob of `digest` is (whether or not it is stored).
    public func url(of digest: ContentDigest) -> URL {
        let hex = digest.hex
        // Said to be a file: `appendingPathComponent` asks the file system whether each
        // component is a folder, three stat calls a blob, which a build of many blobs made by
        // the ten thousand.
        return root.appending(path: "sha256/\(hex.prefix(2))/\(hex)", directoryHint: .notDirectory)
    }

    /// Whether the blob of `digest` is stored.
    public func contains(_ digest: ContentDigest) -> Bool {
        var status = stat()
        return stat(url(of: digest).path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG
    }

    /// Stores the file at `source`, unless a blob of the same bytes is already stored.
    ///
    /// The file is read once to learn its digest; when that blob is stored (same size), nothing is
    /// written. Otherwise it is read again while being copied, and the copy's own digest must be
    /// the first one (a file changed while it is published is refused) and `expected`, when given.
    public func put(contentsOf source: URL, expected: ContentDigest? = nil) throws(BlobStoreError) -> Receipt {
        let (digest, size) = try Self.hash(source)
        if let expected, expected != digest {
            throw BlobStoreError("\(source.path) has SHA-256 \(digest.hex), not the \(expected.hex) expected")
        }
        if let stored = storedSize(digest), stored == size { return Receipt(digest: digest, size: size, written: false) }
        try write(digest: digest) { temporary throws(BlobStoreError) in
            let copied = try Self.copy(source, to: temporary)
            guard copied.digest == digest, copied.size == size else {
                throw BlobStoreError("\(source.path) changed while it was stored (SHA-256 \(digest.hex), then \(copied.digest.hex))")
            }
        }
        return Receipt(digest: digest, size: size, written: true)
    }

    /// Stores the files of `sources` (each with the digest a plan read from it), as
    /// ``put(contentsOf:expected:)`` stores each, with the same guarantee (a blob at its name is
    /// whole and durable when this returns), for one wait on the disk instead of two a file:
    /// every copy is written, on all cores, then all made durable at once (syncfs(2), or an fsync
    /// each where there is none) before any is renamed into place, and each folder is fsynced once
    /// after the renames. A first build of a thousand content files waited on two fsyncs a file, one
    /// after another (docs/benchmarks.md, "Where the build's time went").
    ///
    /// The receipts are in the order of `sources`. When a copy fails (a file that is not the digest
    /// expected), nothing is put in place and no copy is left aside; when a rename fails, the blobs
    /// renamed before it stay (each whole, as a crash would leave them).
    public func putAll(contentsOf sources: [(url: URL, expected: ContentDigest)]) throws(BlobStoreError) -> [Receipt] {
        // A blob stored at the source's size is not read again (a truncated one is replaced, as by
        // ``put(contentsOf:expected:)``); a digest listed twice is copied once.
        var seen: Set<ContentDigest> = []
        let missing = sources.indices.filter { index in
            let stored = storedSize(sources[index].expected)
            return (stored == nil || stored != Self.size(ofFileAt: sources[index].url)) && seen.insert(sources[index].expected).inserted
        }
        let receipts = { (written: Set<Int>) in
            sources.indices.map { index in
                let digest = sources[index].expected
                return Receipt(digest: digest, size: self.storedSize(digest) ?? 0, written: written.contains(index))
            }
        }
        guard !missing.isEmpty else { return receipts([]) }
        let temporaries = root.appendingPathComponent("tmp")
        let folders = Set(missing.map { url(of: sources[$0].expected).deletingLastPathComponent() }).sorted { $0.path < $1.path }
        // Folders made here are made durable with the copies, below.
        let created = try Self.makeDirectories([root, temporaries, root.appendingPathComponent("sha256")] + folders, durably: false)

        // Copied beside each other, then made durable together: one syncfs(2) for every copy where
        // the system has it (a journal commit, not one a file), an fsync each elsewhere.
        let copies = BlobCopies(count: missing.count)
        defer { copies.deallocate() }
        DispatchQueue.concurrentPerform(iterations: missing.count) { slot in
            let source = sources[missing[slot]]
            let temporary = temporaries.appending(
                path: "\(source.expected.hex).\(getpid()).\(UInt64.random(in: 0...UInt64.max))", directoryHint: .notDirectory)
            let result = Result { () throws(BlobStoreError) in
                let copied = try Self.copy(source.url, to: temporary, durably: false)
                guard copied.digest == source.expected else {
                    unlink(temporary.path)
                    throw BlobStoreError("\(source.url.path) has SHA-256 \(copied.digest.hex), not the \(source.expected.hex) expected")
                }
                return temporary
            }
            (copies.slots.baseAddress! + slot).initialize(to: result)
        }
        // A copy that failed: nothing of this call is put in place.
        let made = copies.slots.compactMap { try? $0.get() }
        if made.count < missing.count {
            for temporary in made { unlink(temporary.path) }
            for case .failure(let error) in copies.slots { throw error }
        }
        do {
            try Self.makeDurable(made, madeFolders: created, in: temporaries)
        } catch {
            for temporary in made { unlink(temporary.path) }
            throw error
        }
        for (slot, temporary) in made.enumerated() {
            let destination = url(of: sources[missing[slot]].expected)
            guard rename(temporary.path, destination.path) == 0 else {
                let message = String(cString: strerror(errno))
                for left in made[slot...] { unlink(left.path) }
                throw BlobStoreError("cannot rename a blob into \(destination.path): \(message)")
            }
        }
        if !(try Self.syncFileSystem(holding: root)) {
            for folder in folders { try Self.syncDirectory(folder) }
        }
        return receipts(Set(missing))
    }

    /// Stores `data`, unless it is already stored.
    public func put(_ data: Data, expected: ContentDigest? = nil) throws(BlobStoreError) -> Receipt {
        let digest = ContentDigest.of(data)
        if let expected, expected != digest {
            throw BlobStoreError("the bytes have SHA-256 \(digest.hex), not the \(expected.hex) expected")
        }
        let size = Int64(data.count)
        if let stored = storedSize(digest), stored == size { return Receipt(digest: digest, size: size, written: false) }
        try write(digest: digest) { temporary throws(BlobStoreError) in
            try Self.withCreatedFile(temporary) { descriptor throws(BlobStoreError) in
                // `withUnsafeBytes` rethrows untyped errors: the typed one travels in a Result.
                let written = data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
                    Result { () throws(BlobStoreError) in try Self.writeAll(buffer, to: descriptor, path: temporary) }
                }
                try written.get()
            }
        }
        return Receipt(digest: digest, size: size, written: true)
    }

    /// Every blob stored, by digest. Files that are not blobs (a stray name, a temporary file) are
    /// not listed.
    public func list() throws(BlobStoreError) -> [ContentDigest] {
        let base = root.appendingPathComponent("sha256")
        let manager = FileManager.default
        guard manager.fileExists(atPath: base.path) else { return [] }
        var digests: [ContentDigest] = []
        do {
            for folder in try manager.contentsOfDirectory(atPath: base.path) where folder.utf8.count == 2 {
                for name in try manager.contentsOfDirectory(atPath: base.appendingPathComponent(folder).path) {
                    guard let digest = ContentDigest(hex: name), name.hasPrefix(folder) else { continue }
                    digests.append(digest)
                }
            }
        } catch {
            throw BlobStoreError("cannot list \(base.path): \(error)")
        }
        return digests.sorted()
    }

    /// Removes every blob not in `keep` and returns the digests removed. Run it with the digests of
    /// every manifest still kept (``ContentManifest/digests``): a blob an older revision names stays
    /// as long as that revision is kept.
    @discardableResult
    public func prune(keeping keep: Set<ContentDigest>) throws(BlobStoreError) -> [ContentDigest] {
        var removed: [ContentDigest] = []
        var folders: Set<URL> = []
        for digest in try list() where !keep.contains(digest) {
            let url = url(of: digest)
            guard unlink(url.path) == 0 || errno == ENOENT else {
                throw BlobStoreError("cannot remove \(url.path): \(String(cString: strerror(errno)))")
            }
            folders.insert(url.deletingLastPathComponent())
            removed.append(digest)
        }
        for folder in folders.sorted(by: { $0.path < $1.path }) { try Self.syncDirectory(folder) }
        return removed
    }

    /// The same, keeping what any of `manifests` names.
    @discardableResult
    public func prune(keepingNamesIn manifests: [ContentManifest]) throws(BlobStoreError) -> [ContentDigest] {
        try prune(keeping: manifests.reduce(into: Set()) { $0.formUnion($1.digests) })
    }

    /// Removes the temporary files a crash left in `root/tmp/` that were last written before
    /// `cutoff`, and returns how many. Give a cutoff well before any write still in progress (an
    /// hour ago, say): a temporary file being written now is never older than its last write.
    @discardableResult
    public func removeTemporaryFiles(writtenBefore cutoff: Date) throws(BlobStoreError) -> Int {
        let folder = root.appendingPathComponent("tmp")
        let manager = FileManager.default
        guard manager.fileExists(atPath: folder.path) else { return 0 }
        var removed = 0
        do {
            for name in try manager.contentsOfDirectory(atPath: folder.path) {
                let path = folder.appendingPathComponent(name).path
                let written = try manager.attributesOfItem(atPath: path)[.modificationDate] as? Date
                guard let written, written < cutoff else { continue }
                try manager.removeItem(atPath: path)
                removed += 1
            }
        } catch {
            throw BlobStoreError("cannot clean \(folder.path): \(error)")
        }
        return removed
    }

    /// Reads the blob of `digest` again and checks that its bytes still hash to its name.
    public func verify(_ digest: ContentDigest) throws(BlobStoreError) -> Bool {
        try Self.hash(url(of: digest)).digest == digest
    }

    // MARK: - Writing

    /// The size of the stored blob of `digest`, if it is stored.
    private func storedSize(_ digest: ContentDigest) -> Int64? {
        var status = stat()
        guard stat(url(of: digest).path, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int64(status.st_size)
    }

    /// The size of the file at `url`; nil when there is none.
    private static func size(ofFileAt url: URL) -> Int64? {
        var status = stat()
        return stat(url.path, &status) == 0 ? Int64(status.st_size) : nil
    }

    /// Makes a temporary file with `fill`, fsyncs it and renames it to the blob of `digest`, then
    /// fsyncs the blob's folder (and the folders made on the way).
    private func write(digest: ContentDigest, _ fill: (URL) throws(BlobStoreError) -> Void) throws(BlobStoreError) {
        let temporaries = root.appendingPathComponent("tmp")
        let destination = url(of: digest)
        try Self.makeDirectories([root, temporaries, root.appendingPathComponent("sha256"), destination.deletingLastPathComponent()])
        let temporary = temporaries.appendingPathComponent("\(digest.hex).\(getpid()).\(UInt64.random(in: 0...UInt64.max))")
        do {
            try fill(temporary)
        } catch {
            unlink(temporary.path)
            throw error
        }
        guard rename(temporary.path, destination.path) == 0 else {
            let message = String(cString: strerror(errno))
            unlink(temporary.path)
            throw BlobStoreError("cannot rename a blob into \(destination.path): \(message)")
        }
        try Self.syncDirectory(destination.deletingLastPathComponent())
    }

    /// Creates each missing folder in order, fsyncing its parent so that the folder survives a
    /// crash, unless the caller makes them durable later (`durably` false); returns those it made.
    @discardableResult
    private static func makeDirectories(_ folders: [URL], durably: Bool = true) throws(BlobStoreError) -> [URL] {
        var made: [URL] = []
        for folder in folders {
            if mkdir(folder.path, 0o755) == 0 {
                if durably { try syncDirectory(folder.deletingLastPathComponent()) }
                made.append(folder)
            } else if errno != EEXIST {
                throw BlobStoreError("cannot create \(folder.path): \(String(cString: strerror(errno)))")
            }
        }
        return made
    }

    private static func syncDirectory(_ folder: URL) throws(BlobStoreError) {
        let descriptor = open(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw BlobStoreError("cannot open \(folder.path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        guard systemFsync(descriptor) == 0 else {
            throw BlobStoreError("cannot make \(folder.path) durable (fsync): \(String(cString: strerror(errno)))")
        }
    }

    /// Creates `url` (which must not exist), lets `body` write to it, then fsyncs it unless the
    /// caller makes it durable later (`durably` false).
    private static func withCreatedFile(
        _ url: URL, durably: Bool = true, _ body: (Int32) throws(BlobStoreError) -> Void
    ) throws(BlobStoreError) {
        let descriptor = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw BlobStoreError("cannot create \(url.path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        try body(descriptor)
        if durably { try fsync(descriptor, url) }
    }

    private static func fsync(_ descriptor: Int32, _ url: URL) throws(BlobStoreError) {
        guard systemFsync(descriptor) == 0 else { throw BlobStoreError("cannot fsync \(url.path): \(String(cString: strerror(errno)))") }
    }

    /// Makes the files `written` and the folders `madeFolders` durable: one syncfs(2) of the file
    /// system that holds `folder`, or, where there is none, an fsync of each file and of each
    /// made folder's parent.
    private static func makeDurable(_ written: [URL], madeFolders: [URL], in folder: URL) throws(BlobStoreError) {
        guard !(try syncFileSystem(holding: folder)) else { return }
        for made in madeFolders { try syncDirectory(made.deletingLastPathComponent()) }
        for url in written {
            let file = open(url.path, O_RDONLY | O_CLOEXEC)
            guard file >= 0 else { throw BlobStoreError("cannot open \(url.path): \(String(cString: strerror(errno)))") }
            defer { close(file) }
            try fsync(file, url)
        }
    }

    /// syncfs(2) of the file system that holds `folder`: every file and folder written there is
    /// durable when it returns true. False where the system has no syncfs (the caller fsyncs).
    private static func syncFileSystem(holding folder: URL) throws(BlobStoreError) -> Bool {
        let descriptor = open(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw BlobStoreError("cannot open \(folder.path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        if cdirectio_syncfs(descriptor) == 0 { return true }
        guard errno == ENOSYS else {
            throw BlobStoreError("cannot make \(folder.path) durable (syncfs): \(String(cString: strerror(errno)))")
        }
        return false
    }

    private static func writeAll(_ buffer: UnsafeRawBufferPointer, to descriptor: Int32, path: URL) throws(BlobStoreError) {
        guard let base = buffer.baseAddress else { return }
        var written = 0
        while written < buffer.count {
            let count = systemWrite(descriptor, base + written, buffer.count - written)
            if count < 0 {
                if errno == EINTR { continue }
                throw BlobStoreError("cannot write \(path.path): \(String(cString: strerror(errno)))")
            }
            written += count
        }
    }

    /// Reads `url` in chunks, giving each to `body`.
    private static func read(_ url: URL, _ body: (UnsafeRawBufferPointer) throws(BlobStoreError) -> Void) throws(BlobStoreError) {
        let descriptor = open(url.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw BlobStoreError("cannot open \(url.path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        // No bigger than the file: a mebibyte for each of a thousand small files was a mmap and a
        // munmap each, and every munmap stopped the other core to flush its TLB
        // (docs/benchmarks.md, "The build with content").
        var status = stat()
        let fileSize = fstat(descriptor, &status) == 0 ? Int(status.st_size) : chunkBytes
        let bufferBytes = min(chunkBytes, max(fileSize, 1 << 12))
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferBytes, alignment: 16)
        defer { chunk.deallocate() }
        while true {
            let count = systemRead(descriptor, chunk.baseAddress, bufferBytes)
            if count < 0 {
                if errno == EINTR { continue }
                throw BlobStoreError("cannot read \(url.path): \(String(cString: strerror(errno)))")
            }
            if count == 0 { return }
            try body(UnsafeRawBufferPointer(rebasing: chunk[..<count]))
        }
    }

    /// The SHA-256 and size of the file at `url`, read in chunks: memory stays flat at any size.
    /// The digest and size of the file at `url`, read once, storing nothing: what a build plans
    /// with before it puts the file.
    public static func digest(ofFileAt url: URL) throws(BlobStoreError) -> (digest: ContentDigest, size: Int64) {
        try hash(url)
    }

    static func hash(_ url: URL) throws(BlobStoreError) -> (digest: ContentDigest, size: Int64) {
        var hasher = SHA256()
        var size: Int64 = 0
        try read(url) { bytes in
            hasher.update(bufferPointer: bytes)
            size += Int64(bytes.count)
        }
        return (ContentDigest(hasher.finalize()), size)
    }

    /// Copies `source` to a new file at `destination`, fsynced, hashing the bytes as they are written.
    private static func copy(
        _ source: URL, to destination: URL, durably: Bool = true
    ) throws(BlobStoreError) -> (digest: ContentDigest, size: Int64) {
        var hasher = SHA256()
        var size: Int64 = 0
        try withCreatedFile(destination, durably: durably) { descriptor throws(BlobStoreError) in
            try read(source) { bytes throws(BlobStoreError) in
                hasher.update(bufferPointer: bytes)
                size += Int64(bytes.count)
                try writeAll(bytes, to: descriptor, path: destination)
            }
        }
        return (ContentDigest(hasher.finalize()), size)
    }
}

/// The copies of ``BlobStore/putAll(contentsOf:)``, one slot each. `@unchecked Sendable`: each
/// concurrentPerform iteration initializes only its own slot, read after concurrentPerform returns.
private final class BlobCopies: @unchecked Sendable {
    let slots: UnsafeMutableBufferPointer<Result<URL, BlobStoreError>>
    init(count: Int) { slots = .allocate(capacity: count) }
    /// Frees the slots, every one initialized by then.
    func deallocate() {
        _ = slots.deinitialize()
        slots.deallocate()
    }
}

/// `fsync(2)`, named apart from the store's own `fsync`.
private func systemFsync(_ descriptor: Int32) -> Int32 {
    #if canImport(Glibc)
        Glibc.fsync(descriptor)
    #elseif canImport(Musl)
        Musl.fsync(descriptor)
    #else
        Darwin.fsync(descriptor)
    #endif
}

/// `write(2)`, named apart from the store's own `write`.
private func systemWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
        Glibc.write(descriptor, bytes, count)
    #elseif canImport(Musl)
        Musl.write(descriptor, bytes, count)
    #else
        Darwin.write(descriptor, bytes, count)
    #endif
}

/// `read(2)`, named apart from the store's own `read`.
private func systemRead(_ descriptor: Int32, _ bytes: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    #if canImport(Glibc)
        Glibc.read(descriptor, bytes, count)
    #elseif canImport(Musl)
        Musl.read(descriptor, bytes, count)
    #else
        Darwin.read(descriptor, bytes, count)
    #endif
}

/// A blob store operation that failed: a clear message naming the file.
public struct BlobStoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What failed, and on which file.
    public var message: String
    /// An error saying `message`.
    public init(_ message: String) { self.message = message }
    /// The message.
    public var description: String { message }
}

extension BlobStore {
    /// A blob written from chunks as they arrive (from a shared store, for a replica): aside in
    /// `root/tmp/`, hashed as it is written, and put in place by ``finish()`` only when its bytes
    /// are exactly the size and digest expected. Memory stays at one chunk whatever the size.
    ///
    /// Used by one task: ``append(_:)`` each chunk in order, then ``finish()``, or ``discard()``
    /// on any failure (nothing of the blob is left then). A process killed meanwhile leaves only a
    /// temporary file, never a blob (``removeTemporaryFiles(writtenBefore:)`` clears it).
    ///
    /// `@unchecked`: every stored property is a plain value; swift-crypto's `SHA256` (a value
    /// holding its state's bytes) is not marked `Sendable`. A writer may move to another thread
    /// for ``finish()`` (whose fsync can take a while), never be used from two at once.
    public struct Writer: @unchecked Sendable {
        /// The blob's digest, as expected.
        public let digest: ContentDigest
        /// Its size in bytes, as expected.
        public let size: Int64
        /// Bytes written so far.
        public private(set) var written: Int64 = 0
        private let temporary: URL
        private let destination: URL
        private let descriptor: Int32
        private var hasher = SHA256()

        fileprivate init(digest: ContentDigest, size: Int64, temporary: URL, destination: URL) throws(BlobStoreError) {
            let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else {
                throw BlobStoreError("cannot create \(temporary.path): \(String(cString: strerror(errno)))")
            }
            self.digest = digest
            self.size = size
            self.temporary = temporary
            self.destination = destination
            self.descriptor = descriptor
        }

        /// Writes the next chunk. Refuses one that would make the blob longer than expected, so a
        /// store that sends more than it announced cannot fill the disk.
        public mutating func append(_ bytes: UnsafeRawBufferPointer) throws(BlobStoreError) {
            guard Int64(bytes.count) <= size - written else {
                throw BlobStoreError("blob \(digest.hex) is longer than the \(size) bytes expected")
            }
            hasher.update(bufferPointer: bytes)
            try BlobStore.writeAll(bytes, to: descriptor, path: temporary)
            written += Int64(bytes.count)
        }

        /// The same, from an array.
        public mutating func append(_ bytes: [UInt8]) throws(BlobStoreError) {
            let result = bytes.withUnsafeBytes { buffer in Result { () throws(BlobStoreError) in try append(buffer) } }
            try result.get()
        }

        /// Checks the size and digest of what was written, makes it durable and renames it into
        /// place; on any failure the temporary file is removed and nothing is stored. Call once.
        @discardableResult
        public func finish() throws(BlobStoreError) -> Receipt {
            var closed = false
            do throws(BlobStoreError) {
                guard written == size else {
                    throw BlobStoreError("blob \(digest.hex) ended after \(written) bytes, not the \(size) expected")
                }
                let actual = ContentDigest(hasher.finalize())
                guard actual == digest else {
                    throw BlobStoreError("blob \(digest.hex) arrived with bytes whose SHA-256 is \(actual.hex); not stored")
                }
                guard systemFsync(descriptor) == 0 else {
                    throw BlobStoreError("cannot fsync \(temporary.path): \(String(cString: strerror(errno)))")
                }
                close(descriptor)
                closed = true
                guard rename(temporary.path, destination.path) == 0 else {
                    throw BlobStoreError("cannot rename a blob into \(destination.path): \(String(cString: strerror(errno)))")
                }
                try BlobStore.syncDirectory(destination.deletingLastPathComponent())
            } catch {
                if !closed { close(descriptor) }
                unlink(temporary.path)
                throw error
            }
            return Receipt(digest: digest, size: size, written: true)
        }

        /// Abandons the blob: its temporary file is closed and removed.
        public func discard() {
            close(descriptor)
            unlink(temporary.path)
        }
    }

    /// Starts writing the blob of `digest`, `size` bytes, from chunks (``Writer``); nil when that
    /// blob is already stored with that size, and nothing needs writing.
    public func makeWriter(digest: ContentDigest, size: Int64) throws(BlobStoreError) -> Writer? {
        guard size >= 0 else { throw BlobStoreError("blob \(digest.hex) cannot have a negative size (\(size))") }
        if let stored = storedSize(digest), stored == size { return nil }
        let temporaries = root.appendingPathComponent("tmp")
        let destination = url(of: digest)
        try Self.makeDirectories([root, temporaries, root.appendingPathComponent("sha256"), destination.deletingLastPathComponent()])
        let temporary = temporaries.appendingPathComponent("\(digest.hex).\(getpid()).\(UInt64.random(in: 0...UInt64.max))")
        return try Writer(digest: digest, size: size, temporary: temporary, destination: destination)
    }
}
