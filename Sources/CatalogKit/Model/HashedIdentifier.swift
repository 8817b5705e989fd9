/// A product identifier with its hash computed once, as a table key compared by hash before
/// bytes: catalog ids share long prefixes (`com.example.app.…`), and comparing the strings at
/// every occupied slot a lookup probes was most of the time of tables with a key per product.
struct HashedIdentifier: Hashable, Sendable {
    let id: String
    private let hash: Int

    init(_ id: String) {
        self.id = id
        hash = id.hashValue
    }

    func hash(into hasher: inout Hasher) { hasher.combine(hash) }

    static func == (left: HashedIdentifier, right: HashedIdentifier) -> Bool { left.hash == right.hash && left.id == right.id }
}
