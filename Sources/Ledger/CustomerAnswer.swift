import Foundation

/// A customer as the server answers it (docs/purchases.md, "Reading a customer"), whatever store
/// sold: keys, and per environment every purchase, every period (the App Store's field names, which
/// the answers use for every store; `start` and `end` as RFC 3339 instants), the entitlements and
/// credits at `at`, and transfers.
public struct CustomerAnswer: Sendable {
    /// The answer's JSON.
    public let json: [UInt8]
    /// The answer as a value, for an answer that holds it (a webhook's body, a refusal's).
    public let body: Body

    /// The answer's members; `purchases`, `periods`, `transfers` and `refusedClaims` only in a full answer.
    public struct Body: Codable, Sendable, Equatable {
        public var customer: Int64
        public var at: String?
        public var keys: [Key]
        public var entitlements: [Entitlement]
        public var credits: [Credit]
        public var purchases: [Purchase]?
        public var periods: [Period]?
        public var transfers: [Transfer]?
        public var refusedClaims: [RefusedClaimRow]?
        /// Beside a purchase the app sent with evidence of the buyer's store account (the App Store's
        /// AppTransaction): whether it was used, and why not.
        public var appTransaction: AccountEvidenceUse?
        /// The store's consumption requests about the customer's transactions (refunds they asked
        /// for) and what was answered; in a full answer on the editor node, when there are some.
        public var consumptionAnswers: [ConsumptionAnswerRow]? = nil
    }

    /// One consumption request and its answer (``ConsumptionAnswer``), as a customer's page shows it.
    public struct ConsumptionAnswerRow: Codable, Sendable, Equatable {
        public var transactionId: String?
        public var notificationId: String
        /// `pending`, `sent`, `skipped`, `failed` or `expired`.
        public var state: String
        public var attempts: Int
        /// The JSON sent, or to be sent.
        public var body: String?
        /// The store's answer status.
        public var status: Int?
        public var error: String?
        /// When the state was written.
        public var at: String

        /// The row of `answer`.
        public init(_ answer: ConsumptionAnswer) {
            transactionId = answer.transactionId
            notificationId = answer.notificationId
            state = answer.state.rawValue
            attempts = answer.attempts
            body = answer.body
            status = answer.status
            error = answer.error
            at = CustomerAnswer.rfc3339(answer.updatedAt)
        }
    }

    /// Claims refused on one of the customer's purchases (`keep`): by whom (nil: the claimants past
    /// the bound, together), how often, first and last.
    public struct RefusedClaimRow: Codable, Sendable, Equatable {
        public var originalTransactionId: String
        public var claimant: Key?
        public var count: Int
        public var firstAt: String
        public var lastAt: String
    }

    /// One of the customer's keys.
    public struct Key: Codable, Sendable, Equatable {
        public var kind: String
        public var value: String
    }

    /// An entitlement active at `at`.
    public struct Entitlement: Codable, Sendable, Equatable {
        public var entitlement: String
        public var environment: String
        public var productId: String
        public var transactionId: String
        public var expiresDate: String?
        public var inGracePeriod: Bool
    }

    /// A consumable's credits at `at`.
    public struct Credit: Codable, Sendable, Equatable {
        public var productId: String
        public var environment: String
        public var quantity: Int
    }

    /// One purchase, Apple's field names.
    public struct Purchase: Codable, Sendable, Equatable {
        /// The store it was bought in (`appStore`, `googlePlay`).
        public var store: String
        public var environment: String
        public var transactionId: String
        public var originalTransactionId: String?
        public var productId: String
        public var type: String?
        public var purchaseDate: String
        public var quantity: Int
        public var inAppOwnershipType: String?
        public var revocationDate: String?
        public var revocationReason: Int?
        public var signedDate: String?
    }

    /// One subscription period, Apple's field names.
    public struct Period: Codable, Sendable, Equatable {
        /// The store it was bought in.
        public var store: String
        public var environment: String
        public var transactionId: String
        public var originalTransactionId: String?
        public var productId: String
        public var subscriptionGroupIdentifier: String?
        public var type: String?
        public var start: String
        public var end: String?
        public var expiresDate: String?
        public var offerType: Int?
        public var offerIdentifier: String?
        public var offerDiscountType: String?
        public var inAppOwnershipType: String?
        public var revocationDate: String?
        public var revocationReason: Int?
        public var isUpgraded: Bool
        public var gracePeriodExpiresDate: String?
        public var isInBillingRetryPeriod: Bool
        public var active: Bool
    }

    /// A purchase that moved to or from the customer.
    public struct Transfer: Codable, Sendable, Equatable {
        public var originalTransactionId: String
        public var fromCustomer: Int64
        public var toCustomer: Int64
        public var outcome: String
        public var at: String
    }

    /// The answer for `record` at `at`: with every purchase, period, transfer and refused claim when `full`.
    public init(_ record: CustomerRecord, at: Date, catalog: LedgerCatalog, full: Bool) {
        self.init(record, at: at, catalog: catalog, full: full, appTransaction: nil)
    }

