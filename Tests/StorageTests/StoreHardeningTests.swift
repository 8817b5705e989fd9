import AppStore
import CatalogKit
import CatalogTestSupport
import Foundation
import Ledger
import Logging
import Testing
import Time

@testable import Storage

/// What the store URL says about TLS and what messages show of it (docs/operations.md, "With
/// PostgreSQL"): a server on another machine has its certificate checked unless the URL lowers
/// it, and no message about a URL shows its password.
@Suite struct StoreURLHardeningTests {
    @Test(arguments: [
        // No sslmode: verify-full for another machine, prefer on this one.
        ("postgres://u@db.example.com/d", StoreURL.SSLMode.verifyFull),
        ("postgres://u@10.0.0.5:5432/d", .verifyFull),
        ("postgres://u@[2001:db8::5]/d", .verifyFull),
        ("postgres://u@128.0.0.1/d", .verifyFull),
        ("postgres://u@localhostess.example/d", .verifyFull),
        ("postgres://u@localhost/d", .prefer),
        ("postgres://u@LOCALHOST/d", .prefer),
        ("postgres://u@127.0.0.1/d", .prefer),
        ("postgres://u@127.1.2.3:5433/d", .prefer),
        ("postgres://u@[::1]/d", .prefer),
        // An explicit sslmode is what the operator asked for, lower or higher.
        ("postgres://u@db.example.com/d?sslmode=prefer", .prefer),
        ("postgres://u@db.example.com/d?sslmode=disable", .disable),
        ("postgres://u@db.example.com/d?sslmode=require", .require),
        ("postgres://u@db.example.com/d?sslmode=verify-ca", .verifyCA),
        ("postgres://u@127.0.0.1/d?sslmode=verify-full", .verifyFull),
    ])
    func defaultSSLModeByHost(url: String, mode: StoreURL.SSLMode) throws {
        guard case .postgres(let address) = try StoreURL(parsing: url) else {
            Issue.record("not PostgreSQL: \(url)")
            return
        }
        #expect(address.sslMode == mode, "\(url)")
    }

    /// Every URL this tool refuses, with a password in it: the message never shows it.
    @Test(arguments: [
        "postgres://catalog:hunter2@db.example.com:5432/",
        "postgres://catalog:hunter2@db.example.com:5432",
        "postgres://:hunter2@db.example.com/catalog",
        "postgres://catalog:hunter2@/catalog",
        "postgres://catalog:hunter2@db example.com/catalog",
        "postgres://catalog:hun@ter2@db.example.com/",
        "postgresql://catalog:hunter2@db.example.com/catalog?sslmode=maybe",
        "postgres://catalog:hunter2@db.example.com/catalog?what=ever",
        "mysql://catalog:hunter2@db.example.com/catalog",
    ])
    func refusedURLsNeverShowThePassword(url: String) {
        do {
            _ = try StoreURL(parsing: url)
            Issue.record("accepted \(url)")
        } catch {
            #expect(!error.description.contains("hunter2"), "\(error.description)")
            #expect(!error.description.contains("ter2"), "\(error.description)")
        }
    }
}

/// The audit log only grows, on both engines: an entry cannot be changed or deleted, not even
/// by a statement made outside the catalog.
@Suite struct SQLiteAuditLogTests {
    @Test func auditEntriesCannotBeChangedOrDeleted() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("audit-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("catalog.sqlite").path
        let store = try await SQLiteStore.open(path: path)
        try await store.appendAudit(
            AuditEntry(at: Timestamp(secondsSince1970: 1_700_000_000), actor: "alice", action: .publish, summary: "revision 1"))
        try await store.close()
        let connection = try SQLiteConnection(path: path)
        for statement in ["UPDATE audit_log SET summary = 'nothing happened'", "DELETE FROM audit_log"] {
            #expect(throws: SQLiteError.self, "\(statement)") { try connection.execute(statement) }
        }
        let reopened = try await SQLiteStore.open(path: path)
        let entries = try await reopened.auditLog(app: nil, limit: 10)
        try await reopened.close()
        #expect(entries.map(\.summary) == ["revision 1"])
    }
}

/// PostgreSQL: the audit log's triggers, and what a serving replica's connection can do.
@Suite(.postgres)
struct PostgresHardeningTests {
    private let logger = Logger(label: "catalog.tests.hardening")

    private func open(_ url: String) async throws -> PostgresStore {
        guard case .postgres(let address) = try StoreURL(parsing: url) else { throw StoreURLError("not PostgreSQL") }
        return try await PostgresStore.open(address, logger: logger)
    }

