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
                return CustomerRecord(
                    id: customer, app: app, keys: keys, originalTransactionIds: originals, transactions: transactions, renewalInfos: infos,
                    transfers: transfers)
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

    /// One submission, inside the caller's transaction: `SQLiteReportStore.Writer.record`'s steps.
    private static func record(_ submission: PurchaseSubmission, _ connection: PostgresConnection, _ logger: Logger) async throws
        -> PurchaseOutcome
    {
        let app = submission.app
        let now = Int64(submission.receivedAt.timeIntervalSince1970)
        if let notification = submission.notification, !submission.isReplay {
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
        var outcome = PurchaseOutcome()
        for transaction in submission.transactions {
            guard let id = transaction.transactionId else { continue }
            let original = transaction.originalTransactionId ?? id
            let lockKey = "\(app)/\(original)"
            try await connection.execute("SELECT pg_advisory_xact_lock(hashtextextended(\(lockKey), 0))", logger: logger)
            let bound = try await integer(
                "SELECT customer_id FROM purchase_bindings WHERE app = $1 AND original_transaction_id = $2", [app, original], connection,
                logger)
            let named = submission.claimant.flatMap { $0.kind == .originalTransactionId ? nil : $0 }
            var claimant: Int64?
            if let named { claimant = try await customer(app: app, key: named, now: now, connection, logger) }
            if bound == nil && claimant == nil, let key = submission.claimant ?? CustomerKey.of(transaction) {
                claimant = try await customer(app: app, key: key, now: now, connection, logger)
            }
            var placeholder = false
            if let bound {
                placeholder =
                    try await integer(
                        "SELECT 1 FROM purchase_customer_keys WHERE customer_id = $1::bigint AND kind <> 'originalTransactionId' LIMIT 1",
                        [String(bound)], connection, logger) == nil
            }
            var owner: Int64?
            switch BindingRule.decide(bound: bound, boundIsPlaceholder: placeholder, claimant: claimant, policy: submission.transferPolicy)
            {
            case .bind(let customer)?:
                try await bind(app: app, original: original, to: customer, now: now, connection, logger)
                owner = customer
            case .stay(let customer)?:
                owner = customer
            case .transfer(let from, let to)?:
                try await bind(app: app, original: original, to: to, now: now, connection, logger)
                outcome.transfers.append(
                    try await transfer(app: app, original: original, from: from, to: to, .transferred, now: now, connection, logger))
                owner = to
            case .refuse(let boundTo, let claimed)?:
                outcome.transfers.append(
                    try await transfer(app: app, original: original, from: boundTo, to: claimed, .refused, now: now, connection, logger))
                outcome.refusal = PurchaseRefusal(
                    .boundToAnotherCustomer,
                    "transaction \(original) is bound to another customer, and the app keeps purchases with their first")
                owner = boundTo
            case nil:
                owner = nil
            }
            if let owner {
                outcome.customerId = owner
                let keys =
                    (transaction.appTransactionId.map { [CustomerKey(kind: .appTransactionId, value: $0)] } ?? []) + submission.otherKeys
                for key in keys where !key.value.isEmpty {
                    try await connection.execute(
                        """
                        INSERT INTO purchase_customer_keys (app, kind, value, customer_id) VALUES (\(app), \(key.kind.rawValue), \(key.value), \(owner))
                        ON CONFLICT DO NOTHING
                        """, logger: logger
                    )
                }
            }
            let payload = StoredPayload.encode(transaction)
            let hash = ContentHash.sha256Hex(Array(payload.utf8))
            try await connection.execute(
                """
                INSERT INTO purchase_transactions (app, transaction_id, original_transaction_id, environment, signed_at_ms, payload,
                                                   payload_sha256, source, received_at)
                VALUES (\(app), \(id), \(original), \(transaction.environment?.rawValue), \(milliseconds(transaction.signedDate)), \(payload),
                        \(hash), \(submission.source.rawValue), \(now))
                ON CONFLICT DO NOTHING
                """, logger: logger
            )
        }
        for info in submission.renewalInfos {
            guard let original = info.originalTransactionId else { continue }
            let payload = StoredPayload.encode(info)
            let hash = ContentHash.sha256Hex(Array(payload.utf8))
            try await connection.execute(
                """
                INSERT INTO purchase_renewal_infos (app, original_transaction_id, environment, signed_at_ms, payload, payload_sha256,
                                                    source, received_at)
                VALUES (\(app), \(original), \(info.environment?.rawValue), \(milliseconds(info.signedDate)), \(payload), \(hash),
                        \(submission.source.rawValue), \(now))
                ON CONFLICT DO NOTHING
                """, logger: logger
            )
        }
        // In this transaction, so that evidence acknowledged is never without its webhook events.
        try await enqueueWebhooks(for: submission, outcome: outcome, connection, logger)
        return outcome
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

    /// The customer `key` names, created with it if none does (another transaction creating the
    /// same key at the same moment wins, and its customer is the one).
    private static func customer(app: String, key: CustomerKey, now: Int64, _ connection: PostgresConnection, _ logger: Logger)
        async throws -> Int64
    {
        let find = "SELECT customer_id FROM purchase_customer_keys WHERE app = $1 AND kind = $2 AND value = $3"
        let values = [app, key.kind.rawValue, key.value]
        if let found = try await integer(find, values, connection, logger) { return found }
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

    private static func bind(
        app: String, original: String, to customer: Int64, now: Int64, _ connection: PostgresConnection, _ logger: Logger
    )
        async throws
    {
        try await connection.execute(
            """
            INSERT INTO purchase_bindings (app, original_transaction_id, customer_id, bound_at) VALUES (\(app), \(original), \(customer), \(now))
            ON CONFLICT (app, original_transaction_id) DO UPDATE SET customer_id = excluded.customer_id, bound_at = excluded.bound_at
            """, logger: logger
        )
    }

    private static func transfer(
        app: String, original: String, from: Int64, to: Int64, _ outcome: TransferEvent.Outcome, now: Int64,
        _ connection: PostgresConnection,
        _ logger: Logger
    ) async throws -> TransferEvent {
        try await connection.execute(
            """
            INSERT INTO purchase_transfers (app, original_transaction_id, from_customer, to_customer, outcome, at)
            VALUES (\(app), \(original), \(from), \(to), \(outcome.rawValue), \(now))
            """, logger: logger
        )
        return TransferEvent(
            originalTransactionId: original, fromCustomer: from, toCustomer: to, outcome: outcome,
            at: Date(timeIntervalSince1970: TimeInterval(now)))
    }

    private static func milliseconds(_ date: Date?) -> Int64? {
        date.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) }
    }
}
