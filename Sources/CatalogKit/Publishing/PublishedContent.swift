import Content
import Crypto
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A content blob a publication records in a shared store beside its files (docs/content.md,
/// "Replicas"): the file the editor's blob store holds under `sha256`, sent in chunks.
public struct PublishedBlob: Sendable, Hashable {
    /// The blob's SHA-256, 64 lower-case hex digits: its name in every store.
    public var sha256: String
    /// Its size in bytes, as the content manifest names it.
    public var size: Int64
    /// Where the editor's blob store keeps it.
    public var source: URL

    /// The blob of `sha256`, `size` bytes, kept at `source`.
    public init(sha256: String, size: Int64, source: URL) {
        self.sha256 = sha256
        self.size = size
        self.source = source
    }

    /// Reads the blob's file in chunks of `chunkBytes`, handing each to `receive` in order, and
    /// checks the whole as it goes: after the last chunk it throws unless the bytes were exactly
    /// `size` and hash to `sha256`, so that a store writing them in a transaction rolls it back.
    /// Memory stays at one chunk whatever the size.
    public func forEachChunk(ofBytes chunkBytes: Int, _ receive: ([UInt8]) async throws -> Void) async throws {
        precondition(chunkBytes > 0, "a chunk holds at least one byte")
        let descriptor = open(source.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw CatalogError.io(path: source.path, message: "cannot open the blob \(sha256): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var hasher = SHA256()
        var total: Int64 = 0
        var chunk = [UInt8](repeating: 0, count: chunkBytes)
        while true {
            // Fill the chunk (a read may return less than asked), so that every chunk but the last is whole.
            var filled = 0
            while filled < chunkBytes {
                let count = chunk.withUnsafeMutableBytes { buffer in
                    read(descriptor, buffer.baseAddress.map { $0 + filled }, chunkBytes - filled)
                }
                if count < 0 {
                    if errno == EINTR { continue }
                    throw CatalogError.io(path: source.path, message: "cannot read the blob \(sha256): \(String(cString: strerror(errno)))")
                }
                if count == 0 { break }
                filled += count
            }
            if filled == 0 { break }
            let piece = filled == chunkBytes ? chunk : Array(chunk[..<filled])
            hasher.update(data: piece)
            total += Int64(filled)
            guard total <= size else { break }
            try await receive(piece)
            if filled < chunkBytes { break }
        }
        let digest = ContentDigest(hasher.finalize())
        guard total == size, digest.hex == sha256 else {
            throw CatalogError.corruptPublication(
                path: source.path,
                message: "the blob \(sha256) of \(size) bytes holds \(total) bytes hashing to \(digest.hex); not recorded")
        }
    }
}

extension PublishedFile {
    /// Whether this is a revision's content manifest (`records/v1/apps/<app>/revisions/<n>/content.json`).
    public var isContentManifest: Bool {
        revision != nil && path.hasPrefix("records/") && path.hasSuffix("/content.json")
    }
}

extension PublicTree {
    /// Every content manifest the records tree keeps, of every app and revision: what the content
    /// store must keep (`BlobStore.prune(keepingNamesIn:)` in Content).
    public func keptContentManifests() throws -> [ContentManifest] {
        // Throws on the first manifest that does not read: keeping a blob is the safe side, so a
        // caller that prunes keeps everything then.
        let apps = records.appendingPathComponent("v1/apps", isDirectory: true)
        var manifests: [ContentManifest] = []
        for app in ((try? FileManager.default.contentsOfDirectory(atPath: apps.path)) ?? []).sorted() where AppName.problem(app) == nil {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: recordsRevisionsDirectory(app).path)) ?? [] {
                guard let revision = Int(name), let manifest = try contentManifest(app, revision: revision) else { continue }
                manifests.append(manifest)
            }
        }
        return manifests
    }

    /// The blobs the content manifests among `files` name, each once, as the editor's content
    /// store holds them: what a publication records beside its files.
    ///
    /// - Throws: when a manifest is invalid, or names a blob the content store lacks (or holds
    ///   with another size): such a revision could never be served whole, and is not recorded.
    func publishedBlobs(in files: [PublishedFile]) throws -> [PublishedBlob] {
        let blobs = BlobStore(root: content)
        var seen: Set<ContentDigest> = []
        var found: [PublishedBlob] = []
        for file in files where file.isContentManifest {
            guard let bytes = file.bytes else { continue }
            let manifest: ContentManifest
            do {
                manifest = try ContentManifest.decode(Data(bytes))
            } catch {
                throw CatalogError.corruptPublication(path: file.path, message: "\(error)")
            }
            for entry in manifest.items.flatMap(\.files) where seen.insert(entry.sha256).inserted {
                let source = blobs.url(of: entry.sha256)
                let size = (try? FileManager.default.attributesOfItem(atPath: source.path)[.size] as? NSNumber)?.int64Value
                guard size == entry.size else {
                    throw CatalogError.corruptPublication(
                        path: file.path,
                        message: size == nil
                            ? "names the blob \(entry.sha256.hex), which \(content.path) does not hold; not recorded"
                            : "names the blob \(entry.sha256.hex) of \(entry.size) bytes, which \(content.path) holds with \(size ?? 0); not recorded"
                    )
                }
                found.append(PublishedBlob(sha256: entry.sha256.hex, size: entry.size, source: source))
            }
        }
        return found
    }
}

extension PublicationStore {
    /// Makes the content of revision `revision` of `app` present in `tree`'s content store: every
    /// blob its content manifest names that the store lacks, read from this store in chunks,
    /// hashed as it is written and put in place only whole and verified. Returns how many were
    /// written. A replica calls it before it makes that revision current.
    ///
    /// - Throws: when this store lacks a blob or hands bytes other than the manifest's; nothing
    ///   of that blob is left in `tree`.
    @discardableResult
    public func receiveContent(app: String, revision: Int, into tree: PublicTree) async throws -> Int {
        guard let manifest = try tree.contentManifest(app, revision: revision) else { return 0 }
        let blobs = BlobStore(root: tree.content)
        var written = 0
        var seen: Set<ContentDigest> = []
        for entry in manifest.items.flatMap(\.files) where seen.insert(entry.sha256).inserted {
            guard var writer = try blobs.makeWriter(digest: entry.sha256, size: entry.size) else { continue }
            do {
                try await publishedBlob(entry.sha256.hex) { chunk in try writer.append(chunk) }
            } catch {
                writer.discard()
                throw error
            }
            // The fsync of a large file can take a while: on a thread of its own, not a task's.
            // `finish` removes what it wrote when it refuses the bytes.
            let finished = writer
            _ = try await onOwnThread { try finished.finish() }
            written += 1
        }
        return written
    }
}
