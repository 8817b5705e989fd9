import Foundation

/// A customer the store holds, with the keys it answers to.
public struct StoredCustomer: Sendable, Hashable {
    /// The store's id of the customer.
    public var id: Int64
    /// Its keys.
    public var keys: [CustomerKey]

    /// A customer with `id` and `keys`.
    public init(id: Int64, keys: [CustomerKey]) {
        self.id = id
        self.keys = keys
    }

    /// Whether an app account names the customer: one that has none is known only by keys its
    /// stores assign (a store account id, a purchase), and the first app account that
    /// presents one of its purchases claims it.
    public var isNamedByAnAppAccount: Bool { keys.contains { $0.kind == .appAccount } }
}

/// A customer as a write names it: one the store has, or the one a write of the same batch makes
/// with a key (``PurchaseWrite/createCustomer(_:)``).
public enum CustomerReference: Sendable, Hashable {
    /// A customer the store has.
    case id(Int64)
    /// The customer made in this batch with this key.
    case new(CustomerKey)
}

/// What the rules need to know of one purchase, read inside the store's transaction once the
/// purchase is locked: its binding, and the customers that `keys` name.
public struct PurchaseQuery: Sendable, Hashable {
    /// The purchase.
    public var purchase: PurchaseReference
    /// The keys whose customers the rules weigh (the app account presenting it, the store's key the
    /// evidence signs).
    public var keys: [CustomerKey]
}

/// The answer to a ``PurchaseQuery``.
public struct PurchaseState: Sendable, Hashable {
    /// The customer the purchase is bound to; nil when none is.
    public var bound: StoredCustomer?
    /// The customer each of the query's keys names, where one does.
    public var customers: [CustomerKey: StoredCustomer]

    /// A state.
    public init(bound: StoredCustomer?, customers: [CustomerKey: StoredCustomer]) {
        self.bound = bound
        self.customers = customers
    }
}

/// One change to the store: the primitives every store implements, each inside the transaction
/// that records a submission. The rules that choose them are ``PurchaseRecorder``'s.
public enum PurchaseWrite: Sendable, Hashable {
    /// Make a customer whose first key is `key`.
    case createCustomer(CustomerKey)
    /// Give a customer a key; nothing when another customer has it already.
    case addKey(CustomerKey, to: CustomerReference)
    /// Bind a purchase to a customer (or move it there).
    case bind(PurchaseReference, to: CustomerReference)
    /// Move every purchase and every store account key of a customer known only by its stores'
    /// keys to the app account that claimed it.
    case absorb(Int64, into: CustomerReference)
    /// Keep the record of a purchase moved from one customer to another.
    case recordTransfer(PurchaseReference, from: Int64, to: CustomerReference)
    /// Count a refused claim on a purchase: one row per claimant key, at most `distinctClaimants` of
    /// them per purchase, further claimants counted together in one more row.
    case recordRefusedClaim(PurchaseReference, claimant: CustomerKey, distinctClaimants: Int)
    /// Keep a signed transaction once (by its JSON).
    case keepTransaction(Kept<LedgerTransaction>, source: EvidenceSource)
    /// Keep a subscription's signed state once (by its JSON).
    case keepState(Kept<SubscriptionState>, source: EvidenceSource)
    /// Put an event in the webhook outbox, once by its id.
    case enqueue(WebhookEvent)
}

