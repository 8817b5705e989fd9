import AppStore
import AppStoreTestSupport
import Foundation
import Ledger
import Testing

/// What every `PurchaseStore` must do, the same on SQLite and PostgreSQL: each engine's test case
/// runs these checks against a fresh, real store.
enum PurchaseStoreConformance {
    typealias PKI = AppStoreTestPKI
    static let received = PKI.date(2025, 3, 1)
    static let catalog = LedgerCatalog(products: ["com.example.app.pro.monthly": LedgerProduct(entitlements: ["pro"])])

    static func transaction(_ overrides: [String: any Sendable] = [:]) -> JWSTransactionDecodedPayload {
        PKI.decoded(PKI.transaction(overrides))
    }

    static func renewalInfo(_ overrides: [String: any Sendable] = [:]) -> JWSRenewalInfoDecodedPayload {
        PKI.decoded(PKI.renewalInfo(overrides))
    }

    /// A notification submission carrying `transaction` and `info`.
    static func notification(
        app: String = "com.example.app", uuid: String = UUID().uuidString.lowercased(), type: String = "DID_RENEW",
        _ transaction: JWSTransactionDecodedPayload?, _ info: JWSRenewalInfoDecodedPayload? = nil
    ) -> PurchaseSubmission {
        PurchaseSubmission(
            app: app, receivedAt: received, source: .notification,
            notification: RawNotification(
                app: app, notificationId: uuid, notificationType: type, subtype: nil, environment: "Production",
                signedDate: transaction?.signedDate, receivedAt: received, body: "{\"signedPayload\":\"\(uuid)\"}"),
            storeEvent: .appStore(notification: type, subtype: nil), transactions: transaction.map { [Kept($0)] } ?? [],
            states: info.map { [Kept($0)] } ?? [])
    }

    /// What an app sends: `transaction` presented by the customer of `token`.
    static func presented(
        _ transaction: JWSTransactionDecodedPayload, token: String?, policy: PurchaseTransferPolicy, app: String = "com.example.app"
    ) -> PurchaseSubmission {
        PurchaseSubmission(
            app: app, receivedAt: received, source: .app, transactions: [Kept(transaction)], appAccount: token, transferPolicy: policy)
    }

    /// A notification is recorded once: its customer is found by every key, and a retry with the
    /// same `notificationUUID` changes nothing.
    static func recordsNotificationsOnce(_ store: any PurchaseStore) async throws {
        let first = notification(uuid: "n-1", transaction(["appTransactionId": "704289572"]), renewalInfo())
        let outcomes = try await store.record([first])
        #expect(outcomes.first?.duplicate == false)
        let customer = try #require(outcomes.first?.customerId)
        for id in ["2000000000000001", "704289572"] {
            #expect(try await store.customer(app: "com.example.app", id: id)?.id == customer, "looked up by \(id)")
        }
        #expect(try await store.customer(app: "com.example.game", id: "2000000000000001") == nil, "another app's customer")
        #expect(try await store.customer(app: "com.example.app", id: "nobody") == nil)

        // The retry carries a later version of the transaction: nothing of it may be kept.
        let retry = notification(uuid: "n-1", transaction(["revocationDate": PKI.milliseconds(PKI.date(2025, 1, 5))]))
        #expect(try await store.record([retry]).first?.duplicate == true)
        let record = try #require(try await store.customer(app: "com.example.app", id: "2000000000000001"))
        #expect(record.transactions.count == 1)
        #expect(record.transactions.first?.revocationDate == nil)
        #expect(record.states.count == 1)
        #expect(record.keys.contains(CustomerKey(kind: .storeAccount, value: "704289572")))
        let stored = try await store.notifications(app: "com.example.app", after: 0, limit: 10)
        #expect(stored.map(\.notificationId) == ["n-1"])
        #expect(stored.first?.body == "{\"signedPayload\":\"n-1\"}")
    }

