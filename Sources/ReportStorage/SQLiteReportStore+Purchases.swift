import CatalogKit
import Foundation
import Purchases

/// Customers, purchases and notifications in the same SQLite file as the reports, written by the
/// same writer connection: a batch of submissions is one transaction, durable when `record` returns.
extension SQLiteReportStore: PurchaseStore {
    public func record(_ submissions: [PurchaseSubmission]) async throws -> [PurchaseOutcome] {
        try await writer.run { writer in try writer.connection.transaction { try submissions.map { try writer.record($0) } } }
    }

    /// Calls back on the writer's own queue, as reports' `store` does.
    public func record(_ submissions: [PurchaseSubmission], completion: @escaping @Sendable (Result<[PurchaseOutcome], any Error>) -> Void)
    {
        writer.async { writer in
            completion(Result { try writer.connection.transaction { try submissions.map { try writer.record($0) } } })
        }
    }

    public func customer(app: String, id: String) async throws -> CustomerRecord? {
        try await lookupReader.run { connection in
            let found = try connection.rows(
                """
                SELECT customer_id FROM (
                    SELECT 1 AS priority, customer_id FROM purchase_customer_keys
                        WHERE app = ?1 AND kind = 'appAccountToken' AND value = lower(?2)
                    UNION ALL SELECT 2, customer_id FROM purchase_customer_keys
                        WHERE app = ?1 AND kind = 'appTransactionId' AND value = ?2
                    UNION ALL SELECT 3, customer_id FROM purchase_bindings WHERE app = ?1 AND original_transaction_id = ?2
                    UNION ALL SELECT 4, b.customer_id FROM purchase_transactions t
                        JOIN purchase_bindings b ON b.app = t.app AND b.original_transaction_id = t.original_transaction_id
                        WHERE t.app = ?1 AND t.transaction_id = ?2)
                ORDER BY priority LIMIT 1
                """, [.text(app), .text(id)]
            ) { $0.integer(0) }
            guard let customer = found.first else { return nil }
            let keys = try connection.rows(
                "SELECT kind, value FROM purchase_customer_keys WHERE customer_id = ?1 ORDER BY kind, value", [.integer(customer)]
            ) { row in CustomerKey.Kind(rawValue: row.text(0) ?? "").map { CustomerKey(kind: $0, value: row.text(1) ?? "") } }
            let originals = try connection.rows(
                "SELECT original_transaction_id FROM purchase_bindings WHERE customer_id = ?1 ORDER BY original_transaction_id",
                [.integer(customer)]
            ) { $0.text(0) ?? "" }
            let transactions = try connection.rows(
                """
                SELECT t.payload FROM purchase_bindings b
                JOIN purchase_transactions t ON t.app = b.app AND t.original_transaction_id = b.original_transaction_id
                WHERE b.customer_id = ?1
                """, [.integer(customer)]
            ) { StoredPayload.decode(JWSTransactionDecodedPayload.self, $0.text(0) ?? "") }
            let renewalInfos = try connection.rows(
                """
                SELECT r.payload FROM purchase_bindings b
                JOIN purchase_renewal_infos r ON r.app = b.app AND r.original_transaction_id = b.original_transaction_id
                WHERE b.customer_id = ?1
                """, [.integer(customer)]
            ) { StoredPayload.decode(JWSRenewalInfoDecodedPayload.self, $0.text(0) ?? "") }
            let transfers = try connection.rows(
                """
                SELECT original_transaction_id, from_customer, to_customer, outcome, at FROM purchase_transfers
                WHERE from_customer = ?1 OR to_customer = ?1 ORDER BY sequence
                """, [.integer(customer)]
            ) { row in
                TransferEvent(
                    originalTransactionId: row.text(0) ?? "", fromCustomer: row.integer(1), toCustomer: row.integer(2),
                    outcome: TransferEvent.Outcome(rawValue: row.text(3) ?? "") ?? .refused,
                    at: Date(timeIntervalSince1970: TimeInterval(row.integer(4))))
            }
            let refused = try connection.rows(
                """
                SELECT r.original_transaction_id, r.claimant_kind, r.claimant_value, r.count, r.first_at, r.last_at
                FROM purchase_bindings b
                JOIN purchase_refused_claims r ON r.app = b.app AND r.original_transaction_id = b.original_transaction_id
                WHERE b.customer_id = ?1 ORDER BY r.original_transaction_id, r.first_at, r.claimant_kind, r.claimant_value
                """, [.integer(customer)]
            ) { row in
                RefusedClaim(
                    originalTransactionId: row.text(0) ?? "",
                    claimant: CustomerKey.Kind(rawValue: row.text(1) ?? "").map { CustomerKey(kind: $0, value: row.text(2) ?? "") },
                    count: Int(row.integer(3)), firstAt: Date(timeIntervalSince1970: TimeInterval(row.integer(4))),
                    lastAt: Date(timeIntervalSince1970: TimeInterval(row.integer(5))))
            }
            return CustomerRecord(
                id: customer, app: app, keys: keys.compactMap { $0 }, originalTransactionIds: originals,
                transactions: transactions.compactMap { $0 }, renewalInfos: renewalInfos.compactMap { $0 }, transfers: transfers,
                refusedClaims: refused)
        }
    }