    @Test func auditEntriesCannotBeChangedOrDeleted() async throws {
        let server = try TestPostgres.current
        let url = try await server.createDatabase()
        let database = String(url.split(separator: "/").last ?? "")
        let store = try await open(url)
        try await store.appendAudit(
            AuditEntry(at: Timestamp(secondsSince1970: 1_700_000_000), actor: "alice", action: .publish, summary: "revision 1"))
        try await store.close()
        // As the tables' owner (the cluster's superuser, here): the trigger holds all the same.
        for statement in ["UPDATE audit_log SET summary = 'nothing happened'", "DELETE FROM audit_log", "TRUNCATE audit_log"] {
            await #expect(throws: TestPostgresError.self, "\(statement)") { try await server.psql(statement, database: database) }
        }
        #expect(try await server.psql("SELECT summary FROM audit_log", database: database) == "revision 1")
    }

    /// Two roles from the SQL `catalog store roles` prints: the editor's creates the tables and
    /// publishes; a serving replica's does all a replica does (stores and prunes reports, reads
    /// publications and the network secret) and cannot publish a file every replica would serve,
    /// mint an editor token, or erase the audit log. Before the roles, a replica connected as
    /// the editor's own role, and did all three.
    @Test func aReplicasRoleCannotPublishMintTokensOrEraseTheAudit() async throws {
        let server = try TestPostgres.current
        let url = try await server.createDatabase()
        let database = String(url.split(separator: "/").last ?? "")
        // Roles belong to the cluster, which other tests share: names of this test's own.
        let suffix = UUID().uuidString.filter(\.isHexDigit).prefix(8).lowercased()
        let (editorRole, replicaRole) = ("editor_\(suffix)", "replica_\(suffix)")
        let roles = try StoreRoles.sql(replicaRole: replicaRole, editorRole: editorRole)
        try await server.psql(roles, database: database)
        try await server.psql("ALTER ROLE \(editorRole) PASSWORD 'editor-pw'; ALTER ROLE \(replicaRole) PASSWORD 'replica-pw'")
        let editorURL = "postgres://\(editorRole):editor-pw@127.0.0.1:\(server.port)/\(database)"
        let replicaURL = "postgres://\(replicaRole):replica-pw@127.0.0.1:\(server.port)/\(database)"

        // The editor node's first start creates the tables; then the same SQL grants the replica its rights.
        let editor = try await open(editorURL)
        try await editor.appendAudit(
            AuditEntry(at: Timestamp(secondsSince1970: 1_700_000_000), actor: "alice", action: .publish, summary: "revision 1"))
        let manifest = PublishedFile(path: "public/v1/apps/com.example.app/manifest.json", app: "com.example.app", bytes: Array("{}".utf8))
        try await editor.recordPublication(app: "com.example.app", files: [manifest], audit: nil)
        let secret = try await editor.networkSecret(proposing: Array(repeating: 7, count: NetworkSecret.byteCount))
        #expect(try await !editor.rightsBeyondAReplica().isEmpty, "the editor's role owns the tables")
        try await editor.close()
        try await server.psql(roles, database: database)

        // What a replica does, as the replica role.
        let replica = try await open(replicaURL)
        #expect(try await replica.rightsBeyondAReplica() == [], "a replica's role holds exactly what it needs")
        let report = StoreConformance.report(["com.example.a"])
        #expect(try await replica.store([report]) == [.stored])
        #expect(try await replica.prune(receivedBefore: Timestamp(secondsSince1970: 0)) == 0)
        #expect(try await replica.prune(keepingPerApp: 1000) == [:])
        var received: [PublishedFile] = []
        _ = try await replica.publishedChanges(after: 0) { received.append($0) }
        #expect(received.map(\.path) == [manifest.path])
        #expect(try await replica.networkSecret(proposing: Array(repeating: 9, count: NetworkSecret.byteCount)) == secret)
        try await replica.ping()
        // Purchases, on every node (docs/purchases.md, "Replicas"): bound to a first customer, moved
        // by the transfer policy to a second (an update of the binding), with its webhook events.
        let json =
            #"{"transactionId":"7001","originalTransactionId":"7001","productId":"pro","type":"Non-Consumable","quantity":1,"environment":"Production","purchaseDate":1735689600000,"signedDate":1735689600000}"#
        let transaction = Kept(try #require(LedgerJSON.decode(LedgerTransaction.self, json)), json: json)
        for account in ["11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"] {
            let outcome = try await replica.record([
                PurchaseSubmission(
                    app: "com.example.app", receivedAt: Date(timeIntervalSince1970: 1_735_689_600), source: .app,
                    transactions: [transaction], appAccount: account, transferPolicy: .transfer)
            ])
            #expect(outcome.first?.refusal == nil)
        }
        #expect(
            try await replica.customer(app: "com.example.app", id: "7001")?.keys.map(\.value) == ["22222222-2222-4222-8222-222222222222"])

        // What it must not do.
        await #expect(throws: (any Error).self, "a replica published a file") {
            try await replica.recordPublication(
                app: "com.example.app",
                files: [PublishedFile(path: manifest.path, app: "com.example.app", bytes: Array(#"{"evil":1}"#.utf8))], audit: nil)
        }
        await #expect(throws: (any Error).self, "a replica minted an editor token") {
            try await replica.createToken(
                EditorToken(name: "mallory", role: .editor, secretHash: TokenSecret.hash("mallory"), createdAt: .now))
        }
        await #expect(throws: (any Error).self, "a replica wrote an audit entry") {
            try await replica.appendAudit(AuditEntry(at: .now, actor: "mallory", action: .publish, summary: "nothing to see"))
        }
        await #expect(throws: (any Error).self, "a replica read the editor tokens") { _ = try await replica.tokens() }
        try await replica.close()
        for statement in [
            "DELETE FROM audit_log", "UPDATE published_files SET content = NULL", "DELETE FROM network_secret",
            "UPDATE network_secret SET secret = 'x'", "CREATE TABLE mine (x int)",
            // Purchases are only ever added (a binding or a claimed customer's key moved): nothing
            // recorded is changed or erased, and the webhook outbox is written, never read or settled.
            "DELETE FROM purchase_transactions", "UPDATE purchase_transactions SET payload = '{}'", "DELETE FROM purchase_bindings",
            "DELETE FROM purchase_customer_keys", "DELETE FROM purchase_refused_claims", "DELETE FROM purchase_notifications",
            "TRUNCATE purchase_transfers",
            "UPDATE purchase_webhook_events SET state = 'delivered'", "SELECT customer_id FROM purchase_webhook_events",
        ] {
            await #expect(throws: TestPostgresError.self, "a replica ran \(statement)") {
                try await server.psql("SET ROLE \(replicaRole); \(statement)", database: database)
            }
        }
        #expect(try await server.psql("SELECT count(*) FROM published_files WHERE content = '{}'", database: database) == "1")
        #expect(try await server.psql("SELECT count(*) FROM editor_tokens", database: database) == "0")
        #expect(try await server.psql("SELECT count(*) FROM audit_log", database: database) == "1")
        #expect(throws: StoreRoleError.self) { try StoreRoles.sql(replicaRole: "x\"; DROP TABLE reports; --", editorRole: "e") }
        #expect(throws: StoreRoleError.self) { try StoreRoles.sql(replicaRole: "same", editorRole: "same") }
    }

