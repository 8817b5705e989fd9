import CatalogKit
import Foundation
import Logging
import PostgresNIO
import Synchronization
import Time

/// Reports in PostgreSQL: one store that several `catalog serve` replicas share, with the
/// schema and semantics of `SQLiteReportStore` (docs/storage.md).
///
/// The store owns a `PostgresClient` and the task that runs it for the store's whole life;
/// `close()` ends both. Every value reaches the server as a bound parameter.
public final class PostgresReportStore: ReportStore {
    let client: PostgresClient
    /// `client.run()`: the pool hands out no connection unless it runs.
    private let running: Task<Void, Never>
    let logger: Logger
    private let closed = Atomic(false)
    /// The URL without its password, for messages.
    public let location: String
    /// Whether the server answered when the store was opened; false only for a store opened
    /// `evenIfUnreachable` while the server could not be reached.
    public let connectedAtOpen: Bool

    /// Connects, checks that commits are durable and migrates, then starts the connection pool.
    ///
    /// Fails within about `connectTimeout` when the server cannot be reached or refuses the
    /// credentials or the database, with the server's reason and the URL without its password.
    ///
    /// With `evenIfUnreachable`, a server that cannot be reached is a warning, not an error: the
    /// pool connects once it can, and until then every call fails. For a serving replica that has
    /// a tree of its own to serve meanwhile; it migrates nothing then (the editor node does).
    public static func open(
        _ address: StoreURL.PostgresAddress, logger: Logger, connectTimeout: Duration = .seconds(10), evenIfUnreachable: Bool = false
    ) async throws -> PostgresReportStore {
        let location = StoreURL.postgres(address).description
        let password = address.password ?? PostgresPassword.lookUp(for: address)
        let tls: TLSConfiguration?
        do {
            tls = try tlsConfiguration(address)
        } catch {
            throw PostgresStoreError(location: location, doing: "cannot read the root certificate \(address.rootCertificate ?? "")", error)
        }
        let startup = address.statementTimeoutMilliseconds.map { [("statement_timeout", String($0))] } ?? []

        // One connection of our own first, not the pool's: the pool retries an unreachable server
        // for a minute and then fails without the reason, and an operator needs the reason now.
        // Its connect timeout bounds the TCP connection and the startup and authentication.
        let setupTLS: PostgresConnection.Configuration.TLS =
            switch (address.sslMode, tls) {
            case (.disable, _), (_, nil): .disable
            case (.prefer, let tls?): .prefer(try NIOSSLContext(configuration: tls))
            case (_, let tls?): .require(try NIOSSLContext(configuration: tls))
            }
        var setup = PostgresConnection.Configuration(
            host: address.host, port: address.port, username: address.user, password: password,
            database: address.database, tls: setupTLS)
        setup.options.connectTimeout = .nanoseconds(Int64(connectTimeout / .nanoseconds(1)))
        setup.options.additionalStartupParameters = startup
        var connected = true
        do {
            let connection = try await PostgresConnection.connect(configuration: setup, id: 0, logger: logger)
            do {
                try await requireDurableCommits(connection, logger: logger)
                try await migrate(connection, logger: logger)
                try await connection.close()
            } catch {
                try? await connection.close()
                throw PostgresStoreError(location: location, doing: "cannot open the store", error)
            }
        } catch let error as PostgresStoreError {
            throw error
        } catch {
            let failure = PostgresStoreError(location: location, doing: "cannot connect", error)
            guard evenIfUnreachable else { throw failure }
            connected = false
            logger.warning("store.unreachable", metadata: ["error": "\(failure)"])
        }

        let poolTLS: PostgresClient.Configuration.TLS =
            switch (address.sslMode, tls) {
            case (.disable, _), (_, nil): .disable
            case (.prefer, let tls?): .prefer(tls)
            case (_, let tls?): .require(tls)
            }
        var configuration = PostgresClient.Configuration(
            host: address.host, port: address.port, username: address.user, password: password,
            database: address.database, tls: poolTLS)
        configuration.options.connectTimeout = connectTimeout
        configuration.options.maximumConnections = address.poolSize
        configuration.options.additionalStartupParameters = startup
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        // Started immediately, on this thread, so that `run()` has marked the client running
        // before anything leases a connection: with a plain `Task` the first query could come
        // first, and PostgresNIO warned on every command that run() had not been called.
        let running = Task.immediate { await client.run() }
        logger.info("report store opened", metadata: ["store.url": "\(location)"])
        return PostgresReportStore(client: client, running: running, logger: logger, location: location, connectedAtOpen: connected)
    }

