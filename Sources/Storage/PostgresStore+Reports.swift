import CatalogKit
import Foundation
import Logging
import PostgresNIO
import Time

// Storing, reading and pruning reports.
extension PostgresStore {
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

    /// Production reports, by network (``NetworkEvidence``), as `SQLiteStore` counts them:
    /// per identifier from product reports, or per app (no identifier) from store-wide ones; per
    /// identifier with its invalid rate, one voice per verified install or network (NULL
    /// included) among the production reports that requested it.
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
                    ), voices AS (
                        SELECT r.app, q.identifier, count(*) AS requests,
                               count(*) FILTER (WHERE q.identifier = ANY (r.invalid)) AS invalid,
                               CASE WHEN r.verified_install IS NULL
                                    THEN LEAST(GREATEST(count(DISTINCT r.install_id), 1), \(cap)) ELSE 1 END AS weight
                        FROM reports r CROSS JOIN LATERAL unnest(r.requested) AS q(identifier)
                        WHERE \(perIdentifier) AND r.environment = 'production'
                          AND r.received_at >= \(since) AND (\(app)::text IS NULL OR r.app = \(app))
                          AND (\(identifier)::text IS NULL OR q.identifier = \(identifier))
                        GROUP BY r.app, q.identifier, r.verified_install, CASE WHEN r.verified_install IS NULL THEN r.network END
                    ), rates AS (
                        SELECT app, identifier, sum(weight)::float8 AS requested,
                               sum(weight::float8 * invalid / requests) AS invalid
                        FROM voices GROUP BY app, identifier
                    )
                    SELECT h.app, h.identifier, count(*)::bigint, count(DISTINCT h.network)::bigint,
                           COALESCE((SELECT sum(c.installs) FROM capped c
                                     WHERE c.app = h.app AND c.identifier IS NOT DISTINCT FROM h.identifier), 0)::bigint,
                           count(DISTINCT h.verified_install)::bigint,
                           COALESCE((SELECT rt.requested FROM rates rt WHERE rt.app = h.app AND rt.identifier = h.identifier), 0),
                           COALESCE((SELECT rt.invalid FROM rates rt WHERE rt.app = h.app AND rt.identifier = h.identifier), 0)
                    FROM hits h
                    GROUP BY h.app, h.identifier
                    """, logger: logger)
                var evidence: [NetworkEvidence] = []
                for try await row in rows.decode((String, String?, Int, Int, Int, Int, Double, Double).self) {
                    evidence.append(
                        NetworkEvidence(
                            app: row.0, identifier: row.1, reports: row.2, networks: row.3, networkInstalls: row.4,
                            verifiedInstalls: row.5, requestWeight: row.6, invalidWeight: row.7))
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
    ///
    /// Written by hand, not by `JSONEncoder`: on the report path, an encoder cost a median 9.9 µs more
    /// server CPU per report (`BENCH_STORE=postgres scripts/bench-ingest`, 5 pairs, slower in each;
    /// docs/benchmarks.md, "JSON on the report path").
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
