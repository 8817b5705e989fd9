import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What one round of sending queued purchases did.
public struct PurchaseDelivery: Sendable, Hashable, QueueDelivery {
    /// A purchase the server refused for good, and dropped from the queue: a ``RefusedPurchase``.
    public typealias Refusal = RefusedPurchase

    /// Purchases the server accepted (200) in this round.
    public var sent = 0
    /// Purchases the server refused with a 4xx other than 429, removed from the queue and kept in
    /// ``CatalogClient/refusedPurchases()``.
    public var refused: [RefusedPurchase] = []
    /// Purchases still queued.
    public var pending = 0
    /// When the queue will be tried again, if the server asked to wait or a delivery failed.
    public var nextAttempt: Date?
    /// Why the round stopped early, or the last refusal, if any.
    public var error: CatalogClientError?
    /// What the customer owns after this round, when the server answered a customer in it: a
    /// purchase it accepted, or the presenting account's own entitlements beside a refusal
    /// (``RefusedPurchase/entitlements``), merged as ``CatalogClient/entitlements()`` merges them.
    public var entitlements: CustomerEntitlements?
}

/// The persistent queue of purchases to send, the loop that sends it, what the server last answered
/// for each customer, and the refusals the app has not removed yet.
///
/// Under `<dataDirectory>/purchases/`: `queue/` holds one file per purchase, named so that names
/// sort in queue order, with the exact request body (a resend is the same evidence, which the server
/// records once); `customers.json` each customer's last answer with the body that got it
/// (``KeptCustomers``), which ``refresh()`` presents again; `refused.json` the refusals.
actor PurchaseOutbox: QueueSender {
    private let configuration: CatalogClient.Configuration
    private let transport: HTTPTransport
    private let directory: URL
    private var queueDirectory: URL { directory.appendingPathComponent("queue", isDirectory: true) }
    private var refusedFile: URL { directory.appendingPathComponent("refused.json") }
    /// The time before which nothing is sent, kept across launches like reports'.
    private var waitFile: URL { directory.appendingPathComponent("send-after") }
    private var failures = 0
    var round: Task<PurchaseDelivery, Never>?
    var background: Task<Void, Never>?
    /// The kept customers, read from disk once.
    private var known: KeptCustomers?

    /// The bodies the server accepted, one per kept customer: what a request for content presents.
    static func keptEvidence(_ configuration: CatalogClient.Configuration) -> [Data] {
        KeptCustomers.evidenceBodies(in: directory(configuration))
    }

    private static func directory(_ configuration: CatalogClient.Configuration) -> URL {
        configuration.dataDirectory.appendingPathComponent("purchases", isDirectory: true)
    }

    /// The server reads a body of at most 512 KiB; a JWS is at most 64 KiB.
    static let maximumJWSBytes = 64 * 1024
    /// Refusals kept for the app at most; the oldest go first.
    static let maximumRefusals = 50

    init(configuration: CatalogClient.Configuration, transport: HTTPTransport) {
        self.configuration = configuration
        self.transport = transport
        directory = Self.directory(configuration)
    }

    /// The request body of `POST /v1/apps/{app}/purchases`.
    struct WirePurchase: Codable, Sendable {
        var signedTransaction: String
        var signedAppTransaction: String?
        var appAccountToken: String?

        /// The app account the server binds it to: the token the transaction signs, else the one beside.
        var account: String? { TransactionClaims(jws: signedTransaction)?.appAccountToken ?? appAccountToken?.lowercased() }
    }

    /// `{"error":…, "customer":…}`: a refusal, with the presenting account's own customer beside a 409.
    private struct WireRefusal: Decodable {
        var customer: WireCustomer?
    }

    // MARK: Queueing

    func enqueue(signedTransaction: String, appTransaction: String?, appAccountToken: UUID?) throws(CatalogClientError) -> String {
        // Refused here rather than queued: the server would refuse it for good anyway.
        guard
            let wire = WirePurchase(signedTransaction: signedTransaction, appTransaction: appTransaction, appAccountToken: appAccountToken)
        else {
            throw CatalogClientError(code: .rejected, message: "not a signed transaction: a compact JWS of at most 64 KiB is expected")
        }
        let body: Data
        do { body = try JSONEncoder().encode(wire) } catch {
            throw CatalogClientError(code: .storage, message: "cannot encode a purchase: \(error)")
        }
        try DurableFile.makeDirectory(queueDirectory)
        let id = UUID().uuidString.lowercased()
        try DurableFile.write(body, to: queueDirectory.appendingPathComponent(DurableFile.queuedName(id: id)))
        trimQueue()
        if configuration.sendsPurchasesAutomatically { startSending() }
        return id
    }

    /// Queued purchase files, oldest first.
    private func queuedFiles() -> [URL] { DurableFile.queued(in: queueDirectory) }

    private func trimQueue() {
        for file in DurableFile.trimQueue(in: queueDirectory, keeping: configuration.maximumQueuedPurchases) {
            configuration.log("purchase \(file.lastPathComponent) dropped: the queue holds at most \(configuration.maximumQueuedPurchases)")
        }
    }

    // MARK: Sending

    func resume() {
        if configuration.sendsPurchasesAutomatically && !queuedFiles().isEmpty { startSending() }
    }

    var queueIsEmpty: Bool { queuedFiles().isEmpty }

    /// What one POST came to.
    private enum Outcome {
        /// The customer the purchase is recorded against, now.
        case accepted(WireCustomer)
        /// The server will refuse this evidence however often it is sent; beside a 409, the
        /// presenting account's own customer, when it is one.
        case refused(CatalogClientError, customer: WireCustomer?)
        /// Worth sending again later.
        case wait(CatalogClientError)
    }

    private func post(_ wire: WirePurchase) async -> Outcome {
        do {
            return await post(try JSONEncoder().encode(wire))
        } catch {
            return .refused(CatalogClientError(code: .storage, message: "cannot encode a purchase: \(error)"), customer: nil)
        }
    }

    private func post(_ body: Data) async -> Outcome {
        var request = URLRequest(url: configuration.purchaseURL)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = body
        switch await transport.send(request) {
        case .success(let answer) where answer.status == 200:
            guard let wire = try? JSONDecoder().decode(WireCustomer.self, from: answer.body), wire.isReadable else {
                return .wait(CatalogClientError(code: .malformedResponse, message: "the purchase answer is not a customer", status: 200))
            }
            return .accepted(wire)
        case .success(let answer) where [404, 405].contains(answer.status) && !CatalogClient.isServiceError(answer):
            return .wait(
                CatalogClientError(
                    code: .noReportEndpoint,
                    message:
                        "\(configuration.purchaseURL.absoluteString) answered \(answer.status) without catalog serve's error: set Configuration.reportServer to a catalog serve (purchases stay queued)",
                    status: answer.status))
        case .success(let answer):
            let error = CatalogClient.unexpected(answer)
            guard !error.isRetryable else { return .wait(error) }
            let customer = (try? JSONDecoder().decode(WireRefusal.self, from: answer.body))?.customer
            return .refused(error, customer: customer.flatMap { $0.isReadable ? $0 : nil })
        case .failure(let error):
            return error.isRetryable ? .wait(error) : .refused(error, customer: nil)
        }
    }

    func sendRound() async -> PurchaseDelivery {
        var delivery = PurchaseDelivery()
        if let notBefore = sendAfter(), Date() < notBefore {
            delivery.pending = queuedFiles().count
            delivery.nextAttempt = notBefore
            return delivery
        }
        for file in queuedFiles() {
            let id = Self.purchaseId(of: file)
            guard let body = try? Data(contentsOf: file) else {
                try? FileManager.default.removeItem(at: file)
                configuration.log("purchase \(id) dropped: unreadable")
                continue
            }
            let wire = try? JSONDecoder().decode(WirePurchase.self, from: body)
            switch await post(body) {
            case .accepted(let answer):
                delivery.sent += 1
                failures = 0
                setSendAfter(nil)
                // Only evidence the server took is presented again, by a refresh or for content.
                keep(answer, evidence: wire, account: wire?.account)
                delivery.entitlements = current(source: .network)
                do { try FileManager.default.removeItem(at: file) } catch {
                    // A purchase that cannot leave the queue would be sent round after round: back off.
                    stop(&delivery, CatalogClientError(code: .storage, message: "cannot remove \(file.lastPathComponent): \(error)"))
                }
            case .refused(let error, let customer):
                configuration.log("purchase \(id) refused (\(error.serverCode ?? "HTTP \(error.status ?? 0)")): \(error.message)")
                let refusal = refused(id, error: error, wire: wire, customer: customer)
                if customer != nil { delivery.entitlements = current(source: .network) }
                // Kept before it leaves the queue: killed in between, it is refused again, never lost.
                remember(refusal, customer: customer)
                try? FileManager.default.removeItem(at: file)
                delivery.refused.append(refusal)
                delivery.error = error
                continue
            case .wait(let error):
                // The next purchase would meet the same outage or limit: stop the round.
                stop(&delivery, error)
            }
            if delivery.nextAttempt != nil { break }
        }
        delivery.pending = queuedFiles().count
        return delivery
    }

    /// A refusal as the app sees it; the customer beside it kept, as an accepted one is.
    private func refused(_ id: String, error: CatalogClientError, wire: WirePurchase?, customer: WireCustomer?) -> RefusedPurchase {
        let now = Date()
        if let customer { keep(customer, evidence: nil, account: wire?.account, readAt: now) }
        return RefusedPurchase(
            purchaseId: id, error: error, signedTransaction: wire?.signedTransaction,
            entitlements: customer?.entitlements(readAt: now, source: .network), refusedAt: now)
    }

    private func stop(_ delivery: inout PurchaseDelivery, _ error: CatalogClientError) {
        let wait = min(error.retryAfter ?? configuration.purchaseBackoff.delay(retry: failures), 24 * 3600)
        failures += 1
        let next = Date(timeIntervalSince1970: ((Date().timeIntervalSince1970 + wait) * 1000).rounded(.up) / 1000)
        delivery.nextAttempt = next
        delivery.error = error
        setSendAfter(next)
    }

    /// The id in a queue file's name, `<milliseconds>-<id>.json`.
    private static func purchaseId(of file: URL) -> String {
        let name = file.deletingPathExtension().lastPathComponent
        return name.firstIndex(of: "-").map { String(name[name.index(after: $0)...]) } ?? name
    }

    private func sendAfter() -> Date? {
        guard let text = try? String(contentsOf: waitFile, encoding: .utf8), let milliseconds = Int64(text) else { return nil }
        return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    private func setSendAfter(_ moment: Date?) {
        guard let moment else {
            try? FileManager.default.removeItem(at: waitFile)
            return
        }
        do {
            try DurableFile.makeDirectory(directory)
            try DurableFile.write(Data(String(Int64((moment.timeIntervalSince1970 * 1000).rounded())).utf8), to: waitFile)
        } catch {
            configuration.log("purchase back-off not saved: \(error)")
        }
    }

    // MARK: Restoring

    /// Presents each of `transactions` with the AppTransaction and the app's account, keeping each
    /// customer answered; stops at the first failure worth trying again, which the next restore
    /// (which presents them all again) may not meet.
    func restore(_ transactions: [String], appTransaction: String?, appAccountToken: UUID?) async -> PurchaseRestore {
        var restore = PurchaseRestore(entitlements: .unknown, found: transactions.count)
        var answered = false
        presenting: for signed in transactions {
            guard let wire = WirePurchase(signedTransaction: signed, appTransaction: appTransaction, appAccountToken: appAccountToken)
            else {
                let error = CatalogClientError(
                    code: .rejected, message: "not a signed transaction: a compact JWS of at most 64 KiB is expected")
                restore.refused.append(refused(UUID().uuidString.lowercased(), error: error, wire: nil, customer: nil))
                continue
            }
            switch await post(wire) {
            case .accepted(let answer):
                keep(answer, evidence: wire, account: wire.account)
                restore.accepted += 1
                answered = true
            case .refused(let error, let customer):
                configuration.log("restored purchase refused (\(error.serverCode ?? "HTTP \(error.status ?? 0)")): \(error.message)")
                restore.refused.append(refused(UUID().uuidString.lowercased(), error: error, wire: wire, customer: customer))
                answered = answered || customer != nil
            case .wait(let error):
                restore.error = error
                break presenting
            }
        }
        restore.entitlements = current(source: answered ? .network : .cache, error: restore.error)
        return restore
    }

    // MARK: Entitlements

    private func keptCustomers() -> KeptCustomers {
        if let known { return known }
        let loaded = KeptCustomers.load(from: directory)
        known = loaded
        return loaded
    }

    /// Keeps the server's answer for its customer, with the evidence that got it, for offline use.
    private func keep(_ answer: WireCustomer, evidence: WirePurchase?, account: String?, readAt: Date = Date()) {
        var kept = keptCustomers()
        kept.record(.init(readAt: KeptCustomers.milliseconds(readAt), account: account, evidence: evidence, answer: answer))
        known = kept
        do { try kept.save(in: directory) } catch { configuration.log("entitlements not kept for offline use: \(error)") }
    }

    /// The kept customers merged, marked as coming from `source`.
    private func current(source: CustomerEntitlements.Source, error: CatalogClientError? = nil) -> CustomerEntitlements {
        keptCustomers().merged(source: source, error: error)
    }

    /// The kept answers, marked as kept; ``CustomerEntitlements/unknown`` without one.
    func cached() -> CustomerEntitlements { current(source: .cache) }

    /// Asks the server again: sends what is queued, then presents again the evidence of each kept
    /// customer that the queue did not just answer. The merged answer; the first failure in `error`.
    func refresh() async -> CustomerEntitlements {
        let started = KeptCustomers.milliseconds(Date())
        var answered = false
        var failure: CatalogClientError?
        if !queueIsEmpty {
            let delivery = await sendPending()
            answered = delivery.entitlements != nil
            failure = delivery.error
        }
        presenting: for entry in keptCustomers().entries where entry.readAt < started {
            guard let evidence = entry.evidence else { continue }
            switch await post(evidence) {
            case .accepted(let answer):
                keep(answer, evidence: evidence, account: entry.account)
                answered = true
            case .refused(let error, let customer):
                failure = failure ?? error
                if let customer {
                    keep(customer, evidence: nil, account: entry.account)
                    answered = true
                }
            case .wait(let error):
                failure = error
                break presenting
            }
        }
        return current(source: answered ? .network : .cache, error: failure)
    }

    // MARK: Refusals

    /// A refusal as kept in `refused.json`.
    private struct StoredRefusal: Codable {
        var purchaseId: String
        var refusedAt: Int64
        var code: String
        var message: String
        var status: Int?
        var serverCode: String?
        var transactionId: String?
        var productId: String?
        /// The presenting account's own customer, beside a 409.
        var customer: WireCustomer?
    }

    private func storedRefusals() -> [StoredRefusal] {
        guard let data = try? Data(contentsOf: refusedFile) else { return [] }
        return (try? JSONDecoder().decode([StoredRefusal].self, from: data)) ?? []
    }

    private func saveRefusals(_ refusals: [StoredRefusal]) {
        do {
            try DurableFile.makeDirectory(directory)
            try DurableFile.write(try JSONEncoder().encode(refusals), to: refusedFile)
        } catch {
            configuration.log("purchase refusal not kept: \(error)")
        }
    }

    /// Keeps `refusal`, and the customer beside it, for ``refusals()`` until the app removes it: a refusal met by the background
    /// loop has no caller to return to.
    private func remember(_ refusal: RefusedPurchase, customer: WireCustomer?) {
        let stored = StoredRefusal(
            purchaseId: refusal.purchaseId, refusedAt: KeptCustomers.milliseconds(refusal.refusedAt),
            code: refusal.error.code.description, message: refusal.error.message, status: refusal.error.status,
            serverCode: refusal.error.serverCode, transactionId: refusal.transactionId, productId: refusal.productId,
            customer: customer)
        saveRefusals(Array((storedRefusals() + [stored]).suffix(Self.maximumRefusals)))
    }

    /// The refusals kept, oldest first.
    func refusals() -> [RefusedPurchase] {
        storedRefusals().map { stored in
            var error = CatalogClientError(
                code: CatalogClientError.Code(name: stored.code) ?? .rejected, message: stored.message, status: stored.status)
            error.serverCode = stored.serverCode
            let refusedAt = KeptCustomers.date(stored.refusedAt)
            var refusal = RefusedPurchase(
                purchaseId: stored.purchaseId, error: error, signedTransaction: nil,
                entitlements: stored.customer?.entitlements(readAt: refusedAt, source: .cache), refusedAt: refusedAt)
            refusal.transactionId = stored.transactionId
            refusal.productId = stored.productId
            return refusal
        }
    }

    /// Forgets the refusals of `purchaseIds`, once the app has shown them.
    func removeRefusals(_ purchaseIds: Set<String>) {
        let kept = storedRefusals()
        let remaining = kept.filter { !purchaseIds.contains($0.purchaseId) }
        if remaining.count != kept.count { saveRefusals(remaining) }
    }
}

extension PurchaseOutbox.WirePurchase {
    /// The body for a transaction, or nil when `signedTransaction` is not a compact JWS of at most
    /// 64 KiB, which the server would refuse for good anyway.
    init?(signedTransaction: String, appTransaction: String?, appAccountToken: UUID?) {
        let jws = signedTransaction.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...PurchaseOutbox.maximumJWSBytes).contains(jws.utf8.count),
            jws.split(separator: ".", omittingEmptySubsequences: false).count == 3
        else { return nil }
        self.init(
            signedTransaction: jws,
            signedAppTransaction: appTransaction.flatMap { (1...PurchaseOutbox.maximumJWSBytes).contains($0.utf8.count) ? $0 : nil },
            appAccountToken: appAccountToken?.uuidString.lowercased())
    }
}
