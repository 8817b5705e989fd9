import AppStore
import AppStoreTestSupport
import CatalogKit
import CatalogTestSupport
import Foundation
import Ledger
import Logging
import Testing

@testable import Storage

/// The migration that taught the schema stores (SQLite 8, PostgreSQL 11), run on rows as the code
/// before it wrote them (`Fixtures/`, written by catalog at 5407df3): every purchase, key, payload,
/// transfer, refused claim, notification and webhook event reads back as the App Store's, and the
/// store goes on recording.
enum PurchaseMigration {
    static let app = "com.example.app"
    static let account = "aaaaaaaa-0000-4000-8000-000000000001"

    /// The rows of a store written before stores, as statements for `dialect`.
    static func fixture(_ name: String) throws -> String {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
        return try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
    }

    /// What the migrated store must answer, then record; `outbox` is the same store's, read by a
    /// role that may (a replica's only adds events).
    static func readsAndRecords(_ store: any PurchaseStore, outbox: any WebhookOutbox) async throws {
        // The customer of an app account: both keys, two purchases, three transactions, one renewal info.
        let customer = try #require(try await store.customer(app: app, id: account))
        #expect(customer.id == 1)
        #expect(
            Set(customer.keys) == [.appAccount(account), CustomerKey(kind: .storeAccount, value: "700000001", marketplace: .appStore)])
        #expect(customer.purchases == [PurchaseReference(.appStore, "1000000000000001"), PurchaseReference(.appStore, "3000000000000001")])
        #expect(customer.transactions.compactMap(\.transactionId).sorted() == ["1000000000000001", "1000000000000002", "3000000000000001"])
        #expect(customer.transactions.allSatisfy { $0.marketplace == .appStore })
        #expect(customer.states.count == 1)
        #expect(customer.states.first?.purchaseKey == "1000000000000001")
        #expect(try await store.customer(app: app, id: "700000001")?.id == 1, "found by Apple's account id")
        #expect(try await store.customer(app: app, id: "1000000000000002")?.id == 1, "found by a transaction id")
        // The purchase kept by its first account, and the claim refused to another.
        let refused = try #require(customer.refusedClaims.first)
        #expect(refused.purchase == PurchaseReference(.appStore, "3000000000000001"))
        #expect(refused.claimant == .appAccount("bbbbbbbb-0000-4000-8000-000000000002"))
        #expect(refused.count == 1)

        // The customer a notification made, known by its purchase only.
        let placeholder = try #require(try await store.customer(app: app, id: "2000000000000001"))
        #expect(placeholder.id == 2)
        #expect(placeholder.keys == [CustomerKey(kind: .purchase, value: "2000000000000001", marketplace: .appStore)])

        // Raw notifications in their order, and the webhook events with their ids.
        let notifications = try await store.notifications(app: nil, after: 0, limit: 10)
        #expect(notifications.map(\.notificationId) == ["n-renew", "n-lonely"])
        #expect(notifications.allSatisfy { $0.marketplace == .appStore })
        let events = try await outbox.pendingWebhookEvents(limit: 10)
        #expect(events.map(\.purchaseKey) == ["1000000000000001", "1000000000000001", "2000000000000001", "3000000000000001"])
        #expect(events.allSatisfy { $0.marketplace == .appStore })
        #expect(events.map(\.type.rawValue) == ["started", "renewed", "started", "started"])

        // Recording goes on: a first app account claims the placeholder through its purchase, and
        // a notification already stored is a duplicate still.
        let claimant = "cccccccc-0000-4000-8000-000000000003"
        let presented = AppStoreTestPKI.decoded(
            AppStoreTestPKI.transaction([
                "transactionId": "2000000000000001", "originalTransactionId": "2000000000000001",
                "productId": "com.example.app.pro.monthly",
            ]), as: JWSTransactionDecodedPayload.self)
        let claimed = try await store.record([
            PurchaseSubmission(
                app: app, receivedAt: Date(timeIntervalSince1970: 1_740_873_600), source: .app, transactions: [Kept(presented)],
                appAccount: claimant, transferPolicy: .keep)
        ])
        #expect(claimed.first?.refusal == nil)
        #expect(claimed.first?.customerId != nil)
        #expect(try await store.customer(app: app, id: claimant)?.purchases.map(\.key) == ["2000000000000001"])
        #expect(try await store.customer(app: app, id: "2000000000000001")?.keys == [.appAccount(claimant)], "the placeholder absorbed")
        let again = PurchaseSubmission(
            app: app, receivedAt: Date(timeIntervalSince1970: 1_740_873_600), source: .notification,
            notification: RawNotification(
                app: app, notificationId: "n-renew", notificationType: "DID_RENEW", subtype: nil, environment: "Production",
                signedDate: nil, receivedAt: Date(timeIntervalSince1970: 1_740_873_600), body: "{}"),
            storeEvent: .appStore(notification: "DID_RENEW", subtype: nil), transactions: [])
        #expect(try await store.record([again]).first?.duplicate == true)
    }
}

