import Foundation

#if canImport(CryptoKit)
    import CryptoKit
#else
    import Crypto
#endif

/// The download manager's files, under one root folder:
///
/// - `items/<item>/<version>/<path>`: an item's verified files; `items/<item>.json` the record of
///   the version that is complete (written last, so a version without it is not handed over);
/// - `partial/<item>/<sha256>`: the bytes of a file received so far, named by the digest it must have;
/// - `jobs/<item>.json`: a download not finished yet (its list entry, whether it was paused, the
///   ETags seen), so that the next launch resumes it.
///
/// `<item>` is the item's id when it is a plain name, otherwise `~` and the SHA-256 of the id.
struct ContentFolder: Sendable {
    let root: URL
    let backedUp: Bool

    var items: URL { root.appendingPathComponent("items", isDirectory: true) }
    var partials: URL { root.appendingPathComponent("partial", isDirectory: true) }
    var jobs: URL { root.appendingPathComponent("jobs", isDirectory: true) }

    init(configuration: CatalogClient.Configuration, location: ContentLocation) {
        switch location {
        case .caches:
            root = configuration.cacheDirectory.appendingPathComponent("content", isDirectory: true)
            backedUp = false
        case .applicationSupport(let backedUp):
            root = configuration.dataDirectory.appendingPathComponent("content", isDirectory: true)
            self.backedUp = backedUp
        case .directory(let url, let backedUp):
            root = url
            self.backedUp = backedUp
        }
    }

    /// Creates the folders, and leaves the root out of backups unless asked to keep it there.
    func prepare() throws(CatalogClientError) {
        for folder in [items, partials, jobs] { try DurableFile.makeDirectory(folder) }
        #if canImport(Darwin)
            // Set on the folder, it covers everything inside (Apple's "Optimizing Your App's Data
            // for iCloud Backup"); iOS may reset it when it moves the app, so it is set on every launch.
            var values = URLResourceValues()
            values.isExcludedFromBackup = !backedUp
            var url = root
            do { try url.setResourceValues(values) } catch {
                throw CatalogClientError(code: .storage, message: "cannot set the backup attribute of \(root.path): \(error)")
            }
        #endif
    }

    // MARK: Names

