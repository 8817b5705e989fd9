import CatalogKit
import CatalogTestSupport
import Foundation
import GooglePlay
import Ledger
import Logging
import OutboundAPI
import PlayAPIStandIn
import Storage
import Synchronization
import Testing

@testable import PlayDeveloperAPI

/// The acknowledgement outbox (docs/google-play.md, "Acknowledgement"), on a real store, against the
/// stand-in: a purchase seen while Google is unreachable is acknowledged once Google is back, before
/// its deadline, across a restart, and never twice.
enum AcknowledgementScenarios {
    static let app = "com.example.game"
    static let paid = RFC3339.parse("2026-06-01T10:00:00Z")!

    static let catalog: PlayCatalog = {
        var catalog = PlayCatalog()
        catalog.add(
            .init(id: "com.example.game.pro.monthly", type: .autoRenewable, group: "pro", period: ISO8601Period("P1M")), productId: "pro",
            plan: "monthly")
        catalog.add(.init(id: "com.example.game.gems", type: .consumable), productId: "gems", plan: nil)
        catalog.add(.init(id: "com.example.game.skin", type: .nonConsumable), productId: "skin", plan: nil)
        return catalog
    }()

    /// What the app presents: Google's signed JSON, as verified.
    static func presented(_ product: String, token: String, state: Int = 0, paidAt: Date = paid) throws -> PlayPurchase {
        let json =
            #"{"packageName":"\#(app)","productId":"\#(product)","purchaseToken":"\#(token)","purchaseTime":\#(Int64(paidAt.timeIntervalSince1970 * 1000)),"purchaseState":\#(state),"acknowledged":false}"#
        return try JSONDecoder().decode(PlayPurchase.self, from: Data(json.utf8))
    }

    /// The ledger's values the acknowledger recorded.
    final class Recorded: Sendable {
        let values = Mutex<[PlayLedgerValues]>([])
        var transactions: [LedgerTransaction] { values.withLock { $0.flatMap { $0.transactions.map(\.value) } } }
    }

    static func acknowledger(
        _ store: any StoreAcknowledgementStore, _ setup: PlayAPIClientTests.Setup, recorded: Recorded
    ) -> PlayAcknowledger {
        PlayAcknowledger(
            store: store, client: { _ in setup.client }, catalog: { _ in catalog },
            record: { _, values in recorded.values.withLock { $0.append(values) } }, now: { setup.clock.now })
    }

    static func acknowledgeCalls(_ setup: PlayAPIClientTests.Setup) -> [String] {
        setup.standIn.calls.filter { $0.operation.hasPrefix("acknowledge") || $0.operation == "consumeProduct" }.map {
            "\($0.operation) \($0.status)"
        }
    }

