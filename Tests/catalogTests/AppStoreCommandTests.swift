import AppStore
import AppStoreAPIStandIn
import AppStoreTestSupport
import Crypto
import Foundation
import Ledger
import Storage
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `catalog appstore` and the server's reconciliation, as a user runs them, against the
/// stand-in of the App Store Server API (docs/app-store-api.md).
@Suite struct AppStoreCommandTests {
    typealias PKI = AppStoreTestPKI
    static let keyId = "ABCDEF1234"
    static let app = "com.example.app"

    static func catalog(issuer: String) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <plist version="1.0"><dict><key>platforms</key><array><string>iOS</string></array>
        <key>appAppleId</key><integer>1234567890</integer>
        <key>serverAPIKeyId</key><string>\(keyId)</string>
        <key>serverAPIIssuerId</key><string>\(issuer)</string>
        <key>serverAPIKeyFile</key><string>secrets/AuthKey.p8</string>
        <key>products</key><array>
        <dict><key>id</key><string>com.example.app.pro.monthly</string><key>type</key><string>auto-renewable</string>
        <key>subscription</key><dict><key>group</key><string>pro</string><key>period</key><string>P1M</string></dict>
        <key>entitlements</key><array><string>pro</string></array></dict>
        </array></dict></plist>
        """
    }

    /// A workspace with the app's catalog, the test PKI's root and an API key the stand-in accepts.
    static func withSetup(
        _ body: (CommandTests.Workspace, AppStoreAPIStandIn, PKI, [String]) async throws -> Void
    ) async throws {
        // A leaf valid now: the stand-in signs its test notification now, as Apple does.
        let pki = try PKI.ecdsa(leafValidity: PKI.date(2024)...Date().addingTimeInterval(365 * 86_400))
        let standIn = try await AppStoreAPIStandIn.start(pki: pki)
        do {
            try await CommandTests.withWorkspace { workspace in
                let key = P256.Signing.PrivateKey()
                standIn.accept(kid: keyId, key: key.publicKey)
                try workspace.write("secrets/AuthKey.p8", key.pemRepresentation)
                try workspace.write("catalog/com.example.app.plist", catalog(issuer: standIn.issuerId))
                try workspace.write("root.pem", PKI.pem(pki.root) + "\n")
                let common = [
                    "--store", "sqlite:var/catalog.sqlite", "--root-certificate", "root.pem", "--api-url", standIn.baseURL.absoluteString,
                    "--environment", "production",
                ]
                try await body(workspace, standIn, pki, common)
            }
        } catch {
            await standIn.stop()
            throw error
        }
        await standIn.stop()
    }

    static func storedNotifications(_ workspace: CommandTests.Workspace) async throws -> [String] {
        let store = try await SQLiteStore.open(path: workspace.root.appendingPathComponent("var/catalog.sqlite").path)
        let ids = try await store.notifications(app: app, after: 0, limit: 10_000).map(\.notificationId)
        try await store.close()
        return ids
    }

    @Test func reconcileRecordsWhatTheStoreMissed() async throws {
        try await Self.withSetup { workspace, standIn, pki, common in
            let all = try SignedNotification.subscriptions(pki, customers: 8)
            for notification in all { standIn.addNotification(notification.signedPayload, firstSent: notification.firstSent) }
            let run = try await CommandTests.run(["appstore", "reconcile", Self.app, "--since", "2d"] + common, in: workspace.root)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.hasPrefix("com.example.app production: 24 notifications in 2 pages, 24 stored, 0 already kept, 0 refused;"))
            #expect(Set(try await Self.storedNotifications(workspace)).count == 24)
            // Again, from where it stopped: the last hour read again, nothing new.
            let again = try await CommandTests.run(["appstore", "reconcile", Self.app] + common, in: workspace.root)
            #expect(again.status == 0, "\(again.stderr)")
            #expect(again.stdout.contains(" 0 stored"))
            // A key Apple refuses is said, with what to check.
            standIn.revoke(kid: Self.keyId)
            let refused = try await CommandTests.run(["appstore", "reconcile", Self.app] + common, in: workspace.root)
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("Apple refused the API key (401)"))
        }
    }

    @Test func importRecordsCustomersAndStatusComparesThem() async throws {
        try await Self.withSetup { workspace, standIn, pki, common in
            var lines = ["# exported from the old backend", ""]
            for index in 0..<5 {
                let original = String(2_000_000_700_000 + index * 10)
                let transaction = try pki.jws(
                    payload: PKI.transaction([
                        "transactionId": original, "originalTransactionId": original,
                        "expiresDate": PKI.milliseconds(Date().addingTimeInterval(20 * 86_400)),
                    ]))
                let renewal = try pki.jws(payload: PKI.renewalInfo(["originalTransactionId": original]))
                standIn.addCustomer(
                    .init(
                        signedTransactions: [transaction], transactionIds: [original],
                        statuses: [
                            (
                                group: "21000000", status: index == 4 ? 2 : 1, originalTransactionId: original, transaction: transaction,
                                renewal: renewal
                            )
                        ]))
                lines.append(original)
            }
            try workspace.write("ids.txt", lines.joined(separator: "\n") + "\n")
            let run = try await CommandTests.run(["appstore", "import", Self.app, "ids.txt"] + common, in: workspace.root)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.hasPrefix("com.example.app: 5 customers, 5 purchases, 5 periods, 0 refused, 10 API calls in "))
            #expect(run.stderr.contains("5 / 5 ids"))
            // Apple and the ledger agree on an active subscription...
            let agree = try await CommandTests.run(["appstore", "status", Self.app, "2000000700000"] + common, in: workspace.root)
            #expect(agree.status == 0, "\(agree.stderr)")
            #expect(agree.stdout.contains("Apple says active, ledger grants pro"))
            // ...and not on one Apple says expired while its transaction runs twenty more days.
            let differ = try await CommandTests.run(["appstore", "status", Self.app, "2000000700040"] + common, in: workspace.root)
            #expect(differ.status == 2)
            #expect(differ.stdout.contains("Apple says expired, ledger grants pro  <- differs"))
        }
    }

    /// The question of the day the URL is pasted into App Store Connect: Apple's test notification
    /// reaches a running server, which stores it; with the server stopped, it does not.
    @Test func testNotificationReachesTheServer() async throws {
        try await Self.withSetup { workspace, standIn, _, common in
            let server = try ServeProcess(in: workspace, ["--store", "sqlite:var/catalog.sqlite", "--root-certificate", "root.pem"])
            #expect(try await server.body(of: "/readyz", within: 60) != nil, "\(server.logText)")
            standIn.setNotificationURL(server.url("/v1/apps/\(Self.app)/notifications/app-store"))
            let reached = try await CommandTests.run(["appstore", "test-notification", Self.app] + common, in: workspace.root)
            #expect(reached.status == 0, "\(reached.stderr)")
            #expect(reached.stdout == "com.example.app production: the test notification reached the server (SUCCESS)\n")
            _ = try await server.stop()
            #expect(try await Self.storedNotifications(workspace).count == 1)
            let missed = try await CommandTests.run(["appstore", "test-notification", Self.app] + common, in: workspace.root)
            #expect(missed.status == 1)
            #expect(missed.stdout.contains("did not reach the server (NO_RESPONSE)"))
        }
    }

    /// The editor node reconciles by itself at start, and says so in /metrics.
    @Test func theServerReconcilesAtStart() async throws {
        try await Self.withSetup { workspace, standIn, pki, _ in
            let all = try SignedNotification.subscriptions(pki, customers: 4)
            for notification in all { standIn.addNotification(notification.signedPayload, firstSent: notification.firstSent) }
            let server = try ServeProcess(
                in: workspace,
                [
                    "--store", "sqlite:var/catalog.sqlite", "--root-certificate", "root.pem", "--app-store-api-url",
                    standIn.baseURL.absoluteString,
                ])
            let metrics = try await server.body(of: "/metrics", within: 60) {
                $0.contains("catalog_appstore_reconciled_notifications_total")
            }
            _ = try await server.stop()
            #expect(metrics?.contains(#"catalog_appstore_api_requests_total{operation="notificationHistory",outcome="200"}"#) == true)
            #expect(
                metrics?.contains(
                    #"catalog_appstore_reconciled_notifications_total{app="com.example.app",environment="production",result="stored"} 12"#)
                    == true, "\(server.logText)")
            #expect(Set(try await Self.storedNotifications(workspace)).count == 12)
        }
    }
}
