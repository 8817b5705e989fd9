import Foundation
import PropertyList
import Time

/// What a revision publishes, written last: readers trust only files a manifest names.
///
/// The app's current manifest (`v1/apps/<app>/manifest.json`) is a copy of its newest
/// revision's (`v1/apps/<app>/revisions/<n>/manifest.json`).
public struct RevisionManifest: Codable, Sendable, Hashable {
    /// The manifest format this version writes and reads; a manifest of another format is refused.
    public static let currentFormat = 1

    /// The manifest's format: ``currentFormat`` for every manifest written so far.
    public var format: Int
    /// The app's bundle identifier.
    public var app: String
    /// The revision number, counting from 1.
    public var revision: Int
    /// When the revision was published: the Last-Modified its changed feeds carry.
    public var publishedAt: Timestamp
    /// Platforms with feeds of their own.
    public var platforms: [Platform]
    /// Band lower bounds, ascending, as in ``VariantSelector``.
    public var bands: [String]
    /// Every variant, the default first.
    public var variants: [VariantRecord]
    /// What the variants switch to at moments ahead, in order; absent when nothing is scheduled.
    public var schedule: [ScheduledVariants]?
    /// Identifiers the feedback loop took off sale, in source order; absent when none, so that
    /// manifests from before the feedback loop read the same. What a build compares to say
    /// which quarantines it published or lifted.
    public var quarantined: [String]?
    /// Who published it (the local user for the CLI, a token's name for the editor API), why,
    /// and the revision a rollback republished; each absent when unknown, so that manifests
    /// from before history was recorded read (and re-encode) the same.
    public var author: String?
    /// Why it was published, as the publisher wrote it.
    public var message: String?
    /// The revision a rollback republished.
    public var rollbackOf: Int?

    /// The variant selector these platforms and bands make, to find each request's variant.
    public var selector: VariantSelector {
        VariantSelector(platforms: platforms, bands: bands.compactMap(AppVersion.init))
    }

    /// The record of `variant` in the state published now, if the revision has that variant.
    public func record(for variant: Variant) -> VariantRecord? {
        variants.first { $0.platform == variant.platformKey && $0.band == variant.bandKey }
    }

    /// The record `variant` switches to at `moment`, if this revision scheduled that moment.
    public func scheduledRecord(at moment: Timestamp, for variant: Variant) -> VariantRecord? {
        schedule?.first { $0.from == moment }?.variants.first { $0.platform == variant.platformKey && $0.band == variant.bandKey }
    }
}

/// Who publishes a revision and why, recorded in its manifest for `catalog history`.
public struct RevisionNote: Sendable, Hashable {
    /// Who publishes it: the local user for the CLI, a token's name for the editor API.
    public var author: String?
    /// Why it is published, as the publisher wrote it (`catalog build --message`).
    public var message: String?
    /// The revision whose content is republished: its rich-feed bytes (which carry its number
    /// and time) are reused wherever the content is the same, so feeds and ETags equal its own.
    public var rollbackOf: Int?

    /// A note with any of its fields; all absent by default.
    public init(author: String? = nil, message: String? = nil, rollbackOf: Int? = nil) {
        self.author = author
        self.message = message
        self.rollbackOf = rollbackOf
    }
}

/// The variants as they are from a moment on, until the next scheduled moment.
public struct ScheduledVariants: Codable, Sendable, Hashable {
    /// The moment the variants switch to these records.
    public var from: Timestamp
    /// Every variant from that moment on, in the same order as the manifest's current ones.
    public var variants: [VariantRecord]

    /// What must be equal for two schedules to publish the same bytes at the same moments.
    var fingerprint: String {
        "\(from.iso8601):" + variants.map { "\($0.platform)/\($0.band)=\($0.products.sha256),\($0.catalog.sha256)" }.joined(separator: ";")
    }
}

/// One variant's two feeds.
public struct VariantRecord: Codable, Sendable, Hashable {
    /// `any` or a platform's lower-case name.
    public var platform: String
    /// `any` or a band's lower bound.
    public var band: String
    /// Where its files are, relative to the revision folder.
    public var directory: String
    /// The product-identifier feed, `products.json`.
    public var products: FeedRecord
    /// The rich feed, `catalog.json`.
    public var catalog: FeedRecord
    /// Written empty, and never read. Versions before 2026-11-30 wrote the hash of the rich feed
    /// without its revision details here, to find a stamp to reuse, and require the field: an
    /// empty one matches nothing, so they read these manifests and only stamp anew. A build now
    /// hashes new content under each earlier stamp instead, which a first build need not do at all.
    public var catalogContentSHA256: String
    /// The revision whose number and time the rich feed's bytes carry.
    public var catalogRevision: Int
    /// The publication time the rich feed's bytes carry, with ``catalogRevision``.
    public var catalogPublishedAt: Timestamp
}

