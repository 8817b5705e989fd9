import AppStore
import AppStoreTestSupport
import CatalogKit
import Content
import Foundation
import Ledger
import Storage
import Testing

/// Issue 30: `catalog content url APP ITEM --customer ID`, for support: URLs for a granted item, and
/// for one that is not, a refusal that says why (a refund, an issue outside the periods).
extension CommandTests {
    @Test func contentURLSignsAGrantedItemAndSaysWhyNot() async throws {
        typealias PKI = AppStoreTestPKI
        try await Self.withWorkspace { workspace in
            let app = "com.example.app"
            try workspace.write(
                "catalog/\(app).plist",
                """
                <?xml version="1.0" encoding="UTF-8"?>
                <plist version="1.0"><dict><key>platforms</key><array><string>iOS</string></array>
                <key>appAppleId</key><integer>1234567890</integer>
                <key>products</key><array>
                <dict><key>id</key><string>com.example.app.news.monthly</string><key>type</key><string>auto-renewable</string>
                <key>subscription</key><dict><key>group</key><string>news.plus</string><key>period</key><string>P1M</string></dict></dict>
                <dict><key>id</key><string>com.example.app.levels</string><key>type</key><string>non-consumable</string></dict>
                </array></dict></plist>
                """)
            #expect(try await workspace.run("build").status == 0)
            let tree = PublicTree(root: workspace.root.appendingPathComponent("public"))
            let revision = try #require(try tree.currentManifest(app)?.revision)
            let blobs = BlobStore(root: tree.content)
            let level = try blobs.put(Data("{\"level\":1}".utf8))
            let issue = try blobs.put(Data("issue".utf8))
            let manifest = try ContentManifest(items: [
                .init(
                    id: "levels", product: "com.example.app.levels", files: [.init(path: "1.json", size: level.size, sha256: level.digest)]),
                .init(
                    id: "issue-2025-01", subscriptionGroup: "news.plus", published: PKI.date(2025, 1, 1),
                    files: [.init(path: "issue.pdf", size: issue.size, sha256: issue.digest)]),
            ])
            try workspace.write(
                "public.records/v1/apps/\(app)/revisions/\(revision)/content.json", String(decoding: manifest.encoded(), as: UTF8.self))
            let key = try ContentSigningKey.generate(id: "k1")
            try workspace.write("content-keys.json", #"{"current":"k1","keys":{"k1":"\#(key.secretBase64URL)"}}"#)

            let store = try await SQLiteStore.open(path: workspace.root.appendingPathComponent("var/catalog.sqlite").path)
            let bought: JWSTransactionDecodedPayload = PKI.decoded(
                PKI.transaction([
                    "transactionId": "4000000000000001", "originalTransactionId": "4000000000000001", "productId": "com.example.app.levels",
                    "type": "Non-Consumable", "purchaseDate": PKI.milliseconds(PKI.date(2025, 1, 10)), "expiresDate": NSNull(),
                    "subscriptionGroupIdentifier": NSNull(), "webOrderLineItemId": NSNull(),
                ]))
            _ = try await store.record([
                PurchaseSubmission(
                    app: app, receivedAt: PKI.date(2025, 1, 10), source: .app, transactions: [Kept(bought)])
            ])
            try await store.close()

            let granted = try await workspace.run(
                "content", "url", app, "levels", "--customer", "4000000000000001", "--content-keys", "content-keys.json",
                "--origin", "https://cdn.example.com/", "--at", "2025-03-01T00:00:00Z")
            #expect(granted.status == 0, "\(granted.stderr)")
            #expect(granted.stdout.contains("holds com.example.app.levels (transaction 4000000000000001)"), "\(granted.stdout)")
            #expect(granted.stdout.contains("https://cdn.example.com/v1/content/\(level.digest.hex)?exp="), "\(granted.stdout)")
            // --at decides access; the URL lives its lifetime from now, not from that instant.
            let expiry = granted.stdout.split(separator: "?exp=").last?.prefix { $0.isNumber }
            #expect(try #require(expiry.flatMap { TimeInterval(String($0)) }) > Date().timeIntervalSince1970, "\(granted.stdout)")

            let refused = try await workspace.run(
                "content", "url", app, "issue-2025-01", "--customer", "4000000000000001", "--content-keys", "content-keys.json")
            #expect(refused.status == 1)
            // The dashboard's wording, from the one function both use (CustomerContent.refusals).
            #expect(refused.stderr.contains("may not download 'issue-2025-01': they never subscribed to news.plus"), "\(refused.stderr)")
            let unknown = try await workspace.run(
                "content", "url", app, "nothing", "--customer", "4000000000000001", "--content-keys", "content-keys.json")
            #expect(unknown.status == 1)
            #expect(unknown.stderr.contains("its items: issue-2025-01, levels"), "\(unknown.stderr)")
        }
    }
}