    /// The same, with what became of the evidence of the buyer's store account sent beside a purchase.
    public init(_ record: CustomerRecord, at: Date, catalog: LedgerCatalog, full: Bool, appTransaction: AccountEvidenceUse?) {
        let ledgers = record.ledgers(catalog: catalog)
        let date = Self.rfc3339
        var body = Body(
            customer: record.id, at: date(at),
            // By the answers' kind names: the order does not depend on how a store sorts its rows.
            keys: record.keys.map { Key(kind: $0.kindName, value: $0.value) }.sorted { ($0.kind, $0.value) < ($1.kind, $1.value) },
            entitlements: ledgers.flatMap { ledger in
                ledger.entitlements(at: at).map { grant in
                    Entitlement(
                        entitlement: grant.entitlement, environment: ledger.environment.rawValue, productId: grant.productId,
                        transactionId: grant.transactionId, expiresDate: grant.expiresDate.map(date), inGracePeriod: grant.inGracePeriod)
                }
            },
            credits: ledgers.flatMap { ledger in
                ledger.credits(at: at).sorted { $0.key < $1.key }.map {
                    Credit(productId: $0.key, environment: ledger.environment.rawValue, quantity: $0.value)
                }
            })
        if full {
            body.purchases = ledgers.flatMap { ledger in
                ledger.purchases.map { purchase in
                    Purchase(
                        store: purchase.marketplace.rawValue, environment: ledger.environment.rawValue,
                        transactionId: purchase.transactionId,
                        originalTransactionId: purchase.purchaseKey, productId: purchase.productId, type: purchase.kind?.rawValue,
                        purchaseDate: date(purchase.purchaseDate), quantity: purchase.quantity,
                        inAppOwnershipType: purchase.ownership?.rawValue, revocationDate: purchase.revocationDate.map(date),
                        revocationReason: purchase.revocationReason.map { Int($0.rawValue) }, signedDate: purchase.signedDate.map(date))
                }
            }
            body.periods = ledgers.flatMap { ledger in
                ledger.periods.map { period in
                    Period(
                        store: period.marketplace.rawValue, environment: ledger.environment.rawValue, transactionId: period.transactionId,
                        originalTransactionId: period.purchaseKey, productId: period.productId,
                        subscriptionGroupIdentifier: period.subscriptionGroup, type: period.kind?.rawValue,
                        start: date(period.start), end: period.end.map(date), expiresDate: period.expiresDate.map(date),
                        offerType: period.offerType.map { Int($0.rawValue) }, offerIdentifier: period.offerIdentifier,
                        offerDiscountType: period.offerDiscountType?.rawValue, inAppOwnershipType: period.ownership?.rawValue,
                        revocationDate: period.revocationDate.map(date), revocationReason: period.revocationReason.map { Int($0.rawValue) },
                        isUpgraded: period.isUpgraded, gracePeriodExpiresDate: period.gracePeriodExpiresDate.map(date),
                        isInBillingRetryPeriod: period.isInBillingRetryPeriod, active: period.isActive(at: at))
                }
            }
            body.transfers = record.transfers.map {
                Transfer(
                    originalTransactionId: $0.purchase.key, fromCustomer: $0.fromCustomer, toCustomer: $0.toCustomer,
                    outcome: $0.outcome.rawValue, at: date($0.at))
            }
            body.refusedClaims = record.refusedClaims.map {
                RefusedClaimRow(
                    originalTransactionId: $0.purchase.key,
                    claimant: $0.claimant.map { Key(kind: $0.kindName, value: $0.value) },
                    count: $0.count, firstAt: date($0.firstAt), lastAt: date($0.lastAt))
            }
        }
        body.appTransaction = appTransaction
        self.body = body
        json = Self.encode(body)
    }

    /// An RFC 3339 instant, with or without fractional seconds (`?at=`, `--at`).
    public static func instant(_ text: String) -> Date? {
        let plain = ISO8601DateFormatter()
        plain.formatOptions = [.withInternetDateTime]
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return plain.date(from: text) ?? fractional.date(from: text)
    }

    /// `2025-01-31T12:00:00.000Z`.
    public static func rfc3339(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    /// JSON as every answer writes it: keys sorted (Foundation on Linux writes an object's keys in no
    /// fixed order), slashes as they are.
    public static func encode(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? [UInt8](encoder.encode(value))) ?? Array(#"{"error":{"message":"unencodable answer"}}"#.utf8)
    }
}

/// Whether evidence of the buyer's store account, sent beside a purchase, was used (the App Store's
/// AppTransaction is used only when the transaction signs the same account id), and why not.
public struct AccountEvidenceUse: Codable, Sendable, Equatable {
    /// Whether it was used.
    public var used: Bool
    /// Why not.
    public var reason: String?

    /// A verdict on the evidence.
    public init(used: Bool, reason: String?) {
        self.used = used
        self.reason = reason
    }
}
