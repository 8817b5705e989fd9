import Foundation

/// How far a service that reads a store's history has got (docs/app-store-api.md,
/// "Reconciliation"): the window it is reading, and within it the store's own cursor. Kept after
/// every page it has recorded, so that a run stopped mid-page starts again at that page, and the
/// page's notifications, recorded already, are ignored as duplicates.
public struct PollPosition: Sendable, Hashable {
    /// The app.
    public var app: String
    /// The store whose history this is.
    public var marketplace: Marketplace
    /// Which history (`notificationHistory/production`, ...).
    public var stream: String
    /// The window being read, in milliseconds since 1970: its start, inclusive.
    public var windowStart: Int64
    /// Its end, exclusive.
    public var windowEnd: Int64
    /// The store's cursor for the next page of the window (Apple's `paginationToken`); nil at the
    /// window's start, or once it is done.
    public var cursor: String?
    /// Whether the window has been read to its end.
    public var done: Bool
    /// When this position was written.
    public var updatedAt: Date

    /// A position.
    public init(
        app: String, marketplace: Marketplace, stream: String, windowStart: Int64, windowEnd: Int64, cursor: String?, done: Bool,
        updatedAt: Date
    ) {
        self.app = app
        self.marketplace = marketplace
        self.stream = stream
        self.windowStart = windowStart
        self.windowEnd = windowEnd
        self.cursor = cursor
        self.done = done
        self.updatedAt = updatedAt
    }
}

/// Where poll positions are kept: one per app, store and stream.
public protocol PollPositionStore: Sendable {
    /// The position of `stream`, nil before its first page.
    func pollPosition(app: String, marketplace: Marketplace, stream: String) async throws -> PollPosition?
    /// Replaces the position of its app, store and stream.
    func savePollPosition(_ position: PollPosition) async throws
    /// Every position kept, for `/metrics` and the status page.
    func pollPositions() async throws -> [PollPosition]
}
