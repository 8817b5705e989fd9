import AppStoreTestSupport
import CatalogClient
import CatalogKit
import Content
import Foundation
import Synchronization
import Testing
import Time

/// Restore and reinstall (issue 35, item 5): what the store holds presented to the real purchase
/// endpoint of `catalog serve`, through ``StoreStandIn`` where StoreKit would answer, so that an
/// install that never sent a purchase knows what the customer owns and downloads it.
@Suite struct RestoreTests {
    typealias Fixture = PurchaseTests.Fixture
    typealias PKI = AppStoreTestSupport.AppStoreTestPKI

    /// The two purchases of these tests, signed by the fixture's PKI: the pro subscription and the
    /// level pack.
    static func purchases(_ fixture: Fixture) throws -> (pro: String, levels: String) {
        (try fixture.pki.jws(payload: PKI.transaction()), try fixture.pki.jws(payload: PurchaseTests.levels()))
    }

    /// A reinstalled app (a second device would be the same): the first install bought pro for the
    /// app account, the new one has nothing on disk and asks the store. The restore presents both
    /// current entitlements with the AppTransaction and the account, the server answers the one
    /// customer, and from then on the install reads it offline and refreshes it by itself. No sync
    /// (no sign-in prompt) unless asked.
    @Test func aFreshInstallRestoresWhatTheStoreHolds() async throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let account = UUID()
        let (pro, levels) = try Self.purchases(fixture)
        let store = StoreStandIn([pro, levels], appTransaction: try fixture.pki.jws(payload: PKI.appTransaction()))
        try await fixture.serve { server, _ in
            let first = fixture.client(server: server, install: "first")
            try await first.sendPurchase(signedTransaction: pro, appAccountToken: account)
            let bought = try #require(await first.sendPendingPurchases().entitlements)

            let reinstalled = fixture.client(server: server, install: "reinstalled")
            #expect(await reinstalled.entitlements().source == .unknown)
            #expect(await reinstalled.refreshEntitlements().source == .unknown, "nothing to present before a restore")

            let restored = await reinstalled.restorePurchases(from: store, appAccountToken: account)
            #expect(restored.error == nil, "\(String(describing: restored.error))")
            #expect(restored.found == 2 && restored.accepted == 2 && restored.refused.isEmpty)
            #expect(Set(restored.entitlements.entitlements.map(\.name)) == ["pro", "levels"])
            #expect(restored.entitlements.source == .network)
            #expect(restored.entitlements.customer == bought.customer, "the account's one customer")
            #expect(restored.entitlements.keys.contains { $0.kind == "appAccountToken" && $0.value == account.uuidString.lowercased() })
            #expect(store.calls == ["currentEntitlements", "appTransaction"], "no sync unless the person asked")

            let relaunched = fixture.client(server: server, install: "reinstalled")
            let kept = await relaunched.entitlements()
            #expect(kept.source == .cache)
            #expect(Set(kept.entitlements.map(\.name)) == ["pro", "levels"])
            let refreshed = await relaunched.refreshEntitlements()
            #expect(refreshed.source == .network && refreshed.error == nil)
            #expect(Set(refreshed.entitlements.map(\.name)) == ["pro", "levels"])

            // The "Restore Purchases" button: the store syncs first.
            _ = await relaunched.restorePurchases(from: store, syncing: true, appAccountToken: account)
            #expect(store.calls.suffix(3) == ["sync", "currentEntitlements", "appTransaction"])
        }
    }

    /// Purchases made without an app account: each is a customer of its own on the server until an
    /// account claims it, so the restore is answered by two customers. The install grants both,
    /// after a relaunch too, and refreshes both.
    @Test func purchasesWithoutAnAccountAreMerged() async throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let (pro, levels) = try Self.purchases(fixture)
        try await fixture.serve { server, store in
            let client = fixture.client(server: server)
            let restored = await client.restorePurchases(from: StoreStandIn([pro, levels]))
            #expect(restored.accepted == 2 && restored.error == nil)
            let proHolder = try await store.customer(app: PurchaseTests.app, id: "2000000000000001")
            let levelsHolder = try await store.customer(app: PurchaseTests.app, id: "2000000000000101")
            #expect(proHolder != nil && levelsHolder != nil && proHolder?.id != levelsHolder?.id, "two customers on the server")
            #expect(Set(restored.entitlements.entitlements.map(\.name)) == ["pro", "levels"])
            #expect(restored.entitlements.grants("pro", at: Date(timeIntervalSince1970: 1_736_899_200)))
            #expect(restored.entitlements.grants("levels"))

            let relaunched = fixture.client(server: server)
            let kept = await relaunched.entitlements()
            #expect(Set(kept.entitlements.map(\.name)) == ["pro", "levels"])
            #expect(kept.readAt != nil)
            let refreshed = await relaunched.refreshEntitlements()
            #expect(refreshed.source == .network && refreshed.error == nil)
            #expect(Set(refreshed.entitlements.map(\.name)) == ["pro", "levels"])
        }
    }

    /// Issue 35 item 5, through a restore: the pro subscription belongs to account A (`keep`), and
    /// account B restores an Apple account that holds it beside B's own level pack. The pack is
    /// restored; the subscription comes back as belonging to another account, with what B does
    /// own, and is granted nowhere.
    @Test func aRestoreReportsAPurchaseOfAnotherAccount() async throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let (accountA, accountB) = (UUID(), UUID())
        let (pro, levels) = try Self.purchases(fixture)
        try await fixture.serve { server, _ in
            let a = fixture.client(server: server, install: "a")
            try await a.sendPurchase(signedTransaction: pro, appAccountToken: accountA)
            #expect(await a.sendPendingPurchases().sent == 1)

            let b = fixture.client(server: server, install: "b")
            let restored = await b.restorePurchases(from: StoreStandIn([levels, pro]), appAccountToken: accountB)
            #expect(restored.found == 2 && restored.accepted == 1 && restored.error == nil)
            let refusal = try #require(restored.refused.first)
            #expect(restored.refused.count == 1)
            #expect(refusal.isBoundToAnotherCustomer)
            #expect(refusal.error.serverCode == "bound-to-another-customer" && refusal.error.status == 409)
            #expect(refusal.productId == "com.example.app.pro.monthly")
            #expect(refusal.entitlements?.entitlements.map(\.name) == ["levels"])
            #expect(restored.entitlements.entitlements.map(\.name) == ["levels"])
            #expect(!restored.entitlements.grants("pro", at: Date(timeIntervalSince1970: 1_736_899_200)))
            #expect(await b.refusedPurchases().isEmpty, "a restore's refusals are its caller's, not the queue's")
            #expect(await a.refreshEntitlements().entitlements.map(\.name) == ["pro"], "A keeps it")
        }
    }

    /// The store fails: a sync the person cancelled (or that StoreKit could not make offline) still
    /// lets what the device holds through; a list StoreKit cannot read presents nothing. The server
    /// unreachable: nothing is granted, and the error says why.
    @Test func storeAndNetworkFailuresAreReported() async throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let (_, levels) = try Self.purchases(fixture)
        try await fixture.serve { server, _ in
            let cancelled = await fixture.client(server: server, install: "sync")
                .restorePurchases(from: StoreStandIn([levels], syncFails: true), syncing: true)
            #expect(cancelled.error?.code == .storeKit)
            #expect(cancelled.accepted == 1)
            #expect(cancelled.entitlements.entitlements.map(\.name) == ["levels"])

            let unreadable = await fixture.client(server: server, install: "list")
                .restorePurchases(from: StoreStandIn([levels], listFails: true))
            #expect(unreadable.error?.code == .storeKit)
            #expect(unreadable.found == 0 && unreadable.accepted == 0)
            #expect(unreadable.entitlements.source == .unknown)
        }
        let offline = await fixture.client(server: try await closedServerURL(), install: "offline")
            .restorePurchases(from: StoreStandIn([levels]))
        #expect(offline.error?.code == .transport)
        #expect(offline.accepted == 0)
        #expect(offline.entitlements.source == .unknown && offline.entitlements.entitlements.isEmpty)
    }

    /// Someone else signs in to the app on the same device: their account's answer replaces the
    /// previous account's, which this install must no longer grant, after a relaunch too.
    @Test func anotherAccountReplacesTheKeptOne() async throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let (pro, levels) = try Self.purchases(fixture)
        try await fixture.serve { server, _ in
            let client = fixture.client(server: server)
            try await client.sendPurchase(signedTransaction: pro, appAccountToken: UUID())
            #expect(await client.sendPendingPurchases().entitlements?.entitlements.map(\.name) == ["pro"])
            let other = await client.restorePurchases(from: StoreStandIn([levels]), appAccountToken: UUID())
            #expect(other.entitlements.entitlements.map(\.name) == ["levels"])
            #expect(await fixture.client(server: server).entitlements().entitlements.map(\.name) == ["levels"])
        }
    }

    /// The content manager on a fresh install: it has nothing to show the server until a restore
    /// ran, then it lists and downloads what the restored purchase grants, from the real server,
    /// digests checked. (The server's clock is the real one here: the manager renews a URL that
    /// expires, by the device's clock, within seconds.)
    @Test func contentDownloadsOnAFreshInstallAfterRestore() async throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let (_, levels) = try Self.purchases(fixture)
        let pack = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 8) })
        try fixture.publishLevelsContent(pack)
        try await fixture.serve(clock: { .now }) { server, _ in
            let client = fixture.client(server: server, install: "fresh")
            var configuration = client.configuration
            configuration.fetchBackoff = Backoff(initial: 0.01, maximum: 0.05)
            let downloads = ContentDownloadManager(configuration: configuration)
            do throws(CatalogClientError) {
                _ = try await downloads.available()
                Issue.record("a list without evidence")
            } catch {
                #expect(error.code == .rejected && error.message.contains("restorePurchases"))
            }

            let restored = await client.restorePurchases(from: StoreStandIn([levels]))
            #expect(restored.accepted == 1, "\(String(describing: restored.error))")
            let list = try await downloads.available()
            #expect(list.map(\.item) == ["levels"])
            await downloads.download(try #require(list.first))
            let done = try #require(await downloads.waitForDownload("levels"))
            #expect(done.state == .finished, "\(String(describing: done.error))")
            #expect(try Data(contentsOf: try #require(done.location).appendingPathComponent("levels/1.bin")) == pack)
        }
    }

    /// An install updated from a client that kept one answer (`entitlements.json`) and the last
    /// accepted body (`evidence.json`): both are read, presented again by a refresh, and replaced.
    @Test func whatAnOlderClientKeptIsRead() async throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let (pro, _) = try Self.purchases(fixture)
        let purchases = fixture.clientDirectory.appendingPathComponent("data/purchases")
        try FileManager.default.createDirectory(at: purchases, withIntermediateDirectories: true)
        let answer =
            #"{"customer":1,"keys":[],"entitlements":[{"entitlement":"pro","environment":"Production","productId":"com.example.app.pro.monthly","transactionId":"2000000000000001","expiresDate":"2025-01-31T00:00:00.000Z","inGracePeriod":false}],"credits":[]}"#
        try Data("1736899200000\n\(answer)".utf8).write(to: purchases.appendingPathComponent("entitlements.json"))
        try Data(#"{"signedTransaction":"\#(pro)"}"#.utf8).write(to: purchases.appendingPathComponent("evidence.json"))
        try await fixture.serve { server, _ in
            let client = fixture.client(server: server)
            let kept = await client.entitlements()
            #expect(kept.source == .cache && kept.entitlements.map(\.name) == ["pro"])
            #expect(kept.readAt == Date(timeIntervalSince1970: 1_736_899_200))
            let refreshed = await client.refreshEntitlements()
            #expect(refreshed.source == .network && refreshed.entitlements.map(\.name) == ["pro"])
            #expect(FileManager.default.fileExists(atPath: purchases.appendingPathComponent("customers.json").path))
            #expect(!FileManager.default.fileExists(atPath: purchases.appendingPathComponent("entitlements.json").path))
        }
    }
}

