import CatalogKit
import Foundation
import NIOCore
import Time

/// What `catalog serve` answers with, and how.
public struct ServeConfiguration: Sendable {
    /// Cache-Control of the current feeds.
    public var cacheControl = "public, max-age=300"
    /// Cache-Control of revision snapshots, which never change.
    public var immutableCacheControl = "public, max-age=31536000, immutable"
    /// Each request must be read completely within this time of its first byte, however steadily
    /// its bytes trickle in; a client that reads none of its answers for this long is closed too.
    public var readDeadline: TimeAmount = .seconds(10)
    /// A keep-alive connection with no request in progress and nothing unanswered closes after this.
    public var idleTimeout: TimeAmount = .seconds(30)
    /// Open connections at most; one past it is closed as soon as it is accepted.
    public var maxConnections = defaultMaxConnections()
    /// What each request logs (`--access-log`, `--access-log-feed-sample`).
    public var accessLog = AccessLog()
    /// The time responses are dated by and scheduled changes switch at; tests fix it (and with it
    /// ``instant``, so that a fixed clock fixes both).
    public var clock: @Sendable () -> Timestamp = { .now } {
        didSet {
            let clock = clock
            instant = { Date(timeIntervalSince1970: TimeInterval(clock().secondsSince1970)) }
        }
    }
    /// The instant purchases are recorded and customers read at, to the millisecond: a purchase
    /// made within the current second is held at once, where whole seconds would say not yet.
    public var instant: @Sendable () -> Date = { Date() }
    /// A serving replica (`catalog serve --feeds store`): its feeds come from the shared store,
    /// it holds no catalog sources, and `/v1/admin/` sends editors to the editor node.
    public var isReplica = false
    /// Purchased content: its keys and URL lifetime; without keys, the content endpoints answer 503.
    public var content = ContentConfiguration()

    public init() {}
}