    private init(client: PostgresClient, running: Task<Void, Never>, logger: Logger, location: String, connectedAtOpen: Bool) {
        self.client = client
        self.running = running
        self.logger = logger
        self.location = location
        self.connectedAtOpen = connectedAtOpen
    }

    public func store(_ reports: [InvalidIdentifierReport]) async throws -> [StoreOutcome] {
        // A report twice in one batch: the first is stored and the others are duplicates, as on
        // SQLite. Deciding it here keeps the batch free of conflicts within itself.
        var seen = Set<ReportKey>()
        let isFirst = reports.map { seen.insert(ReportKey($0)).inserted }
        let batch = zip(reports, isFirst).filter(\.1).map(\.0)
        guard !batch.isEmpty else { return [] }
        let insert = Self.insertQuery(batch)
        let stored = try await transaction("cannot store reports") { connection, logger in
            var stored = Set<ReportKey>()
            for try await (app, reportID) in try await connection.query(insert, logger: logger).decode((String, String).self) {
                stored.insert(ReportKey(app: app, reportID: reportID))
            }
            return stored
        }
        return zip(reports, isFirst).map { report, first in first && stored.contains(ReportKey(report)) ? .stored : .duplicate }
    }

    public func aggregate(_ query: AggregateQuery) async throws -> [ReportAggregate] {
        let since = query.since?.secondsSince1970 ?? .min
        let (app, identifier) = (query.app, query.identifier)
        return try await withStoreErrors("cannot aggregate reports") {
            try await client.withConnection { connection in
                var invalid: [InvalidRow] = []
                let invalidRows = try await connection.query(
                    """
                    SELECT r.app, i.identifier, r.platform, r.environment, count(*), count(DISTINCT r.install_id),
                           min(r.received_at), max(r.received_at), string_agg(DISTINCT r.app_version, ','),
                           string_agg(DISTINCT r.storefront, ','), string_agg(DISTINCT r.feed_revision::text, ',')
                    FROM reports r CROSS JOIN LATERAL unnest(r.invalid) AS i(identifier)
                    WHERE r.received_at >= \(since) AND (\(app)::text IS NULL OR r.app = \(app))
                      AND (\(identifier)::text IS NULL OR i.identifier = \(identifier))
                    GROUP BY r.app, i.identifier, r.platform, r.environment
                    """, logger: logger)
                for try await row in invalidRows.decode(
                    (String, String, String?, String?, Int, Int, Int64, Int64, String?, String?, String?).self)
                {
                    invalid.append(
                        InvalidRow(
                            app: row.0, identifier: row.1, platform: row.2, environment: row.3, reports: row.4, installs: row.5,
                            firstSeen: row.6, lastSeen: row.7, appVersions: row.8, storefronts: row.9, feedRevisions: row.10))
                }
                // unnest(NULL) yields no rows: reports that did not say what they requested drop out.
                var requested: [RequestedRow] = []
                let requestedRows = try await connection.query(
                    """
                    SELECT r.app, q.identifier, r.platform, r.environment, count(*),
                           count(*) FILTER (WHERE q.identifier = ANY (r.invalid))
                    FROM reports r CROSS JOIN LATERAL unnest(r.requested) AS q(identifier)
                    WHERE r.received_at >= \(since) AND (\(app)::text IS NULL OR r.app = \(app))
                      AND (\(identifier)::text IS NULL OR q.identifier = \(identifier))
                    GROUP BY r.app, q.identifier, r.platform, r.environment
                    """, logger: logger)
                for try await row in requestedRows.decode((String, String, String?, String?, Int, Int).self) {
                    requested.append(
                        RequestedRow(
                            app: row.0, identifier: row.1, platform: row.2, environment: row.3, requested: row.4,
                            invalidWhenRequested: row.5))
                }
                return AggregateAssembly.assemble(invalid, requested: requested)
            }
        }
    }

    public func networkEvidence(_ query: AggregateQuery) async throws -> [NetworkEvidence] {
        try await evidence(query, allRequestedInvalid: false)
    }

    public func storeWideEvidence(_ query: AggregateQuery) async throws -> NetworkEvidence? {
        try await evidence(query, allRequestedInvalid: true).first
    }

