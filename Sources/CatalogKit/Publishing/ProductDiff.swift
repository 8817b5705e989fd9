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
        var comparison = Comparison(ids: old.map(\.id), lines: HeldLines(old.map(\.json)))
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
    /// A diff made one new line at a time against an old snapshot: a build compares each
    /// product's line as it encodes it, so that its whole new snapshot is never held
    /// (docs/benchmarks.md, "The rebuild").
    ///
    /// Nor is the old one: it is known by the id of each line, and its lines are read again in
    /// order as the new ones come (``SnapshotLines``). A new line is compared with the old line of
    /// the same id; old lines read past before their id comes are copied aside until it does.
    /// Products mostly keep their order from one revision to the next, so few are, and the old
    /// snapshot's 25 MB of lines for 100,000 products are no longer held for the whole plan
    /// (docs/benchmarks.md, "The rebuild's memory").
    struct Comparison<Lines: SnapshotLines> {
        /// The old lines, read in step with the new ones.
        private let lines: Lines
        /// Each old id once, in the order first seen, with the last line that holds it: the one
        /// compared, if a snapshot repeats an id.
        private var lastLineOf = IdentifierTable<Int>()
        /// The row in ``lastLineOf`` of each old line's id.
        private var rowOfLine: [Int32] = []
        /// Whether each old id, by row, has come in the new lines.
        private var seen: [Bool]
        /// The old line ``lines`` gives next.
        private var nextLine = 0
        /// Old lines read past before their id came, by line: products the new snapshot has in
        /// another order, or no longer has.
        private var readAhead: [Int: [UInt8]] = [:]
        private var diff = ProductDiff(added: [])
        /// Lines are compared as bytes first: only the few that differ are parsed.
        private let marker = Array("\"\(ProductDiff.quarantineKey)\":".utf8)

        /// A comparison with the old snapshot whose lines have `ids`, in order, and are read again
        /// from `lines`.
        init(ids: [String], lines: Lines) {
            self.lines = lines
            // Sized once: grown as it filled, a table rehashed 100,000 ids again and again in
            // every build after the first of a big catalog.
            lastLineOf.reserveCapacity(ids.count)
            rowOfLine.reserveCapacity(ids.count)
            for (line, id) in ids.enumerated() {
                let row = lastLineOf.insert(id, line) ?? lastLineOf.count - 1
                lastLineOf[row: row] = line
                rowOfLine.append(Int32(row))
            }
            seen = [Bool](repeating: false, count: lastLineOf.count)
        }

        /// Compares the next new line, in the new snapshot's order. A new id that comes twice is
        /// compared once.
        ///
        /// - Throws: when a line that differs is not JSON, or the old lines cannot be read again.
        mutating func compare(id: String, json: some Collection<UInt8>) throws {
            // The next old line's id first: a table lookup hashes the id.
            let row: Int
            if nextLine < rowOfLine.count, lastLineOf.keys[Int(rowOfLine[nextLine])] == id {
                row = Int(rowOfLine[nextLine])
            } else if let found = lastLineOf.row(of: id) {
                row = found
            } else {
                diff.added.append(id)
                if json.firstRange(of: marker) != nil, let reason = try ProductDiff.object(json)[ProductDiff.quarantineKey] as? String {
                    diff.quarantined.append(Quarantine(id: id, reason: reason))
                }
                return
            }
            guard !seen[row] else { return }
            seen[row] = true
            let line = lastLineOf[row: row]
            let change: LineChange?
            if line < nextLine {
                // Every line passed whose id had not come yet was kept.
                change = try readAhead.removeValue(forKey: line)!.withUnsafeBytes { try LineChange(old: $0, new: json) }
            } else {
                while nextLine < line {
                    let passed = Int(rowOfLine[nextLine])
                    let keep = !seen[passed] && lastLineOf[row: passed] == nextLine
                    if let copy = try readNextLine({ keep ? Array($0) : nil }) { readAhead[nextLine - 1] = copy }
                }
                change = try readNextLine { try LineChange(old: $0, new: json) }
            }
            guard let change else { return }
            if let reason = change.quarantined { diff.quarantined.append(Quarantine(id: id, reason: reason)) }
            if change.released { diff.released.append(id) }
            if !change.details.isEmpty { diff.changed.append(Change(id: id, details: change.details)) }
        }

        /// Lends the old line ``nextLine`` to `body`, and moves past it.
        private mutating func readNextLine<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
            // The lines were counted from the same bytes: fewer now means they changed.
            guard let result = try lines.withNextLine(body) else { throw Gzip.Invalid() }
            nextLine += 1
            return result
        }

        /// How the old and the new line of one id differ.
        private struct LineChange {
            /// The new line's quarantine reason, when the old line had none.
            var quarantined: String?
            /// The old line had a quarantine and the new one has none.
            var released = false
            /// Every other field that differs (``ProductDiff/describe(_:_:path:)``).
            var details: [String]

            /// nil when the lines are the same bytes.
            init?(old: UnsafeRawBufferPointer, new: some Collection<UInt8>) throws {
                guard !Self.sameBytes(old, new) else { return nil }
                var oldObject = try ProductDiff.object(old)
                var newObject = try ProductDiff.object(new)
                let wasQuarantined = oldObject.removeValue(forKey: ProductDiff.quarantineKey) as? String
                let reason = newObject.removeValue(forKey: ProductDiff.quarantineKey) as? String
                quarantined = wasQuarantined == nil ? reason : nil
                released = reason == nil && wasQuarantined != nil
                details = ProductDiff.describe(oldObject, newObject, path: "")
            }

            /// Whether two lines hold the same bytes: one `memcmp` where the new one is contiguous
            /// (slices and arrays are). Compared element by element, and with a set of the ids
            /// seen, the 100,000 lines of the benchmark's catalog took 73 ms of a rebuild's critical
            /// path, and finding the old lines not seen 36 ms more; then 26 ms and nothing
            /// (docs/benchmarks.md, "The rebuild's diff").
            private static func sameBytes(_ a: UnsafeRawBufferPointer, _ b: some Collection<UInt8>) -> Bool {
                let compared = b.withContiguousStorageIfAvailable { b in
                    a.count == b.count && (a.isEmpty || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
                }
                return compared ?? a.elementsEqual(b)
            }
        }

        /// The diff, once every new line is compared: the old lines whose ids did not come are
        /// removed, in the old snapshot's order.
        func finished() -> ProductDiff {
            var finished = diff
            finished.removed = rowOfLine.compactMap { seen[Int($0)] ? nil : lastLineOf.keys[Int($0)] }
            return finished
        }
    }
}

extension ProductDiff.Comparison: Sendable where Lines: Sendable {}

/// An old snapshot's lines, read in order, each lent until the next is read: from its gzip member
/// (``Gzip/Lines``), or held in memory (``HeldLines``).
protocol SnapshotLines: AnyObject {
    /// Lends the next line, without its newline, to `body`; nil after the last.
    func withNextLine<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R?
}

extension Gzip.Lines: SnapshotLines {}

/// Lines already in memory, one by one.
final class HeldLines<Line: Collection<UInt8>>: SnapshotLines {
    private let lines: [Line]
    private var next = 0

    init(_ lines: [Line]) {
        self.lines = lines
    }

    func withNextLine<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        guard next < lines.count else { return nil }
        defer { next += 1 }
        let line = lines[next]
        return try line.withContiguousStorageIfAvailable { try body(UnsafeRawBufferPointer($0)) } ?? Array(line).withUnsafeBytes(body)
    }
}
