import CatalogKit
import Foundation
import Ledger

/// Customers, purchases and notifications in the same SQLite file as the reports, written by the
/// same writer connection: a batch of submissions is one transaction, durable when `record` returns.
extension SQLiteStore: PurchaseStore {
    public func record(_ submissions: [PurchaseSubmission]) async throws -> [PurchaseOutcome] {
        try await writer.run { writer in try writer.record(submissions) }
    }

    /// Calls back on the writer's own queue, as reports' `store` does.
    public func record(_ submissions: [PurchaseSubmission], completion: @escaping @Sendable (Result<[PurchaseOutcome], any Error>) -> Void)
    {
        writer.async { writer in
            completion(Result { try writer.record(submissions) })
        }
    }

    public func customer(app: String, id: String) async throws -> CustomerRecord? {
        try await lookupReader.run { connection in
            let found = try connection.rows(
                """
                SELECT customer_id FROM (
                    SELECT 1 AS priority, customer_id FROM purchase_customer_keys
                        WHERE app = ?1 AND store = '' AND kind = 'appAccount' AND value = lower(?2)
                    UNION ALL SELECT 2, customer_id FROM purchase_customer_keys WHERE app = ?1 AND kind = 'storeAccount' AND value = ?2
                    UNION ALL SELECT 3, customer_id FROM purchase_bindings WHERE app = ?1 AND purchase_key = ?2
                    UNION ALL SELECT 4, b.customer_id FROM purchase_transactions t
                        JOIN purchase_bindings b ON b.app = t.app AND b.store = t.store AND b.purchase_key = t.purchase_key
                        WHERE t.app = ?1 AND t.transaction_id = ?2)
                ORDER BY priority LIMIT 1
                """, [.text(app), .text(id)]
            ) { $0.integer(0) }
            guard let customer = found.first else { return nil }
            let id: [SQLiteValue] = [.integer(customer)]
            func rows<Row>(_ sql: String, _ make: (SQLiteRow) -> Row) throws -> [Row] {
                try connection.rows(sql, id) { make(SQLiteRow(statement: $0)) }
            }
            // Through the bindings: a purchase's rows are the customer's while it is bound to them.
            let bound = "FROM purchase_bindings b JOIN"
            let ofBound = "ON x.app = b.app AND x.store = b.store AND x.purchase_key = b.purchase_key WHERE b.customer_id = ?1"
            return CustomerRecord(
                id: customer, app: app,
                keys: try rows(
                    "SELECT store, kind, value FROM purchase_customer_keys WHERE customer_id = ?1 ORDER BY store, kind, value",
                    CustomerKey.init(row:)
                ).compactMap { $0 },
                purchases: try rows(
                    "SELECT store, purchase_key FROM purchase_bindings WHERE customer_id = ?1 ORDER BY store, purchase_key",
                    PurchaseReference.init(row:)),
                transactions: try rows(
                    "SELECT x.store, x.payload \(bound) purchase_transactions x \(ofBound)", LedgerTransaction.init(row:)
                )
                .compactMap { $0 },
                states: try rows("SELECT x.store, x.payload \(bound) purchase_states x \(ofBound)", SubscriptionState.init(row:))
                    .compactMap { $0 },
                transfers: try rows(
                    """
                    SELECT store, purchase_key, from_customer, to_customer, outcome, at FROM purchase_transfers
                    WHERE from_customer = ?1 OR to_customer = ?1 ORDER BY sequence
                    """, TransferEvent.init(row:)),
                refusedClaims: try rows(
                    """
                    SELECT x.store, x.purchase_key, x.claimant_store, x.claimant_kind, x.claimant_value, x.count, x.first_at, x.last_at
                    \(bound) purchase_refused_claims x \(ofBound)
                    ORDER BY x.store, x.purchase_key, x.first_at, x.claimant_store, x.claimant_kind, x.claimant_value
                    """, RefusedClaim.init(row:)))
        }
    }

    public func notifications(app: String?, after sequence: Int64, limit: Int) async throws -> [RawNotification] {
        try await reader.run { connection in
            try connection.rows(
                """
                SELECT \(RawNotification.columns), \(RawNotification.sqliteBodyColumns)
                FROM purchase_notifications n WHERE sequence > ?1 AND (?2 IS NULL OR app = ?2) ORDER BY sequence LIMIT ?3
                """, [.integer(sequence), .init(app), .integer(Int64(max(limit, 0)))]
            ) { RawNotification.stored(in: $0) }.map { try $0.get() }
        }
    }

