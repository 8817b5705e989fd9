import CatalogKit
import CatalogTestSupport
import Foundation
import GooglePlay
import Ledger
import Logging
import OutboundAPI
import PlayAPIStandIn
import Storage
import Testing

@testable import PlayDeveloperAPI

/// Voided purchases (docs/google-play.md, "Voided purchases"): what Google refunded is revoked in the
/// ledger, once, and a poll stopped between pages resumes where it was.
enum VoidedPollScenarios {
    static let app = "com.example.game"
    static let account = "22222222-2222-4222-8222-222222222222"

    static func bought(_ order: String, token: String) throws -> PlayProductPurchase {
        let json: [String: Any] = [
            "purchaseStateContext": ["purchaseState": "PURCHASED"], "orderId": order, "purchaseCompletionTime": "2026-06-01T10:00:00Z",
            "obfuscatedExternalAccountId": account,
            "productLineItem": [["productId": "gems", "productOfferDetails": ["quantity": 5]]],
        ]
        return try JSONDecoder().decode(PlayProductPurchase.self, from: JSONSerialization.data(withJSONObject: json))
    }

    static func credits(_ store: any Store, at: Date) async throws -> Int {
        guard let customer = try await store.customer(app: app, id: account) else { return -1 }
        let ledger = Ledger(
            transactions: customer.transactions, states: customer.states, environment: .production,
            catalog: LedgerCatalog(products: ["com.example.game.gems": LedgerProduct(entitlements: ["com.example.game.gems"])]))
        return ledger.credits(at: at)["com.example.game.gems"] ?? 0
    }

    static func aRefundIsRevokedOnceAndAStoppedPollResumes(open: () async throws -> any Store) async throws {
        let setup = try await PlayAPIClientTests.Setup.make(policy: APIRetryPolicy(maximumAttempts: 1))
        setup.clock.set("2026-06-10T12:00:00Z")
        let store = try await open()
        do {
            try await run(setup, store)
        } catch {
            try? await store.close()
            try await setup.stop()
            throw error
        }
        try await store.close()
        try await setup.stop()
    }

    private static func run(_ setup: PlayAPIClientTests.Setup, _ store: any Store) async throws {
        let record: PlayLedgerRecorder = { app, values in
            _ = try await store.record([values.submission(app: app, receivedAt: Date(), source: .storeAPI)])
        }
        let answered = setup.clock.now.addingTimeInterval(-86_400)
        for (order, token) in [("GPA.a", "token-a"), ("GPA.b", "token-b"), ("GPA.c", "token-c")] {
            try await record(
                app,
                try Self.bought(order, token: token).ledgerValues(
                    token: token, answeredAt: answered, catalog: AcknowledgementScenarios.catalog))
        }
        #expect(try await credits(store, at: setup.clock.now) == 15)
        let voidedAt = Int64(setup.clock.now.timeIntervalSince1970 * 1000) - 3_600_000
        for (index, order) in ["GPA.a", "GPA.b", "GPA.c", "GPA.unknown"].enumerated() {
            setup.standIn.addVoided([
                "kind": "androidpublisher#voidedPurchase", "purchaseToken": "token-\(index)", "orderId": order,
                "voidedTimeMillis": String(voidedAt + Int64(index)), "voidedSource": "0", "voidedReason": "1",
            ])
        }
        let poller = PlayVoidedPoller(positions: store, purchases: store, record: record, now: { setup.clock.now })
        // The second page fails: the first is kept, its refunds revoked.
        setup.standIn.inject(.none, .status(500))
        await #expect(throws: PlayAPIError.self) { _ = try await poller.poll(app: app, client: setup.client) }
        #expect(try await credits(store, at: setup.clock.now) == 5)
        let kept = try await store.pollPosition(app: app, marketplace: .googlePlay, stream: PlayVoidedPoller.stream)
        #expect(kept?.done == false && kept?.cursor != nil)
        // The next poll resumes at the second page.
        setup.clock.advance(3_600)
        let resumed = try await poller.poll(app: app, client: setup.client)
        #expect(resumed == PlayVoidedPoller.Summary(revoked: 1, unknown: 1, pages: 1))
        #expect(try await credits(store, at: setup.clock.now) == 0)
        // Before the refunds, the credits were there: the ledger keeps the history.
        #expect(try await credits(store, at: Date(timeIntervalSince1970: Double(voidedAt) / 1000 - 1)) == 15)
        // A later poll reads from where the last ended: nothing again.
        setup.clock.advance(3_600)
        let later = try await poller.poll(app: app, client: setup.client)
        #expect(later == PlayVoidedPoller.Summary(revoked: 0, unknown: 0, pages: 1))
    }
}

@Suite struct VoidedPollTests {
    @Test func aRefundIsRevokedOnceAndAStoppedPollResumes() async throws {
        try await AcknowledgementTests.sqlite { try await VoidedPollScenarios.aRefundIsRevokedOnceAndAStoppedPollResumes(open: $0) }
    }
}

/// The same on PostgreSQL.
@Suite(.postgres) struct PostgresVoidedPollTests {
    @Test func aRefundIsRevokedOnceAndAStoppedPollResumes() async throws {
        try await PostgresAcknowledgementTests.postgres {
            try await VoidedPollScenarios.aRefundIsRevokedOnceAndAStoppedPollResumes(open: $0)
        }
    }
}