    /// Production reports, by network (``NetworkEvidence``), as `SQLiteReportStore` counts them:
    /// per identifier from product reports, or per app (no identifier) from store-wide ones.
    private func evidence(_ query: AggregateQuery, allRequestedInvalid: Bool) async throws -> [NetworkEvidence] {
        let since = query.since?.secondsSince1970 ?? .min
        let (app, identifier, cap) = (query.app, query.identifier, max(query.installsPerNetwork, 1))
        // One statement for both: the identifier column is the unnested one, or NULL per app.
        let perIdentifier = !allRequestedInvalid
        return try await withStoreErrors("cannot count report networks") {
            try await client.withConnection { connection in
                let rows = try await connection.query(
                    """
                    WITH hits AS (
                        SELECT r.app, CASE WHEN \(perIdentifier) THEN i.identifier END AS identifier, r.id, r.network,
                               r.install_id, r.verified_install
                        FROM reports r CROSS JOIN LATERAL unnest(CASE WHEN \(perIdentifier) THEN r.invalid ELSE ARRAY[NULL::text] END)
                            AS i(identifier)
                        WHERE r.environment = 'production' AND r.all_requested_invalid = \(allRequestedInvalid)
                          AND (r.network IS NOT NULL OR r.verified_install IS NOT NULL)
                          AND r.received_at >= \(since) AND (\(app)::text IS NULL OR r.app = \(app))
                          AND (\(identifier)::text IS NULL OR i.identifier = \(identifier))
                    ), capped AS (
                        SELECT app, identifier, LEAST(GREATEST(count(DISTINCT install_id), 1), \(cap)) AS installs
                        FROM hits WHERE verified_install IS NULL
                        GROUP BY app, identifier, network
                    )
                    SELECT h.app, h.identifier, count(*)::bigint, count(DISTINCT h.network)::bigint,
                           COALESCE((SELECT sum(c.installs) FROM capped c
                                     WHERE c.app = h.app AND c.identifier IS NOT DISTINCT FROM h.identifier), 0)::bigint,
                           count(DISTINCT h.verified_install)::bigint
                    FROM hits h
                    GROUP BY h.app, h.identifier
                    """, logger: logger)
                var evidence: [NetworkEvidence] = []
                for try await row in rows.decode((String, String?, Int, Int, Int, Int).self) {
                    evidence.append(
                        NetworkEvidence(
                            app: row.0, identifier: row.1, reports: row.2, networks: row.3, networkInstalls: row.4,
                            verifiedInstalls: row.5))
                }
                return evidence.sorted { ($0.countedInstalls, $1.identifier ?? "") > ($1.countedInstalls, $0.identifier ?? "") }
            }
        }
    }

    public func prune(keepingPerApp quota: Int) async throws -> [String: Int] {
        let keep = max(quota, 1)
        return try await transaction("cannot prune reports to the quota") { connection, logger in
            // The heaviest network first, as in SQLite: a report's depth is its place among its
            // network's reports, newest first; the deepest go first (the oldest among equals),
            // until the app is back to its quota.
            let rows = try await connection.query(
                """
                WITH over AS (
                    SELECT app, count(*) - \(keep) AS excess FROM reports GROUP BY app HAVING count(*) > \(keep)
                ), deep AS (
                    SELECT r.id, r.app, r.received_at,
                        row_number() OVER (PARTITION BY r.app, r.network ORDER BY r.received_at DESC, r.id DESC) AS depth
                    FROM reports r JOIN over USING (app)
                ), ranked AS (
                    SELECT id, app, row_number() OVER (PARTITION BY app ORDER BY depth DESC, received_at, id) AS victim FROM deep
                ), pruned AS (
                    DELETE FROM reports r USING ranked, over
                    WHERE r.id = ranked.id AND ranked.app = over.app AND ranked.victim <= over.excess RETURNING r.app
                )
                SELECT app, count(*)::bigint FROM pruned GROUP BY app
                """, logger: logger)
            var pruned: [String: Int] = [:]
            for try await (app, count) in rows.decode((String, Int).self) { pruned[app] = count }
            return pruned
        }
    }

    public func prune(receivedBefore moment: Timestamp) async throws -> Int {
        try await transaction("cannot prune reports") { connection, logger in
            let rows = try await connection.query(
                """
                WITH pruned AS (DELETE FROM reports WHERE received_at < \(moment.secondsSince1970) RETURNING 1)
                SELECT count(*) FROM pruned
                """, logger: logger)
            var count = 0
            for try await pruned in rows.decode(Int.self) { count = pruned }
            return count
        }
    }

