import Testing

@testable import CatalogKit

/// The table behind the duplicate rule and the identifier history: every row found again
/// through every growth of its index, in the order the rows were added.
@Suite struct IdentifierTableTests {
    /// Ids with the long shared prefix of a real catalog, so that only hashes tell them apart quickly.
    static func id(_ number: Int) -> String { "com.example.app.product.\(number)" }

    @Test func everyRowIsFoundAgainAsTheIndexGrows() {
        var table = IdentifierTable<Int>()
        #expect(table[Self.id(0)] == nil, "an empty table finds nothing")
        for number in 0..<5_000 {
            #expect(table.insert(Self.id(number), number * 10) == nil)
            // Checked at every size, right after each growth included.
            #expect(table.row(of: Self.id(number)) == number)
            #expect(table.row(of: Self.id(number / 2)) == number / 2)
        }
        #expect(table.count == 5_000)
        #expect(table.keys == (0..<5_000).map(Self.id))
        #expect(table.values == (0..<5_000).map { $0 * 10 })
        for number in 0..<5_000 { #expect(table[Self.id(number)] == number * 10) }
        for number in 5_000..<6_000 { #expect(table[Self.id(number)] == nil) }
        #expect(table["com.example.app.product."] == nil)
        #expect(table[""] == nil)
    }

    @Test func anIdAddedAgainKeepsItsFirstRowAndValue() {
        var table = IdentifierTable<String>()
        table.insert("com.example.a", "first")
        table.insert("com.example.b", "second")
        #expect(table.insert("com.example.a", "again") == 0)
        #expect(table.insert("com.example.b", "again") == 1)
        #expect(table.keys == ["com.example.a", "com.example.b"])
        #expect(table.values == ["first", "second"])
        table[row: 1] = "changed"
        #expect(table["com.example.b"] == "changed")
        // Identifiers are compared as strings, as everywhere else in the catalog: canonically
        // equivalent spellings are one identifier.
        table.insert("caf\u{E9}", "composed")
        #expect(table.insert("cafe\u{301}", "decomposed") == 2)
    }

    @Test func roomReservedFirstChangesNothingButTheGrowth() {
        var grown = IdentifierTable<Int>()
        var reserved = IdentifierTable<Int>()
        reserved.reserveCapacity(1_000)
        reserved.reserveCapacity(10)
        for number in (0..<1_000).reversed() {
            grown.insert(Self.id(number), number)
            reserved.insert(Self.id(number), number)
        }
        #expect(grown == reserved)
        #expect(grown.hashValue == reserved.hashValue)
        for number in 0..<1_000 { #expect(reserved.row(of: Self.id(number)) == 999 - number) }
        reserved.insert("one more", 0)
        #expect(grown != reserved)
    }

    /// Ids added again mostly come in the table's order, which is tried first: in order, out of
    /// order, with new ids between them, each finds its own row, and only new ids get new rows.
    @Test func idsAddedAgainInAnyOrderFindTheirRows() {
        var table = IdentifierTable<Int>()
        for number in 0..<300 { table.insert(Self.id(number), number) }
        var order = Array(0..<300)
        order.swapAt(10, 200)
        order.insert(contentsOf: [1_000, 1_001], at: 50)
        order += [0, 299, 1_000]
        var added = Set(0..<300)
        for number in order {
            let row = number < 300 ? number : 300 + number - 1_000
            #expect(table.insert(Self.id(number), -number) == (added.contains(number) ? row : nil), "\(number)")
            added.insert(number)
        }
        #expect(table.count == 302)
        #expect(table.keys == (0..<300).map(Self.id) + [Self.id(1_000), Self.id(1_001)])
        #expect(table.values == Array(0..<300) + [-1_000, -1_001])
    }
}