    public func notifications(app: String?, after sequence: Int64, limit: Int) async throws -> [RawNotification] {
        try await reader.run { connection in
            try connection.rows(
                """
                SELECT sequence, app, notification_uuid, notification_type, subtype, environment, signed_at_ms, received_at, body
                FROM purchase_notifications WHERE sequence > ?1 AND (?2 IS NULL OR app = ?2) ORDER BY sequence LIMIT ?3
                """, [.integer(sequence), .init(app), .integer(Int64(max(limit, 0)))]
            ) { row in
                RawNotification(
                    sequence: row.integer(0), app: row.text(1) ?? "", notificationUUID: row.text(2) ?? "", notificationType: row.text(3),
                    subtype: row.text(4), environment: row.text(5),
                    signedDate: row.optionalInteger(6).map { Date(timeIntervalSince1970: TimeInterval($0) / 1000) },
                    receivedAt: Date(timeIntervalSince1970: TimeInterval(row.integer(7))), body: row.text(8) ?? "")
            }
        }
    }

    public func clearNotificationEvidence(app: String?) async throws -> Int {
        try await writer.run { writer in
            try writer.connection.transaction {
                let transactions = try writer.connection.run(
                    "DELETE FROM purchase_transactions WHERE source = 'notification' AND (?1 IS NULL OR app = ?1)", [.init(app)])
                let infos = try writer.connection.run(
                    "DELETE FROM purchase_renewal_infos WHERE source = 'notification' AND (?1 IS NULL OR app = ?1)", [.init(app)])
                return transactions + infos
            }
        }
    }
}

extension SQLiteReportStore.Writer {
    /// One submission, inside the caller's transaction: ``PurchaseRecorder`` decides, this answers
    /// its questions and applies its writes (docs/purchases.md, "Customers and transfers").
    func record(_ submission: PurchaseSubmission) throws -> PurchaseOutcome {
        let app = submission.app
        let now = Int64(submission.receivedAt.timeIntervalSince1970)
        var recorder = PurchaseRecorder(submission)
        if let notification = recorder.notificationToStore, try !insert(notification, app: app, now: now) {
            return PurchaseOutcome(duplicate: true)
        }
        while let query = recorder.nextPurchase() {
            recorder.created(try apply(recorder.decide(try state(of: query, app: app)), app: app, now: now))
        }
        _ = try apply(recorder.finish(), app: app, now: now)
        return recorder.outcome
    }

    /// Stores a raw notification; false when the app already has its `notificationUUID`.
    private func insert(_ notification: RawNotification, app: String, now: Int64) throws -> Bool {
        try run(
            """
            INSERT INTO purchase_notifications (app, notification_uuid, notification_type, subtype, environment, signed_at_ms,
                                                received_at, body)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (app, notification_uuid) DO NOTHING
            """,
            [
                .text(app), .text(notification.notificationUUID), .init(notification.notificationType), .init(notification.subtype),
                .init(notification.environment), milliseconds(notification.signedDate), .integer(now), .text(notification.body),
            ]) > 0
    }

    /// What the recorder asks of a purchase: its binding, and the customers its keys name, each with its keys.
    private func state(of query: PurchaseQuery, app: String) throws -> PurchaseState {
        func customer(_ id: Int64?) throws -> StoredCustomer? {
            guard let id else { return nil }
            let keys = try rows("SELECT kind, value FROM purchase_customer_keys WHERE customer_id = ?1", [.integer(id)], Self.customerKey)
            return StoredCustomer(id: id, keys: keys.compactMap { $0 })
        }
        let bound = try customer(
            integer(
                "SELECT customer_id FROM purchase_bindings WHERE app = ?1 AND original_transaction_id = ?2",
                [.text(app), .text(query.originalTransactionId)]))
        var customers: [CustomerKey: StoredCustomer] = [:]
        for key in query.keys {
            customers[key] = try customer(
                integer(
                    "SELECT customer_id FROM purchase_customer_keys WHERE app = ?1 AND kind = ?2 AND value = ?3",
                    [.text(app), .text(key.kind.rawValue), .text(key.value)]))
        }
        return PurchaseState(bound: bound, customers: customers)
    }

