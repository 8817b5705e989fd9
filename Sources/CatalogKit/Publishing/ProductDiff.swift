import Foundation

/// The product-level changes between two product snapshots (a revision's `products.jsonl.gz`,
/// or what a build would publish): what `build --dry-run`, `catalog diff` and `catalog history` show.
///
/// A quarantine is the feedback loop's verdict, not an editor's change, so it is kept apart:
/// a product whose only change is its quarantine is in ``quarantined`` or ``released``, not in
/// ``changed``.
public struct ProductDiff: Sendable, Hashable {
    /// A product whose fields changed.
    public struct Change: Sendable, Hashable {
        /// The product's identifier.
        public var id: String
        /// Field by field, nested fields by dotted path: "status cleared → retired",
        /// "metadata.price 0.99 → 1.99", "referenceName added: Level 2".
        public var details: [String]

        /// A change with its details.
        public init(id: String, details: [String]) {
            self.id = id
            self.details = details
        }
    }

    /// A product that the feedback loop took off sale.
    public struct Quarantine: Sendable, Hashable {
        /// The product's identifier.
        public var id: String
        /// Why it was quarantined, from the feedback file.
        public var reason: String

        /// A quarantine with its reason.
        public init(id: String, reason: String) {
            self.id = id
            self.reason = reason
        }
    }

    /// Identifiers new in the new snapshot, in its order.
    public var added: [String] = []
    /// Products in both snapshots whose fields changed, besides their quarantine, in the new snapshot's order.
    public var changed: [Change] = []
    /// Identifiers in the old snapshot only, in its order.
    public var removed: [String] = []
    /// Products taken off sale by the feedback loop (added ones included).
    public var quarantined: [Quarantine] = []
    /// Products whose quarantine was lifted.
    public var released: [String] = []

    /// The snapshot key the feedback loop's verdict is written under.
    static let quarantineKey = "quarantine"

    /// The diff of a first publication: everything is new.
    public init(added: [String]) {
        self.added = added
    }

    /// The diff between two snapshots' lines (each product's JSON by identifier, in source order).
    ///
    /// - Throws: when a line that differs is not JSON.
    public init(old: [(id: String, json: [UInt8])], new: [(id: String, json: [UInt8])]) throws {
        try self.init(oldLines: old, newLines: new)
    }

    /// The same, with lines that may be slices of their snapshot's bytes (``Comparison``).
    init<Old: Collection<UInt8>, New: Collection<UInt8>>(oldLines old: [(id: String, json: Old)], newLines new: [(id: String, json: New)])
        throws
    {
        var comparison = Comparison(old: old)
        for entry in new { try comparison.compare(id: entry.id, json: entry.json) }
        self = comparison.finished()
    }

    /// Whether nothing changed, quarantines included.
    public var isEmpty: Bool {
        added.isEmpty && changed.isEmpty && removed.isEmpty && quarantined.isEmpty && released.isEmpty
    }

    /// The summary, or that there is nothing to summarise.
    public var outline: String { isEmpty ? "no product changes" : summary }

    /// Counts such as "1 added, 2 changed, 1 quarantined", empty kinds left out.
    public var summary: String {
        let counts = [
            (added.count, "added"), (changed.count, "changed"), (removed.count, "removed"),
            (quarantined.count, "quarantined"), (released.count, "released"),
        ]
        return counts.filter { $0.0 > 0 }.map { "\($0.0) \($0.1)" }.joined(separator: ", ")
    }

    private static func object(_ json: some Collection<UInt8>) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(json)) as? [String: Any] ?? [:]
    }

    /// Every field that differs, in key order; both sides' objects are compared field by field.
    private static func describe(_ old: [String: Any], _ new: [String: Any], path: String) -> [String] {
        var details: [String] = []
        for key in Set(old.keys).union(new.keys).sorted() {
            let name = path + key
            switch (old[key], new[key]) {
            case (let a as [String: Any], let b as [String: Any]):
                details += describe(a, b, path: name + ".")
            case (let a?, let b?):
                // Compared as JSON with sorted keys: the same text for the same value and type.
                if json(a) != json(b) { details.append("\(name) \(text(a)) → \(text(b))") }
            case (nil, let b?):
                details.append("\(name) added: \(text(b))")
            case (let a?, nil):
                details.append("\(name) removed (was \(text(a)))")
            case (nil, nil):
                break
            }
        }
        return details
    }

    /// A value as an editor reads it: strings bare, anything else as compact JSON.
    private static func text(_ value: Any) -> String {
        (value as? String) ?? json(value)
    }

    private static func json(_ value: Any) -> String {
        let options: JSONSerialization.WritingOptions = [.sortedKeys, .fragmentsAllowed, .withoutEscapingSlashes]
        guard let data = try? JSONSerialization.data(withJSONObject: value, options: options) else { return "\(value)" }
        return String(decoding: data, as: UTF8.self)
    }
}