/// One feed's validators.
public struct FeedRecord: Codable, Sendable, Hashable {
    /// The hex SHA-256 of the feed's bytes.
    public var sha256: String
    /// The feed's size in bytes.
    public var bytes: Int
    /// When these bytes were first published; unchanged bytes keep it.
    public var lastModified: Timestamp
    /// The feed's gzip copy.
    public var gzip: EncodedRecord

    /// The feed's strong entity tag, quoted.
    public var entityTag: String { ContentHash.entityTag(sha256: sha256) }
}

/// The gzip copy of a feed: its own bytes, so its own strong validator.
public struct EncodedRecord: Codable, Sendable, Hashable {
    /// The hex SHA-256 of the gzip copy.
    public var sha256: String
    /// The gzip copy's size in bytes.
    public var bytes: Int

    /// The gzip copy's strong entity tag, quoted.
    public var entityTag: String { ContentHash.entityTag(sha256: sha256) }
}

/// Every identifier an app ever published, kept with each revision (`identifiers.tsv`):
/// App Store identifiers can never disappear or be reused, and feedback needs first-seen times.
public struct IdentifierHistory: Sendable, Hashable {
    /// When an identifier was first published, and when as retired.
    public struct Entry: Sendable, Hashable {
        /// The revision that first published it.
        public var firstRevision: Int
        /// When that revision was published.
        public var firstPublishedAt: Timestamp
        /// The revision that first published it as retired.
        public var retiredRevision: Int?
    }

    /// Every identifier with its entry, in the order they were first published: writing the
    /// history is then one pass with no lookups.
    private var entries = IdentifierTable<Entry>()

    /// Identifiers in the order they were first published.
    public var order: [String] { entries.keys }
    /// The entry of each identifier of ``order``, at the same index.
    var entriesInOrder: [Entry] { entries.values }

    /// An empty history, before the first publication.
    public init() {}

    /// The entry of `id`, or nil if it was never published.
    public subscript(id: String) -> Entry? {
        entries[id]
    }

    /// Where `id` is in ``order``, or nil if it was never published.
    func position(of id: String) -> Int? {
        entries.row(of: id)
    }

    /// Room for `count` more identifiers: recording every product of a big catalog would
    /// otherwise grow the table a dozen times.
    public mutating func reserveCapacity(forMore count: Int) {
        entries.reserveCapacity(entries.count + count)
    }

    /// Records that revision `revision`, published at `moment`, shows `id`: a new identifier gets its
    /// first revision and time; a known one keeps them, and is marked retired the first time `retired` is true.
    public mutating func record(_ id: String, revision: Int, at moment: Timestamp, retired: Bool) {
        let entry = Entry(firstRevision: revision, firstPublishedAt: moment, retiredRevision: retired ? revision : nil)
        if let row = entries.insert(id, entry), retired && entries[row: row].retiredRevision == nil {
            entries[row: row].retiredRevision = revision
        }
    }

    static let header = "# id\tfirstRevision\tfirstPublishedAt\tretiredRevision"

    /// The history as `identifiers.tsv`: a header line, then one tab-separated line per identifier
    /// (id, first revision, first publication time, retired revision or `-`), in ``order``.
    public var tsv: [UInt8] {
        var bytes = Array((Self.header + "\n").utf8)
        bytes.reserveCapacity(entries.count * 64)
        var timeCache: (Timestamp, [UInt8])?
        for (id, entry) in zip(entries.keys, entries.values) {
            // Most identifiers share a publication time; format it once.
            if timeCache?.0 != entry.firstPublishedAt {
                timeCache = (entry.firstPublishedAt, Array(entry.firstPublishedAt.iso8601.utf8))
            }
            bytes.append(contentsOf: id.utf8)
            bytes.append(0x09)
            bytes.append(contentsOf: String(entry.firstRevision).utf8)
            bytes.append(0x09)
            bytes.append(contentsOf: timeCache!.1)
            bytes.append(0x09)
            bytes.append(contentsOf: (entry.retiredRevision.map(String.init) ?? "-").utf8)
            bytes.append(0x0A)
        }
        return bytes
    }