    /// A subscription's history (purchase, renewal, refund of the renewal, a billing retry and the
    /// recovery) recorded in order in one app and shuffled, with duplicates, in another gives one
    /// ledger: the one the pure ``Ledger`` derives from the set.
    static func shuffledAndDuplicatedNotificationsGiveOneLedger(_ store: any PurchaseStore) async throws {
        let token = "5b4b8a0e-8d6e-4a8d-9b3a-0f0e1d2c3b4a"
        let purchase = transaction([
            "appAccountToken": token, "purchaseDate": PKI.milliseconds(PKI.date(2025, 1, 1)),
            "expiresDate": PKI.milliseconds(PKI.date(2025, 2, 1)), "signedDate": PKI.milliseconds(PKI.date(2025, 1, 1)),
        ])
        let renewal = transaction([
            "appAccountToken": token, "transactionId": "2000000000000002", "purchaseDate": PKI.milliseconds(PKI.date(2025, 2, 1)),
            "expiresDate": PKI.milliseconds(PKI.date(2025, 3, 1)), "signedDate": PKI.milliseconds(PKI.date(2025, 2, 1)),
        ])
        let refunded = transaction([
            "appAccountToken": token, "transactionId": "2000000000000002", "purchaseDate": PKI.milliseconds(PKI.date(2025, 2, 1)),
            "expiresDate": PKI.milliseconds(PKI.date(2025, 3, 1)), "signedDate": PKI.milliseconds(PKI.date(2025, 2, 10)),
            "revocationDate": PKI.milliseconds(PKI.date(2025, 2, 10)), "revocationReason": 0,
        ])
        let retry = renewalInfo(["isInBillingRetryPeriod": true, "signedDate": PKI.milliseconds(PKI.date(2025, 1, 20))])
        let recovered = renewalInfo(["isInBillingRetryPeriod": false, "signedDate": PKI.milliseconds(PKI.date(2025, 1, 21))])
        func history(_ app: String) -> [PurchaseSubmission] {
            [
                notification(app: app, uuid: "\(app)-1", type: "SUBSCRIBED", purchase),
                notification(app: app, uuid: "\(app)-2", type: "DID_FAIL_TO_RENEW", purchase, retry),
                notification(app: app, uuid: "\(app)-3", type: "DID_RENEW", renewal, recovered),
                notification(app: app, uuid: "\(app)-4", type: "REFUND", refunded),
            ]
        }
        for submission in history("com.example.app") { _ = try await store.record([submission]) }
        var shuffled = history("com.example.other")
        shuffled = [shuffled[3], shuffled[1], shuffled[3], shuffled[0], shuffled[2], shuffled[1]]
        // The same payloads again under new notification ids: Apple's retries of other notifications.
        shuffled.append(notification(app: "com.example.other", uuid: "again-1", type: "DID_RENEW", renewal, recovered))
        shuffled.append(notification(app: "com.example.other", uuid: "again-2", type: "SUBSCRIBED", purchase, retry))
        _ = try await store.record(Array(shuffled.prefix(3)))
        for submission in shuffled.dropFirst(3) { _ = try await store.record([submission]) }

        let inOrder = try #require(try await store.customer(app: "com.example.app", id: token))
        let outOfOrder = try #require(try await store.customer(app: "com.example.other", id: token.uppercased()))
        let expected = Ledger(
            transactions: [purchase, renewal, refunded].map(LedgerTransaction.init),
            states: [retry, recovered].map(SubscriptionState.init),
            environment: .production, catalog: catalog)
        #expect(inOrder.ledger(environment: .production, catalog: catalog) == expected)
        #expect(outOfOrder.ledger(environment: .production, catalog: catalog) == expected)
        #expect(expected.periods.count == 2)
        #expect(expected.periods.last?.revocationDate == PKI.date(2025, 2, 10))
        #expect(try await store.notifications(app: "com.example.other", after: 0, limit: 100).count == 6)
    }

