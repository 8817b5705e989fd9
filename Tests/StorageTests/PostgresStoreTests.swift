import CatalogKit
import CatalogTestSupport
import Foundation
import Logging
import Storage
import Testing

/// One server for the whole suite (started by the `.postgres` trait before the first test and
/// stopped after the last), a fresh database for each test, so the tests may run in parallel. A
/// server that cannot start fails every test that needs it with the reason.
@Suite(.postgres)
struct PostgresStoreTests {
    private let logger = Logger(label: "catalog.tests.postgres")

    private func runningServer() throws -> TestPostgres {
        try TestPostgres.current
    }

    private func address(_ url: String) throws -> StoreURL.PostgresAddress {
        guard case .postgres(let address) = try StoreURL(parsing: url) else { throw NotPostgres(url: url) }
        return address
    }

    /// A store on a new database; closed afterwards whatever `body` does.
    private func withStore(database url: String? = nil, _ body: (PostgresStore) async throws -> Void) async throws {
        var database = url
        if database == nil { database = try await runningServer().createDatabase() }
        let store = try await PostgresStore.open(try address(database ?? ""), logger: logger)
        do {
            try await body(store)
        } catch {
            try? await store.close()
            throw error
        }
        try await store.close()
    }

    @Test func deduplicates() async throws { try await withStore(StoreConformance.deduplicates) }
    @Test func aggregates() async throws { try await withStore(StoreConformance.aggregates) }
    @Test func filters() async throws { try await withStore(StoreConformance.filters) }
    @Test func countsPerDay() async throws { try await withStore(StoreConformance.countsPerDay) }
    @Test func prunes() async throws { try await withStore(StoreConformance.prunes) }
    @Test func countsNetworks() async throws { try await withStore(StoreConformance.countsNetworks) }
    @Test func countsTheInvalidRateByNetwork() async throws { try await withStore(StoreConformance.countsTheInvalidRateByNetwork) }
    @Test func prunesToTheQuota() async throws { try await withStore(StoreConformance.prunesToTheQuota) }
    @Test func quotaPrunesTheHeaviestNetworkFirst() async throws {
        try await withStore(StoreConformance.quotaPrunesTheHeaviestNetworkFirst)
    }
    @Test func keepsOrRefusesNULs() async throws { try await withStore(StoreConformance.keepsOrRefusesNULs) }
    @Test func groupCommits() async throws { try await withStore(StoreConformance.groupCommits) }
    @Test func keepsTokensAndTheAuditLog() async throws { try await withStore(StoreConformance.keepsTokensAndTheAuditLog) }
    @Test func recordsNotificationsOnce() async throws { try await withStore(PurchaseStoreConformance.recordsNotificationsOnce) }
    @Test func shuffledAndDuplicatedNotificationsGiveOneLedger() async throws {
        try await withStore(PurchaseStoreConformance.shuffledAndDuplicatedNotificationsGiveOneLedger)
    }
    @Test func keepsOrTransfersByPolicy() async throws { try await withStore(PurchaseStoreConformance.keepsOrTransfersByPolicy) }
    @Test func anAppAccountClaimsACustomerKnownOnlyByApplesKeys() async throws {
        try await withStore(PurchaseStoreConformance.anAppAccountClaimsACustomerKnownOnlyByApplesKeys)
    }

    @Test func refusedClaimsAreKeptBounded() async throws {
        try await withStore(PurchaseStoreConformance.refusedClaimsAreKeptBounded)
    }

    @Test func theFirstNamedCustomerTakesAPlaceholder() async throws {
        try await withStore(PurchaseStoreConformance.theFirstNamedCustomerTakesAPlaceholder)
    }
    @Test func rebuildsFromRawNotifications() async throws { try await withStore(PurchaseStoreConformance.rebuildsFromRawNotifications) }
    @Test func keepsTokenChangesAndTheirEntriesTogether() async throws {
        let server = try runningServer()
        let url = try await server.createDatabase()
        let database = try address(url).database
        try await withStore(database: url) { store in
            try await StoreConformance.keepsTokenChangesAndTheirEntriesTogether(store) {
                // Every audit insert fails from now on.
                _ = try await server.psql(
                    """
                    CREATE FUNCTION audit_down() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'audit log down'; END $$;
                    CREATE TRIGGER audit_down BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_down();
                    """, database: database)
            }
        }
    }

