import Testing

@testable import Ledger

/// The webhook events the ledger derives (docs/purchases.md, "Webhooks").
@Suite struct WebhookEventTests {
    @Test func webhookEventIdsKeepTheirSpelling() {
        // Event ids are the outbox's unique key: a new spelling would enqueue an event twice across an
        // upgrade. The value is Python's: the first 16 bytes of sha256(b"com.example.app\0renewed\0" …).
        #expect(
            WebhookEvent.eventId(["com.example.app", "renewed", "1000", "1001"]) == "f02be1c2-4611-6113-7e8d-16d5dbdcf0d8")
    }
}