    /// `keep`: the purchase stays with its first customer, and the second is refused and recorded
    /// against the purchase, with no customer made for it. `transfer`: it moves, and the move is
    /// recorded. One leaked transaction unlocks one account.
    static func keepsOrTransfersByPolicy(_ store: any PurchaseStore) async throws {
        let (a, b, c) = (
            "aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002", "cccccccc-0000-4000-8000-000000000003"
        )
        let kept = transaction(["transactionId": "3000000000000001", "originalTransactionId": "3000000000000001"])
        let first = try await store.record([presented(kept, token: a, policy: .keep)])
        let owner = try #require(first.first?.customerId)
        let second = try await store.record([presented(kept, token: b, policy: .keep)])
        #expect(second.first?.refusal?.code == .boundToAnotherCustomer)
        #expect(second.first?.transfers == [])
        #expect(second.first?.refusedClaims == 1)
        #expect(second.first?.customerId == owner)
        _ = try await store.record([presented(kept, token: b, policy: .keep)])
        let holder = try #require(try await store.customer(app: "com.example.app", id: "3000000000000001"))
        #expect(holder.keys.map(\.value) == [a])
        #expect(holder.refusedClaims.map(\.claimant) == [.appAccount(b)])
        #expect(holder.refusedClaims.map(\.count) == [2])
        #expect(try await store.customer(app: "com.example.app", id: b) == nil, "a refused claim makes no customer")

        let moved = transaction(["transactionId": "4000000000000001", "originalTransactionId": "4000000000000001"])
        _ = try await store.record([presented(moved, token: a, policy: .transfer)])
        let transferred = try await store.record([presented(moved, token: c, policy: .transfer)])
        #expect(transferred.first?.refusal == nil)
        #expect(transferred.first?.transfers.map(\.outcome) == [.transferred])
        let now = try #require(try await store.customer(app: "com.example.app", id: c))
        #expect(now.purchases.map(\.key) == ["4000000000000001"])
        let before = try #require(try await store.customer(app: "com.example.app", id: a))
        #expect(before.purchases.map(\.key) == ["3000000000000001"])
        #expect(before.transfers.map(\.outcome) == [.transferred], "refusals are kept apart, as refused claims")

        // Presented with no customer of its own (no token, no appTransactionId): nothing moves.
        let anonymous = try await store.record([presented(moved, token: nil, policy: .transfer)])
        #expect(anonymous.first?.customerId == now.id)
        #expect(anonymous.first?.transfers == [])
    }

    /// A notification that names no customer binds its purchase to a placeholder (its original
    /// transaction); the first app request naming a customer takes it, uncounted.
    static func theFirstNamedCustomerTakesAPlaceholder(_ store: any PurchaseStore) async throws {
        let anonymous = transaction(["transactionId": "5000000000000001", "originalTransactionId": "5000000000000001"])
        let placed = try await store.record([notification(anonymous)])
        let placeholder = try #require(placed.first?.customerId)
        let token = "dddddddd-0000-4000-8000-000000000004"
        let taken = try await store.record([presented(anonymous, token: token, policy: .keep)])
        #expect(taken.first?.refusal == nil)
        #expect(taken.first?.transfers == [])
        #expect(taken.first?.customerId != placeholder)
        #expect(try await store.customer(app: "com.example.app", id: "5000000000000001")?.keys.map(\.value) == [token])
        #expect(try await store.customer(app: "com.example.app", id: token)?.purchases.map(\.key) == ["5000000000000001"])
    }

    /// A customer known only by Apple's keys (a notification made it, named by the `appTransactionId`
    /// its transaction signs) is claimed by the first app account that presents one of its
    /// purchases, though that account already has a customer: the placeholder's purchases and its
    /// `appTransactionId` join the account's customer, which then answers to every key, and a later
    /// notification of the same Apple account lands there too.
    static func anAppAccountClaimsACustomerKnownOnlyByApplesKeys(_ store: any PurchaseStore) async throws {
        let token = "eeeeeeee-0000-4000-8000-000000000005"
        let older = transaction(["transactionId": "6000000000000001", "originalTransactionId": "6000000000000001"])
        let account = try #require(try await store.record([presented(older, token: token, policy: .keep)]).first?.customerId)
        let signed = transaction([
            "transactionId": "6100000000000001", "originalTransactionId": "6100000000000001", "appTransactionId": "804289572",
        ])
        let placeholder = try #require(try await store.record([notification(uuid: "n-claim", signed)]).first?.customerId)
        #expect(placeholder != account)
        let claimed = try await store.record([presented(signed, token: token, policy: .keep)])
        #expect(claimed.first?.refusal == nil)
        #expect(claimed.first?.customerId == account)
        for id in [token, "804289572", "6000000000000001", "6100000000000001"] {
            #expect(try await store.customer(app: "com.example.app", id: id)?.id == account, "\(id)")
        }
        let customer = try #require(try await store.customer(app: "com.example.app", id: token))
        #expect(customer.purchases.map(\.key) == ["6000000000000001", "6100000000000001"])
        #expect(customer.purchases.map(\.marketplace) == [.appStore, .appStore])
        #expect(customer.keys.map(\.value) == [token, "804289572"])
        let later = transaction([
            "transactionId": "6200000000000001", "originalTransactionId": "6200000000000001", "appTransactionId": "804289572",
        ])
        #expect(try await store.record([notification(uuid: "n-later", later)]).first?.customerId == account)
    }