    /// Replicas starting together: both open, the schema is migrated once, and reopening
    /// migrates nothing.
    @Test func migratesOnceWhenTwoStoresOpenTogether() async throws {
        let server = try runningServer()
        let url = try await server.createDatabase()
        let (target, logger) = (try address(url), logger)
        async let first = PostgresStore.open(target, logger: logger)
        async let second = PostgresStore.open(target, logger: logger)
        let stores = try await [first, second]
        for store in stores { try await store.close() }
        // A second run of a migration would have failed one of the opens (its tables exist, its
        // version is a primary key); what is recorded is every version once, from 1.
        let migrated = "SELECT count(*) = max(version) AND min(version) = 1 FROM schema_migrations"
        #expect(try await server.psql(migrated, database: target.database) == "t")
        let versions = try await server.psql("SELECT count(*) FROM schema_migrations", database: target.database)
        try await withStore(database: url) { _ in }
        #expect(
            try await server.psql("SELECT count(*) FROM schema_migrations", database: target.database) == versions,
            "reopening migrates nothing")
    }

    @Test func reopenKeepsReports() async throws {
        let url = try await runningServer().createDatabase()
        try await withStore(database: url) { store in _ = try await store.store([StoreConformance.report(["com.example.a"])]) }
        try await withStore(database: url) { store in
            let counts = try await store.aggregate(AggregateQuery()).map(\.reports)
            #expect(counts == [1])
        }
    }

    /// Values that would break a query built by pasting text are stored verbatim: every value is
    /// a bound parameter. Ingestion validates values before they get here; this calls the store
    /// directly to prove the binding itself.
    @Test func valuesAreBoundNeverPastedIntoSQL() async throws {
        let server = try runningServer()
        let url = try await server.createDatabase()
        let hostile = [
            "com.example.a'); DROP TABLE reports; --", #"com.example."quoted";\slash"#, "com.example.$1::text", "com.example.ü,é",
        ]
        try await withStore(database: url) { store in
            let report = StoreConformance.report(
                hostile, id: "id'; DELETE FROM reports; --", app: "com.example.app'--", requested: hostile,
                install: "i\"; SELECT pg_sleep(1);", storefront: "US'; DROP TABLE schema_migrations; --")
            let outcomes = try await store.store([report])
            #expect(outcomes == [.stored])
            let again = try await store.store([report])
            #expect(again == [.duplicate], "the report id reads back exactly as it was stored")
            let aggregates = try await store.aggregate(AggregateQuery(app: "com.example.app'--", identifier: hostile[0]))
            #expect(aggregates.map(\.identifier) == [hostile[0]])
            #expect(aggregates.first?.storefronts == ["US'; DROP TABLE schema_migrations; --"])
            #expect(aggregates.first?.installs == 1)
            #expect(aggregates.first?.invalidWhenRequested == 1)
            let all = try await store.aggregate(AggregateQuery())
            #expect(Set(all.map(\.identifier)) == Set(hostile))
        }
        let database = try address(url).database
        #expect(try await server.psql("SELECT count(*) FROM reports", database: database) == "1")
        #expect(try await server.psql("SELECT count(*) > 0 FROM schema_migrations", database: database) == "t")
    }

    /// Nothing listens on port 1: the error comes at once, names the URL without the password
    /// and says why.
    @Test func refusedConnectionIsAClearError() async throws {
        let error = try await openingError("postgres://catalog:hunter2@127.0.0.1:1/catalog")
        #expect(error.contains("postgres://catalog@127.0.0.1:1/catalog"), "\(error)")
        #expect(error.lowercased().contains("refused"), "\(error)")
        #expect(!error.contains("hunter2"), "\(error)")
    }

    /// A server that accepts the connection and then says nothing: opening gives up after the
    /// connect timeout instead of hanging.
    @Test func silentServerIsAClearError() async throws {
        let listener = try LoopbackListener()
        let error = try await openingError("postgres://catalog@127.0.0.1:\(listener.port)/catalog", connectTimeout: .seconds(1))
        #expect(error.contains("postgres://catalog@127.0.0.1:\(listener.port)/catalog"), "\(error)")
        #expect(error.lowercased().contains("timeout"), "\(error)")
    }

    @Test func wrongPasswordIsAClearError() async throws {
        let server = try runningServer()
        let error = try await openingError("postgres://\(TestPostgres.user):not-the-password@127.0.0.1:\(server.port)/catalog")
        #expect(error.contains("password authentication failed"), "\(error)")
        #expect(!error.contains("not-the-password"), "\(error)")
    }

    @Test func missingDatabaseIsAClearError() async throws {
        let error = try await openingError(try runningServer().url(database: "no_such_database"))
        #expect(error.contains("\"no_such_database\" does not exist"), "\(error)")
    }

    /// A server that would acknowledge commits before flushing them is refused: a 202 promises
    /// that the report survives a crash.
    @Test func refusesAsynchronousCommit() async throws {
        let server = try runningServer()
        let url = try await server.createDatabase()
        try await server.psql("ALTER DATABASE \"\(try address(url).database)\" SET synchronous_commit = off")
        let error = try await openingError(url)
        #expect(error.contains("synchronous_commit is off"), "\(error)")
    }

    /// A store that a newer catalog migrated is refused rather than misread.
    @Test func refusesANewerSchema() async throws {
        let server = try runningServer()
        let url = try await server.createDatabase()
        try await withStore(database: url) { _ in }
        try await server.psql("INSERT INTO schema_migrations (version, applied_at) VALUES (99, 0)", database: try address(url).database)
        let error = try await openingError(url)
        #expect(error.contains("newer than this catalog knows"), "\(error)")
    }

    @Test func pingAnswersUntilClosed() async throws {
        let store = try await PostgresStore.open(try address(await runningServer().createDatabase()), logger: logger)
        try await store.ping()
        try await store.close()
        do {
            try await store.ping()
            Issue.record("a closed store answered")
        } catch {
            #expect("\(error)".contains("closed"), "\(error)")
        }
    }

    /// What opening `url` throws, as text.
    private func openingError(_ url: String, connectTimeout: Duration = .seconds(10)) async throws -> String {
        do {
            let store = try await PostgresStore.open(try address(url), logger: logger, connectTimeout: connectTimeout)
            try await store.close()
        } catch {
            return "\(error)"
        }
        Issue.record("opened \(url)")
        return ""
    }
}

private struct NotPostgres: Error {
    var url: String
}