    /// Two nodes opening one store at the same moment, each proposing a secret of its own,
    /// agree on one of them; later proposals change nothing.
    @Test func nodesOnOneStoreAgreeOnTheNetworkSecret() async throws {
        let url = try await TestPostgres.current.createDatabase()
        let (first, second) = (try await open(url), try await open(url))
        async let a = first.networkSecret(proposing: Array(repeating: 1, count: NetworkSecret.byteCount))
        async let b = second.networkSecret(proposing: Array(repeating: 2, count: NetworkSecret.byteCount))
        let (secretA, secretB) = try await (a, b)
        #expect(secretA == secretB)
        #expect(
            [Array(repeating: 1, count: NetworkSecret.byteCount), Array(repeating: 2, count: NetworkSecret.byteCount)].contains(secretA))
        #expect(try await first.networkSecret(proposing: Array(repeating: 3, count: NetworkSecret.byteCount)) == secretA)
        try await first.close()
        try await second.close()
    }
}

/// A server whose certificate cannot be checked, as `verify-full` (now the default for another
/// machine) meets it without `sslrootcert`: the message says what to do, without the TLS
/// library's source paths.
@Suite(.postgres(tls: true))
struct PostgresCertificateMessageTests {
    @Test func anUncheckableCertificateIsAClearError() async throws {
        let server = try TestPostgres.current
        let url = "postgres://\(TestPostgres.user):\(TestPostgres.password)@localhost:\(server.port)/catalog?sslmode=verify-full"
        guard case .postgres(let address) = try StoreURL(parsing: url) else { return }
        do {
            let store = try await PostgresStore.open(address, logger: Logger(label: "test"), connectTimeout: .seconds(5))
            try await store.close()
            Issue.record("a certificate signed by an unknown authority was accepted")
        } catch {
            let message = "\(error)"
            #expect(message.contains("sslrootcert"), "\(message)")
            #expect(!message.contains(".build/") && !message.contains(".cc:"), "\(message)")
            #expect(!message.contains(TestPostgres.password), "\(message)")
        }
    }
}
