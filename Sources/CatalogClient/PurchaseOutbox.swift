import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What one round of sending queued purchases did.
public struct PurchaseDelivery: Sendable, Hashable, QueueDelivery {
    /// A purchase the server refused for good, and dropped from the queue.
    public struct Refusal: Sendable, Hashable {
        /// The id ``CatalogClient/sendPurchase(signedTransaction:appTransaction:appAccountToken:)`` returned.
        public var purchaseId: String
        /// The server's answer: ``CatalogClientError/serverCode`` says why (`not-authenticated`,
        /// `bound-to-another-customer`, …).
        public var error: CatalogClientError
    }

    /// Purchases the server accepted (200) in this round.
    public var sent = 0
    /// Purchases the server refused with a 4xx other than 429, removed from the queue.
    public var refused: [Refusal] = []
    /// Purchases still queued.
    public var pending = 0
    /// When the queue will be tried again, if the server asked to wait or a delivery failed.
    public var nextAttempt: Date?
    /// Why the round stopped early, if it did.
    public var error: CatalogClientError?
    /// The customer's entitlements from the last purchase the server accepted in this round.
    public var entitlements: CustomerEntitlements?
}

/// The persistent queue of purchases to send, the loop that sends it, and the entitlements the
/// server last answered.
///
/// Under `<dataDirectory>/purchases/`: `queue/` holds one file per purchase, named so that names
/// sort in queue order, with the exact request body (a resend is the same evidence, which the server
/// records once); `entitlements.json` the last answer and when it was read; `evidence.json` the last
/// body the server accepted, which ``refresh()`` presents again.
actor PurchaseOutbox: QueueSender {
    private let configuration: CatalogClient.Configuration
    private let transport: HTTPTransport
    private let directory: URL
    private var queueDirectory: URL { directory.appendingPathComponent("queue", isDirectory: true) }
    private var entitlementsFile: URL { directory.appendingPathComponent("entitlements.json") }
    private var evidenceFile: URL { Self.evidenceFile(configuration) }
    /// The time before which nothing is sent, kept across launches like reports'.
    private var waitFile: URL { directory.appendingPathComponent("send-after") }
    private var failures = 0
    var round: Task<PurchaseDelivery, Never>?
    var background: Task<Void, Never>?
    /// The last answer, read from disk once.
    private var known: CustomerEntitlements?

    /// The last purchase body the server accepted: what a refresh, and a request for content, present.
    static func evidenceFile(_ configuration: CatalogClient.Configuration) -> URL {
        configuration.dataDirectory.appendingPathComponent("purchases", isDirectory: true).appendingPathComponent("evidence.json")
    }

    /// The server reads a body of at most 512 KiB; a JWS is at most 64 KiB.
    static let maximumJWSBytes = 64 * 1024

    init(configuration: CatalogClient.Configuration, transport: HTTPTransport) {
        self.configuration = configuration
        self.transport = transport
        directory = configuration.dataDirectory.appendingPathComponent("purchases", isDirectory: true)
    }

    /// The request body of `POST /v1/apps/{app}/purchases`.
    struct WirePurchase: Codable {
        var signedTransaction: String
        var signedAppTransaction: String?
        var appAccountToken: String?
    }

    // MARK: Queueing

    func enqueue(signedTransaction: String, appTransaction: String?, appAccountToken: UUID?) throws(CatalogClientError) -> String {
        let jws = signedTransaction.trimmingCharacters(in: .whitespacesAndNewlines)
        // Refused here rather than queued: the server would refuse it for good anyway.
        guard (1...Self.maximumJWSBytes).contains(jws.utf8.count), jws.split(separator: ".", omittingEmptySubsequences: false).count == 3
        else {
            throw CatalogClientError(code: .rejected, message: "not a signed transaction: a compact JWS of at most 64 KiB is expected")
        }
        let wire = WirePurchase(
            signedTransaction: jws,
            signedAppTransaction: appTransaction.flatMap { (1...Self.maximumJWSBytes).contains($0.utf8.count) ? $0 : nil },
            appAccountToken: appAccountToken?.uuidString.lowercased())
        let body: Data
        do { body = try JSONEncoder().encode(wire) } catch {
            throw CatalogClientError(code: .storage, message: "cannot encode a purchase: \(error)")
        }
        try DurableFile.makeDirectory(queueDirectory)
        let id = UUID().uuidString.lowercased()
        let name = String(format: "%015.0f", Date().timeIntervalSince1970 * 1000) + "-\(id).json"
        try DurableFile.write(body, to: queueDirectory.appendingPathComponent(name))
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

    /// What one POST of `body` came to.
    private enum Outcome {
        case accepted(CustomerEntitlements)
        /// The server will refuse this evidence however often it is sent.
        case refused(CatalogClientError)
        /// Worth sending again later.
        case wait(CatalogClientError)
    }

    private func post(_ body: Data) async -> Outcome {
        var request = URLRequest(url: configuration.purchaseURL)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = body
        switch await transport.send(request) {
        case .success(let answer) where answer.status == 200:
            let readAt = Date()
            guard let wire = try? JSONDecoder().decode(WireCustomer.self, from: answer.body),
                let entitlements = wire.entitlements(readAt: readAt, source: .network)
            else {
                return .wait(CatalogClientError(code: .malformedResponse, message: "the purchase answer is not a customer", status: 200))
            }
            remember(answer.body, readAt: readAt, entitlements: entitlements)
            return .accepted(entitlements)
        case .success(let answer) where [404, 405].contains(answer.status) && !CatalogClient.isServiceError(answer):
            return .wait(
                CatalogClientError(
                    code: .noReportEndpoint,
                    message:
                        "\(configuration.purchaseURL.absoluteString) answered \(answer.status) without catalog serve's error: set Configuration.reportServer to a catalog serve (purchases stay queued)",
                    status: answer.status))
        case .success(let answer):
            let error = CatalogClient.unexpected(answer)
            return error.isRetryable ? .wait(error) : .refused(error)
        case .failure(let error):
            return error.isRetryable ? .wait(error) : .refused(error)
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
            switch await post(body) {
            case .accepted(let entitlements):
                delivery.sent += 1
                delivery.entitlements = entitlements
                failures = 0
                setSendAfter(nil)
                // Only the evidence the server took is presented again by a refresh.
                do { try DurableFile.write(body, to: evidenceFile) } catch { configuration.log("purchase evidence not kept: \(error)") }
                do { try FileManager.default.removeItem(at: file) } catch {
                    // A purchase that cannot leave the queue would be sent round after round: back off.
                    stop(&delivery, CatalogClientError(code: .storage, message: "cannot remove \(file.lastPathComponent): \(error)"))
                }
            case .refused(let error):
                try? FileManager.default.removeItem(at: file)
                configuration.log("purchase \(id) dropped: refused (\(error.serverCode ?? "HTTP \(error.status ?? 0)")): \(error.message)")
                delivery.refused.append(.init(purchaseId: id, error: error))
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

    // MARK: Entitlements

    /// Keeps the server's answer with the moment it was read, for offline use.
    private func remember(_ answer: Data, readAt: Date, entitlements: CustomerEntitlements) {
        known = entitlements
        do {
            let milliseconds = Int64((readAt.timeIntervalSince1970 * 1000).rounded(.down))
            // One line of header, then the answer's exact bytes: nothing is re-encoded.
            var file = Data("\(milliseconds)\n".utf8)
            file.append(answer)
            try DurableFile.makeDirectory(directory)
            try DurableFile.write(file, to: entitlementsFile)
        } catch {
            configuration.log("entitlements not kept for offline use: \(error)")
        }
    }

    /// The last answer, from memory or disk, marked as kept; ``CustomerEntitlements/unknown`` without one.
    func cached() -> CustomerEntitlements {
        if var known {
            known.source = .cache
            return known
        }
        guard let file = try? Data(contentsOf: entitlementsFile), let newline = file.firstIndex(of: UInt8(ascii: "\n")),
            let milliseconds = Int64(String(decoding: file[..<newline], as: UTF8.self)),
            let wire = try? JSONDecoder().decode(WireCustomer.self, from: file[file.index(after: newline)...]),
            let entitlements = wire.entitlements(readAt: Date(timeIntervalSince1970: Double(milliseconds) / 1000), source: .cache)
        else { return .unknown }
        known = entitlements
        return entitlements
    }

    /// Asks the server again: sends what is queued, or else presents the last accepted evidence
    /// again. The new answer, or the kept one with the error.
    func refresh() async -> CustomerEntitlements {
        if !queuedFiles().isEmpty {
            let delivery = await sendPending()
            if let fresh = delivery.entitlements { return fresh }
            var kept = cached()
            kept.error = delivery.error
            return kept
        }
        guard let body = try? Data(contentsOf: evidenceFile) else { return cached() }
        switch await post(body) {
        case .accepted(let fresh):
            return fresh
        case .refused(let error), .wait(let error):
            var kept = cached()
            kept.error = error
            return kept
        }
    }
}