    /// Google unreachable when the purchase is presented; the node restarts; Google comes back a
    /// day later: one acknowledgement, before the deadline, and none again.
    static func anOutageAndARestartLoseNothing(open: () async throws -> any Store) async throws {
        let setup = try await PlayAPIClientTests.Setup.make(policy: APIRetryPolicy(maximumAttempts: 1))
        setup.clock.set("2026-06-01T10:00:05Z")
        setup.standIn.setSubscription(
            "token-a",
            PlayAPIClientTests.subscription(
                "SUBSCRIPTION_STATE_ACTIVE", order: "GPA.1", expiry: "2026-07-01T10:00:00Z", acknowledged: false))
        var store = try await open()
        let recorded = Recorded()
        let entry = try #require(
            PlayAcknowledger.acknowledgement(
                of: try presented("pro", token: "token-a"), app: app, catalog: catalog, seenAt: setup.clock.now))
        #expect(entry.action == .acknowledgeSubscription)
        #expect(entry.deadline == paid.addingTimeInterval(PlayAcknowledger.window))
        #expect(try await store.enqueueAcknowledgement(entry))
        // Google down: every attempt fails, the entry waits, and counts as at risk a day before its deadline.
        setup.standIn.inject(.status(503), .status(503), .status(503))
        for _ in 0..<3 {
            let summary = try await acknowledger(store, setup, recorded: recorded).runDue()
            #expect(summary.deferred == 1)
            setup.clock.advance(3600)
        }
        var pending = try await store.acknowledgements(in: .pending)
        #expect(pending.map(\.attempts) == [3])
        #expect(PlayAcknowledger.backlog(pending, now: setup.clock.now).atRisk == 0)
        #expect(PlayAcknowledger.backlog(pending, now: paid.addingTimeInterval(2.5 * 86_400)).atRisk == 1)
        // The node restarts: the outbox is read back from the store.
        try await store.close()
        store = try await open()
        // The app presents the purchase again: it is queued once.
        #expect(try await store.enqueueAcknowledgement(entry) == false)
        setup.clock.set("2026-06-02T12:00:00Z")
        let summary = try await acknowledger(store, setup, recorded: recorded).runDue()
        #expect(summary.done == 1)
        #expect(setup.standIn.acknowledgementState("token-a") == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED")
        #expect(acknowledgeCalls(setup) == ["acknowledgeSubscription 200"])
        // What Google said is in the ledger.
        #expect(recorded.transactions.map(\.transactionId) == ["GPA.1"])
        // Nothing more to do, ever.
        setup.clock.advance(7 * 86_400)
        #expect(try await store.dueAcknowledgements(at: setup.clock.now, limit: 10).isEmpty)
        #expect(try await store.acknowledgements(in: .done).map(\.purchaseKey) == ["token-a"])
        pending = try await store.acknowledgements(in: .pending)
        #expect(pending.isEmpty)
        try await store.close()
        try await setup.stop()
    }

    /// A node stopped between Google's 200 and writing `done`: the next attempt finds the purchase
    /// acknowledged at Google and sends nothing.
    static func aStopAfterGooglesAnswerSendsNothingTwice(open: () async throws -> any Store) async throws {
        let setup = try await PlayAPIClientTests.Setup.make()
        setup.clock.set("2026-06-01T10:00:05Z")
        setup.standIn.setProduct(
            "token-s",
            [
                "purchaseStateContext": ["purchaseState": "PURCHASED"] as [String: any Sendable],
                "acknowledgementState": "ACKNOWLEDGEMENT_STATE_PENDING", "orderId": "GPA.7",
                "purchaseCompletionTime": "2026-06-01T10:00:00Z",
                "productLineItem": [
                    ["productId": "skin", "productOfferDetails": ["quantity": 1] as [String: any Sendable]] as [String: any Sendable]
                ],
            ])
        let store = try await open()
        let recorded = Recorded()
        let entry = try #require(
            PlayAcknowledger.acknowledgement(
                of: try presented("skin", token: "token-s"), app: app, catalog: catalog, seenAt: setup.clock.now))
        #expect(entry.action == .acknowledgeProduct)
        _ = try await store.enqueueAcknowledgement(entry)
        let acknowledger = acknowledger(store, setup, recorded: recorded)
        // The attempt reaches Google, and the node stops before the outbox is written.
        let lost = await acknowledger.handle(entry)
        #expect(lost.state == .done)
        #expect(try await store.acknowledgements(in: .pending).count == 1)
        // After the restart: Google says acknowledged; nothing is sent.
        #expect(try await acknowledger.runDue().done == 1)
        #expect(acknowledgeCalls(setup) == ["acknowledgeProduct 200"])
        try await store.close()
        try await setup.stop()
    }

    /// A consumable is consumed; a purchase refunded first is moot; one pending payment waits, its
    /// window not started; past its deadline an outage leaves it expired.
    static func eachPurchaseGetsWhatItNeeds(open: () async throws -> any Store) async throws {
        let setup = try await PlayAPIClientTests.Setup.make(policy: APIRetryPolicy(maximumAttempts: 1))
        setup.clock.set("2026-06-01T10:00:05Z")
        func product(_ token: String, _ id: String, _ state: String) {
            setup.standIn.setProduct(
                token,
                [
                    "purchaseStateContext": ["purchaseState": state] as [String: any Sendable],
                    "acknowledgementState": "ACKNOWLEDGEMENT_STATE_PENDING", "orderId": "GPA.\(token)",
                    "purchaseCompletionTime": "2026-06-01T10:00:00Z",
                    "productLineItem": [
                        [
                            "productId": id,
                            "productOfferDetails": ["quantity": 5, "consumptionState": "CONSUMPTION_STATE_YET_TO_BE_CONSUMED"]
                                as [String: any Sendable],
                        ] as [String: any Sendable]
                    ],
                ])
        }
        product("token-g", "gems", "PURCHASED")
        product("token-r", "skin", "CANCELLED")
        product("token-p", "skin", "PENDING")
        product("token-x", "skin", "PURCHASED")
        let store = try await open()
        let recorded = Recorded()
        // token-x was paid earliest: its deadline comes first, and so does it.
        let early = RFC3339.parse("2026-06-01T00:00:00Z")!
        for (id, token, state, paidAt) in [
            ("gems", "token-g", 0, paid), ("skin", "token-r", 0, paid), ("skin", "token-p", 4, paid), ("skin", "token-x", 0, early),
        ] {
            let entry = try #require(
                PlayAcknowledger.acknowledgement(
                    of: try presented(id, token: token, state: state, paidAt: paidAt), app: app, catalog: catalog, seenAt: setup.clock.now))
            _ = try await store.enqueueAcknowledgement(entry)
        }
        #expect(try await store.acknowledgements(in: .pending).first { $0.purchaseKey == "token-p" }?.deadline == nil)
        // token-x's answers fail until after its deadline: its first is cut, its next a 500.
        setup.standIn.inject(.cut)
        let first = try await acknowledger(store, setup, recorded: recorded).runDue()
        #expect(first == PlayAcknowledger.Summary(done: 1, moot: 1, failed: 0, expired: 0, deferred: 2))
        #expect(setup.standIn.consumptionState("token-g") == "CONSUMPTION_STATE_CONSUMED")
        setup.clock.set("2026-06-04T11:00:00Z")
        setup.standIn.inject(.status(500), .status(500))
        _ = try await acknowledger(store, setup, recorded: recorded).runDue()
        var states: [String: StoreAcknowledgement.State] = [:]
        for state in [StoreAcknowledgement.State.done, .moot, .pending, .expired] {
            for entry in try await store.acknowledgements(in: state) { states[entry.purchaseKey] = state }
        }
        #expect(states == ["token-g": .done, "token-r": .moot, "token-p": .pending, "token-x": .expired])
        #expect(acknowledgeCalls(setup) == ["consumeProduct 200"])
        try await store.close()
        try await setup.stop()
    }
}