    /// Reads the history back from `identifiers.tsv` bytes.
    ///
    /// - Throws: ``CatalogError/corruptPublication(path:message:)`` for a malformed line or an
    ///   identifier listed twice.
    public init(tsv bytes: some ContiguousBytes) throws {
        // Read in place, the tables sized once from the number of lines, one string made per line,
        // and each line's fields found in place: split into slices and strings field by field, into
        // tables grown as they filled, a big catalog's history took about 80 ms to read, twice in
        // every build after the first (docs/benchmarks.md, "The rebuild's diff"); an array of fields
        // for each line kept it at 20 ms ("The build's single-core stretches").
        try bytes.withUnsafeBytes { raw in
            let all = raw.bindMemory(to: UInt8.self)
            reserveCapacity(forMore: all.lineCount)
            // Most identifiers share a publication time: the last one read is kept with its bytes.
            var lastTime: (bytes: UnsafeBufferPointer<UInt8>, moment: Timestamp)?
            try all.forEachLine { range in
                let line = UnsafeBufferPointer(rebasing: all[range])
                guard let first = line.first, first != UInt8(ascii: "#") else { return }
                var moment: Timestamp?
                let fields = Self.fields(line)
                if let time = fields.map({ UnsafeBufferPointer(rebasing: $0.2) }) {
                    if let lastTime, lastTime.bytes.count == time.count,
                        memcmp(lastTime.bytes.baseAddress!, time.baseAddress!, time.count) == 0
                    {
                        moment = lastTime.moment
                    } else {
                        moment = Timestamp(iso8601: String(decoding: time, as: UTF8.self))
                        if let moment { lastTime = (time, moment) }
                    }
                }
                guard let fields, let firstRevision = Self.integer(fields.1), let moment else {
                    throw CatalogError.corruptPublication(
                        path: "identifiers.tsv", message: "bad line '\(String(decoding: line, as: UTF8.self))'")
                }
                let id = String(decoding: fields.0, as: UTF8.self)
                let entry = Entry(firstRevision: firstRevision, firstPublishedAt: moment, retiredRevision: Self.integer(fields.3))
                guard entries.insert(id, entry) == nil else {
                    throw CatalogError.corruptPublication(path: "identifiers.tsv", message: "'\(id)' is listed twice")
                }
            }
        }
    }

    private typealias Field = Slice<UnsafeBufferPointer<UInt8>>

    /// The four tab-separated fields of a line; nil for any other number of them.
    private static func fields(_ line: UnsafeBufferPointer<UInt8>) -> (Field, Field, Field, Field)? {
        guard let first = line.firstIndex(of: 0x09),
            let second = line[(first + 1)...].firstIndex(of: 0x09),
            let third = line[(second + 1)...].firstIndex(of: 0x09),
            !line[(third + 1)...].contains(0x09)
        else { return nil }
        return (line[..<first], line[(first + 1)..<second], line[(second + 1)..<third], line[(third + 1)...])
    }

    /// A field as `Int(String)` reads it: plain digits read in place, anything else by `Int`.
    private static func integer(_ field: Slice<UnsafeBufferPointer<UInt8>>) -> Int? {
        guard (1...18).contains(field.count), field.allSatisfy({ (0x30...0x39).contains($0) }) else {
            return Int(String(decoding: field, as: UTF8.self))
        }
        return field.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }
}

/// The rules that need the publication history: an identifier once published stays, and a
/// retired one is never sold again.
public enum HistoryRules {
    /// Errors for every published identifier that `catalog` lost and every retired one it sells again.
    ///
    /// - Parameters:
    ///   - catalog: the app's validated catalog.
    ///   - history: the identifiers of the app's current revision.
    ///   - origin: the file or folder that defines the app, where an identifier missing from it is reported.
    ///   - identifierArray: whether the app's sources are Apple's plain array of identifiers, which
    ///     cannot say 'retired': the error then names the command that converts them.
    /// - Returns: one error per problem; empty when the catalog keeps every rule.
    public static func check(
        _ catalog: AppCatalog, against history: IdentifierHistory, origin: String, identifierArray: Bool = false
    ) -> [Diagnostic] {
        var diagnostics: [Diagnostic] = []
        // Each product looked up in the history's own table, products read in place, and the
        // product at each position of the history kept by index: a table of whole products,
        // copied in and grown as it filled, ran alone on one core for a quarter of a second in
        // every build after the first of a 100,000-product catalog, and a table of the products'
        // ids built for the purpose still took 41 ms (docs/benchmarks.md, "The rebuild" and "The
        // rebuild's diff").
        // Products mostly come in the order they were first published, the history's: each is
        // first compared with the identifier after the last one found, and looked up only when it
        // is not that one (12 ms of one core for 100,000 products looked up, `perf`).
        let products = catalog.products
        let order = history.order
        var productAt = [Int?](repeating: nil, count: order.count)
        var next = 0
        for index in products.indices {
            let id = products[index].id
            guard let position = next < order.count && order[next] == id ? next : history.position(of: id) else { continue }
            productAt[position] = index
            next = position + 1
        }
        for (position, (id, entry)) in zip(order, history.entriesInOrder).enumerated() {
            guard let index = productAt[position] else {
                diagnostics.append(
                    .error(
                        "product '\(id)' was published in revision \(entry.firstRevision) and can never be removed or reused; keep its definition with status 'retired'"
                            + (identifierArray
                                ? " (a plain array of identifiers cannot say that: run 'catalog convert \(catalog.app)' to rewrite it in the full form, then add the product back with status 'retired')"
                                : ""),
                        file: origin, at: .startOfFile))
                continue
            }
            if let retired = entry.retiredRevision, products[index].status != .retired {
                diagnostics.append(
                    .error(
                        "product '\(id)' was retired in revision \(retired); App Store identifiers can never be reused, so it must stay 'retired'",
                        file: products[index].location.file, at: products[index].location.position))
            }
        }
        return diagnostics
    }
}
