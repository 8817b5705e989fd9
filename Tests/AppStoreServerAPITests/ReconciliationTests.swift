import AppStore
import AppStoreAPIStandIn
import AppStoreServerAPI
import AppStoreTestSupport
import CatalogKit
import CatalogTestSupport
import Crypto
import Foundation
import Ledger
import Logging
import OutboundAPI
import Storage
import Synchronization
import Testing

/// Reconciliation against the stand-in, on a real store: a window of notifications the server
/// refused is read back from the history and recorded once, the ledger as if none had been
/// missed; a run stopped anywhere resumes where it was, recording nothing twice and skipping
/// nothing (docs/app-store-api.md, "Reconciliation").
enum ReconciliationScenarios {
    typealias PKI = AppStoreTestPKI
    static let app = "com.example.app"
    static let keyId = "ABCDEF1234"

    typealias Signed = SignedNotification

    /// The app's purchase settings, trusting the test PKI.
    static func purchases(_ pki: PKI) throws -> AppPurchases {
        let record = try JSONDecoder().decode(
            PurchaseRecord.self,
            from: Data(
                #"""
                {"app":"com.example.app","appAppleId":1234567890,"environments":["production","sandbox"],"format":1,
                 "products":[{"entitlements":["pro"],"group":"pro","id":"com.example.app.pro.monthly","type":"auto-renewable"}],
                 "transferPolicy":"keep"}
                """#.utf8))
        return try AppPurchases(record, trust: pki.trust)
    }

    static func notifications(_ pki: PKI, customers: Int, now: Date = Date()) throws -> [Signed] {
        try SignedNotification.subscriptions(pki, customers: customers, now: now)
    }

    /// What the notification endpoint does with a notification that reaches it.
    static func receive(_ notification: Signed, app purchases: AppPurchases, into store: any PurchaseStore) async throws {
        let verified = try await purchases.verifier.verifyAndDecodeNotification(notification.body)
        let submission = try #require(
            PurchaseSubmission.notification(
                verified, app: app, body: notification.body, receivedAt: Date(), transferPolicy: purchases.transferPolicy))
        _ = try await store.record([submission])
    }

    /// Every customer's answer at a fixed instant, their store-made ids left out.
    static func ledger(_ store: any PurchaseStore, originals: Set<String>, purchases: AppPurchases) async throws -> [String: CustomerAnswer
        .Body]
    {
        var answers: [String: CustomerAnswer.Body] = [:]
        for original in originals {
            guard let record = try await store.customer(app: app, id: original) else { continue }
            var body = CustomerAnswer(record, at: PKI.date(2025, 1, 15), catalog: purchases.catalog, full: true).body
            body.customer = 0
            answers[original] = body
        }
        return answers
    }

    /// The notifications a store holds, by id.
    static func storedIds(_ store: any PurchaseStore) async throws -> [String] {
        try await store.notifications(app: app, after: 0, limit: 100_000).map(\.notificationId)
    }

    /// A client of the stand-in with a key it accepts.
    static func client(
        _ standIn: AppStoreAPIStandIn, keyFile: String, transport: HTTPClientTransport, attempts: Int = 5
    ) throws -> AppStoreServerAPIClient {
        let key = P256.Signing.PrivateKey()
        standIn.accept(kid: keyId, key: key.publicKey)
        try key.pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
        return AppStoreServerAPIClient(
            environment: .production, baseURL: standIn.baseURL,
            tokens: APITokenSource(
                AppStoreAPICredentials(keyId: keyId, issuerId: standIn.issuerId, bundleId: standIn.bundleId, keyFile: keyFile)),
            transport: transport, policy: APIRetryPolicy(maximumAttempts: attempts), sleep: { _ in })
    }

    /// Runs `body` with a stand-in, a transport and a key file, all stopped afterwards.
    static func withAPI(
        pageSize: Int = 20, _ body: (AppStoreAPIStandIn, HTTPClientTransport, String) async throws -> Void
    ) async throws {
        let standIn = try await AppStoreAPIStandIn.start(pageSize: pageSize)
        let transport = HTTPClientTransport()
        let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("reconcile-\(UUID().uuidString).p8").path
        defer { try? FileManager.default.removeItem(atPath: keyFile) }
        do {
            try await body(standIn, transport, keyFile)
        } catch {
            try? await transport.shutdown()
            await standIn.stop()
            throw error
        }
        try? await transport.shutdown()
        await standIn.stop()
    }

    /// An app misconfigured for a while (its notifications refused), fixed, then reconciled: every
    /// notification stored once, and every customer's ledger what it is on a store that missed none.
    static func aRefusedWindowIsRecordedOnce(reference: any Store, store: any Store) async throws {
        let pki = try PKI.ecdsa()
        let purchases = try purchases(pki)
        let all = try notifications(pki, customers: 15)
        let missed = 12..<37
        for notification in all { try await receive(notification, app: purchases, into: reference) }
        for (index, notification) in all.enumerated() where !missed.contains(index) {
            try await receive(notification, app: purchases, into: store)
        }
        #expect(try await storedIds(store).count == all.count - missed.count)
        try await withAPI { standIn, transport, keyFile in
            for notification in all { standIn.addNotification(notification.signedPayload, firstSent: notification.firstSent) }
            let reconciler = NotificationReconciler(
                app: purchases, client: try client(standIn, keyFile: keyFile, transport: transport), store: store, positions: store)
            let summary = try await reconciler.run()
            #expect(summary.received == all.count)
            #expect(summary.stored == missed.count)
            #expect(summary.duplicates == all.count - missed.count)
            #expect(summary.refused == 0)
            #expect(summary.pages == 3)
            #expect(summary.done)
            // A second run reads only the last hour again, and records nothing.
            let again = try await reconciler.run()
            #expect(again.stored == 0)
        }
        let stored = try await storedIds(store)
        #expect(stored.count == all.count)
        #expect(Set(stored).count == all.count)
        let originals = Set(all.map(\.original))
        let expected = try await ledger(reference, originals: originals, purchases: purchases)
        #expect(expected.count == originals.count)
        #expect(try await ledger(store, originals: originals, purchases: purchases) == expected)
    }

    /// Positions that fail to be saved after `failAfter` saves: a run killed between recording a
    /// page and keeping its position, the worst moment.
    final class KilledPositions: PollPositionStore {
        let base: any PollPositionStore
        let saves = Mutex(0)
        let failAfter: Int
        init(_ base: any PollPositionStore, failAfter: Int) {
            self.base = base
            self.failAfter = failAfter
        }
        func pollPosition(app: String, marketplace: Marketplace, stream: String) async throws -> PollPosition? {
            try await base.pollPosition(app: app, marketplace: marketplace, stream: stream)
        }
        func savePollPosition(_ position: PollPosition) async throws {
            let count = saves.withLock {
                $0 += 1
                return $0
            }
            if count > failAfter { throw CancellationError() }
            try await base.savePollPosition(position)
        }
        func pollPositions() async throws -> [PollPosition] { try await base.pollPositions() }
    }

    /// Killed after a page was recorded and before its position was kept, then cut mid-answer:
    /// each restart resumes at the page it was reading, and in the end every notification is
    /// stored once.
    static func aStoppedRunResumesWhereItWas(store: any Store) async throws {
        let pki = try PKI.ecdsa()
        let purchases = try purchases(pki)
        let all = try notifications(pki, customers: 15)
        try await withAPI { standIn, transport, keyFile in
            for notification in all { standIn.addNotification(notification.signedPayload, firstSent: notification.firstSent) }
            let client = try client(standIn, keyFile: keyFile, transport: transport, attempts: 1)
            // Page 1 recorded and kept; page 2 recorded, its position lost.
            let killed = NotificationReconciler(
                app: purchases, client: client, store: store, positions: KilledPositions(store, failAfter: 1))
            await #expect(throws: CancellationError.self) { try await killed.run() }
            #expect(try await storedIds(store).count == 40)
            let kept = try #require(
                try await store.pollPosition(app: app, marketplace: .appStore, stream: NotificationReconciler.stream(.production)))
            #expect(kept.cursor != nil && !kept.done)
            // The restart asks for page 2 again, and the connection is cut in the middle of it.
            standIn.inject(.cut)
            let resumed = NotificationReconciler(app: purchases, client: client, store: store, positions: store)
            await #expect(throws: AppStoreAPIError.self) { try await resumed.run() }
            #expect(standIn.calls.last?.query["paginationToken"] == kept.cursor)
            // And again: page 2's notifications are duplicates, page 3's are new.
            let summary = try await resumed.run()
            #expect(summary.pages == 2)
            #expect(summary.duplicates == 20)
            #expect(summary.stored == 5)
        }
        let stored = try await storedIds(store)
        #expect(stored.count == all.count)
        #expect(Set(stored).count == all.count)
    }
}

@Suite struct ReconciliationTests {
    static func withSQLite(_ body: (any Store) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("reconcile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try await SQLiteStore.open(path: folder.appendingPathComponent("catalog.sqlite").path)
        try await body(store)
        try await store.close()
    }

    @Test func aRefusedWindowIsRecordedOnce() async throws {
        try await Self.withSQLite { reference in
            try await Self.withSQLite { store in
                try await ReconciliationScenarios.aRefusedWindowIsRecordedOnce(reference: reference, store: store)
            }
        }
    }

    @Test func aStoppedRunResumesWhereItWas() async throws {
        try await Self.withSQLite { try await ReconciliationScenarios.aStoppedRunResumesWhereItWas(store: $0) }
    }
}

/// The same on PostgreSQL.
@Suite(.postgres) struct PostgresReconciliationTests {
    static func withPostgres(_ body: (any Store) async throws -> Void) async throws {
        let url = try await TestPostgres.current.createDatabase()
        let store = try await openStore(try StoreURL(parsing: url), logger: Logger(label: "test"))
        do {
            try await body(store)
        } catch {
            try? await store.close()
            throw error
        }
        try await store.close()
    }

    @Test func aRefusedWindowIsRecordedOnce() async throws {
        try await Self.withPostgres { reference in
            try await Self.withPostgres { store in
                try await ReconciliationScenarios.aRefusedWindowIsRecordedOnce(reference: reference, store: store)
            }
        }
    }

    @Test func aStoppedRunResumesWhereItWas() async throws {
        try await Self.withPostgres { try await ReconciliationScenarios.aStoppedRunResumesWhereItWas(store: $0) }
    }
}