    public func dailyCounts(app: String, identifier: String, since: Timestamp) async throws -> [DailyReportCount] {
        let start = since.secondsSince1970
        return try await withStoreErrors("cannot count reports per day") {
            try await client.withConnection { connection in
                // BIGINT division floors the day as SQLite's does: reception times are never before 1970.
                let rows = try await connection.query(
                    """
                    SELECT received_at / 86400 AS day, count(*)
                    FROM reports
                    WHERE app = \(app) AND received_at >= \(start) AND \(identifier) = ANY (invalid)
                    GROUP BY day ORDER BY day
                    """, logger: logger)
                var counts: [DailyReportCount] = []
                for try await (day, reports) in rows.decode((Int64, Int).self) {
                    counts.append(DailyReportCount(day: day, reports: reports))
                }
                return counts
            }
        }
    }

    public func ping() async throws {
        try await withStoreErrors("does not answer") {
            try await client.withConnection { try await $0.execute("SELECT 1", logger: logger) }
        }
    }

    /// Stops the pool and waits until its connections are closed.
    public func close() async throws {
        closed.store(true, ordering: .relaxed)
        running.cancel()
        await running.value
    }

    /// Runs `body` in a transaction and returns once it is committed.
    ///
    /// Explicitly, not as one statement's implicit transaction: PostgresNIO answers a query when
    /// the server reports the statement complete, and an implicit transaction commits only after
    /// that. The reply to `COMMIT` comes once the commit is flushed (synchronous_commit).
    func transaction<Result: Sendable>(
        _ failure: String, _ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> Result
    ) async throws -> Result {
        let logger = logger
        return try await withStoreErrors(failure) {
            try await client.withTransaction(logger: logger) { connection in try await body(connection, logger) }
        }
    }

    func withStoreErrors<Result>(_ failure: String, _ body: () async throws -> Result) async throws -> Result {
        guard !closed.load(ordering: .relaxed) else { throw PostgresStoreError(location: location, doing: failure, StoreClosed()) }
        do {
            return try await body()
        } catch let error as CallerError {
            throw error.error
        } catch {
            throw PostgresStoreError(location: location, doing: failure, error)
        }
    }

    /// One statement for the whole batch. The reports travel as one bound JSON parameter: their
    /// identifier lists differ in length, which parallel `UNNEST` arrays cannot carry, and JSON
    /// has a null for what a report did not say. `RETURNING` names the rows actually inserted.
    /// Inserting in key order means two replicas storing the same retried reports wait for one
    /// another instead of deadlocking.
    private static func insertQuery(_ reports: [InvalidIdentifierReport]) -> PostgresQuery {
        """
        INSERT INTO reports (app, report_id, received_at, platform, environment, app_version, storefront,
                             feed_revision, install_id, invalid, requested, network, verified_install, all_requested_invalid)
        SELECT app, report_id, received_at, platform, environment, app_version, storefront,
               feed_revision, install_id, invalid, requested, network, verified_install, all_requested_invalid
        FROM jsonb_to_recordset(\(batchJSON(reports))::jsonb) AS r(
            app text, report_id text, received_at bigint, platform text, environment text, app_version text,
            storefront text, feed_revision bigint, install_id text, invalid text[], requested text[], network text,
            verified_install text, all_requested_invalid boolean)
        ORDER BY app, report_id
        ON CONFLICT (app, report_id) DO NOTHING
        RETURNING app, report_id
        """
    }

    /// The batch as a JSON array of objects keyed by column; a missing key reads as NULL.
    private static func batchJSON(_ reports: [InvalidIdentifierReport]) -> String {
        var json = JSONWriter(capacity: reports.count * 256)
        func field(_ key: String, _ value: String?) {
            guard let value else { return }
            json.key(key)
            json.string(value)
        }
        func list(_ key: String, _ values: [String]?) {
            guard let values else { return }
            json.key(key)
            json.beginArray()
            for value in values { json.string(value) }
            json.endArray()
        }
        json.beginArray()
        for report in reports {
            json.beginObject()
            field("app", report.app)
            field("report_id", report.reportID)
            json.key("received_at")
            json.integer(report.receivedAt.secondsSince1970)
            field("platform", report.platform?.rawValue)
            field("environment", report.environment?.rawValue)
            field("app_version", report.appVersion?.description)
            field("storefront", report.storefront)
            if let revision = report.feedRevision {
                json.key("feed_revision")
                json.integer(Int64(revision))
            }
            field("install_id", report.installID)
            list("invalid", report.invalid)
            list("requested", report.requested)
            field("network", report.network)
            field("verified_install", report.verifiedInstall)
            if let allInvalid = report.allRequestedInvalid {
                json.key("all_requested_invalid")
                json.boolean(allInvalid)
            }
            json.endObject()
        }
        json.endArray()
        return String(decoding: json.bytes, as: UTF8.self)
    }