    /// Applies the recorder's writes in order; returns the customers made, by the key each was made with.
    private func apply(_ writes: [PurchaseWrite], app: String, now: Int64) throws -> [CustomerKey: Int64] {
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
                try run("INSERT INTO purchase_customers (app, created_at) VALUES (?1, ?2)", [.text(app), .integer(now)])
                let customer = connection.lastInsertedRow
                try run(
                    "INSERT INTO purchase_customer_keys (app, kind, value, customer_id) VALUES (?1, ?2, ?3, ?4)",
                    [.text(app), .text(key.kind.rawValue), .text(key.value), .integer(customer)])
                created[key] = customer
            case .addKey(let key, let customer):
                try run(
                    "INSERT INTO purchase_customer_keys (app, kind, value, customer_id) VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
                    [.text(app), .text(key.kind.rawValue), .text(key.value), .integer(id(customer))])
            case .bind(let original, let customer):
                try run(
                    """
                    INSERT INTO purchase_bindings (app, original_transaction_id, customer_id, bound_at) VALUES (?1, ?2, ?3, ?4)
                    ON CONFLICT (app, original_transaction_id) DO UPDATE SET customer_id = excluded.customer_id, bound_at = excluded.bound_at
                    """, [.text(app), .text(original), .integer(id(customer)), .integer(now)])
            case .absorb(let placeholder, let customer):
                try run(
                    "UPDATE purchase_bindings SET customer_id = ?2, bound_at = ?3 WHERE customer_id = ?1",
                    [.integer(placeholder), .integer(id(customer)), .integer(now)])
                try run(
                    "UPDATE purchase_customer_keys SET customer_id = ?2 WHERE customer_id = ?1 AND kind = 'appTransactionId'",
                    [.integer(placeholder), .integer(id(customer))])
            case .recordTransfer(let original, let from, let to):
                try run(
                    """
                    INSERT INTO purchase_transfers (app, original_transaction_id, from_customer, to_customer, outcome, at)
                    VALUES (?1, ?2, ?3, ?4, 'transferred', ?5)
                    """, [.text(app), .text(original), .integer(from), .integer(id(to)), .integer(now)])
            case .recordRefusedClaim(let original, let claimant, let kept):
                // A claimant already kept is counted on its row; a new one gets a row while fewer than
                // `kept` claimants have one, else is counted on the row of the rest (kind and value '').
                let known =
                    try integer(
                        """
                        SELECT count(*) FROM purchase_refused_claims WHERE app = ?1 AND original_transaction_id = ?2
                        AND claimant_kind <> '' AND NOT (claimant_kind = ?3 AND claimant_value = ?4)
                        """, [.text(app), .text(original), .text(claimant.kind.rawValue), .text(claimant.value)]) ?? 0
                let own = known < Int64(kept)
                try run(
                    """
                    INSERT INTO purchase_refused_claims (app, original_transaction_id, claimant_kind, claimant_value, count, first_at, last_at)
                    VALUES (?1, ?2, ?3, ?4, 1, ?5, ?5)
                    ON CONFLICT (app, original_transaction_id, claimant_kind, claimant_value)
                    DO UPDATE SET count = count + 1, last_at = excluded.last_at
                    """,
                    [
                        .text(app), .text(original), .text(own ? claimant.kind.rawValue : ""), .text(own ? claimant.value : ""),
                        .integer(now),
                    ])
            case .keepTransaction(let transaction, let source):
                guard let transactionId = transaction.transactionId else { continue }
                let payload = StoredPayload.encode(transaction)
                try run(
                    """
                    INSERT INTO purchase_transactions (app, transaction_id, original_transaction_id, environment, signed_at_ms, payload,
                                                       payload_sha256, source, received_at)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT DO NOTHING
                    """,
                    [
                        .text(app), .text(transactionId), .text(transaction.originalTransactionId ?? transactionId),
                        .init(transaction.environment?.rawValue), milliseconds(transaction.signedDate), .text(payload),
                        .text(ContentHash.sha256Hex(Array(payload.utf8))), .text(source.rawValue), .integer(now),
                    ])
            case .keepRenewalInfo(let info, let source):
                guard let original = info.originalTransactionId else { continue }
                let payload = StoredPayload.encode(info)
                try run(
                    """
                    INSERT INTO purchase_renewal_infos (app, original_transaction_id, environment, signed_at_ms, payload, payload_sha256,
                                                        source, received_at)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT DO NOTHING
                    """,
                    [
                        .text(app), .text(original), .init(info.environment?.rawValue), milliseconds(info.signedDate), .text(payload),
                        .text(ContentHash.sha256Hex(Array(payload.utf8))), .text(source.rawValue), .integer(now),
                    ])
            case .enqueue(let event):
                try enqueue(event)
            }
        }
        return created
    }

    static func customerKey(_ row: SQLiteStatement) -> CustomerKey? {
        CustomerKey.Kind(rawValue: row.text(0) ?? "").map { CustomerKey(kind: $0, value: row.text(1) ?? "") }
    }

    private func milliseconds(_ date: Date?) -> SQLiteValue {
        date.map { .integer(Int64(($0.timeIntervalSince1970 * 1000).rounded())) } ?? .null
    }
}
