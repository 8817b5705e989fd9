import Content
import Foundation
import PropertyList

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The rules of content items (docs/catalog-format.md, "Content"): ids, how each is sold, and its
/// files on disk, each a regular file inside the app's content folder.
public enum ContentRules {
    /// The largest content file, in bytes: 8 GiB. A file is stored, hashed and served whole by
    /// one process; anything bigger is better split into several files of the item.
    public static let maximumFileSize: Int64 = 8 << 30
    /// The longest item id, in characters.
    public static let maximumIdLength = 100

    /// Checks every item of `sources` against `products`; the items when no rule found an error.
    static func check(_ sources: AppSources, products: [Product], into diagnostics: inout [Diagnostic]) -> [CatalogContentItem] {
        let definitions = sources.definitions.flatMap(\.content)
        let folder = ContentFolder(url: sources.contentDirectory, display: sources.contentDisplayPath)
        guard !definitions.isEmpty else {
            warnUnlisted(in: folder, listed: [], into: &diagnostics)
            return []
        }
        // Only the products items name, found through the tables their files' decoding made:
        // every product of a big catalog copied into a dictionary, then every id hashed to find
        // the named ones, was most of a build's checking of its content.
        var productsById: [String: Product] = [:]
        for id in Set(definitions.compactMap { $0.product?.value }) {
            var offset = 0
            for definition in sources.definitions {
                if let index = definition.products.index(of: id) {
                    productsById[id] = products[offset + index]
                    break
                }
                offset += definition.products.products.count
            }
        }
        let groups = subscriptionGroups(named: Set(definitions.compactMap { $0.group?.value }), in: products)
        // A product its own rules rejected was reported there; an item naming it is not reported again.
        let rejected = Set(sources.definitions.flatMap { $0.products.rejectedIDs.map(\.value) })
        var firstById: [String: SourceLocation] = [:]
        var items: [CatalogContentItem] = []
        for definition in definitions {
            let before = diagnostics.count
            let item = check(
                definition, products: productsById, rejected: rejected, groups: groups, folder: folder, firstById: &firstById,
                into: &diagnostics)
            if let item, !diagnostics[before...].contains(where: { $0.severity == .error }) { items.append(item) }
        }
        // Only when every item checked: a file of an item with an error would be reported twice.
        if items.count == definitions.count && !diagnostics.containsErrors {
            warnUnlisted(in: folder, listed: Set(items.flatMap { $0.files.map(\.source.path) }), into: &diagnostics)
        }
        return items.sorted { $0.id < $1.id }
    }

    /// The subscription groups of `products` that items name: the scan stops once each is found.
    /// When one is missing, every group, for the error that lists them.
    private static func subscriptionGroups(named: Set<String>, in products: [Product]) -> Set<String> {
        guard !named.isEmpty else { return [] }
        var found: Set<String> = []
        for index in products.indices {
            guard let group = products[index].subscription?.group, named.contains(group), found.insert(group).inserted else { continue }
            if found.count == named.count { return found }
        }
        return Set(products.indices.compactMap { products[$0].subscription?.group })
    }

    /// The most files reported as listed by no item, before one line says how many more.
    static let maximumUnlistedWarnings = 20

    /// A warning for each regular file in the content folder that no item lists (a typo in a
    /// path, or a file forgotten): it is not published. Hidden files (`.DS_Store`) are skipped.
    private static func warnUnlisted(in folder: ContentFolder, listed: Set<String>, into diagnostics: inout [Diagnostic]) {
        guard let root = folder.realPath else { return }
        var unlisted: [String] = []
        for relative in visibleEntries(under: root) {
            // A file listed under this very path was resolved when its item was checked: not again
            // (for a thousand listed files, 5,000 of the 14,000 readlink calls of resolving them).
            guard !listed.contains(root.hasSuffix("/") ? root + relative : root + "/" + relative) else { continue }
            guard case .regular(let url, _) = folder.find(relative), !listed.contains(url.path) else { continue }
            unlisted.append(relative)
        }
        for relative in unlisted.sorted().prefix(maximumUnlistedWarnings) {
            diagnostics.append(
                .warning("no content item lists this file, so it is not published", file: "\(folder.display)/\(relative)", at: .startOfFile)
            )
        }
        if unlisted.count > maximumUnlistedWarnings {
            diagnostics.append(
                .warning(
                    "\(unlisted.count - maximumUnlistedWarnings) more files that no content item lists", file: folder.display,
                    at: .startOfFile))
        }
    }

