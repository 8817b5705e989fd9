import Testing

@testable import CatalogClient

/// The names of queued report and purchase files: an outbox sends and trims its queue in their
/// order, which must be the order the files were queued.
@Suite struct QueuedNameTests {
    /// A thousand names made as fast as possible, most within one millisecond, sort as they were
    /// made; each keeps the `<milliseconds>-<id>.json` form an outbox reads its id from.
    @Test func namesSortInTheOrderTheyWereMade() {
        let ids = (0..<1000).map { _ in String(UInt64.random(in: 0...UInt64.max), radix: 16) }
        let names = ids.map { DurableFile.queuedName(id: $0) }
        #expect(zip(names, names.dropFirst()).allSatisfy { $0 < $1 })
        for (name, id) in zip(names, ids) {
            #expect(name.hasSuffix("-\(id).json"))
            #expect(name.prefix { $0 != "-" }.count == 15)
        }
    }
}
