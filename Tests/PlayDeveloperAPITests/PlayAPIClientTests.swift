import CatalogKit
import Foundation
import GooglePlay
import Ledger
import OutboundAPI
import PlayAPIStandIn
import Synchronization
import Testing
import _CryptoExtras

@testable import PlayDeveloperAPI

/// The Play Developer API client against the stand-in, which checks the OAuth exchange and every
/// bearer token as Google documents them (docs/google-play.md, "Tested here").
@Suite struct PlayAPIClientTests {
    /// A clock the test moves, shared by the stand-in and the client.
    final class Clock: Sendable {
        let instant = Mutex(Date(timeIntervalSince1970: 1_780_000_000))
        var now: Date { instant.withLock { $0 } }
        func advance(_ seconds: TimeInterval) { instant.withLock { $0 = $0.addingTimeInterval(seconds) } }
        func set(_ text: String) { instant.withLock { $0 = RFC3339.parse(text)! } }
    }

    /// The waits between attempts, as the client asked for them.
    final class Waits: Sendable {
        let delays = Mutex<[Duration]>([])
    }

    /// A stand-in, a key file it accepts, and a client of it; the waits between attempts recorded.
    struct Setup {
        let standIn: PlayAPIStandIn
        let clock: Clock
        let folder: URL
        let keyFile: URL
        let client: PlayDeveloperAPIClient
        let waits: Waits

        static func make(accepted: Bool = true, policy: APIRetryPolicy = APIRetryPolicy()) async throws -> Setup {
            let clock = Clock()
            let standIn = try await PlayAPIStandIn.start(now: { clock.now })
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("play-api-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            if accepted { standIn.accept(kid: "key-1", key: key.publicKey) }
            let keyFile = folder.appendingPathComponent("service-account.json")
            try standIn.keyFile(kid: "key-1", key: key).write(to: keyFile)
            let waits = Waits()
            let caller = APICaller(
                transport: HTTPClientTransport(), policy: policy, sleep: { delay in waits.delays.withLock { $0.append(delay) } },
                now: { clock.now })
            let client = PlayDeveloperAPIClient(
                packageName: standIn.packageName, baseURL: standIn.baseURL, tokens: PlayAccessTokens(keyFile: keyFile.path, caller: caller),
                caller: caller, now: { clock.now })
            return Setup(standIn: standIn, clock: clock, folder: folder, keyFile: keyFile, client: client, waits: waits)
        }

        func stop() async throws {
            await standIn.stop()
            try await client.caller.transport.shutdown()
            try? FileManager.default.removeItem(at: folder)
        }

        func operations() -> [String] { standIn.calls.map { "\($0.operation) \($0.status)" } }
    }

    static func subscription(
        _ state: String, order: String?, expiry: String, acknowledged: Bool = true, start: String = "2026-06-01T10:00:00Z"
    ) -> [String: any Sendable] {
        var item: [String: any Sendable] = [
            "productId": "pro", "expiryTime": expiry, "autoRenewingPlan": ["autoRenewEnabled": true] as [String: any Sendable],
            "offerDetails": ["basePlanId": "monthly"] as [String: any Sendable],
        ]
        if let order { item["latestSuccessfulOrderId"] = order }
        return [
            "kind": "androidpublisher#subscriptionPurchaseV2", "subscriptionState": state, "startTime": start, "lineItems": [item],
            "acknowledgementState": acknowledged ? "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED" : "ACKNOWLEDGEMENT_STATE_PENDING",
        ]
    }

    @Test func theTokenExchangeIsCheckedAndATokenLivesUntilItsRenewal() async throws {
        let setup = try await Setup.make()
        setup.standIn.setSubscription(
            "token-a", Self.subscription("SUBSCRIPTION_STATE_ACTIVE", order: "GPA.1", expiry: "2026-07-01T10:00:00Z"))
        let first = try await setup.client.subscriptionPurchase("token-a")
        #expect(first.subscriptionState == "SUBSCRIPTION_STATE_ACTIVE")
        _ = try await setup.client.subscriptionPurchase("token-a")
        #expect(setup.operations() == ["token 200", "subscriptionPurchase 200", "subscriptionPurchase 200"])
        // Less than the renewal margin left: a new token first.
        setup.clock.advance(3599 - PlayAccessTokens.renewal + 1)
        _ = try await setup.client.subscriptionPurchase("token-a")
        #expect(setup.operations().suffix(2) == ["token 200", "subscriptionPurchase 200"])
        // Google forgets the token (a 401): one new token, the call made again.
        setup.standIn.expireAccessTokens()
        _ = try await setup.client.subscriptionPurchase("token-a")
        #expect(setup.operations().suffix(3) == ["subscriptionPurchase 401", "token 200", "subscriptionPurchase 200"])
        try await setup.stop()
    }

    @Test func aKeyGoogleRefusesIsACredentialsErrorTriedOnce() async throws {
        let setup = try await Setup.make(accepted: false)
        await #expect {
            _ = try await setup.client.productPurchase("token-a")
        } throws: { error in
            let failure = error as? PlayAPIError
            return failure?.kind == .credentials && failure?.reason == "invalid_grant" && failure?.message == "Invalid JWT Signature."
        }
        #expect(setup.operations() == ["token 400"])
        try await setup.stop()
    }

