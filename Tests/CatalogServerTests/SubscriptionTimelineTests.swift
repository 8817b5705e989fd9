import AppStore
import AppStoreTestSupport
import CatalogServer
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ledger
import NIOCore
import Testing

/// One subscription, one period at a time (docs/purchases.md, "The ledger"), through the
/// notification endpoint: the shape of a real sandbox history (the project's J1, checked on the
/// real data by `scripts/check-real-histories`) signed by the test PKI, every notification sent
/// twice in several orders, and the customer read at instants around every change.
@Suite struct SubscriptionTimelineTests {
    typealias PKI = AppStoreTestSupport.AppStoreTestPKI
    typealias Endpoints = PurchaseEndpointTests
    static let quarterly = "com.example.app.pro.quarterly"
    static let monthly = "com.example.app.pro.monthly"
    static let start = PKI.date(2025, 1, 10)
    static func at(_ seconds: Double) -> Date { start.addingTimeInterval(seconds) }
    static func ms(_ seconds: Double) -> Int64 { PKI.milliseconds(at(seconds)) }

    /// The notifications, each with its transaction as Apple signs it:
    /// 1. the 3-month tier bought at 0 s, expiring at 540 s (SUBSCRIBED);
    /// 2. upgraded at 12 s to the monthly tier, expiring at 192 s (DID_CHANGE_RENEWAL_PREF UPGRADE):
    ///    only the new transaction; the 3-month tier's `isUpgraded` version never comes;
    /// 3. the monthly tier renewed at 192 s, to 372 s (DID_RENEW);
    /// 4. that renewal refunded at 240 s (REFUND);
    /// 5. the 3-month tier bought again at 600 s, to 1140 s (SUBSCRIBED RESUBSCRIBE);
    /// 6. expired (EXPIRED VOLUNTARY), its transaction unchanged.
    static func notifications(_ pki: PKI) throws -> [String] {
        func transaction(_ id: Int, _ product: String, _ from: Double, _ to: Double, _ fields: [String: any Sendable] = [:]) throws
            -> String
        {
            try pki.jws(
                payload: PKI.transaction(
                    [
                        "transactionId": "900000000000000\(id)", "originalTransactionId": "9000000000000001", "productId": product,
                        "purchaseDate": ms(from), "expiresDate": ms(to), "signedDate": ms(from + 1),
                    ].merging(fields) { $1 }))
        }
        func notification(_ type: String, _ subtype: String?, _ signed: String, at: Double) throws -> String {
            try pki.jws(
                payload: PKI.notification(
                    type: type, subtype: subtype,
                    data: [
                        "signedTransactionInfo": signed,
                        "signedRenewalInfo": try pki.jws(
                            payload: PKI.renewalInfo(["originalTransactionId": "9000000000000001", "signedDate": ms(at)])),
                    ], ["signedDate": ms(at)]))
        }
        return [
            try notification("SUBSCRIBED", "INITIAL_BUY", try transaction(1, quarterly, 0, 540), at: 1),
            try notification("DID_CHANGE_RENEWAL_PREF", "UPGRADE", try transaction(2, monthly, 12, 192), at: 13),
            try notification("DID_RENEW", nil, try transaction(3, monthly, 192, 372), at: 193),
            try notification(
                "REFUND", nil,
                try transaction(3, monthly, 192, 372, ["revocationDate": ms(240), "revocationReason": 0, "signedDate": ms(241)]),
                at: 241),
            try notification("SUBSCRIBED", "RESUBSCRIBE", try transaction(4, quarterly, 600, 1140), at: 601),
            try notification("EXPIRED", "VOLUNTARY", try transaction(4, quarterly, 600, 1140), at: 1141),
        ]
    }

    /// What the customer holds at each instant (seconds from the start): the product granting `pro`.
    static let expected: [(seconds: Double, product: String?)] = {
        let (q, m): (String?, String?) = (quarterly, monthly)
        // The renewal was refunded at 240 s; the 3-month tier ended at the upgrade, so nothing grants after.
        return [
            (6, q), (13, m), (100, m), (191, m), (193, m), (239, m), (241, nil), (400, nil), (539, nil), (541, nil), (601, q),
            (1139, q), (1141, nil),
        ]
    }()

    @Test(arguments: [0, 1, 2])
    func everyOrderGivesTheSamePeriods(order: Int) async throws {
        try await Endpoints.withServer { client, server in
            let notifications = try Self.notifications(server.pki)
            let twice = notifications + notifications
            // In order, reversed, and every 7th (7 is prime to the 12 sent, so each is sent once).
            let count = twice.count
            let positions: [Int] =
                switch order {
                case 0: Array(0..<count)
                case 1: Array((0..<count).reversed())
                default: (0..<count).map { ($0 * 7) % count }
                }
            let sent = positions.map { twice[$0] }
            for jws in sent {
                let response = try await client.execute(
                    uri: Endpoints.notificationsPath, method: .post, headers: server.headers(), body: Endpoints.body(jws))
                #expect(response.status == .ok, "\(String(buffer: response.body))")
            }
            for (seconds, product) in Self.expected {
                let instant = Self.at(seconds).formatted(.iso8601)
                let read = try await client.execute(
                    uri: "/v1/apps/\(Endpoints.app)/customers/9000000000000001?at=\(instant)", method: .get,
                    headers: server.headers(server.backend))
                let grants = (try Endpoints.json(read)["entitlements"] as? [[String: Any]]) ?? []
                #expect(grants.compactMap { $0["productId"] as? String } == (product.map { [$0] } ?? []), "order \(order), at \(seconds) s")
            }
        }
    }
}