    /// Every entry below `root` but folders, as paths relative to it, in no particular order:
    /// what is hidden (a name starting with ".") and all inside it left out, links not followed.
    /// Read with `readdir`, whose entries say their type: `FileManager`'s enumerator stat'ed
    /// each, most of what remained of a build's checking of a thousand content files.
    private static func visibleEntries(under root: String) -> [String] {
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        var entries: [String] = []
        var folders = [""]
        while let folder = folders.popLast() {
            guard let directory = opendir(folder.isEmpty ? root : root + "/" + folder) else { continue }
            defer { closedir(directory) }
            while let entry = readdir(directory) {
                // The name read where it is: an entry is only as long as its name, so a copy of
                // `d_name` (all 256 bytes) could read past the end of the buffer `readdir` filled,
                // and did: a build of the benchmark's thousand content files crashed on it once.
                let name = String(cString: UnsafeRawPointer(entry).advanced(by: nameOffset).assumingMemoryBound(to: CChar.self))
                guard !name.hasPrefix(".") else { continue }
                let path = folder.isEmpty ? name : folder + "/" + name
                var type = Int32(entry.pointee.d_type)
                if type == Int32(DT_UNKNOWN) {
                    // Some file systems do not say: then lstat does, still without following a link.
                    var status = stat()
                    type = lstat(root + "/" + path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFDIR ? Int32(DT_DIR) : Int32(DT_REG)
                }
                if type == Int32(DT_DIR) { folders.append(path) } else { entries.append(path) }
            }
        }
        return entries
    }

    /// Why `id` cannot be a content item's id, or nil: like a product id, since clients name
    /// folders after it.
    public static func idProblem(_ id: String) -> String? {
        if id.isEmpty { return "content id is empty" }
        let allowed = id.utf8.allSatisfy { byte in
            (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122) || byte == UInt8(ascii: ".")
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
        if !allowed { return "content id '\(id)' may only have letters, digits, '.', '_' and '-'" }
        if id == "." || id == ".." { return "content id '\(id)' is not a name" }
        if id.utf8.count > maximumIdLength {
            return "content id is \(id.utf8.count) characters long; the limit is \(maximumIdLength)"
        }
        return nil
    }

    private static func check(
        _ definition: ContentItemDefinition, products: [String: Product], rejected: Set<String>, groups: Set<String>,
        folder: ContentFolder,
        firstById: inout [String: SourceLocation], into diagnostics: inout [Diagnostic]
    ) -> CatalogContentItem? {
        let file = definition.file
        func error(_ message: String, at position: SourcePosition) { diagnostics.append(.error(message, file: file, at: position)) }
        let location = SourceLocation(file: file, position: definition.position)

        guard let id = definition.id else {
            if !definition.malformedKeys.contains("id") { error("content item has no 'id'", at: definition.position) }
            return nil
        }
        if let problem = idProblem(id.value) { error(problem, at: id.position) }
        if let first = firstById[id.value] {
            let place = first.file == file ? "\(first.position)" : "\(first)"
            error("duplicate content id '\(id.value)' (first at \(place))", at: id.position)
        } else {
            firstById[id.value] = SourceLocation(file: file, position: id.position)
        }

        var availability: ContentAvailability?
        switch (definition.product, definition.group) {
        case (let product?, nil):
            if let published = definition.published {
                error(
                    "'published' dates a subscription group's item; content '\(id.value)' is sold with product '\(product.value)', so leave it out",
                    at: published.position)
            }
            if let sold = products[product.value] {
                if sold.type == .consumable {
                    error(
                        "product '\(product.value)' is a consumable; consumables have no lasting content, so sell the content with a non-consumable or a subscription",
                        at: product.position)
                } else {
                    availability = .product(product.value)
                }
            } else if !rejected.contains(product.value) {
                error("content '\(id.value)' names product '\(product.value)', which is not in the catalog", at: product.position)
            }
        case (nil, let group?):
            if !groups.contains(group.value) {
                let known = groups.sorted().map { "'\($0)'" }.joined(separator: ", ")
                error(
                    "content '\(id.value)' names subscription group '\(group.value)', which no product has"
                        + (known.isEmpty ? "" : "; the groups are \(known)"), at: group.position)
            }
            if let published = definition.published {
                if groups.contains(group.value) {
                    availability = .subscriptionGroup(
                        group.value, published: Date(timeIntervalSince1970: TimeInterval(published.value.secondsSince1970)))
                }
            } else if !definition.malformedKeys.contains("published") {
                error(
                    "content '\(id.value)' is a dated item of group '\(group.value)'; give it a 'published' date such as 2026-03-01T00:00:00Z",
                    at: definition.position)
            }
        case (let product?, let group?):
            error(
                "content '\(id.value)' names both product '\(product.value)' and group '\(group.value)'; an item is sold one way",
                at: group.position)
        case (nil, nil):
            if !definition.malformedKeys.contains("product") && !definition.malformedKeys.contains("group") {
                error("content '\(id.value)' names no 'product' or 'group'; say how it is sold", at: definition.position)
            }
        }

        let files = checkFiles(definition, id: id.value, folder: folder, into: &diagnostics)
        guard let availability, let files else { return nil }
        return CatalogContentItem(id: id.value, availability: availability, files: files, location: location)
    }

    private static func checkFiles(
        _ definition: ContentItemDefinition, id: String, folder: ContentFolder, into diagnostics: inout [Diagnostic]
    ) -> [CatalogContentItem.File]? {
        let file = definition.file
        var valid = true
        func error(_ message: String, at position: SourcePosition) {
            diagnostics.append(.error(message, file: file, at: position))
            valid = false
        }
        var base = ""
        if let inner = definition.folder {
            if ContentManifest.isValidPath(inner.value) {
                base = inner.value + "/"
            } else {
                error(
                    "content folder '\(inner.value)' must be a relative path inside \(folder.display): '/'-separated, with no empty, '.' or '..' part",
                    at: inner.position)
                return nil
            }
        }
        guard let list = definition.files else {
            if !definition.malformedKeys.contains("files") { error("content '\(id)' has no 'files'", at: definition.position) }
            return nil
        }
        if list.value.isEmpty {
            error("content '\(id)' lists no files", at: list.position)
            return nil
        }
        if folder.realPath == nil {
            error("content '\(id)' has files, but its content folder \(folder.display) does not exist", at: list.position)
            return nil
        }
        var seen: [String: SourcePosition] = [:]
        var files: [CatalogContentItem.File] = []
        for path in list.value {
            guard ContentManifest.isValidPath(path.value) else {
                error(
                    "content file '\(path.value)' must be a relative path: '/'-separated, with no empty, '.' or '..' part, no backslash and no control character",
                    at: path.position)
                continue
            }
            if let first = seen[path.value] {
                error("content file '\(path.value)' is listed twice in '\(id)' (first at \(first))", at: path.position)
                continue
            }
            seen[path.value] = path.position
            let shown = "\(folder.display)/\(base)\(path.value)"
            switch folder.find(base + path.value) {
            case .missing:
                error("content file \(shown) does not exist", at: path.position)
            case .outside:
                error(
                    "content file \(shown) leads outside \(folder.display) through a symbolic link; keep content files inside it",
                    at: path.position)
            case .notRegular:
                error("content file \(shown) is not a regular file", at: path.position)
            case .regular(let url, let size):
                if size > maximumFileSize {
                    error(
                        "content file \(shown) is \(size) bytes; the largest content file is \(maximumFileSize) bytes (8 GiB): split it into several files",
                        at: path.position)
                } else {
                    files.append(CatalogContentItem.File(path: path.value, source: url, size: size))
                }
            }
        }
        return valid ? files.sorted { $0.path < $1.path } : nil
    }
}

/// An app's content folder on disk, for finding the files items name.
private struct ContentFolder {
    let url: URL
    let display: String
    /// The folder's canonical path, symbolic links resolved; nil when it does not exist. Resolved
    /// once: every item's files are checked against it.
    let realPath: String?

    init(url: URL, display: String) {
        self.url = url
        self.display = display
        var status = stat()
        if let path = Self.canonical(url.path), stat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR {
            realPath = path
        } else {
            realPath = nil
        }
    }

    enum Found {
        case missing, outside, notRegular
        case regular(URL, size: Int64)
    }

    /// The file at `relative` under the folder: it counts only if its own canonical path (every
    /// link followed) is still under the folder's (`realPath`). Missing when the folder is.
    func find(_ relative: String) -> Found {
        guard let root = realPath else { return .missing }
        // A file directly in the folder, and no link: its canonical path is the folder's and its
        // name, known from one lstat, where `realpath` reads every part of the path again (five
        // readlink calls a file in the benchmark's catalog). Only a name that `isValidPath`
        // accepted comes here, so it is never "." or "..".
        if !relative.utf8.contains(UInt8(ascii: "/")) {
            let path = root.hasSuffix("/") ? root + relative : root + "/" + relative
            var status = stat()
            guard lstat(path, &status) == 0 else { return .missing }
            if (status.st_mode & S_IFMT) == S_IFREG { return .regular(URL(fileURLWithPath: path), size: Int64(status.st_size)) }
            if (status.st_mode & S_IFMT) != S_IFLNK { return .notRegular }
        }
        // Joined as a string: `appendingPathComponent` asks the file system whether the path is
        // a folder, one more stat call a file before `realpath` walks the same path.
        guard let path = Self.canonical(url.path + "/" + relative) else { return .missing }
        guard path.hasPrefix(root.hasSuffix("/") ? root : root + "/") else { return .outside }
        var status = stat()
        guard stat(path, &status) == 0 else { return .missing }
        guard (status.st_mode & S_IFMT) == S_IFREG else { return .notRegular }
        return .regular(URL(fileURLWithPath: path), size: Int64(status.st_size))
    }

    private static func canonical(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
