import Foundation

/// What a round of sending a durable queue tells its caller: when to try again, if it must wait.
protocol QueueDelivery: Sendable {
    /// When the next round may send, after a back-off; nil to send at once.
    var nextAttempt: Date? { get }
}

/// An outbox that sends its durable queue in rounds (``ReportOutbox``, ``PurchaseOutbox``): one
/// round at a time, and, when sending is automatic, a background loop of rounds until the queue is
/// empty, sleeping out each back-off. What a round sends and how it backs off is each outbox's own.
protocol QueueSender: Actor {
    associatedtype Delivery: QueueDelivery
    /// The round running, which a second caller waits for.
    var round: Task<Delivery, Never>? { get set }
    /// The background loop, while it runs.
    var background: Task<Void, Never>? { get set }
    /// Whether nothing is queued.
    var queueIsEmpty: Bool { get }
    /// One round: sends what is due.
    func sendRound() async -> Delivery
}

extension QueueSender {
    /// One round at a time: a call while a round runs waits for that round.
    func sendPending() async -> Delivery {
        if let round { return await round.value }
        let task = Task { await self.sendRound() }
        round = task
        let delivery = await task.value
        round = nil
        return delivery
    }

    /// Starts the background loop unless it runs.
    func startSending() {
        guard background == nil else { return }
        background = Task { await self.sendInBackground() }
    }

    private func sendInBackground() async {
        while !Task.isCancelled {
            let delivery = await sendPending()
            // No suspension between this check and clearing `background`: an item queued before
            // it is seen here, one queued after it starts a new loop.
            if queueIsEmpty { break }
            let wait = max(delivery.nextAttempt?.timeIntervalSinceNow ?? 0, 0)
            try? await Task.sleep(nanoseconds: UInt64(wait * 1_000_000_000))
        }
        background = nil
    }
}