    /// Refuses a server that would acknowledge commits it has not flushed: a 202 promises that
    /// the report survives a crash. Every level of `synchronous_commit` but `off` flushes locally.
    private static func requireDurableCommits(_ connection: PostgresConnection, logger: Logger) async throws {
        for setting in ["synchronous_commit", "fsync"] {
            var value = ""
            for try await row in try await connection.query(PostgresQuery(unsafeSQL: "SHOW \(setting)"), logger: logger).decode(String.self)
            {
                value = row
            }
            if value == "off" {
                throw UndurableServer(
                    description: "\(setting) is off on this server, so acknowledged reports could be lost in a crash; "
                        + "turn it on (ALTER SYSTEM SET \(setting) = on, or for this database or role)")
            }
        }
    }

    /// Applies the migrations this store lacks, in one transaction.
    private static func migrate(_ connection: PostgresConnection, logger: Logger) async throws {
        // A store already up to date is only read: a replica's role has no right to create
        // tables (docs/storage.md, "Roles"), and CREATE TABLE IF NOT EXISTS checks that right,
        // and sends a notice, even when the table exists.
        let known = Schema.postgres.last?.version ?? 0
        var exists = false
        for try await found in try await connection.query("SELECT to_regclass('schema_migrations') IS NOT NULL", logger: logger)
            .decode(Bool.self)
        {
            exists = found
        }
        var applied = 0
        if exists {
            for try await version in try await connection.query(
                "SELECT COALESCE(MAX(version), 0)::bigint FROM schema_migrations", logger: logger
            ).decode(Int.self) {
                applied = version
            }
        }
        if exists && applied >= known {
            try Schema.check(storeVersion: applied, known: Schema.postgres)
            return
        }
        try await connection.withTransaction(logger: logger) { connection in
            // Replicas that start together queue here: the first migrates, the others then find
            // the work done. The lock is this database's and ends with the transaction.
            try await connection.execute("SELECT pg_advisory_xact_lock(hashtext('catalog.schema_migrations'))", logger: logger)
            try await connection.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)",
                logger: logger)
            var current = 0
            for try await version in try await connection.query(
                "SELECT COALESCE(MAX(version), 0)::bigint FROM schema_migrations", logger: logger
            ).decode(Int.self) {
                current = version
            }
            try Schema.check(storeVersion: current, known: Schema.postgres)
            for migration in Schema.postgres where migration.version > current {
                // A migration may hold several statements, which one extended-protocol query cannot;
                // a DO block makes them one. The text is ours, never a value.
                try await connection.execute(
                    PostgresQuery(unsafeSQL: "DO $migration$ BEGIN \(migration.sql) END $migration$"), logger: logger)
                try await connection.execute(
                    "INSERT INTO schema_migrations (version, applied_at) VALUES (\(migration.version), \(Timestamp.now.secondsSince1970))",
                    logger: logger)
                logger.info("store migration applied", metadata: ["store.migration": "\(migration.version)"])
            }
        }
    }
}

/// What makes a report a duplicate of another.
private struct ReportKey: Hashable {
    var app: String
    var reportID: String

    init(app: String, reportID: String) {
        self.app = app
        self.reportID = reportID
    }

    init(_ report: InvalidIdentifierReport) {
        self.init(app: report.app, reportID: report.reportID)
    }
}

/// A PostgreSQL store's failure: what it could not do, where (the URL without its password) and
/// the reason, from the server when it gave one.
public struct PostgresStoreError: Error, CustomStringConvertible {
    public let description: String

    init(location: String, doing failure: String, _ error: any Error) {
        description = "PostgreSQL \(location): \(failure): \(Self.reason(error))"
    }

