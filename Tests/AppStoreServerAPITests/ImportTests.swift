import AppStore
import AppStoreAPIStandIn
import AppStoreServerAPI
import AppStoreTestSupport
import Foundation
import Ledger
import Storage
import Testing

/// Import of existing customers against the stand-in, on a real SQLite store: each customer's
/// history paged and recorded, renewal infos with it, unknown ids refused, production asked
/// before the sandbox, and a run stopped anywhere resumed without skipping anyone
/// (docs/app-store-api.md, "Import").
@Suite struct ImportTests {
    typealias PKI = AppStoreTestPKI
    typealias Scenarios = ReconciliationScenarios

    /// A subscriber's three monthly transactions and its renewal info, signed.
    static func customer(_ pki: PKI, _ index: Int, environment: String = "Production") throws -> (
        customer: AppStoreAPIStandIn.Customer, transactions: [String], renewal: String, original: String
    ) {
        let original = String(2_000_000_500_000 + index * 10)
        let start = PKI.date(2024, 11, 1)
        let month: TimeInterval = 30 * 86_400
        let transactions = try (0..<3).map { step in
            try pki.jws(
                payload: PKI.transaction([
                    "transactionId": String(Int(original)! + step), "originalTransactionId": original,
                    "purchaseDate": PKI.milliseconds(start.addingTimeInterval(Double(step) * month)),
                    "expiresDate": PKI.milliseconds(start.addingTimeInterval(Double(step + 1) * month)), "environment": environment,
                ]))
        }
        let renewal = try pki.jws(
            payload: PKI.renewalInfo(["originalTransactionId": original, "environment": environment, "isInBillingRetryPeriod": false]))
        let customer = AppStoreAPIStandIn.Customer(
            signedTransactions: transactions, transactionIds: Set((0..<3).map { String(Int(original)! + $0) }),
            statuses: [(group: "21000000", status: 1, originalTransactionId: original, transaction: transactions[2], renewal: renewal)])
        return (customer, transactions, renewal, original)
    }

    /// The same customers recorded as the app would have presented them, for comparison.
    static func reference(_ customers: [(transactions: [String], renewal: String)], purchases: AppPurchases, into store: any Store)
        async throws
    {
        for customer in customers {
            var kept: [Kept<LedgerTransaction>] = []
            for signed in customer.transactions { kept.append(Kept(try await purchases.verifier.verifyAndDecodeTransaction(signed))) }
            let state = Kept(try await purchases.verifier.verifyAndDecodeRenewalInfo(customer.renewal))
            _ = try await store.record([
                PurchaseSubmission(app: Scenarios.app, receivedAt: Date(), source: .storeAPI, transactions: kept, states: [state])
            ])
        }
    }

    @Test func customersAreImportedOnceAndAStoppedImportResumes() async throws {
        let pki = try PKI.ecdsa()
        let purchases = try Scenarios.purchases(pki)
        let made = try (0..<10).map { try Self.customer(pki, $0) }
        try await ReconciliationTests.withSQLite { reference in
            try await Self.reference(made.map { ($0.transactions, $0.renewal) }, purchases: purchases, into: reference)
            try await ReconciliationTests.withSQLite { store in
                try await Scenarios.withAPI(pageSize: 2) { standIn, transport, keyFile in
                    for customer in made { standIn.addCustomer(customer.customer) }
                    let client = try Scenarios.client(standIn, keyFile: keyFile, transport: transport)
                    // Any of a customer's transaction ids finds them; an unknown one and a line that is
                    // not an id are refused.
                    let ids = made.map { String(Int($0.original)! + 1) } + ["9999999999", "not-an-id"]
                    let killed = CustomerImporter(app: purchases, clients: [client], store: store)
                    await #expect(throws: CancellationError.self) {
                        try await killed.importAll(
                            ids, stream: "import/test", positions: Scenarios.KilledPositions(store, failAfter: 1), concurrency: 3)
                    }
                    let callsBefore = standIn.calls.count
                    let summary = try await CustomerImporter(app: purchases, clients: [client], store: store).importAll(
                        ids, stream: "import/test", positions: store, concurrency: 3)
                    // Resumed at the second batch: the first three customers were not asked for again.
                    #expect(summary.customers == 7)
                    #expect(summary.refused == 2)
                    #expect(summary.refusals.contains { $0.contains("TRANSACTION_ID_NOT_FOUND") })
                    #expect(summary.refusals.contains { $0.contains("not a transaction id") })
                    // Per customer: two pages of history and the statuses; the unknown id one call.
                    #expect(standIn.calls.count - callsBefore == 7 * 3 + 1)
                    #expect(summary.calls == 7 * 3)
                    // Finished: a third run does nothing.
                    let again = try await CustomerImporter(app: purchases, clients: [client], store: store).importAll(
                        ids, stream: "import/test", positions: store)
                    #expect(again.customers == 0)
                }
                let originals = Set(made.map(\.original))
                let expected = try await Scenarios.ledger(reference, originals: originals, purchases: purchases)
                #expect(expected.count == 10)
                #expect(try await Scenarios.ledger(store, originals: originals, purchases: purchases) == expected)
            }
        }
    }

    /// Production first; an id production does not know is asked of the sandbox.
    @Test func anIdProductionDoesNotKnowIsAskedOfTheSandbox() async throws {
        let pki = try PKI.ecdsa()
        let purchases = try Scenarios.purchases(pki)
        let sandboxCustomer = try Self.customer(pki, 1, environment: "Sandbox")
        try await ReconciliationTests.withSQLite { store in
            try await Scenarios.withAPI { production, transport, keyFile in
                try await Scenarios.withAPI { sandbox, sandboxTransport, sandboxKeyFile in
                    sandbox.addCustomer(sandboxCustomer.customer)
                    let clients = [
                        try Scenarios.client(production, keyFile: keyFile, transport: transport),
                        try Scenarios.client(sandbox, keyFile: sandboxKeyFile, transport: sandboxTransport),
                    ]
                    let summary = try await CustomerImporter(app: purchases, clients: clients, store: store).importCustomer(
                        sandboxCustomer.original)
                    #expect(summary.customers == 1)
                    #expect(summary.purchases == 3)
                    #expect(production.calls.map(\.status) == [404])
                    #expect(sandbox.calls.map(\.status) == [200, 200])
                }
            }
            let record = try #require(try await store.customer(app: Scenarios.app, id: sandboxCustomer.original))
            #expect(record.transactions.count == 3)
        }
    }
}