/// The store on the device, where StoreKit would answer a restore: the signed transactions it
/// lists, its AppTransaction, whether its sync or its list fails, and what it was asked.
final class StoreStandIn: SignedTransactionSource {
    struct Failure: Error {}

    let transactions: [String]
    let signedAppTransaction: String?
    let syncFails: Bool
    let listFails: Bool
    private let asked = Mutex<[String]>([])

    init(_ transactions: [String], appTransaction: String? = nil, syncFails: Bool = false, listFails: Bool = false) {
        self.transactions = transactions
        signedAppTransaction = appTransaction
        self.syncFails = syncFails
        self.listFails = listFails
    }

    /// What the restore asked, in order.
    var calls: [String] { asked.withLock { $0 } }

    func currentEntitlements() async throws -> [String] {
        asked.withLock { $0.append("currentEntitlements") }
        if listFails { throw Failure() }
        return transactions
    }

    func appTransaction() async throws -> String? {
        asked.withLock { $0.append("appTransaction") }
        return signedAppTransaction
    }

    func sync() async throws {
        asked.withLock { $0.append("sync") }
        if syncFails { throw Failure() }
    }
}

extension PurchaseTests.Fixture {
    /// Publishes `bytes` as the level pack's content (item `levels`, file `levels/1.bin`, granted by
    /// the level pack) in the current revision's content manifest.
    func publishLevelsContent(_ bytes: Data) throws {
        let tree = PublicTree(root: root.appendingPathComponent("public"))
        let revision = try #require(try tree.currentManifest(PurchaseTests.app)?.revision)
        let receipt = try BlobStore(root: tree.content).put(bytes)
        let manifest = try ContentManifest(items: [
            ContentManifest.Item(
                id: "levels", product: "com.example.app.levels",
                files: [ContentManifest.File(path: "levels/1.bin", size: receipt.size, sha256: receipt.digest)])
        ])
        let url = tree.contentManifestURL(PurchaseTests.app, revision)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try manifest.encoded().write(to: url)
    }
}
