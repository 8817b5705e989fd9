import CatalogKit
import Foundation
import Ledger
import PostgresNIO

/// Customers, purchases and notifications in the same PostgreSQL database as the reports, with the
/// semantics of `SQLiteStore`'s. Replicas that record purchases at the same moment meet on
/// the tables' keys: each purchase is locked (an advisory lock on its app and purchase key)
/// for the rest of the transaction before its binding is read, so two first presentations of one
/// purchase bind it once.
extension PostgresStore: PurchaseStore {
    public func record(_ submissions: [PurchaseSubmission]) async throws -> [PurchaseOutcome] {
        try await transaction("cannot record purchases") { connection, logger in
            var outcomes: [PurchaseOutcome] = []
            for submission in submissions { outcomes.append(try await Self.record(submission, connection, logger)) }
            return outcomes
        }
    }

    public func customer(app: String, id: String) async throws -> CustomerRecord? {
        try await withStoreErrors("cannot read a customer") {
            try await client.withConnection { connection in
                var customer: Int64?
                for try await found in try await connection.query(
                    """
                    SELECT customer_id FROM (
                        SELECT 1 AS priority, customer_id FROM purchase_customer_keys
                            WHERE app = \(app) AND store = '' AND kind = 'appAccount' AND value = lower(\(id))
                        UNION ALL SELECT 2, customer_id FROM purchase_customer_keys
                            WHERE app = \(app) AND kind = 'storeAccount' AND value = \(id)
                        UNION ALL SELECT 3, customer_id FROM purchase_bindings WHERE app = \(app) AND purchase_key = \(id)
                        UNION ALL SELECT 4, b.customer_id FROM purchase_transactions t
                            JOIN purchase_bindings b ON b.app = t.app AND b.store = t.store AND b.purchase_key = t.purchase_key
                            WHERE t.app = \(app) AND t.transaction_id = \(id)) AS found
                    ORDER BY priority LIMIT 1
                    """, logger: logger
                ).decode(Int64.self) {
                    customer = found
                }
                guard let customer else { return nil }
                func rows<Row>(_ sql: String, _ make: (PostgresStoredRow) -> Row) async throws -> [Row] {
                    var binds = PostgresBindings()
                    binds.append(customer)
                    var rows: [Row] = []
                    for try await row in try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger) {
                        rows.append(make(PostgresStoredRow(row)))
                    }
                    return rows
                }
                // Through the bindings: a purchase's rows are the customer's while it is bound to them.
                let bound = "FROM purchase_bindings b JOIN"
                let ofBound = "ON x.app = b.app AND x.store = b.store AND x.purchase_key = b.purchase_key WHERE b.customer_id = $1"
                return CustomerRecord(
                    id: customer, app: app,
                    keys: try await rows(
                        """
                        SELECT store, kind, value FROM purchase_customer_keys WHERE customer_id = $1
                        ORDER BY store COLLATE "C", kind COLLATE "C", value COLLATE "C"
                        """, CustomerKey.init(row:)
                    ).compactMap { $0 },
                    purchases: try await rows(
                        """
                        SELECT store, purchase_key FROM purchase_bindings WHERE customer_id = $1
                        ORDER BY store COLLATE "C", purchase_key COLLATE "C"
                        """, PurchaseReference.init(row:)),
                    transactions: try await rows(
                        "SELECT x.store, x.payload \(bound) purchase_transactions x \(ofBound)", LedgerTransaction.init(row:)
                    ).compactMap { $0 },
                    states: try await rows("SELECT x.store, x.payload \(bound) purchase_states x \(ofBound)", SubscriptionState.init(row:))
                        .compactMap { $0 },
                    transfers: try await rows(
                        """
                        SELECT store, purchase_key, from_customer, to_customer, outcome, at FROM purchase_transfers
                        WHERE from_customer = $1 OR to_customer = $1 ORDER BY sequence
                        """, TransferEvent.init(row:)),
                    refusedClaims: try await rows(
                        """
                        SELECT x.store, x.purchase_key, x.claimant_store, x.claimant_kind, x.claimant_value, x.count, x.first_at, x.last_at
                        \(bound) purchase_refused_claims x \(ofBound)
                        ORDER BY x.store COLLATE "C", x.purchase_key COLLATE "C", x.first_at, x.claimant_store COLLATE "C",
                                 x.claimant_kind COLLATE "C", x.claimant_value COLLATE "C"
                        """, RefusedClaim.init(row:)))
            }
        }
    }

    public func notifications(app: String?, after sequence: Int64, limit: Int) async throws -> [RawNotification] {
        try await withStoreErrors("cannot read notifications") {
            try await client.withConnection { connection in
                var notifications: [RawNotification] = []
                let rows = try await connection.query(
                    """
                    SELECT \(unescaped: RawNotification.columns)
                    FROM purchase_notifications WHERE sequence > \(sequence) AND (\(app)::text IS NULL OR app = \(app))
                    ORDER BY sequence LIMIT \(Int64(max(limit, 0)))
                    """, logger: logger)
                for try await row in rows { notifications.append(RawNotification(row: PostgresStoredRow(row))) }
                return notifications
            }
        }
    }

    public func clearNotificationEvidence(app: String?) async throws -> Int {
        try await transaction("cannot clear notification evidence") { connection, logger in
            var total = 0
            for table in ["purchase_transactions", "purchase_states"] {
                let rows = try await connection.query(
                    PostgresQuery(
                        unsafeSQL: "DELETE FROM \(table) WHERE source = 'notification' AND ($1::text IS NULL OR app = $1) RETURNING 1",
                        binds: {
                            var binds = PostgresBindings()
                            if let app { binds.append(app) } else { binds.appendNull() }
                            return binds
                        }()), logger: logger)
                total += try await rows.collect().count
            }
            return total
        }
    }

    /// One submission, inside the caller's transaction: ``PurchaseRecorder`` decides, this answers its
    /// questions and applies its writes, as `SQLiteStore.Writer.record` does. Each purchase is
    /// locked before it is read, so that replicas presenting it at the same moment bind it once.
    private static func record(_ submission: PurchaseSubmission, _ connection: PostgresConnection, _ logger: Logger) async throws
        -> PurchaseOutcome
    {
        let app = submission.app
        let now = Int64(submission.receivedAt.timeIntervalSince1970)
        var recorder = PurchaseRecorder(submission)
        if let notification = recorder.notificationToStore {
            let inserted = try await connection.query(
                """
                INSERT INTO purchase_notifications (app, store, notification_id, notification_type, subtype, environment, signed_at_ms,
                                                    received_at, body)
                VALUES (\(app), \(notification.marketplace.rawValue), \(notification.notificationId), \(notification.notificationType),
                        \(notification.subtype), \(notification.environment), \(milliseconds(notification.signedDate)), \(now),
                        \(notification.body))
                ON CONFLICT (app, store, notification_id) DO NOTHING RETURNING 1
                """, logger: logger
            ).collect().count
            if inserted == 0 { return PurchaseOutcome(duplicate: true) }
        }
        while let query = recorder.nextPurchase() {
            // The App Store's purchases are locked by the key they had before stores were told apart,
            // so that a replica of either version meets the other on the same lock.
            let purchase = query.purchase
            let lockKey = purchase.marketplace == .appStore ? "\(app)/\(purchase.key)" : "\(app)/\(purchase.marketplace)/\(purchase.key)"
            try await connection.execute("SELECT pg_advisory_xact_lock(hashtextextended(\(lockKey), 0))", logger: logger)
            let state = try await state(of: query, app: app, connection, logger)
            recorder.created(try await apply(recorder.decide(state), app: app, now: now, connection, logger))
        }
        _ = try await apply(recorder.finish(), app: app, now: now, connection, logger)
        return recorder.outcome
    }

    /// What the recorder asks of a purchase: its binding, and the customers its keys name, each with its keys.
    private static func state(of query: PurchaseQuery, app: String, _ connection: PostgresConnection, _ logger: Logger) async throws
        -> PurchaseState
    {
        func customer(_ id: Int64?) async throws -> StoredCustomer? {
            guard let id else { return nil }
            var keys: [CustomerKey] = []
            for try await row in try await connection.query(
                "SELECT store, kind, value FROM purchase_customer_keys WHERE customer_id = \(id)", logger: logger)
            {
                if let key = CustomerKey(row: PostgresStoredRow(row)) { keys.append(key) }
            }
            return StoredCustomer(id: id, keys: keys)
        }
        let bound = try await customer(
            integer(
                "SELECT customer_id FROM purchase_bindings WHERE app = $1 AND store = $2 AND purchase_key = $3",
                [app, query.purchase.marketplace.rawValue, query.purchase.key], connection, logger))
        var customers: [CustomerKey: StoredCustomer] = [:]
        for key in query.keys {
            customers[key] = try await customer(
                integer(
                    "SELECT customer_id FROM purchase_customer_keys WHERE app = $1 AND store = $2 AND kind = $3 AND value = $4",
                    [app, key.storeColumn, key.kind.rawValue, key.value], connection, logger))
        }
        return PurchaseState(bound: bound, customers: customers)
    }

    /// Applies the recorder's writes in order; returns the customers made, by the key each was made with.
    private static func apply(
        _ writes: [PurchaseWrite], app: String, now: Int64, _ connection: PostgresConnection, _ logger: Logger
    ) async throws -> [CustomerKey: Int64] {
        var created: [CustomerKey: Int64] = [:]
        func id(_ reference: CustomerReference) -> Int64 {
            switch reference {
            case .id(let id): id
            case .new(let key): created[key] ?? 0
            }
        }
        for write in writes {
            switch write {
            case .createCustomer(let key):
                created[key] = try await customer(app: app, key: key, now: now, connection, logger)
            case .addKey(let key, let customer):
                try await connection.execute(
                    """
                    INSERT INTO purchase_customer_keys (app, store, kind, value, customer_id)
                    VALUES (\(app), \(key.storeColumn), \(key.kind.rawValue), \(key.value), \(id(customer)))
                    ON CONFLICT DO NOTHING
                    """, logger: logger)
            case .bind(let purchase, let customer):
                try await connection.execute(
                    """
                    INSERT INTO purchase_bindings (app, store, purchase_key, customer_id, bound_at)
                    VALUES (\(app), \(purchase.marketplace.rawValue), \(purchase.key), \(id(customer)), \(now))
                    ON CONFLICT (app, store, purchase_key) DO UPDATE SET customer_id = excluded.customer_id, bound_at = excluded.bound_at
                    """, logger: logger)
            case .absorb(let placeholder, let customer):
                try await connection.execute(
                    "UPDATE purchase_bindings SET customer_id = \(id(customer)), bound_at = \(now) WHERE customer_id = \(placeholder)",
                    logger: logger)
                try await connection.execute(
                    """
                    UPDATE purchase_customer_keys SET customer_id = \(id(customer))
                    WHERE customer_id = \(placeholder) AND kind = 'storeAccount'
                    """, logger: logger)
            case .recordTransfer(let purchase, let from, let to):
                try await connection.execute(
                    """
                    INSERT INTO purchase_transfers (app, store, purchase_key, from_customer, to_customer, outcome, at)
                    VALUES (\(app), \(purchase.marketplace.rawValue), \(purchase.key), \(from), \(id(to)), 'transferred', \(now))
                    """, logger: logger)
            case .recordRefusedClaim(let purchase, let claimant, let kept):
                // As in SQLite: a claimant's own row while fewer than `kept` have one, else the row of the rest.
                let known =
                    try await integer(
                        """
                        SELECT count(*) FROM purchase_refused_claims WHERE app = $1 AND store = $2 AND purchase_key = $3
                        AND claimant_kind <> '' AND NOT (claimant_store = $4 AND claimant_kind = $5 AND claimant_value = $6)
                        """,
                        [app, purchase.marketplace.rawValue, purchase.key, claimant.storeColumn, claimant.kind.rawValue, claimant.value],
                        connection, logger) ?? 0
                let own = known < Int64(kept)
                let (store, kind, value) = own ? (claimant.storeColumn, claimant.kind.rawValue, claimant.value) : ("", "", "")
                try await connection.execute(
                    """
                    INSERT INTO purchase_refused_claims (app, store, purchase_key, claimant_store, claimant_kind, claimant_value, count,
                                                         first_at, last_at)
                    VALUES (\(app), \(purchase.marketplace.rawValue), \(purchase.key), \(store), \(kind), \(value), 1, \(now), \(now))
                    ON CONFLICT (app, store, purchase_key, claimant_store, claimant_kind, claimant_value)
                    DO UPDATE SET count = purchase_refused_claims.count + 1, last_at = excluded.last_at
                    """, logger: logger)
            case .keepTransaction(let kept, let source):
                let transaction = kept.value
                guard let transactionId = transaction.transactionId, let purchase = transaction.purchase else { continue }
                let hash = ContentHash.sha256Hex(Array(kept.json.utf8))
                try await connection.execute(
                    """
                    INSERT INTO purchase_transactions (app, store, transaction_id, purchase_key, environment, signed_at_ms, payload,
                                                       payload_sha256, source, received_at)
                    VALUES (\(app), \(transaction.marketplace.rawValue), \(transactionId), \(purchase), \(transaction.environment?.rawValue),
                            \(milliseconds(transaction.signedDate)), \(kept.json), \(hash), \(source.rawValue), \(now))
                    ON CONFLICT DO NOTHING
                    """, logger: logger)
            case .keepState(let kept, let source):
                let state = kept.value
                guard let purchase = state.purchaseKey else { continue }
                let hash = ContentHash.sha256Hex(Array(kept.json.utf8))
                try await connection.execute(
                    """
                    INSERT INTO purchase_states (app, store, purchase_key, environment, signed_at_ms, payload, payload_sha256, source,
                                                 received_at)
                    VALUES (\(app), \(state.marketplace.rawValue), \(purchase), \(state.environment?.rawValue),
                            \(milliseconds(state.signedDate)), \(kept.json), \(hash), \(source.rawValue), \(now))
                    ON CONFLICT DO NOTHING
                    """, logger: logger)
            case .enqueue(let event):
                try await enqueue(event, connection, logger)
            }
        }
        return created
    }

    /// The first column of the first row, as an integer; the values are bound as text, in order.
    private static func integer(_ sql: String, _ values: [String], _ connection: PostgresConnection, _ logger: Logger) async throws
        -> Int64?
    {
        var binds = PostgresBindings()
        for value in values { binds.append(value) }
        for try await value in try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger).decode(Int64.self) {
            return value
        }
        return nil
    }

    /// A customer made with `key`, or the one another transaction made with it at the same moment:
    /// that one wins, and its customer is the one.
    private static func customer(app: String, key: CustomerKey, now: Int64, _ connection: PostgresConnection, _ logger: Logger)
        async throws -> Int64
    {
        let find = "SELECT customer_id FROM purchase_customer_keys WHERE app = $1 AND store = $2 AND kind = $3 AND value = $4"
        let values = [app, key.storeColumn, key.kind.rawValue, key.value]
        var created: Int64 = 0
        for try await id in try await connection.query(
            "INSERT INTO purchase_customers (app, created_at) VALUES (\(app), \(now)) RETURNING id", logger: logger
        ).decode(Int64.self) {
            created = id
        }
        try await connection.execute(
            """
            INSERT INTO purchase_customer_keys (app, store, kind, value, customer_id)
            VALUES (\(app), \(key.storeColumn), \(key.kind.rawValue), \(key.value), \(created))
            ON CONFLICT DO NOTHING
            """, logger: logger
        )
        return try await integer(find, values, connection, logger) ?? created
    }

    private static func milliseconds(_ date: Date?) -> Int64? {
        date.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) }
    }
}