@Suite struct AcknowledgementTests {
    /// A SQLite file that outlives the store opened on it: what a restart reopens.
    static func sqlite(_ body: (() async throws -> any Store) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("acknowledge-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("catalog.sqlite").path
        try await body { try await SQLiteStore.open(path: path) }
    }

    @Test func anOutageAndARestartLoseNothing() async throws {
        try await Self.sqlite { try await AcknowledgementScenarios.anOutageAndARestartLoseNothing(open: $0) }
    }

    @Test func aStopAfterGooglesAnswerSendsNothingTwice() async throws {
        try await Self.sqlite { try await AcknowledgementScenarios.aStopAfterGooglesAnswerSendsNothingTwice(open: $0) }
    }

    @Test func eachPurchaseGetsWhatItNeeds() async throws {
        try await Self.sqlite { try await AcknowledgementScenarios.eachPurchaseGetsWhatItNeeds(open: $0) }
    }
}

/// The same on PostgreSQL.
@Suite(.postgres) struct PostgresAcknowledgementTests {
    static func postgres(_ body: (() async throws -> any Store) async throws -> Void) async throws {
        let url = try await TestPostgres.current.createDatabase()
        try await body { try await openStore(try StoreURL(parsing: url), logger: Logger(label: "test")) }
    }

    @Test func anOutageAndARestartLoseNothing() async throws {
        try await Self.postgres { try await AcknowledgementScenarios.anOutageAndARestartLoseNothing(open: $0) }
    }

    @Test func aStopAfterGooglesAnswerSendsNothingTwice() async throws {
        try await Self.postgres { try await AcknowledgementScenarios.aStopAfterGooglesAnswerSendsNothingTwice(open: $0) }
    }

    @Test func eachPurchaseGetsWhatItNeeds() async throws {
        try await Self.postgres { try await AcknowledgementScenarios.eachPurchaseGetsWhatItNeeds(open: $0) }
    }
}
