import PropertyList

/// What a revision publishes, written last: readers trust only files a manifest names.
///
/// The app's current manifest (`v1/apps/<app>/manifest.json`) is a copy of its newest
/// revision's (`v1/apps/<app>/revisions/<n>/manifest.json`).
public struct RevisionManifest: Codable, Sendable, Hashable {
    public static let currentFormat = 1

    public var format: Int
    public var app: String
    public var revision: Int
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
    public var message: String?
    public var rollbackOf: Int?

    public var selector: VariantSelector {
        VariantSelector(platforms: platforms, bands: bands.compactMap(AppVersion.init))
    }

    public func record(for variant: Variant) -> VariantRecord? {
        variants.first { $0.platform == variant.platformKey && $0.band == variant.bandKey }
    }

    /// The record `variant` switches to at `moment`, if this revision scheduled that moment.
    public func scheduledRecord(at moment: Timestamp, for variant: Variant) -> VariantRecord? {
        schedule?.first { $0.from == moment }?.variants.first { $0.platform == variant.platformKey && $0.band == variant.bandKey }
    }
}

/// The variants as they are from a moment on, until the next scheduled moment.
/// Who publishes a revision and why, recorded in its manifest for `catalog history`.
public struct RevisionNote: Sendable, Hashable {
    public var author: String?
    public var message: String?
    /// The revision whose content is republished: its rich-feed bytes (which carry its number
    /// and time) are reused wherever the content is the same, so feeds and ETags equal its own.
    public var rollbackOf: Int?

    public init(author: String? = nil, message: String? = nil, rollbackOf: Int? = nil) {
        self.author = author
        self.message = message
        self.rollbackOf = rollbackOf
    }
}

public struct ScheduledVariants: Codable, Sendable, Hashable {
    public var from: Timestamp
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
    public var products: FeedRecord
    public var catalog: FeedRecord
    /// Hash of the rich feed without its revision details: unchanged content keeps its old bytes.
    public var catalogContentSHA256: String
    /// The revision whose number and time the rich feed's bytes carry.
    public var catalogRevision: Int
    public var catalogPublishedAt: Timestamp
}

/// One feed's validators.
public struct FeedRecord: Codable, Sendable, Hashable {
    public var sha256: String
    public var bytes: Int
    /// When these bytes were first published; unchanged bytes keep it.
    public var lastModified: Timestamp
    public var gzip: EncodedRecord

    public var entityTag: String { ContentHash.entityTag(sha256: sha256) }
}

/// The gzip copy of a feed: its own bytes, so its own strong validator.
public struct EncodedRecord: Codable, Sendable, Hashable {
    public var sha256: String
    public var bytes: Int

    public var entityTag: String { ContentHash.entityTag(sha256: sha256) }
}

/// Every identifier an app ever published, kept with each revision (`identifiers.tsv`):
/// App Store identifiers can never disappear or be reused, and feedback needs first-seen times.
public struct IdentifierHistory: Sendable, Hashable {
    public struct Entry: Sendable, Hashable {
        public var firstRevision: Int
        public var firstPublishedAt: Timestamp
        /// The revision that first published it as retired.
        public var retiredRevision: Int?
    }

    /// Identifiers in the order they were first published.
    public private(set) var order: [String] = []
    /// The entry of each identifier of `order`, at the same index: writing the history is then
    /// one pass with no lookups.
    private(set) var orderedEntries: [Entry] = []
    /// Where each identifier is in `order`.
    private var positions: [HashedIdentifier: Int] = [:]

    public init() {}

    public subscript(id: String) -> Entry? {
        positions[HashedIdentifier(id)].map { orderedEntries[$0] }
    }

    /// Room for `count` more identifiers: recording every product of a big catalog would
    /// otherwise rehash the table a dozen times.
    public mutating func reserveCapacity(forMore count: Int) {
        positions.reserveCapacity(positions.count + count)
        order.reserveCapacity(order.count + count)
        orderedEntries.reserveCapacity(orderedEntries.count + count)
    }

    public mutating func record(_ id: String, revision: Int, at moment: Timestamp, retired: Bool) {
        let key = HashedIdentifier(id)
        if let index = positions[key] {
            if retired && orderedEntries[index].retiredRevision == nil { orderedEntries[index].retiredRevision = revision }
        } else {
            append(key, Entry(firstRevision: revision, firstPublishedAt: moment, retiredRevision: retired ? revision : nil))
        }
    }

    /// An identifier not recorded yet, last in the order.
    private mutating func append(_ key: HashedIdentifier, _ entry: Entry) {
        positions[key] = order.count
        order.append(key.id)
        orderedEntries.append(entry)
    }

    static let header = "# id\tfirstRevision\tfirstPublishedAt\tretiredRevision"

    public var tsv: [UInt8] {
        var bytes = Array((Self.header + "\n").utf8)
        bytes.reserveCapacity(order.count * 64)
        var timeCache: (Timestamp, [UInt8])?
        for (id, entry) in zip(order, orderedEntries) {
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

    public init(tsv bytes: [UInt8]) throws {
        for line in bytes.split(separator: 0x0A) where line.first != UInt8(ascii: "#") {
            let fields = line.split(separator: 0x09, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
            guard fields.count == 4, let first = Int(fields[1]), let moment = Timestamp(iso8601: fields[2]) else {
                throw CatalogError.corruptPublication(
                    path: "identifiers.tsv", message: "bad line '\(String(decoding: line, as: UTF8.self))'")
            }
            let key = HashedIdentifier(fields[0])
            guard positions[key] == nil else {
                throw CatalogError.corruptPublication(path: "identifiers.tsv", message: "'\(fields[0])' is listed twice")
            }
            append(key, Entry(firstRevision: first, firstPublishedAt: moment, retiredRevision: Int(fields[3])))
        }
    }
}

/// The rules that need the publication history: an identifier once published stays, and a
/// retired one is never sold again.
public enum HistoryRules {
    public static func check(_ catalog: AppCatalog, against history: IdentifierHistory, origin: String) -> [Diagnostic] {
        var diagnostics: [Diagnostic] = []
        var byID: [String: Product] = [:]
        for product in catalog.products { byID[product.id] = product }
        for (id, entry) in zip(history.order, history.orderedEntries) {
            guard let product = byID[id] else {
                diagnostics.append(
                    .error(
                        "product '\(id)' was published in revision \(entry.firstRevision) and can never be removed or reused; keep its definition with status 'retired'",
                        file: origin, at: .startOfFile))
                continue
            }
            if let retired = entry.retiredRevision, product.status != .retired {
                diagnostics.append(
                    .error(
                        "product '\(id)' was retired in revision \(retired); App Store identifiers can never be reused, so it must stay 'retired'",
                        file: product.location.file, at: product.location.position))
            }
        }
        return diagnostics
    }
}
