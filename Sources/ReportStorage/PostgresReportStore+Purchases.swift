import CatalogKit
import Foundation
import PostgresNIO
import Purchases

/// Customers, purchases and notifications in the same PostgreSQL database as the reports, with the
/// semantics of `SQLiteReportStore`'s. Replicas that record purchases at the same moment meet on
/// the tables' keys: each purchase is locked (an advisory lock on its app and original transaction)
/// for the rest of the transaction before its binding is read, so two first presentations of one
/// purchase bind it once.
extension PostgresReportStore: PurchaseStore {
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
                            WHERE app = \(app) AND kind = 'appAccountToken' AND value = lower(\(id))
                        UNION ALL SELECT 2, customer_id FROM purchase_customer_keys
                            WHERE app = \(app) AND kind = 'appTransactionId' AND value = \(id)
                        UNION ALL SELECT 3, customer_id FROM purchase_bindings WHERE app = \(app) AND original_transaction_id = \(id)
                        UNION ALL SELECT 4, b.customer_id FROM purchase_transactions t
                            JOIN purchase_bindings b ON b.app = t.app AND b.original_transaction_id = t.original_transaction_id
                            WHERE t.app = \(app) AND t.transaction_id = \(id)) AS found
                    ORDER BY priority LIMIT 1
                    """, logger: logger
                ).decode(Int64.self) {
                    customer = found
                }
                guard let customer else { return nil }
                var keys: [CustomerKey] = []
                for try await (kind, value) in try await connection.query(
                    "SELECT kind, value FROM purchase_customer_keys WHERE customer_id = \(customer) ORDER BY kind COLLATE \"C\", value COLLATE \"C\"",
                    logger: logger
                ).decode((String, String).self) {
                    if let kind = CustomerKey.Kind(rawValue: kind) { keys.append(CustomerKey(kind: kind, value: value)) }
                }
                var originals: [String] = []
                for try await original in try await connection.query(
                    """
                    SELECT original_transaction_id FROM purchase_bindings WHERE customer_id = \(customer)
                    ORDER BY original_transaction_id COLLATE "C"
                    """, logger: logger
                ).decode(String.self) {
                    originals.append(original)
                }
                var transactions: [JWSTransactionDecodedPayload] = []
                for try await payload in try await connection.query(
                    """
                    SELECT t.payload FROM purchase_bindings b
                    JOIN purchase_transactions t ON t.app = b.app AND t.original_transaction_id = b.original_transaction_id
                    WHERE b.customer_id = \(customer)
                    """, logger: logger
                ).decode(String.self) {
                    if let decoded = StoredPayload.decode(JWSTransactionDecodedPayload.self, payload) { transactions.append(decoded) }
                }
                var infos: [JWSRenewalInfoDecodedPayload] = []
                for try await payload in try await connection.query(
                    """
                    SELECT r.payload FROM purchase_bindings b
                    JOIN purchase_renewal_infos r ON r.app = b.app AND r.original_transaction_id = b.original_transaction_id
                    WHERE b.customer_id = \(customer)
                    """, logger: logger
                ).decode(String.self) {
                    if let decoded = StoredPayload.decode(JWSRenewalInfoDecodedPayload.self, payload) { infos.append(decoded) }
                }
                var transfers: [TransferEvent] = []
                for try await (original, from, to, outcome, at) in try await connection.query(
                    """
                    SELECT original_transaction_id, from_customer, to_customer, outcome, at FROM purchase_transfers
                    WHERE from_customer = \(customer) OR to_customer = \(customer) ORDER BY sequence
                    """, logger: logger
                ).decode((String, Int64, Int64, String, Int64).self) {
                    transfers.append(
                        TransferEvent(
                            originalTransactionId: original, fromCustomer: from, toCustomer: to,
                            outcome: TransferEvent.Outcome(rawValue: outcome) ?? .refused, at: Date(timeIntervalSince1970: TimeInterval(at))
                        ))
                }
                var refused: [RefusedClaim] = []
                for try await (original, kind, value, count, first, last) in try await connection.query(
                    """
                    SELECT r.original_transaction_id, r.claimant_kind, r.claimant_value, r.count, r.first_at, r.last_at
                    FROM purchase_bindings b
                    JOIN purchase_refused_claims r ON r.app = b.app AND r.original_transaction_id = b.original_transaction_id
                    WHERE b.customer_id = \(customer)
                    ORDER BY r.original_transaction_id COLLATE "C", r.first_at, r.claimant_kind COLLATE "C", r.claimant_value COLLATE "C"
                    """, logger: logger
                ).decode((String, String, String, Int64, Int64, Int64).self) {
                    refused.append(
                        RefusedClaim(
                            originalTransactionId: original,
                            claimant: CustomerKey.Kind(rawValue: kind).map { CustomerKey(kind: $0, value: value) },
                            count: Int(count), firstAt: Date(timeIntervalSince1970: TimeInterval(first)),
                            lastAt: Date(timeIntervalSince1970: TimeInterval(last))))
                }
                return CustomerRecord(
                    id: customer, app: app, keys: keys, originalTransactionIds: originals, transactions: transactions, renewalInfos: infos,
                    transfers: transfers, refusedClaims: refused)
            }
        }
    }

    public func notifications(app: String?, after sequence: Int64, limit: Int) async throws -> [RawNotification] {
        try await withStoreErrors("cannot read notifications") {
            try await client.withConnection { connection in
                var notifications: [RawNotification] = []
                let rows = try await connection.query(
                    """
                    SELECT sequence, app, notification_uuid, notification_type, subtype, environment, signed_at_ms, received_at, body
                    FROM purchase_notifications WHERE sequence > \(sequence) AND (\(app)::text IS NULL OR app = \(app))
                    ORDER BY sequence LIMIT \(Int64(max(limit, 0)))
                    """, logger: logger)
                for try await row in rows.decode((Int64, String, String, String?, String?, String?, Int64?, Int64, String).self) {
                    notifications.append(
                        RawNotification(
                            sequence: row.0, app: row.1, notificationUUID: row.2, notificationType: row.3, subtype: row.4,
                            environment: row.5,
                            signedDate: row.6.map { Date(timeIntervalSince1970: TimeInterval($0) / 1000) },
                            receivedAt: Date(timeIntervalSince1970: TimeInterval(row.7)), body: row.8))
                }
                return notifications
            }
        }
    }

    public func clearNotificationEvidence(app: String?) async throws -> Int {
        try await transaction("cannot clear notification evidence") { connection, logger in
            var total = 0
            for table in ["purchase_transactions", "purchase_renewal_infos"] {
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
    /// questions and applies its writes, as `SQLiteReportStore.Writer.record` does. Each purchase is
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
                INSERT INTO purchase_notifications (app, notification_uuid, notification_type, subtype, environment, signed_at_ms,
                                                    received_at, body)
                VALUES (\(app), \(notification.notificationUUID), \(notification.notificationType), \(notification.subtype),
                        \(notification.environment), \(milliseconds(notification.signedDate)), \(now), \(notification.body))
                ON CONFLICT (app, notification_uuid) DO NOTHING RETURNING 1
                """, logger: logger
            ).collect().count
            if inserted == 0 { return PurchaseOutcome(duplicate: true) }
        }
        while let query = recorder.nextPurchase() {
            let lockKey = "\(app)/\(query.originalTransactionId)"
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
            for try await (kind, value) in try await connection.query(
                "SELECT kind, value FROM purchase_customer_keys WHERE customer_id = \(id)", logger: logger
            ).decode((String, String).self) {
                if let kind = CustomerKey.Kind(rawValue: kind) { keys.append(CustomerKey(kind: kind, value: value)) }
            }
            return StoredCustomer(id: id, keys: keys)
        }
        let bound = try await customer(
            integer(
                "SELECT customer_id FROM purchase_bindings WHERE app = $1 AND original_transaction_id = $2",
                [app, query.originalTransactionId], connection, logger))
        var customers: [CustomerKey: StoredCustomer] = [:]
        for key in query.keys {
            customers[key] = try await customer(
                integer(
                    "SELECT customer_id FROM purchase_customer_keys WHERE app = $1 AND kind = $2 AND value = $3",
                    [app, key.kind.rawValue, key.value], connection, logger))
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
                    INSERT INTO purchase_customer_keys (app, kind, value, customer_id) VALUES (\(app), \(key.kind.rawValue), \(key.value), \(id(customer)))
                    ON CONFLICT DO NOTHING
                    """, logger: logger)
            case .bind(let original, let customer):
                try await connection.execute(
                    """
                    INSERT INTO purchase_bindings (app, original_transaction_id, customer_id, bound_at) VALUES (\(app), \(original), \(id(customer)), \(now))
                    ON CONFLICT (app, original_transaction_id) DO UPDATE SET customer_id = excluded.customer_id, bound_at = excluded.bound_at
                    """, logger: logger)
            case .absorb(let placeholder, let customer):
                try await connection.execute(
                    "UPDATE purchase_bindings SET customer_id = \(id(customer)), bound_at = \(now) WHERE customer_id = \(placeholder)",
                    logger: logger)
                try await connection.execute(
                    """
                    UPDATE purchase_customer_keys SET customer_id = \(id(customer))
                    WHERE customer_id = \(placeholder) AND kind = 'appTransactionId'
                    """, logger: logger)
            case .recordTransfer(let original, let from, let to):
                try await connection.execute(
                    """
                    INSERT INTO purchase_transfers (app, original_transaction_id, from_customer, to_customer, outcome, at)
                    VALUES (\(app), \(original), \(from), \(id(to)), 'transferred', \(now))
                    """, logger: logger)
            case .recordRefusedClaim(let original, let claimant, let kept):
                // As in SQLite: a claimant's own row while fewer than `kept` have one, else the row of the rest.
                let known =
                    try await integer(
                        """
                        SELECT count(*) FROM purchase_refused_claims WHERE app = $1 AND original_transaction_id = $2
                        AND claimant_kind <> '' AND NOT (claimant_kind = $3 AND claimant_value = $4)
                        """, [app, original, claimant.kind.rawValue, claimant.value], connection, logger) ?? 0
                let own = known < Int64(kept)
                let (kind, value) = own ? (claimant.kind.rawValue, claimant.value) : ("", "")
                try await connection.execute(
                    """
                    INSERT INTO purchase_refused_claims (app, original_transaction_id, claimant_kind, claimant_value, count, first_at, last_at)
                    VALUES (\(app), \(original), \(kind), \(value), 1, \(now), \(now))
                    ON CONFLICT (app, original_transaction_id, claimant_kind, claimant_value)
                    DO UPDATE SET count = purchase_refused_claims.count + 1, last_at = excluded.last_at
                    """, logger: logger)
            case .keepTransaction(let transaction, let source):
                guard let transactionId = transaction.transactionId else { continue }
                let original = transaction.originalTransactionId ?? transactionId
                let payload = StoredPayload.encode(transaction)
                let hash = ContentHash.sha256Hex(Array(payload.utf8))
                try await connection.execute(
                    """
                    INSERT INTO purchase_transactions (app, transaction_id, original_transaction_id, environment, signed_at_ms, payload,
                                                       payload_sha256, source, received_at)
                    VALUES (\(app), \(transactionId), \(original), \(transaction.environment?.rawValue), \(milliseconds(transaction.signedDate)),
                            \(payload), \(hash), \(source.rawValue), \(now))
                    ON CONFLICT DO NOTHING
                    """, logger: logger)
            case .keepRenewalInfo(let info, let source):
                guard let original = info.originalTransactionId else { continue }
                let payload = StoredPayload.encode(info)
                let hash = ContentHash.sha256Hex(Array(payload.utf8))
                try await connection.execute(
                    """
                    INSERT INTO purchase_renewal_infos (app, original_transaction_id, environment, signed_at_ms, payload, payload_sha256,
                                                        source, received_at)
                    VALUES (\(app), \(original), \(info.environment?.rawValue), \(milliseconds(info.signedDate)), \(payload), \(hash),
                            \(source.rawValue), \(now))
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
        let find = "SELECT customer_id FROM purchase_customer_keys WHERE app = $1 AND kind = $2 AND value = $3"
        let values = [app, key.kind.rawValue, key.value]
        var created: Int64 = 0
        for try await id in try await connection.query(
            "INSERT INTO purchase_customers (app, created_at) VALUES (\(app), \(now)) RETURNING id", logger: logger
        ).decode(Int64.self) {
            created = id
        }
        try await connection.execute(
            """
            INSERT INTO purchase_customer_keys (app, kind, value, customer_id) VALUES (\(app), \(key.kind.rawValue), \(key.value), \(created))
            ON CONFLICT DO NOTHING
            """, logger: logger
        )
        return try await integer(find, values, connection, logger) ?? created
    }

    private static func milliseconds(_ date: Date?) -> Int64? {
        date.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) }
    }
}