    /// A folder name for an item id: the id itself when it is a plain name, otherwise one derived
    /// from its digest, so no id can name `..`, a hidden file or a path.
    static func name(of item: String) -> String {
        let plain = item.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
        }
        if plain, !item.isEmpty, item.utf8.count <= 100, !item.hasPrefix(".") { return item }
        return "~" + hex(SHA256.hash(data: Data(item.utf8)))
    }

    /// `relative` joined to `folder`, refusing any path that could leave it: absolute, empty or `.`
    /// or `..` parts, backslashes, control characters. The server refuses these already; the client
    /// does not rely on it.
    static func join(_ folder: URL, _ relative: String) throws(CatalogClientError) -> URL {
        let parts = relative.split(separator: "/", omittingEmptySubsequences: false)
        let safe =
            !relative.isEmpty && relative.utf8.count <= 1024
            && parts.allSatisfy { part in
                !part.isEmpty && part != "." && part != ".."
                    && part.unicodeScalars.allSatisfy { $0 != "\\" && !CharacterSet.controlCharacters.contains($0) }
            }
        guard safe else {
            throw CatalogClientError(
                code: .malformedResponse,
                message: "the content list names the path \(relative.debugDescription), which would leave the item's folder")
        }
        var url = folder
        for part in parts { url.appendPathComponent(String(part)) }
        // Belt and braces: whatever the joining did, the result must still be inside the folder.
        let base = folder.standardizedFileURL.path
        guard url.standardizedFileURL.path.hasPrefix(base.hasSuffix("/") ? base : base + "/") else {
            throw CatalogClientError(
                code: .malformedResponse, message: "the content path \(relative.debugDescription) leaves the item's folder")
        }
        return url
    }

    static func validDigest(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }

    func itemFolder(_ item: String) -> URL { items.appendingPathComponent(Self.name(of: item), isDirectory: true) }

    func versionFolder(_ item: String, version: Int) -> URL {
        itemFolder(item).appendingPathComponent(String(version), isDirectory: true)
    }

    func record(_ item: String) -> URL { items.appendingPathComponent(Self.name(of: item) + ".json") }

    /// An item's partial files: one folder per item, so two items that share a file never write
    /// one partial file at once.
    func partialFolder(_ item: String) -> URL { partials.appendingPathComponent(Self.name(of: item), isDirectory: true) }

    func partial(_ item: String, _ sha256: String) -> URL { partialFolder(item).appendingPathComponent(sha256) }

    func job(_ item: String) -> URL { jobs.appendingPathComponent(Self.name(of: item) + ".json") }

    // MARK: Files

    static func size(of url: URL) -> Int64? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: url.path),
            (attributes[.type] as? FileAttributeType) == .typeRegular
        else { return nil }
        return (attributes[.size] as? NSNumber)?.int64Value
    }

    /// The SHA-256 of a file, read a megabyte at a time: memory stays flat whatever its size.
    static func sha256(of url: URL) throws(CatalogClientError) -> String {
        do {
            let handle = try FileHandle(forReadingFrom: url)
            defer { try? handle.close() }
            var hasher = SHA256()
            while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty { hasher.update(data: chunk) }
            return hex(hasher.finalize())
        } catch {
            throw CatalogClientError(code: .storage, message: "cannot read \(url.path): \(error)")
        }
    }

    static func hex(_ digest: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in digest {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The complete item on disk, if its record is there and every file it lists still is (the
    /// system may have purged Caches).
    func downloaded(_ item: String) -> DownloadedContent? {
        guard let data = try? Data(contentsOf: record(item)), var kept = try? JSONDecoder().decode(DownloadedContent.self, from: data),
            kept.item == item
        else { return nil }
        // The location is where it is now: an app's container moves between launches on iOS.
        kept.location = versionFolder(item, version: kept.version)
        for file in kept.files {
            guard let url = try? Self.join(kept.location, file.path), Self.size(of: url) == file.size else { return nil }
        }
        return kept
    }

    /// Every complete item on disk, by id.
    func allDownloaded() -> [DownloadedContent] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: items.path)) ?? []
        return names.filter { $0.hasSuffix(".json") && !$0.hasPrefix(DurableFile.temporaryPrefix) }.sorted().compactMap { name in
            guard let data = try? Data(contentsOf: items.appendingPathComponent(name)),
                let kept = try? JSONDecoder().decode(DownloadedContent.self, from: data)
            else { return nil }
            return downloaded(kept.item)
        }
    }

    /// Records `content` as complete, then removes the item's other versions.
    func commit(_ content: DownloadableContent) throws(CatalogClientError) {
        let location = versionFolder(content.item, version: content.version)
        let kept = DownloadedContent(
            item: content.item, version: content.version, location: location,
            files: content.files.map { .init(path: $0.path, size: $0.size, sha256: $0.sha256) })
        let data: Data
        do { data = try JSONEncoder().encode(kept) } catch {
            throw CatalogClientError(code: .storage, message: "cannot encode the record of \(content.item): \(error)")
        }
        try DurableFile.write(data, to: record(content.item))
        let folder = itemFolder(content.item)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [] where name != String(content.version) {
            try? FileManager.default.removeItem(at: folder.appendingPathComponent(name))
        }
    }

    /// Removes an item's files, record and unfinished download.
    func remove(_ item: String) {
        try? FileManager.default.removeItem(at: partialFolder(item))
        try? FileManager.default.removeItem(at: record(item))
        try? FileManager.default.removeItem(at: itemFolder(item))
        try? FileManager.default.removeItem(at: job(item))
    }
}
