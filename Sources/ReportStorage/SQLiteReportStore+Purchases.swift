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
            return CustomerRecord(
                id: customer, app: app, keys: keys.compactMap { $0 }, originalTransactionIds: originals,
                transactions: transactions.compactMap { $0 }, renewalInfos: renewalInfos.compactMap { $0 }, transfers: transfers)
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
    /// One submission, inside the caller's transaction (docs/purchases.md, "Customers and transfers").
    func record(_ submission: PurchaseSubmission) throws -> PurchaseOutcome {
        let app = submission.app
        let now = Int64(submission.receivedAt.timeIntervalSince1970)
        if let notification = submission.notification, !submission.isReplay {
            let inserted = try run(
                """
                INSERT INTO purchase_notifications (app, notification_uuid, notification_type, subtype, environment, signed_at_ms,
                                                    received_at, body)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (app, notification_uuid) DO NOTHING
                """,
                [
                    .text(app), .text(notification.notificationUUID), .init(notification.notificationType), .init(notification.subtype),
                    .init(notification.environment), milliseconds(notification.signedDate), .integer(now), .text(notification.body),
                ])
            if inserted == 0 { return PurchaseOutcome(duplicate: true) }
        }
        var outcome = PurchaseOutcome()
        for transaction in submission.transactions {
            guard let id = transaction.transactionId else { continue }
            let original = transaction.originalTransactionId ?? id
            let bound = try integer(
                "SELECT customer_id FROM purchase_bindings WHERE app = ?1 AND original_transaction_id = ?2", [.text(app), .text(original)])
            // A claim that names nobody (an original transaction id) never moves a purchase.
            let named = submission.claimant.flatMap { $0.kind == .originalTransactionId ? nil : $0 }
            var claimant = try named.map { try customer(app: app, key: $0, now: now) }
            if bound == nil && claimant == nil, let key = submission.claimant ?? CustomerKey.of(transaction) {
                claimant = try customer(app: app, key: key, now: now)
            }
            let placeholder =
                try bound.map {
                    try integer(
                        "SELECT 1 FROM purchase_customer_keys WHERE customer_id = ?1 AND kind <> 'originalTransactionId' LIMIT 1",
                        [.integer($0)]) == nil
                } ?? false
            var owner: Int64?
            switch BindingRule.decide(bound: bound, boundIsPlaceholder: placeholder, claimant: claimant, policy: submission.transferPolicy)
            {
            case .bind(let customer)?:
                try bind(app: app, original: original, to: customer, now: now)
                owner = customer
            case .stay(let customer)?:
                owner = customer
            case .transfer(let from, let to)?:
                try bind(app: app, original: original, to: to, now: now)
                outcome.transfers.append(try transfer(app: app, original: original, from: from, to: to, .transferred, now: now))
                owner = to
            case .refuse(let boundTo, let claimed)?:
                outcome.transfers.append(try transfer(app: app, original: original, from: boundTo, to: claimed, .refused, now: now))
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
                    try run(
                        "INSERT INTO purchase_customer_keys (app, kind, value, customer_id) VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
                        [.text(app), .text(key.kind.rawValue), .text(key.value), .integer(owner)])
                }
            }
            let payload = StoredPayload.encode(transaction)
            try run(
                """
                INSERT INTO purchase_transactions (app, transaction_id, original_transaction_id, environment, signed_at_ms, payload,
                                                   payload_sha256, source, received_at)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT DO NOTHING
                """,
                [
                    .text(app), .text(id), .text(original), .init(transaction.environment?.rawValue), milliseconds(transaction.signedDate),
                    .text(payload), .text(ContentHash.sha256Hex(Array(payload.utf8))), .text(submission.source.rawValue), .integer(now),
                ])
        }
        for info in submission.renewalInfos {
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
                    .text(ContentHash.sha256Hex(Array(payload.utf8))), .text(submission.source.rawValue), .integer(now),
                ])
        }
        // In this transaction, so that evidence acknowledged is never without its webhook events.
        try enqueueWebhooks(for: submission, outcome: outcome)
        return outcome
    }

    /// The customer `key` names, created with it if none does.
    private func customer(app: String, key: CustomerKey, now: Int64) throws -> Int64 {
        let values: [SQLiteValue] = [.text(app), .text(key.kind.rawValue), .text(key.value)]
        if let found = try integer("SELECT customer_id FROM purchase_customer_keys WHERE app = ?1 AND kind = ?2 AND value = ?3", values) {
            return found
        }
        try run("INSERT INTO purchase_customers (app, created_at) VALUES (?1, ?2)", [.text(app), .integer(now)])
        let id = try integer("SELECT last_insert_rowid()", []) ?? 0
        try run("INSERT INTO purchase_customer_keys (app, kind, value, customer_id) VALUES (?1, ?2, ?3, ?4)", values + [.integer(id)])
        return id
    }

    private func bind(app: String, original: String, to customer: Int64, now: Int64) throws {
        try run(
            """
            INSERT INTO purchase_bindings (app, original_transaction_id, customer_id, bound_at) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT (app, original_transaction_id) DO UPDATE SET customer_id = excluded.customer_id, bound_at = excluded.bound_at
            """, [.text(app), .text(original), .integer(customer), .integer(now)])
    }

    private func transfer(
        app: String, original: String, from: Int64, to: Int64, _ outcome: TransferEvent.Outcome, now: Int64
    ) throws -> TransferEvent {
        try run(
            "INSERT INTO purchase_transfers (app, original_transaction_id, from_customer, to_customer, outcome, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            [.text(app), .text(original), .integer(from), .integer(to), .text(outcome.rawValue), .integer(now)])
        return TransferEvent(
            originalTransactionId: original, fromCustomer: from, toCustomer: to, outcome: outcome,
            at: Date(timeIntervalSince1970: TimeInterval(now)))
    }

    private func milliseconds(_ date: Date?) -> SQLiteValue {
        date.map { .integer(Int64(($0.timeIntervalSince1970 * 1000).rounded())) } ?? .null
    }
}
