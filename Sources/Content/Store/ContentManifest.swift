import Foundation

/// A revision's content: each item, how it is sold, its version and its files with their sizes
/// and SHA-256 digests (docs/content.md, "The manifest").
///
/// Its JSON is byte-stable: keys sorted, items by id, files by path, dates in whole seconds UTC,
/// no whitespace, so the same content always gives the same bytes (and the same hash).
public struct ContentManifest: Codable, Sendable, Hashable {
    /// The format this code writes and reads.
    public static let currentFormat = 1

    /// The format of the manifest.
    public private(set) var format: Int
    /// The items, by id (set only through the initializers, which check and order them).
    public private(set) var items: [Item]

    /// One item of content: a product's files, or a dated item of a subscription group.
    public struct Item: Codable, Sendable, Hashable {
        /// The item's id, unique in the manifest.
        public var id: String
        /// Its version: 1 when first published, one more each time its files change.
        public var version: Int
        /// The product whose holders may download it (exclusive with `subscriptionGroup`).
        public var product: String?
        /// The subscription group whose subscribers may download it (exclusive with `product`).
        public var subscriptionGroup: String?
        /// When it was published: required with `subscriptionGroup`, absent with `product`.
        public var published: Date?
        /// Its files, by path.
        public var files: [File]

        /// An item of `files`, sold with `product` or as a dated item of `subscriptionGroup`.
        public init(
            id: String, version: Int = 1, product: String? = nil, subscriptionGroup: String? = nil, published: Date? = nil, files: [File]
        ) {
            self.id = id
            self.version = version
            self.product = product
            self.subscriptionGroup = subscriptionGroup
            self.published = published
            self.files = files
        }

        /// How it is sold, for ``ContentAccess``; nil only for an item that fails validation.
        public var availability: ContentAvailability? {
            switch (product, subscriptionGroup, published) {
            case (let product?, nil, nil): .product(product)
            case (nil, let group?, let published?): .subscriptionGroup(group, published: published)
            default: nil
            }
        }
    }

    /// One file of an item.
    public struct File: Codable, Sendable, Hashable {
        /// Its path inside the item (where the client puts it): relative, `/`-separated, no `.` or `..`.
        public var path: String
        /// Its size in bytes.
        public var size: Int64
        /// The SHA-256 of its bytes: the blob that holds it.
        public var sha256: ContentDigest

        /// A file at `path` of `size` bytes with digest `sha256`.
        public init(path: String, size: Int64, sha256: ContentDigest) {
            self.path = path
            self.size = size
            self.sha256 = sha256
        }
    }

    /// A manifest of `items`, checked and put in their stable order.
    public init(items: [Item]) throws(ContentManifestError) {
        self.format = Self.currentFormat
        self.items = items.map { item in
            var item = item
            item.files.sort { $0.path < $1.path }
            return item
        }.sorted { $0.id < $1.id }
        try validate()
    }

    /// A manifest of `items` whose versions follow `previous`: an item whose files (paths, sizes
    /// and digests) are unchanged keeps its version, a changed one gets the next, a new one 1. The
    /// versions given in `items` are ignored.
    public init(items: [Item], following previous: ContentManifest?) throws(ContentManifestError) {
        let before = Dictionary((previous?.items ?? []).map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let versioned = items.map { item in
            var item = item
            item.files.sort { $0.path < $1.path }
            if let old = before[item.id] {
                item.version = old.files == item.files ? old.version : old.version + 1
            } else {
                item.version = 1
            }
            return item
        }
        try self.init(items: versioned)
    }

    /// Every digest the manifest names: what ``BlobStore/prune(keeping:)`` must keep for it.
    public var digests: Set<ContentDigest> { Set(items.flatMap { $0.files.map(\.sha256) }) }

    /// How each item is sold, by id: the input of ``ContentAccess/grants(ledger:at:items:)``.
    public var availabilities: [String: ContentAvailability] {
        var result: [String: ContentAvailability] = [:]
        for item in items { if let availability = item.availability { result[item.id] = availability } }
        return result
    }

    /// The byte-stable JSON.
    public func encoded() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        // Strings, whole numbers, dates and digests always encode.
        do {
            return try encoder.encode(self)
        } catch {
            preconditionFailure("a content manifest did not encode: \(error)")
        }
    }

    /// The manifest in `data`, checked as ``init(items:)`` checks it.
    public static func decode(_ data: Data) throws(ContentManifestError) -> ContentManifest {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let manifest: ContentManifest
        do {
            manifest = try decoder.decode(ContentManifest.self, from: data)
        } catch {
            throw ContentManifestError("not a content manifest: \(error)")
        }
        guard manifest.format == currentFormat else {
            throw ContentManifestError("content manifest format \(manifest.format) is not the \(currentFormat) this version reads")
        }
        let stable = try ContentManifest(items: manifest.items)
        guard stable.items == manifest.items else {
            throw ContentManifestError("the items or files of a content manifest are out of order")
        }
        return stable
    }

    /// Checks the rules a manifest keeps; the first broken one is the error.
    public func validate() throws(ContentManifestError) {
        var ids: Set<String> = []
        for item in items {
            guard Self.isValidId(item.id) else {
                throw ContentManifestError(
                    "an item id is 1 to 200 characters, none a control character: \(item.id.prefix(80).debugDescription)")
            }
            guard ids.insert(item.id).inserted else { throw ContentManifestError("the item \(item.id) is listed twice") }
            guard item.version >= 1 else {
                throw ContentManifestError("the item \(item.id) has version \(item.version); versions start at 1")
            }
            guard item.availability != nil else {
                throw ContentManifestError(
                    "the item \(item.id) names a product, or a subscription group with a publication date; not both, not neither")
            }
            guard !item.files.isEmpty else { throw ContentManifestError("the item \(item.id) has no files") }
            var paths: Set<String> = []
            for file in item.files {
                guard Self.isValidPath(file.path) else {
                    throw ContentManifestError(
                        "the item \(item.id) has a file path that is not relative, or has an empty, . or .. part: \(file.path.prefix(80).debugDescription)"
                    )
                }
                guard paths.insert(file.path).inserted else { throw ContentManifestError("the item \(item.id) lists \(file.path) twice") }
                guard file.size >= 0 else { throw ContentManifestError("the file \(file.path) of \(item.id) has a negative size") }
            }
        }
    }

    /// Whether `id` can be an item's id: 1 to 200 characters, none a control character.
    public static func isValidId(_ id: String) -> Bool {
        (1...200).contains(id.count) && !id.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    /// Relative, `/`-separated, each part non-empty and neither `.` nor `..`, no backslash and no
    /// control character: a path a client can join to its folder without leaving it.
    public static func isValidPath(_ path: String) -> Bool {
        guard (1...1024).contains(path.utf8.count), !path.utf8.contains(UInt8(ascii: "\\")) else { return false }
        // Printable ASCII, the usual path, has no control character; only other paths have their
        // scalars' categories looked up (a build checks a path for every content file it lists).
        if !path.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
            guard !path.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else { return false }
        }
        return path.split(separator: "/", omittingEmptySubsequences: false).allSatisfy { !$0.isEmpty && $0 != "." && $0 != ".." }
    }
}

/// A content manifest that breaks a rule, or does not read: a clear message of which and where.
public struct ContentManifestError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public var message: String
    /// An error saying `message`.
    public init(_ message: String) { self.message = message }
    /// The message.
    public var description: String { message }
}