    /// PostgresNIO's errors describe themselves generically on purpose (a query's values could
    /// leak into logs); the server's message and SQLSTATE name no values and say what went wrong.
    private static func reason(_ error: any Error) -> String {
        switch error {
        case let error as PSQLError:
            if let message = error.serverInfo?[.message] {
                return "\(message) (SQLSTATE \(error.serverInfo?[.sqlState] ?? "?"))"
            }
            if let underlying = error.underlying { return reason(underlying) }
            switch error.code {
            case .serverClosedConnection: return "the server closed the connection"
            case .poolClosed: return "the store is closed"
            default: return "\(error.code)"
            }
        case let error as PostgresTransactionError:
            if let cause = error.beginError ?? error.closureError ?? error.commitError { return reason(cause) }
            return "the transaction failed"
        case let error as NIOConnectionError:
            // The errors per address say why (connection refused); the wrapper only lists them.
            let causes = Set(error.connectionErrors.map { reason($0.error) }).sorted()
            return causes.isEmpty ? "\(error)" : causes.joined(separator: "; ")
        case let error as IOError:
            return String(cString: strerror(error.errnoCode))
        case let error as NIOSSLError:
            // BoringSSL's messages end with the path of its source file on the build machine.
            let text = "\(error)".replacing(#/\sat\s/[^\])]*/#, with: "")
            guard text.contains("CERTIFICATE_VERIFY_FAILED") else { return "the TLS handshake failed: \(text)" }
            return "the server's certificate is not signed by an authority this node trusts (CERTIFICATE_VERIFY_FAILED): "
                + "name the authority's PEM file with sslrootcert=FILE in the store URL, or lower sslmode (docs/operations.md)"
        case let error as NIOSSLExtraError where error == .failedToValidateHostname:
            return "the server's certificate does not name the host of the store URL: connect by a name it holds, or use sslmode=verify-ca"
        default:
            return "\(error)"
        }
    }
}

/// An error of the caller's own code that a store method ran (a receiver of rows): thrown as it
/// is, for the caller to recognize, rather than as a failure of the store.
struct CallerError: Error {
    var error: any Error
}

private struct StoreClosed: Error, CustomStringConvertible {
    var description: String { "the store is closed" }
}

private struct UndurableServer: Error, CustomStringConvertible {
    var description: String
}

extension PostgresConnection {
    /// Runs `query` to its end, for statements whose rows do not matter: the connection serves
    /// the next query only once this one's rows are read.
    func execute(_ query: PostgresQuery, logger: Logger) async throws {
        for try await _ in try await self.query(query, logger: logger) {}
    }
}

/// The TLS of `sslmode`: nil for `disable`; no certificate check for `prefer` and `require` (as
/// libpq); the root certificates of `sslrootcert` (else the system's) for `verify-ca`, and the host
/// name as well for `verify-full`.
private func tlsConfiguration(_ address: StoreURL.PostgresAddress) throws -> TLSConfiguration? {
    var tls = TLSConfiguration.makeClientConfiguration()
    switch address.sslMode {
    case .disable: return nil
    case .prefer, .require: tls.certificateVerification = .none
    case .verifyCA: tls.certificateVerification = .noHostnameVerification
    case .verifyFull: tls.certificateVerification = .fullVerification
    }
    if let file = address.rootCertificate, address.sslMode == .verifyCA || address.sslMode == .verifyFull {
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(file))
    }
    return tls
}

/// A password not in the URL, where libpq would look: `PGPASSWORD`, then the URL's `passfile`,
/// `PGPASSFILE` or `~/.pgpass` (lines `host:port:database:user:password`, `*` for any, `\` escaping).
enum PostgresPassword {
    static func lookUp(
        for address: StoreURL.PostgresAddress, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> String? {
        if let password = environment["PGPASSWORD"] { return password }
        let path =
            address.passfile ?? environment["PGPASSFILE"]
            ?? environment["HOME"].map { URL(fileURLWithPath: $0).appendingPathComponent(".pgpass").path }
        guard let path, let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        return password(in: text, for: address)
    }

    static func password(in passfile: String, for address: StoreURL.PostgresAddress) -> String? {
        for line in passfile.split(whereSeparator: \.isNewline) where !line.hasPrefix("#") {
            let fields = self.fields(line)
            guard fields.count == 5 else { continue }
            let wanted = [address.host, String(address.port), address.database, address.user]
            if zip(fields.prefix(4), wanted).allSatisfy({ $0 == "*" || $0 == $1 }) { return fields[4] }
        }
        return nil
    }

    /// A line's fields, split at unescaped colons.
    private static func fields(_ line: Substring) -> [String] {
        var fields = [""]
        var escaped = false
        for character in line {
            if escaped {
                fields[fields.count - 1].append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == ":" {
                fields.append("")
            } else {
                fields[fields.count - 1].append(character)
            }
        }
        return fields
    }
}