    /// Refused claims are kept against the purchase, one row per claimant up to a bound, the rest
    /// counted together: however many accounts claim a purchase, its rows stay few.
    static func refusedClaimsAreKeptBounded(_ store: any PurchaseStore) async throws {
        let kept = transaction(["transactionId": "7000000000000001", "originalTransactionId": "7000000000000001"])
        _ = try await store.record([presented(kept, token: "ffffffff-0000-4000-8000-000000000000", policy: .keep)])
        let claimants = (1...40).map { String(format: "ffffffff-0000-4000-8000-%012d", $0) }
        for claimant in claimants + claimants.prefix(3) {
            let outcome = try await store.record([presented(kept, token: claimant, policy: .keep)])
            #expect(outcome.first?.refusedClaims == 1)
        }
        let holder = try #require(try await store.customer(app: "com.example.app", id: "7000000000000001"))
        #expect(holder.refusedClaims.count == PurchaseRecorder.refusedClaimantsKept + 1)
        #expect(holder.refusedClaims.reduce(0) { $0 + $1.count } == 43)
        #expect(holder.refusedClaims.filter { $0.claimant == nil }.map(\.count) == [40 - PurchaseRecorder.refusedClaimantsKept])
        for claimant in claimants { #expect(try await store.customer(app: "com.example.app", id: claimant) == nil) }
    }

    /// The rebuild's steps: the notifications' payloads go, what apps sent stays, and replaying
    /// the stored notifications gives the same ledger again.
    static func rebuildsFromRawNotifications(_ store: any PurchaseStore) async throws {
        let token = "eeeeeeee-0000-4000-8000-000000000005"
        let bought = transaction([
            "appAccountToken": token, "transactionId": "6000000000000001", "originalTransactionId": "6000000000000001",
        ])
        let renewed = transaction([
            "appAccountToken": token, "transactionId": "6000000000000002", "originalTransactionId": "6000000000000001",
            "purchaseDate": PKI.milliseconds(PKI.date(2025, 1, 31)), "expiresDate": PKI.milliseconds(PKI.date(2025, 2, 28)),
        ])
        _ = try await store.record([presented(bought, token: nil, policy: .keep), notification(uuid: "r-1", renewed, renewalInfo())])
        let before = try #require(try await store.customer(app: "com.example.app", id: token))
        let cleared = try await store.clearNotificationEvidence(app: "com.example.app")
        #expect(cleared == 2, "the renewal and its renewal info")
        let emptied = try #require(try await store.customer(app: "com.example.app", id: token))
        #expect(emptied.transactions.map(\.transactionId) == ["6000000000000001"], "what the app sent stays")
        let raw = try await store.notifications(app: "com.example.app", after: 0, limit: 10)
        #expect(raw.map(\.notificationId) == ["r-1"])
        var replay = notification(uuid: "r-1", renewed, renewalInfo())
        replay.isReplay = true
        #expect(try await store.record([replay]).first?.duplicate == false)
        let after = try #require(try await store.customer(app: "com.example.app", id: token))
        #expect(after.ledger(environment: .production, catalog: catalog) == before.ledger(environment: .production, catalog: catalog))
        #expect(try await store.notifications(app: "com.example.app", after: raw[0].sequence, limit: 10).isEmpty)
    }
}