extension ProductDiff {
    /// A diff made one new line at a time against an old snapshot held by id: a build compares
    /// each product's line as it encodes it, so that neither its whole new snapshot nor a copy
    /// of each line is ever held (docs/benchmarks.md, "The rebuild"). Lines may be slices of
    /// their snapshot's bytes.
    struct Comparison<Old: Collection<UInt8>> {
        private let old: [(id: String, json: Old)]
        /// Each id's line in `old`: the last, if a snapshot repeats one.
        private var lineOfID: [String: Int] = [:]
        /// Whether each old line's id has come in the new lines: flags by line, not a set of
        /// ids, so that the old lines not seen are found without hashing every id once more.
        private var seen: [Bool]
        /// For each old line, the line its id indexes; nil while every id is on one line.
        private var lineOfRepeatedID: [Int]?
        private var diff = ProductDiff(added: [])
        /// Lines are compared as bytes first: only the few that differ are parsed.
        private let marker = Array("\"\(ProductDiff.quarantineKey)\":".utf8)

        /// A comparison with `old`.
        init(old: [(id: String, json: Old)]) {
            self.old = old
            seen = [Bool](repeating: false, count: old.count)
            // Sized once: grown as it filled, the table rehashed 100,000 ids again and again in
            // every build after the first of a big catalog.
            lineOfID.reserveCapacity(old.count)
            var repeated = false
            for (line, entry) in old.enumerated() where lineOfID.updateValue(line, forKey: entry.id) != nil {
                repeated = true
            }
            if repeated { lineOfRepeatedID = old.map { lineOfID[$0.id]! } }
        }

        /// Compares the next new line, in the new snapshot's order.
        ///
        /// - Throws: when a line that differs is not JSON.
        mutating func compare(id: String, json: some Collection<UInt8>) throws {
            guard let line = lineOfID[id] else {
                diff.added.append(id)
                if json.firstRange(of: marker) != nil, let reason = try ProductDiff.object(json)[ProductDiff.quarantineKey] as? String {
                    diff.quarantined.append(Quarantine(id: id, reason: reason))
                }
                return
            }
            seen[line] = true
            let before = old[line].json
            guard !Self.sameBytes(before, json) else { return }
            var oldObject = try ProductDiff.object(before)
            var newObject = try ProductDiff.object(json)
            let wasQuarantined = oldObject.removeValue(forKey: ProductDiff.quarantineKey) as? String
            let reason = newObject.removeValue(forKey: ProductDiff.quarantineKey) as? String
            if let reason, wasQuarantined == nil { diff.quarantined.append(Quarantine(id: id, reason: reason)) }
            if reason == nil, wasQuarantined != nil { diff.released.append(id) }
            let details = ProductDiff.describe(oldObject, newObject, path: "")
            if !details.isEmpty { diff.changed.append(Change(id: id, details: details)) }
        }

        /// The diff, once every new line is compared: the old lines not seen are removed.
        func finished() -> ProductDiff {
            var finished = diff
            finished.removed = old.indices.filter { !seen[lineOfRepeatedID?[$0] ?? $0] }.map { old[$0].id }
            return finished
        }

        /// Whether two lines hold the same bytes: one `memcmp` where both are contiguous (slices
        /// and arrays are). Compared element by element, and with a set of the ids seen, the
        /// 100,000 lines of the benchmark's catalog took 73 ms of a rebuild's critical path, and
        /// finding the old lines not seen 36 ms more; now 26 ms and nothing (docs/benchmarks.md,
        /// "The rebuild's diff").
        private static func sameBytes(_ a: Old, _ b: some Collection<UInt8>) -> Bool {
            let compared = a.withContiguousStorageIfAvailable { a in
                b.withContiguousStorageIfAvailable { b in
                    a.count == b.count && (a.isEmpty || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
                }
            }
            return (compared ?? nil) ?? a.elementsEqual(b)
        }
    }
}

extension ProductDiff.Comparison: Sendable where Old: Sendable {}