@Suite struct SQLitePurchaseMigrationTests {
    @Test func rowsWrittenBeforeStoresReadAsTheAppStores() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("migration-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("catalog.sqlite").path

        // A store at version 7, as the code before stores made it, holding that code's rows.
        do {
            let connection = try SQLiteConnection(path: path)
            try connection.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)")
            for migration in Schema.sqlite where migration.version <= 7 {
                try connection.execute(migration.sql)
                _ = try connection.run(
                    "INSERT INTO schema_migrations (version, applied_at) VALUES (?1, 0)", [.integer(Int64(migration.version))])
            }
            try connection.execute(try PurchaseMigration.fixture("purchases-sqlite-v7.sql"))
        }

        let store = try await SQLiteStore.open(path: path)
        try await PurchaseMigration.readsAndRecords(store, outbox: store)
        try await store.close()
    }
}

@Suite(.postgres) struct PostgresPurchaseMigrationTests {
    /// On PostgreSQL, and then on a replica: the editor's role migrates, the roles' SQL grants the
    /// new tables, and the replica's role reads and records the migrated rows.
    @Test func rowsWrittenBeforeStoresReadAsTheAppStoresOnAReplicaToo() async throws {
        let server = try TestPostgres.current
        let url = try await server.createDatabase()
        let database = String(url.split(separator: "/").last ?? "")
        let suffix = UUID().uuidString.filter(\.isHexDigit).prefix(8).lowercased()
        let (editorRole, replicaRole) = ("editor_\(suffix)", "replica_\(suffix)")
        try await server.psql(try StoreRoles.sql(replicaRole: replicaRole, editorRole: editorRole), database: database)
        try await server.psql("ALTER ROLE \(editorRole) PASSWORD 'editor-pw'; ALTER ROLE \(replicaRole) PASSWORD 'replica-pw'")

        // A store at version 10, owned by the editor's role, holding rows as the code before stores
        // wrote them; the sequences where those writes left them.
        var old = "SET ROLE \(editorRole);\nCREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL);\n"
        for migration in Schema.postgres where migration.version <= 10 {
            old += "DO $migration$ BEGIN \(migration.sql) END $migration$;\n"
            old += "INSERT INTO schema_migrations (version, applied_at) VALUES (\(migration.version), 0);\n"
        }
        old += try PurchaseMigration.fixture("purchases-postgres-v10.sql")
        old += """

            SELECT setval('purchase_customers_id_seq', 2);
            SELECT setval('purchase_notifications_sequence_seq', 2);
            SELECT setval('purchase_webhook_events_sequence_seq', 4);
            """
        try await server.psql(old, database: database)

        let logger = Logger(label: "catalog.tests.migration")
        func open(_ role: String, _ password: String) async throws -> PostgresStore {
            guard case .postgres(let address) = try StoreURL(parsing: "postgres://\(role):\(password)@127.0.0.1:\(server.port)/\(database)")
            else { throw StoreURLError("not PostgreSQL") }
            return try await PostgresStore.open(address, logger: logger)
        }
        let editor = try await open(editorRole, "editor-pw")
        // The roles' SQL, run again after the migration as docs/storage.md says, grants its tables.
        try await server.psql(try StoreRoles.sql(replicaRole: replicaRole, editorRole: editorRole), database: database)
        let replica = try await open(replicaRole, "replica-pw")
        do {
            #expect(try await replica.rightsBeyondAReplica() == [])
            try await PurchaseMigration.readsAndRecords(replica, outbox: editor)
        } catch {
            try? await replica.close()
            try? await editor.close()
            throw error
        }
        try await replica.close()
        try await editor.close()
    }
}