/// The record loop, written once for every store (docs/purchases.md, "Customers and transfers"): it
/// decides, purchase by purchase, which customer holds each and which keys each customer gains,
/// keeps the signed payloads and queues the webhook events. The store only answers its questions
/// and applies its writes, inside one transaction:
///
/// ```swift
/// var recorder = PurchaseRecorder(submission)
/// if let raw = recorder.notificationToStore, !(try insert(raw)) { return PurchaseOutcome(duplicate: true) }
/// while let query = recorder.nextPurchase() {
///     lock(query.purchase)  // where replicas share the store
///     recorder.created(try apply(recorder.decide(try read(query))))
/// }
/// _ = try apply(recorder.finish())
/// return recorder.outcome
/// ```
///
/// The rules:
///
/// - Evidence names a customer only through keys signed in the purchase itself: the app account the
///   store signed in the transaction, else the one the app sends beside it (an app's request only),
///   else the store's account id it signs, else the purchase. (An AppTransaction binds nothing: the
///   App Store's adapter uses one only when the transaction signs the same account id, which then
///   says nothing new.)
/// - A purchase no customer holds is bound to the app account presenting it, else to the customer
///   of its store's key (made if none).
/// - A customer no app account names (made by a notification, or by a request without an account)
///   is claimed by the first app account that presents one of its purchases, whatever the OS that
///   signed it: its purchases and its store account keys move to that account's customer,
///   uncounted, since nobody chose it. So both arrival orders of notification and request end with
///   one customer that answers to every key.
/// - A purchase held by another app account: a notification never moves it; an app's request moves
///   it under `transfer` (recorded), and under `keep` is refused: recorded and counted, and no
///   customer is made for the claimant.
/// - The customer that ends up holding a purchase gains the store account id its transaction signs,
///   unless another customer has it.
public struct PurchaseRecorder: Sendable {
    /// How many distinct claimants of one purchase are kept one by one; more are counted together.
    public static let refusedClaimantsKept = 15

    let submission: PurchaseSubmission
    /// What recording did, complete once ``finish()`` has been called.
    public private(set) var outcome = PurchaseOutcome()
    private var next = 0
    private var deciding: (transaction: LedgerTransaction, owner: CustomerReference?, moved: Int64?)?
    private var createdIds: [CustomerKey: Int64] = [:]

    /// A recorder for `submission`.
    public init(_ submission: PurchaseSubmission) { self.submission = submission }

    /// The raw notification to store first; when the store already has it, the submission is a
    /// duplicate and nothing else is done. Nil for an app's request and for a replay.
    public var notificationToStore: RawNotification? { submission.isReplay ? nil : submission.notification }

    /// The next purchase to decide, with what to read of it; nil when every transaction is decided.
    public mutating func nextPurchase() -> PurchaseQuery? {
        while next < submission.transactions.count {
            let transaction = submission.transactions[next].value
            next += 1
            guard let purchase = Self.purchase(of: transaction) else { continue }
            deciding = (transaction, nil, nil)
            return PurchaseQuery(purchase: purchase, keys: [account(of: transaction), storeKey(of: transaction)].compactMap { $0 })
        }
        return nil
    }

    /// The writes that bind the purchase ``nextPurchase()`` named, given what the store holds.
    public mutating func decide(_ state: PurchaseState) -> [PurchaseWrite] {
        guard let (transaction, _, _) = deciding, let original = Self.purchase(of: transaction) else { return [] }
        var writes: [PurchaseWrite] = []
        var owner: CustomerReference?
        var moved: Int64?
        let storeCustomer = state.customers[storeKey(of: transaction)]

        if let account = account(of: transaction) {
            let existing = state.customers[account]
            let claimant: CustomerReference = existing.map { .id($0.id) } ?? .new(account)
            func make() { if existing == nil { writes.append(.createCustomer(account)) } }
            // The customers known only by their stores' keys that this app account takes with the purchase.
            let placeholders = [state.bound, storeCustomer].compactMap { $0 }.filter { !$0.isNamedByAnAppAccount && $0.id != existing?.id }
            if let bound = state.bound, bound.isNamedByAnAppAccount, bound.id != existing?.id {
                if submission.source != .app {
                    // A store reports (a notification, its API's answer); it does not claim.
                    owner = .id(bound.id)
                } else if submission.transferPolicy == .transfer {
                    make()
                    writes.append(.bind(original, to: claimant))
                    writes.append(.recordTransfer(original, from: bound.id, to: claimant))
                    for placeholder in Set(placeholders.map(\.id)).sorted() { writes.append(.absorb(placeholder, into: claimant)) }
                    owner = claimant
                    moved = bound.id
                } else {
                    writes.append(
                        .recordRefusedClaim(original, claimant: account, distinctClaimants: Self.refusedClaimantsKept))
                    outcome.refusal = PurchaseRefusal(
                        .boundToAnotherCustomer,
                        "transaction \(original.key) is bound to another customer, and the app keeps purchases with their first")
                    outcome.refusedClaims += 1
                    deciding = (transaction, .id(bound.id), nil)
                    return writes
                }
            } else {
                make()
                for placeholder in Set(placeholders.map(\.id)).sorted() { writes.append(.absorb(placeholder, into: claimant)) }
                // A purchase its placeholder held moved with it; an unbound one is bound now.
                if state.bound == nil { writes.append(.bind(original, to: claimant)) }
                owner = claimant
            }
        } else if let bound = state.bound {
            owner = .id(bound.id)
        } else {
            let key = storeKey(of: transaction)
            let target: CustomerReference = storeCustomer.map { .id($0.id) } ?? .new(key)
            if storeCustomer == nil { writes.append(.createCustomer(key)) }
            writes.append(.bind(original, to: target))
            owner = target
        }
        if let owner, let id = Self.nonEmpty(transaction.storeAccount) {
            writes.append(.addKey(CustomerKey(kind: .storeAccount, value: id, marketplace: transaction.marketplace), to: owner))
        }
        deciding = (transaction, owner, moved)
        return writes
    }

