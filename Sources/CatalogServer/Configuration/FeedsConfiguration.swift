/// Where the feeds `catalog serve` answers come from, how clients may cache them, and what the
/// server publishes by itself (docs/operations.md, "Replicas").
public struct FeedsConfiguration: Sendable {
    /// The editor node serves its published tree; a replica what the PostgreSQL store holds.
    public enum Source: String, Sendable, CaseIterable {
        case `public`, store
    }

    /// `--feeds`.
    public var source = Source.public
    /// A replica's folder of the feeds it received (`--feeds-cache`); nil: a temporary one.
    public var cache: String?
    /// How often a replica asks the store for new publications besides its announcements.
    public var poll: Duration = .seconds(2)
    /// Cache-Control of the current feeds (``ServeConfiguration/cacheControl``).
    public var cacheControl = ServeConfiguration().cacheControl
    /// How often the editor node runs the feedback loop and publishes (`--auto-feedback`); nil: never.
    public var autoFeedback: Duration?

    /// The defaults of `catalog serve`.
    public init() {}

    /// Whether this node is a serving replica.
    public var isReplica: Bool { source == .store }
}
