/// A table from product identifiers to values, for the tables with a row per product of a big
/// catalog: its rows stay in the order they were added, and the index that finds them holds only
/// each row's hash and position.
///
/// Growing it moves those 16 bytes a row, in order, and hashes nothing again. A `Dictionary` keyed
/// by identifier hashed every key again each time it grew: for 100,000 products, its last growth
/// fell at the end of reading, 12 ms of one core with the other idle (docs/benchmarks.md, "The
/// identifier tables"). A lookup compares hashes first and reads a row's identifier only when they
/// match: catalog ids share long prefixes (`com.example.app.…`).
struct IdentifierTable<Value> {
    /// The identifiers, in the order they were added.
    private(set) var keys: [String] = []
    /// The value of each identifier of ``keys``, at the same index.
    private(set) var values: [Value] = []
    /// Open addressing with linear probing: each slot is empty (hash 0) or a row's hash and index.
    /// A slot's home is its hash's top bits, so that growing to twice the slots moves the rows in
    /// the order they sit in.
    private var slots: [Slot] = []
    /// log2 of the slot count; 0 while there are none.
    private var bits = 0
    /// The row ``insert(_:_:)`` last found, from which it looks at the next one first; -1 while
    /// it has found none (a table being filled has nothing to find again).
    private var lastFound = -1

    private struct Slot {
        /// The identifier's hash, never 0 (``hash(_:)``); 0 for an empty slot.
        var hash: UInt64
        var row: Int
    }

    init() {}

    /// The number of rows.
    var count: Int { keys.count }

    /// Room for `count` rows in all, so that adding them grows nothing.
    mutating func reserveCapacity(_ count: Int) {
        keys.reserveCapacity(count)
        values.reserveCapacity(count)
        if Self.slotBits(for: count) > bits { resize(to: Self.slotBits(for: count)) }
    }

    /// The row of `id`, if it has one.
    func row(of id: String) -> Int? {
        guard bits > 0 else { return nil }
        let hash = Self.hash(id)
        var slot = home(hash)
        while slots[slot].hash != 0 {
            if slots[slot].hash == hash, keys[slots[slot].row] == id { return slots[slot].row }
            slot = (slot + 1) & (slots.count - 1)
        }
        return nil
    }

    /// The value of `id`, if it has a row.
    subscript(id: String) -> Value? {
        row(of: id).map { values[$0] }
    }

    /// The value of the row at `row`.
    subscript(row row: Int) -> Value {
        get { values[row] }
        set { values[row] = newValue }
    }

    /// Adds a row for `id` with `value`, last; when `id` has a row already, changes nothing and
    /// returns that row. One probe either way.
    @discardableResult
    mutating func insert(_ id: String, _ value: Value) -> Int? {
        // Identifiers mostly come again in the order they were added (each build records its
        // products in the history, in source order): the row after the last one found is compared
        // first, without hashing or probing (docs/benchmarks.md, "The rebuild's memory").
        if lastFound >= 0, lastFound + 1 < keys.count, keys[lastFound + 1] == id {
            lastFound += 1
            return lastFound
        }
        if Self.slotBits(for: keys.count + 1) > bits { resize(to: Self.slotBits(for: keys.count + 1)) }
        let hash = Self.hash(id)
        var slot = home(hash)
        while slots[slot].hash != 0 {
            if slots[slot].hash == hash, keys[slots[slot].row] == id {
                lastFound = slots[slot].row
                return lastFound
            }
            slot = (slot + 1) & (slots.count - 1)
        }
        slots[slot] = Slot(hash: hash, row: keys.count)
        keys.append(id)
        values.append(value)
        return nil
    }

    /// At most three quarters of the slots are used, so that a probe for a missing id (every
    /// new row's) ends after a few slots.
    private static func slotBits(for count: Int) -> Int {
        var bits = 3
        while count > (3 << bits) / 4 { bits += 1 }
        return bits
    }

    /// The slot a hash is looked for from: its top `bits` bits.
    private func home(_ hash: UInt64) -> Int {
        Int(truncatingIfNeeded: hash >> UInt64(64 - bits))
    }

    /// The hash of `id`: Swift's (seeded per process, so no source can choose collisions), with 0
    /// kept for empty slots.
    private static func hash(_ id: String) -> UInt64 {
        let hash = UInt64(bitPattern: Int64(id.hashValue))
        return hash == 0 ? 1 : hash
    }

    private mutating func resize(to newBits: Int) {
        let old = slots
        bits = newBits
        slots = Array(repeating: Slot(hash: 0, row: 0), count: 1 << newBits)
        // In slot order, each row lands at or after where the one before it did, except for the
        // few that wrapped around the end.
        for slot in old where slot.hash != 0 {
            var index = home(slot.hash)
            while slots[index].hash != 0 { index = (index + 1) & (slots.count - 1) }
            slots[index] = slot
        }
    }
}

extension IdentifierTable: Sendable where Value: Sendable {}

extension IdentifierTable: Equatable where Value: Equatable {
    /// The same rows in the same order, however the index was grown.
    static func == (left: Self, right: Self) -> Bool {
        left.keys == right.keys && left.values == right.values
    }
}

extension IdentifierTable: Hashable where Value: Hashable {
    func hash(into hasher: inout Hasher) {
        hasher.combine(keys)
        hasher.combine(values)
    }
}