    /// The ids of the customers the last writes made, by the key each was made with.
    public mutating func created(_ customers: [CustomerKey: Int64]) {
        createdIds.merge(customers) { _, new in new }
        guard let (transaction, owner, moved) = deciding, let original = Self.purchase(of: transaction) else { return }
        deciding = nil
        guard let owner, let id = resolve(owner) else { return }
        outcome.customerId = id
        if let from = moved {
            outcome.transfers.append(
                TransferEvent(
                    purchase: original, fromCustomer: from, toCustomer: id, outcome: .transferred,
                    at: Date(timeIntervalSince1970: TimeInterval(Int64(submission.receivedAt.timeIntervalSince1970)))))
        }
    }

    /// The writes that follow the bindings: every signed payload kept, and the webhook events the
    /// submission causes (in the same transaction, so that evidence acknowledged is never without them)
    /// when the app has a webhook.
    public mutating func finish() -> [PurchaseWrite] {
        var writes: [PurchaseWrite] = submission.transactions.filter { $0.value.transactionId != nil }.map {
            .keepTransaction($0, source: submission.source)
        }
        writes += submission.states.filter { $0.value.purchaseKey != nil }.map { .keepState($0, source: submission.source) }
        if submission.sendsWebhooks { writes += WebhookEvent.derive(from: submission, outcome: outcome).map { .enqueue($0) } }
        return writes
    }

    /// The customer `reference` names, once the store has made it.
    private func resolve(_ reference: CustomerReference) -> Int64? {
        switch reference {
        case .id(let id): id
        case .new(let key): createdIds[key]
        }
    }

    /// The app account presenting the purchase: the one the store signed in the transaction, else
    /// (an app's request only) the one the app sent beside it.
    private func account(of transaction: LedgerTransaction) -> CustomerKey? {
        let sent = submission.source == .app ? submission.appAccount : nil
        return (Self.nonEmpty(transaction.appAccount) ?? Self.nonEmpty(sent)).map { .appAccount($0) }
    }

    /// The key the store signs for the purchase's account: its store account id, else the
    /// evidence's first purchase (a receipt's entries go together, as one device's).
    private func storeKey(of transaction: LedgerTransaction) -> CustomerKey {
        let marketplace = transaction.marketplace
        if let id = Self.nonEmpty(transaction.storeAccount) { return CustomerKey(kind: .storeAccount, value: id, marketplace: marketplace) }
        let first = submission.transactions.lazy.map(\.value).first { $0.purchase != nil }
        if let id = first.flatMap({ Self.nonEmpty($0.storeAccount) }) {
            return CustomerKey(kind: .storeAccount, value: id, marketplace: marketplace)
        }
        return CustomerKey(kind: .purchase, value: first?.purchase ?? transaction.purchase ?? "", marketplace: marketplace)
    }

    /// A transaction's purchase; nil when it names none.
    static func purchase(of transaction: LedgerTransaction) -> PurchaseReference? {
        transaction.purchase.map { PurchaseReference(transaction.marketplace, $0) }
    }

    private static func nonEmpty(_ text: String?) -> String? {
        guard let text, !text.isEmpty else { return nil }
        return text
    }
}
