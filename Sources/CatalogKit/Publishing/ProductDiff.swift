import Foundation

/// The product-level changes between two revisions' snapshots, as `--dry-run` prints them.
public struct ProductDiff: Sendable, Hashable {
    public struct Change: Sendable, Hashable {
        public var id: String
        /// Readable summaries such as "status cleared → retired" or "metadata changed".
        public var details: [String]
    }

    public var added: [String] = []
    public var changed: [Change] = []
    public var removed: [String] = []

    /// The diff of a first publication: everything is new.
    public init(added: [String]) {
        self.added = added
    }

    public init(old: [(id: String, json: [UInt8])], new: [(id: String, json: [UInt8])]) throws {
        var oldByID: [String: [UInt8]] = [:]
        for entry in old { oldByID[entry.id] = entry.json }
        var seen = Set<String>()
        for entry in new {
            seen.insert(entry.id)
            guard let before = oldByID[entry.id] else {
                added.append(entry.id)
                continue
            }
            if before != entry.json {
                changed.append(Change(id: entry.id, details: try Self.describe(before, entry.json)))
            }
        }
        removed = old.map(\.id).filter { !seen.contains($0) }
    }

    private static func describe(_ before: [UInt8], _ after: [UInt8]) throws -> [String] {
        let old = try JSONSerialization.jsonObject(with: Data(before)) as? NSDictionary ?? [:]
        let new = try JSONSerialization.jsonObject(with: Data(after)) as? NSDictionary ?? [:]
        let keys = Set((old.allKeys + new.allKeys).compactMap { $0 as? String }).sorted()
        var details: [String] = []
        for key in keys {
            let a = old[key]
            let b = new[key]
            if let a = a as? NSObject, let b = b as? NSObject, a.isEqual(b) { continue }
            if a == nil && b == nil { continue }
            if let a = a as? String, let b = b as? String {
                details.append("\(key) \(a) → \(b)")
            } else if a == nil {
                details.append("\(key) added")
            } else if b == nil {
                details.append("\(key) removed")
            } else {
                details.append("\(key) changed")
            }
        }
        return details
    }
}
