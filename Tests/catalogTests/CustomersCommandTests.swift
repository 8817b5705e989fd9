import AppStore
import AppStoreTestSupport
import Foundation
import Ledger
import Storage
import Testing

/// `catalog customers show` and `catalog purchases rebuild` on a real SQLite store.
@Suite struct CustomersCommandTests {
    typealias PKI = AppStoreTestPKI

    static let catalog = """
        <?xml version="1.0" encoding="UTF-8"?>
        <plist version="1.0"><dict><key>platforms</key><array><string>iOS</string></array>
        <key>appAppleId</key><integer>1234567890</integer>
        <key>products</key><array>
        <dict><key>id</key><string>com.example.app.pro.monthly</string><key>type</key><string>auto-renewable</string>
        <key>subscription</key><dict><key>group</key><string>pro</string><key>period</key><string>P1M</string></dict>
        <key>entitlements</key><array><string>pro</string></array></dict>
        </array></dict></plist>
        """

    static func entitlements(_ stdout: String) throws -> [String] {
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any])
        return ((answer["entitlements"] as? [[String: Any]]) ?? []).compactMap { $0["entitlement"] as? String }
    }

    /// What the operator's `sqlite3` prints for `sql` on the workspace's store.
    static func sqlite3(_ root: URL, _ sql: String) throws -> String {
        let sqlite = Process()
        sqlite.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        sqlite.arguments = ["sqlite3", root.appendingPathComponent("var/catalog.sqlite").path, sql]
        let output = Pipe()
        sqlite.standardOutput = output
        try sqlite.run()
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        sqlite.waitUntilExit()
        return String(decoding: printed, as: UTF8.self)
    }

    @Test func showsACustomerAndRebuildsTheLedgerFromTheRawNotifications() async throws {
        let pki = try PKI.ecdsa()
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("catalog/com.example.app.plist", Self.catalog)
            try workspace.write("root.pem", PKI.pem(pki.root) + "\n")
            let verifier = SignedDataVerifier(trust: pki.trust, app: AppStoreApp(bundleId: "com.example.app", appAppleId: 1_234_567_890))
            func submission(_ transaction: [String: any Sendable]) async throws -> PurchaseSubmission {
                let notification = try pki.jws(
                    payload: PKI.notification(
                        type: "DID_RENEW",
                        data: [
                            "signedTransactionInfo": try pki.jws(payload: PKI.transaction(transaction)),
                            "signedRenewalInfo": try pki.jws(payload: PKI.renewalInfo()),
                        ]))
                let body = "{\"signedPayload\":\"\(notification)\"}"
                let verified = try await verifier.verifyAndDecodeNotification(body)
                return try #require(
                    PurchaseSubmission.notification(verified, app: "com.example.app", body: body, receivedAt: Date(), transferPolicy: .keep)
                )
            }
            // Two renewals, committed apart: the second's body is kept compressed against the first's
            // (docs/storage.md, "Notification bodies"), and the rebuild verifies it again as posted.
            let store = try await SQLiteStore.open(path: workspace.root.appendingPathComponent("var/catalog.sqlite").path)
            _ = try await store.record([try await submission([:])])
            _ = try await store.record([
                try await submission([
                    "transactionId": "2000000000000002", "purchaseDate": PKI.milliseconds(PKI.date(2025, 1, 31)),
                    "expiresDate": PKI.milliseconds(PKI.date(2025, 2, 28)),
                ])
            ])
            try await store.close()
            #expect(
                try Self.sqlite3(workspace.root, "SELECT quote(body_base) FROM purchase_notifications ORDER BY sequence") == "NULL\n1\n")

            let storeOption = ["--store", "sqlite:var/catalog.sqlite"]
            let show = ["customers", "show", "com.example.app", "2000000000000001", "--at", "2025-01-15T00:00:00Z"] + storeOption
            let before = try await CommandTests.run(show, in: workspace.root)
            #expect(before.status == 0, "\(before.stderr)")
            #expect(try Self.entitlements(before.stdout) == ["pro"])
            let missing = try await CommandTests.run(["customers", "show", "com.example.app", "404"] + storeOption, in: workspace.root)
            #expect(missing.status == 1)

            let rebuild = try await CommandTests.run(
                ["purchases", "rebuild", "--root-certificate", "root.pem"] + storeOption, in: workspace.root)
            #expect(rebuild.status == 0, "\(rebuild.stderr)")
            #expect(rebuild.stdout == "com.example.app: 3 payloads cleared, 2 notifications replayed, 0 refused\n")
            let after = try await CommandTests.run(show, in: workspace.root)
            #expect(after.stdout == before.stdout, "the same ledger again")

            // Without the test's root the notifications no longer verify: they are left out, and said.
            let untrusted = try await CommandTests.run(["purchases", "rebuild"] + storeOption, in: workspace.root)
            #expect(untrusted.stdout == "com.example.app: 3 payloads cleared, 0 notifications replayed, 2 refused\n")
            #expect(untrusted.stderr.contains("no longer verifies"))
            #expect(try Self.entitlements(try await CommandTests.run(show, in: workspace.root).stdout) == [])
        }
    }
}