    public func clearNotificationEvidence(app: String?) async throws -> Int {
        try await writer.run { writer in
            try writer.connection.transaction {
                let transactions = try writer.connection.run(
                    "DELETE FROM purchase_transactions WHERE source = 'notification' AND (?1 IS NULL OR app = ?1)", [.init(app)])
                let states = try writer.connection.run(
                    "DELETE FROM purchase_states WHERE source = 'notification' AND (?1 IS NULL OR app = ?1)", [.init(app)])
                return transactions + states
            }
        }
    }
}

extension SQLiteStore.Writer {
    /// Submissions in one transaction, committed together or not at all.
    func record(_ submissions: [PurchaseSubmission]) throws -> [PurchaseOutcome] {
        do {
            let outcomes = try connection.transaction { try submissions.map { try record($0) } }
            notificationBodies.committed()
            return outcomes
        } catch {
            notificationBodies.rolledBack()
            throw error
        }
    }

    /// One submission, inside the batch's transaction above, which settles the bases of the
    /// notification bodies it stored: ``PurchaseRecorder`` decides, this answers its questions and
    /// applies its writes (docs/purchases.md, "Customers and transfers").
    private func record(_ submission: PurchaseSubmission) throws -> PurchaseOutcome {
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

    /// Stores a raw notification, its body compressed when it can be (``NotificationBodyCompressor``);
    /// false when the app already has its id.
    private func insert(_ notification: RawNotification, app: String, now: Int64) throws -> Bool {
        let store = notification.marketplace
        let (body, base) = notificationBodies.storable(notification.body, store: store)
        let inserted =
            try run(
                """
                INSERT INTO purchase_notifications (app, store, notification_id, notification_type, subtype, environment, signed_at_ms,
                                                    received_at, body, body_base)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT (app, store, notification_id) DO NOTHING
                """,
                [
                    .text(app), .text(store.rawValue), .text(notification.notificationId), .init(notification.notificationType),
                    .init(notification.subtype), .init(notification.environment), milliseconds(notification.signedDate), .integer(now),
                    body, base.map(SQLiteValue.integer) ?? .null,
                ]) > 0
        if inserted, base == nil {
            notificationBodies.storedAsPosted(notification.body, sequence: connection.lastInsertedRow, store: store)
        }
        return inserted
    }

    /// What the recorder asks of a purchase: its binding, and the customers its keys name, each with its keys.
    private func state(of query: PurchaseQuery, app: String) throws -> PurchaseState {
        func customer(_ id: Int64?) throws -> StoredCustomer? {
            guard let id else { return nil }
            let keys = try rows("SELECT store, kind, value FROM purchase_customer_keys WHERE customer_id = ?1", [.integer(id)]) {
                CustomerKey(row: SQLiteRow(statement: $0))
            }
            return StoredCustomer(id: id, keys: keys.compactMap { $0 })
        }
        let bound = try customer(
            integer(
                "SELECT customer_id FROM purchase_bindings WHERE app = ?1 AND store = ?2 AND purchase_key = ?3",
                [.text(app), .text(query.purchase.marketplace.rawValue), .text(query.purchase.key)]))
        var customers: [CustomerKey: StoredCustomer] = [:]
        for key in query.keys {
            customers[key] = try customer(
                integer(
                    "SELECT customer_id FROM purchase_customer_keys WHERE app = ?1 AND store = ?2 AND kind = ?3 AND value = ?4",
                    [.text(app), .text(key.storeColumn), .text(key.kind.rawValue), .text(key.value)]))
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
                    "INSERT INTO purchase_customer_keys (app, store, kind, value, customer_id) VALUES (?1, ?2, ?3, ?4, ?5)",
                    [.text(app), .text(key.storeColumn), .text(key.kind.rawValue), .text(key.value), .integer(customer)])
                created[key] = customer
            case .addKey(let key, let customer):
                try run(
                    """
                    INSERT INTO purchase_customer_keys (app, store, kind, value, customer_id) VALUES (?1, ?2, ?3, ?4, ?5)
                    ON CONFLICT DO NOTHING
                    """, [.text(app), .text(key.storeColumn), .text(key.kind.rawValue), .text(key.value), .integer(id(customer))])
            case .bind(let purchase, let customer):
                try run(
                    """
                    INSERT INTO purchase_bindings (app, store, purchase_key, customer_id, bound_at) VALUES (?1, ?2, ?3, ?4, ?5)
                    ON CONFLICT (app, store, purchase_key) DO UPDATE SET customer_id = excluded.customer_id, bound_at = excluded.bound_at
                    """, [.text(app), .text(purchase.marketplace.rawValue), .text(purchase.key), .integer(id(customer)), .integer(now)])
            case .absorb(let placeholder, let customer):
                try run(
                    "UPDATE purchase_bindings SET customer_id = ?2, bound_at = ?3 WHERE customer_id = ?1",
                    [.integer(placeholder), .integer(id(customer)), .integer(now)])
                try run(
                    "UPDATE purchase_customer_keys SET customer_id = ?2 WHERE customer_id = ?1 AND kind = 'storeAccount'",
                    [.integer(placeholder), .integer(id(customer))])
            case .recordTransfer(let purchase, let from, let to):
                try run(
                    """
                    INSERT INTO purchase_transfers (app, store, purchase_key, from_customer, to_customer, outcome, at)
                    VALUES (?1, ?2, ?3, ?4, ?5, 'transferred', ?6)
                    """,
                    [
                        .text(app), .text(purchase.marketplace.rawValue), .text(purchase.key), .integer(from), .integer(id(to)),
                        .integer(now),
                    ]
                )
            case .recordRefusedClaim(let purchase, let claimant, let kept):
                // A claimant already kept is counted on its row; a new one gets a row while fewer than
                // `kept` claimants have one, else is counted on the row of the rest (kind and value '').
                let purchaseValues: [SQLiteValue] = [.text(app), .text(purchase.marketplace.rawValue), .text(purchase.key)]
                let known =
                    try integer(
                        """
                        SELECT count(*) FROM purchase_refused_claims WHERE app = ?1 AND store = ?2 AND purchase_key = ?3
                        AND claimant_kind <> '' AND NOT (claimant_store = ?4 AND claimant_kind = ?5 AND claimant_value = ?6)
                        """, purchaseValues + [.text(claimant.storeColumn), .text(claimant.kind.rawValue), .text(claimant.value)]) ?? 0
                let own = known < Int64(kept)
                try run(
                    """
                    INSERT INTO purchase_refused_claims (app, store, purchase_key, claimant_store, claimant_kind, claimant_value, count,
                                                         first_at, last_at)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7, ?7)
                    ON CONFLICT (app, store, purchase_key, claimant_store, claimant_kind, claimant_value)
                    DO UPDATE SET count = count + 1, last_at = excluded.last_at
                    """,
                    purchaseValues + [
                        .text(own ? claimant.storeColumn : ""), .text(own ? claimant.kind.rawValue : ""),
                        .text(own ? claimant.value : ""), .integer(now),
                    ])
            case .keepTransaction(let kept, let source):
                let transaction = kept.value
                guard let transactionId = transaction.transactionId, let purchase = transaction.purchase else { continue }
                try run(
                    """
                    INSERT INTO purchase_transactions (app, store, transaction_id, purchase_key, environment, signed_at_ms, payload,
                                                       payload_sha256, source, received_at)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT DO NOTHING
                    """,
                    [
                        .text(app), .text(transaction.marketplace.rawValue), .text(transactionId), .text(purchase),
                        .init(transaction.environment?.rawValue), milliseconds(transaction.signedDate), .text(kept.json),
                        .text(ContentHash.sha256Hex(Array(kept.json.utf8))), .text(source.rawValue), .integer(now),
                    ])
            case .keepState(let kept, let source):
                let state = kept.value
                guard let purchase = state.purchaseKey else { continue }
                try run(
                    """
                    INSERT INTO purchase_states (app, store, purchase_key, environment, signed_at_ms, payload, payload_sha256, source,
                                                 received_at)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT DO NOTHING
                    """,
                    [
                        .text(app), .text(state.marketplace.rawValue), .text(purchase), .init(state.environment?.rawValue),
                        milliseconds(state.signedDate), .text(kept.json), .text(ContentHash.sha256Hex(Array(kept.json.utf8))),
                        .text(source.rawValue), .integer(now),
                    ])
            case .enqueue(let event):
                try enqueue(event)
            }
        }
        return created
    }

    private func milliseconds(_ date: Date?) -> SQLiteValue {
        date.map { .integer(Int64(($0.timeIntervalSince1970 * 1000).rounded())) } ?? .null
    }
}
