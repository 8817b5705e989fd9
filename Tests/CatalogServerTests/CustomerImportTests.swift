import AppStoreAPIStandIn
import AppStoreTestSupport
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ledger
import NIOCore
import Testing

/// `POST /v1/apps/{app}/customers/{id}/import` against the stand-in of the App Store Server API,
/// and the consumption answers a customer's full read shows (docs/app-store-api.md).
@Suite struct CustomerImportTests {
    typealias PKI = AppStoreTestSupport.AppStoreTestPKI
    typealias Endpoints = PurchaseEndpointTests

    /// A subscriber of the monthly product: three transactions from December 2024, the last one
    /// running past the tests' instant (2025-01-15).
    static func subscriber(_ pki: PKI) throws -> AppStoreAPIStandIn.Customer {
        let month: TimeInterval = 30 * 86_400
        let start = PKI.date(2024, 11, 1)
        let transactions = try (0..<3).map { step in
            try pki.jws(
                payload: PKI.transaction([
                    "transactionId": "500000000000000\(step)", "originalTransactionId": "5000000000000000",
                    "purchaseDate": PKI.milliseconds(start.addingTimeInterval(Double(step) * month)),
                    "expiresDate": PKI.milliseconds(start.addingTimeInterval(Double(step + 1) * month)),
                ]))
        }
        return AppStoreAPIStandIn.Customer(signedTransactions: transactions, transactionIds: ["5000000000000000", "5000000000000002"])
    }

    @Test func aBackendImportsACustomerAndReadsTheAnswersSentAboutThem() async throws {
        let standIn = try await AppStoreAPIStandIn.start()
        let key = P256.Signing.PrivateKey()
        standIn.accept(kid: "ABCDEF1234", key: key.publicKey)
        let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("import-\(UUID().uuidString).p8")
        try key.pemRepresentation.write(to: keyFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: keyFile) }
        let settings = """
            <key>serverAPIKeyId</key><string>ABCDEF1234</string>
            <key>serverAPIIssuerId</key><string>\(standIn.issuerId)</string>
            <key>serverAPIKeyFile</key><string>\(keyFile.path)</string>
            """
        do {
            try await Endpoints.withServer(settings: settings, appStoreAPIURL: standIn.baseURL) { client, server in
                standIn.addCustomer(try Self.subscriber(server.pki))
                let path = "/v1/apps/\(Endpoints.app)/customers/5000000000000002/import"
                let anonymous = try await client.execute(uri: path, method: .post, headers: server.headers(json: false))
                #expect(anonymous.status == .unauthorized)
                let viewer = try await client.execute(uri: path, method: .post, headers: server.headers(server.viewer, json: false))
                #expect(viewer.status == .forbidden)
                let imported = try await client.execute(uri: path, method: .post, headers: server.headers(server.backend, json: false))
                #expect(imported.status == .ok, "\(String(buffer: imported.body))")
                let answer = try Endpoints.json(imported)
                #expect(Endpoints.entitlements(answer) == ["pro"])
                #expect((answer["purchases"] as? [Any])?.count == 3)
                // Apple knows no such transaction.
                let unknown = try await client.execute(
                    uri: "/v1/apps/\(Endpoints.app)/customers/5999999999999999/import", method: .post,
                    headers: server.headers(server.backend, json: false))
                #expect(unknown.status == .notFound)
                #expect(String(buffer: unknown.body).contains("TRANSACTION_ID_NOT_FOUND"))
                // Apple refuses: said, as a gateway's failure.
                standIn.revoke(kid: "ABCDEF1234")
                let refused = try await client.execute(uri: path, method: .post, headers: server.headers(server.backend, json: false))
                #expect(refused.status == .badGateway)
                #expect(String(buffer: refused.body).contains("401"))

                // An answer sent about one of the customer's transactions shows on their full read.
                try await server.store.saveConsumptionAnswer(
                    ConsumptionAnswer(
                        app: Endpoints.app, marketplace: .appStore, notificationId: "n-1", transactionId: "5000000000000001", state: .sent,
                        attempts: 1, nextAttemptAt: nil, body: #"{"customerConsented":true,"deliveryStatus":"DELIVERED"}"#, status: 202,
                        error: nil, updatedAt: PKI.date(2025, 1, 10)))
                let read = try await client.execute(
                    uri: "/v1/apps/\(Endpoints.app)/customers/5000000000000000", method: .get,
                    headers: server.headers(server.backend, json: false))
                let rows = try #require(try Endpoints.json(read)["consumptionAnswers"] as? [[String: Any]])
                #expect(rows.count == 1)
                #expect(rows.first?["state"] as? String == "sent")
                #expect(rows.first?["transactionId"] as? String == "5000000000000001")
            }
        } catch {
            await standIn.stop()
            throw error
        }
        await standIn.stop()
    }
}