    @Test func aRotatedKeyFileIsUsedFromTheNextToken() async throws {
        let setup = try await Setup.make()
        setup.standIn.setProduct(
            "token-p",
            [
                "purchaseStateContext": ["purchaseState": "PURCHASED"] as [String: any Sendable],
                "productLineItem": [["productId": "gems"] as [String: any Sendable]],
            ])
        _ = try await setup.client.productPurchase("token-p")
        // The old key deleted, a new one downloaded over the file.
        let newKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        setup.standIn.accept(kid: "key-2", key: newKey.publicKey)
        setup.standIn.revoke(kid: "key-1")
        try setup.standIn.keyFile(kid: "key-2", key: newKey).write(to: setup.keyFile)
        // A changed file is read again at once: its key signs the next assertion, key-1 being refused now.
        _ = try await setup.client.productPurchase("token-p")
        #expect(setup.operations() == ["token 200", "productPurchase 200", "token 200", "productPurchase 200"])
        try await setup.stop()
    }

    @Test func retriesFollowGooglesAnswers() async throws {
        let setup = try await Setup.make()
        setup.standIn.setSubscription(
            "token-a", Self.subscription("SUBSCRIPTION_STATE_ACTIVE", order: "GPA.1", expiry: "2026-07-01T10:00:00Z"))
        // 429 with Retry-After, an old quota's 403 rateLimitExceeded, a 503, a cut answer: each tried again.
        setup.standIn.inject(
            .status(429, reason: "rateLimitExceeded", retryAfter: "7"), .status(403, reason: "rateLimitExceeded"), .status(503), .cut)
        _ = try await setup.client.subscriptionPurchase("token-a")
        #expect(
            setup.operations() == [
                "token 200", "subscriptionPurchase 429", "subscriptionPurchase 403", "subscriptionPurchase 503", "subscriptionPurchase 200",
                "subscriptionPurchase 200",
            ])
        let waits = setup.waits.delays.withLock { $0 }
        #expect(waits.count == 4 && waits.first == .seconds(7))
        // 410 (gone) and 400 (invalid) are answers, not tried again.
        setup.standIn.inject(.status(410, reason: "purchaseTokenNoLongerValid"))
        await #expect {
            _ = try await setup.client.subscriptionPurchase("token-a")
        } throws: { ($0 as? PlayAPIError)?.kind == .gone && ($0 as? PlayAPIError)?.reason == "purchaseTokenNoLongerValid" }
        await #expect {
            _ = try await setup.client.subscriptionPurchase("unknown-token")
        } throws: { ($0 as? PlayAPIError)?.kind == .refused && ($0 as? PlayAPIError)?.reason == "invalid" }
        #expect(setup.operations().suffix(2) == ["subscriptionPurchase 410", "subscriptionPurchase 400"])
        // A token Google's path could not hold is refused before anything is sent.
        await #expect {
            _ = try await setup.client.subscriptionPurchase("../../voidedpurchases")
        } throws: { ($0 as? PlayAPIError)?.kind == .refused }
        #expect(setup.operations().count == 8)
        try await setup.stop()
    }

    @Test func acknowledgementAndConsumption() async throws {
        let setup = try await Setup.make()
        setup.standIn.setSubscription(
            "token-a", Self.subscription("SUBSCRIPTION_STATE_ACTIVE", order: "GPA.1", expiry: "2026-07-01T10:00:00Z", acknowledged: false))
        try await setup.client.acknowledgeSubscription(productId: "pro", token: "token-a")
        #expect(setup.standIn.acknowledgementState("token-a") == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED")
        // Twice: Google's behaviour is not documented; either answer is one the client reports.
        try await setup.client.acknowledgeSubscription(productId: "pro", token: "token-a")
        setup.standIn.refuseSecondAcknowledgement(true)
        await #expect {
            try await setup.client.acknowledgeSubscription(productId: "pro", token: "token-a")
        } throws: { ($0 as? PlayAPIError)?.reason == "invalidPurchaseState" }
        setup.standIn.setProduct(
            "token-g",
            [
                "purchaseStateContext": ["purchaseState": "PURCHASED"] as [String: any Sendable],
                "acknowledgementState": "ACKNOWLEDGEMENT_STATE_PENDING",
                "productLineItem": [
                    [
                        "productId": "gems",
                        "productOfferDetails": ["quantity": 3, "consumptionState": "CONSUMPTION_STATE_YET_TO_BE_CONSUMED"]
                            as [String: any Sendable],
                    ] as [String: any Sendable]
                ],
            ])
        try await setup.client.consumeProduct(productId: "gems", token: "token-g")
        #expect(setup.standIn.consumptionState("token-g") == "CONSUMPTION_STATE_CONSUMED")
        #expect(setup.standIn.acknowledgementState("token-g") == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED")
        // Another product's path for the token: Google's "Invalid Value".
        await #expect {
            try await setup.client.acknowledgeProduct(productId: "coins", token: "token-g")
        } throws: { ($0 as? PlayAPIError)?.status == 400 }
        try await setup.stop()
    }

    @Test func voidedPurchasesArePaged() async throws {
        let setup = try await Setup.make()
        let now = Int64(setup.clock.now.timeIntervalSince1970 * 1000)
        for index in 0..<5 {
            setup.standIn.addVoided([
                "kind": "androidpublisher#voidedPurchase", "purchaseToken": "token-\(index)", "orderId": "GPA.\(index)",
                "voidedTimeMillis": String(now - Int64(5 - index) * 3_600_000), "voidedSource": "0", "voidedReason": "4",
            ])
        }
        var seen: [String] = []
        var pageToken: String?
        repeat {
            let page = try await setup.client.voidedPurchases(
                from: setup.clock.now.addingTimeInterval(-86_400), to: setup.clock.now, pageToken: pageToken)
            seen += (page.voidedPurchases ?? []).compactMap(\.orderId)
            pageToken = page.tokenPagination?.nextPageToken
        } while pageToken != nil
        #expect(seen == ["GPA.0", "GPA.1", "GPA.2", "GPA.3", "GPA.4"])
        #expect(setup.operations().filter { $0.hasPrefix("voidedPurchases") }.count == 3)
        try await setup.stop()
    }

    /// A subscription's life as the stand-in's answers change over time, through the client and
    /// the mapping: the ledger read at each instant holds what Google said by then.
    @Test func aSubscriptionsLifeThroughTheAPI() async throws {
        let setup = try await Setup.make()
        var catalog = PlayCatalog()
        catalog.add(
            .init(id: "com.example.game.pro.monthly", type: .autoRenewable, group: "pro", period: ISO8601Period("P1M")), productId: "pro",
            plan: "monthly")
        let ledgerCatalog = LedgerCatalog(products: ["com.example.game.pro.monthly": LedgerProduct(entitlements: ["pro"])])
        var transactions: [LedgerTransaction] = []
        var states: [SubscriptionState] = []
        func step(_ at: String, _ state: String, order: String?, expiry: String) async throws -> [String] {
            setup.clock.set(at)
            setup.standIn.setSubscription("token-a", Self.subscription(state, order: order, expiry: expiry))
            let answer = try await setup.client.subscriptionPurchase("token-a")
            let values = answer.ledgerValues(token: "token-a", answeredAt: setup.clock.now, catalog: catalog)
            transactions += values.transactions.map(\.value)
            states += values.states.map(\.value)
            let ledger = Ledger(transactions: transactions, states: states, environment: .production, catalog: ledgerCatalog)
            return ledger.activeEntitlements(at: setup.clock.now)
        }
        #expect(try await step("2026-06-01T09:00:00Z", "SUBSCRIPTION_STATE_PENDING", order: nil, expiry: "2026-06-01T09:00:00Z") == [])
        #expect(
            try await step("2026-06-01T10:00:01Z", "SUBSCRIPTION_STATE_ACTIVE", order: "GPA.1", expiry: "2026-07-01T10:00:00Z") == ["pro"])
        #expect(
            try await step("2026-07-01T10:00:01Z", "SUBSCRIPTION_STATE_ACTIVE", order: "GPA.1..0", expiry: "2026-08-01T10:00:00Z") == [
                "pro"
            ])
        #expect(
            try await step("2026-08-01T10:00:01Z", "SUBSCRIPTION_STATE_IN_GRACE_PERIOD", order: "GPA.1..0", expiry: "2026-08-04T10:00:00Z")
                == ["pro"])
        #expect(
            try await step("2026-08-04T10:00:01Z", "SUBSCRIPTION_STATE_ON_HOLD", order: "GPA.1..0", expiry: "2026-08-04T10:00:00Z") == [])
        #expect(
            try await step("2026-08-10T10:00:00Z", "SUBSCRIPTION_STATE_ACTIVE", order: "GPA.1..1", expiry: "2026-09-10T10:00:00Z") == [
                "pro"
            ])
        #expect(
            try await step("2026-08-20T10:00:00Z", "SUBSCRIPTION_STATE_CANCELED", order: "GPA.1..1", expiry: "2026-09-10T10:00:00Z") == [
                "pro"
            ])
        #expect(
            try await step("2026-09-10T10:00:01Z", "SUBSCRIPTION_STATE_EXPIRED", order: "GPA.1..1", expiry: "2026-09-10T10:00:00Z") == [])
        // Read afterwards, the history keeps the hold as a gap.
        let ledger = Ledger(transactions: transactions, states: states, environment: .production, catalog: ledgerCatalog)
        #expect(ledger.activeEntitlements(at: RFC3339.parse("2026-08-06T00:00:00Z")!) == [])
        #expect(ledger.activeEntitlements(at: RFC3339.parse("2026-08-02T00:00:00Z")!) == ["pro"])
        try await setup.stop()
    }
}
