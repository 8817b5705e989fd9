import AppStore
import AppStoreServerAPI
import CatalogKit
import Foundation
import GooglePlay
import HTTPTypes
import Hummingbird
import Ledger
import Logging
import NIOCore
import Synchronization
import X509

/// How the purchase endpoints protect the store, and what they trust.
public struct PurchasesConfiguration: Sendable {
    /// The roots evidence must chain to; nil: Apple's two (pinned), plus the roots reports'
    /// AppTransactions are verified against (`--root-certificate`). Tests give their own.
    public var trust: PurchaseTrust?
    /// `POST …/purchases` per client network; nil for none (a benchmark from one address).
    public var perAddress: RateLimit? = RateLimit(perMinute: 600, burst: 120)
    /// Submissions waiting for the store at most; past it, 503 with `Retry-After`.
    public var maximumQueued = 20_000
    /// Where the App Store Server API is called; nil: Apple's (a stand-in's, in tests).
    public var appStoreAPIURL: URL?
    /// How often the editor node reconciles each app's notifications with Apple's history.
    public var reconcileInterval: Duration = .seconds(3_600)
    /// Where the Play Developer API is called; nil: Google's (a stand-in's, in tests). The token
    /// endpoint is the one each service account's key file names.
    public var playAPIURL: URL?
    /// The file of Google's keys for Pub/Sub's push tokens (a JWKS the operator refreshes); nil: no
    /// Google Play notification is accepted.
    public var googlePushKeys: String?
    /// How often the editor node sends the acknowledgement outbox's due entries.
    public var playInterval: Duration = .seconds(60)

    /// The defaults.
    public init() {}
}

/// The apps' purchase settings, read from the purchase record of the revision each app serves
/// (``PurchaseRecord``, in the revision's records) and kept until that revision changes: settings
/// take effect when they are published, like the products they name. The editor node and serving
/// replicas read the same record (replicas receive records through the store), so one path binds
/// evidence everywhere. One reading per app and revision, however many requests arrive meanwhile.
final class PurchaseSettingsCache: Sendable {
    /// An app's settings at one revision: the App Store's, Google Play's when it has any, and the
    /// catalog products each Play product id is sold as (Android apps' reports name Play's ids; a
    /// catalog may sell on Google Play without taking its purchases).
    typealias Settings = (appStore: AppPurchases, play: PlayApp?, playProductIds: [String: [String]])

    private let tree: PublicTree
    private let trust: PurchaseTrust
    private let entries = Mutex<[String: (revision: Int, reading: Task<Result<Settings, PurchaseConfigurationError>, Never>)]>([:])

    init(tree: PublicTree, trust: PurchaseTrust) {
        self.tree = tree
        self.trust = trust
    }

    /// `app`'s settings at published `revision`, or why there are none.
    func app(_ app: String, revision: Int) async -> Result<AppPurchases, PurchaseConfigurationError> {
        await settings(app, revision: revision).map(\.appStore)
    }

    /// `app`'s Google Play settings at published `revision`: nil when it has none.
    func play(_ app: String, revision: Int) async -> Result<PlayApp?, PurchaseConfigurationError> {
        await settings(app, revision: revision).map(\.play)
    }

    /// The catalog products each Play product id of `app` is sold as at published `revision`.
    func playProductIds(_ app: String, revision: Int) async -> Result<[String: [String]], PurchaseConfigurationError> {
        await settings(app, revision: revision).map(\.playProductIds)
    }

    private func settings(_ app: String, revision: Int) async -> Result<Settings, PurchaseConfigurationError> {
        let (tree, trust) = (tree, trust)
        let reading = entries.withLock { entries in
            if let entry = entries[app], entry.revision == revision { return entry.reading }
            let reading = Task { Self.read(app, revision: revision, tree: tree, trust: trust) }
            entries[app] = (revision, reading)
            return reading
        }
        let result = await reading.value
        // A failure is not kept: a replica may be writing the revision's records right now.
        if case .failure = result { entries.withLock { if $0[app]?.revision == revision { $0[app] = nil } } }
        return result
    }

    private static func read(_ app: String, revision: Int, tree: PublicTree, trust: PurchaseTrust) -> Result<
        Settings, PurchaseConfigurationError
    > {
        guard let bytes = tree.purchaseRecordBytes(app, revision: revision) else {
            return .failure(
                PurchaseConfigurationError(
                    "revision \(revision) of '\(app)' has no purchase record (it was published before records carried one); publish the app again (catalog build) to take purchases"
                ))
        }
        guard let record = PurchaseRecord.decode(bytes), record.app == app else {
            return .failure(PurchaseConfigurationError("the purchase record of revision \(revision) of '\(app)' cannot be read"))
        }
        do {
            let appStore = try AppPurchases(record, trust: trust)
            do {
                return .success((appStore, try PlayApp(record), record.playProductIds))
            } catch {
                return .failure(PurchaseConfigurationError("the Google Play settings of '\(app)': \(error.description)"))
            }
        } catch {
            return .failure(error)
        }
    }
}

/// The purchase endpoints (docs/purchases.md): the App Store's notifications, the app's
/// purchases, a customer read by the developer's backend (and the dashboard), and the app's read of
/// its own customer by evidence (`CustomerEvidence.swift`). The same on every node: settings come
/// from each revision's purchase record.
struct PurchaseEndpoints: Sendable {
    let store: any PurchaseStore
    /// Where a backend's token is checked; nil on a serving replica, whose store role reads no
    /// tokens: a backend's reads are the editor node's (``backendToken(_:app:)`` answers 421).
    let tokens: (any EditorStore)?
    let settings: PurchaseSettingsCache
    /// Submissions that arrive together go in one transaction, as reports do.
    let committer: GroupCommitter<PurchaseSubmission, PurchaseOutcome>
    let byAddress: RateLimiter?
    /// `POST …/customers/lookup` per client network, at the purchases' rate but a budget of its own.
    let lookupsByAddress: RateLimiter?
    let metrics: ServerMetrics
    /// The App Store Server API on the editor node (docs/app-store-api.md): its clients, for a
    /// backend's import of a customer, and the consumption answers a customer's full read shows.
    /// Nil on a serving replica.
    let appStoreAPI: (store: any AppStoreAPIService.Store, clients: AppStoreAPIClients)?
    /// Google Play's evidence (docs/google-play.md); nil: a store that keeps no acknowledgements.
    let googlePlay: GooglePlayEndpoints?
    /// Where a store failure is told in full: the answer says only to send it again.
    let logger: Logger

    /// A notification body: its `signedPayload` is one JWS of at most 64 KiB, nested tokens included.
    static let maximumNotificationBytes = 65 * 1024
    /// A purchase request: a legacy receipt in base64 is the largest thing it carries.
    static let maximumPurchaseBytes = 512 * 1024

    init(
        store: any PurchaseStore, tokens: (any EditorStore)?, tree: PublicTree, trust: PurchaseTrust,
        configuration: PurchasesConfiguration, metrics: ServerMetrics,
        appStoreAPI: (store: any AppStoreAPIService.Store, clients: AppStoreAPIClients)? = nil, googlePlay: GooglePlayEndpoints? = nil,
        logger: Logger
    ) {
        self.store = store
        self.tokens = tokens
        settings = PurchaseSettingsCache(tree: tree, trust: trust)
        committer = GroupCommitter(maximumBatch: 1024, maximumQueued: configuration.maximumQueued) { store.record($0, completion: $1) }
        byAddress = configuration.perAddress.map { RateLimiter($0) }
        lookupsByAddress = configuration.perAddress.map { RateLimiter($0) }
        self.metrics = metrics
        self.appStoreAPI = appStoreAPI
        self.googlePlay = googlePlay
        self.logger = logger
    }

    // MARK: - Notifications

    /// `POST /v1/apps/{app}/notifications/app-store`: 200 once the notification is committed.
    func notification(_ request: Request, app: String, revision: Int?, now: Date) async -> Response {
        guard request.method == .post else { return CatalogResponder.methodNotAllowed(request, allow: "POST") }
        let published: Int
        switch Self.checkHead(
            app: app, revision: revision, contentType: request.headers[.contentType],
            contentLength: request.headers[.contentLength].flatMap(Int.init), limit: Self.maximumNotificationBytes)
        {
        case .failure(let refusal): return refusal.response
        case .success(let revision): published = revision
        }
        switch await Self.body(request, limit: Self.maximumNotificationBytes) {
        case .failure(let refusal): return refusal.response
        case .success(let body): return await notification(body, app: app, revision: published, now: now)
        }
    }

    /// A notification whose head passed ``checkHead(app:revision:contentType:contentLength:limit:)``,
    /// by its body: verified, stored, answered. Both paths that take notifications answer through
    /// it: Hummingbird's (above) and the lean one (``LeanPostHandler``).
    func notification(_ body: String, app: String, revision: Int, now: Date) async -> Response {
        let config: AppPurchases
        switch await appSettings(app, revision: revision) {
        case .failure(let refusal): return refusal.response
        case .success(let found): config = found
        }
        let verified: SignedDataVerifier.VerifiedNotification
        do {
            verified = try await config.verifier.verifyAndDecodeNotification(body)
        } catch {
            return refuse(error, endpoint: "notifications")
        }
        guard
            let submission = PurchaseSubmission.notification(
                verified, app: app, body: body, receivedAt: now, transferPolicy: config.transferPolicy,
                sendsWebhooks: config.webhookURL != nil),
            let uuid = submission.notification?.notificationId
        else {
            return refuse(PurchaseRefusal(.malformed, "the notification has no notificationUUID"), endpoint: "notifications")
        }
        switch await committer.outcome(of: submission) {
        case .success(let outcome):
            metrics.recordNotification(duplicate: outcome.duplicate)
            for transfer in outcome.transfers { metrics.recordTransfer(transfer.outcome.rawValue) }
            let answer = NotificationAnswer(
                notificationUUID: uuid, stored: outcome.duplicate ? nil : true, duplicate: outcome.duplicate ? true : nil)
            return Self.ok(answer.json)
        case .failure(let error):
            return storeFailure(error)
        }
    }

    // MARK: - Purchases

    /// `POST /v1/apps/{app}/purchases`: verify, record, answer the customer's entitlements now.
    func purchase(_ request: Request, app: String, revision: Int?, networkKey: String?, now: Date) async -> Response {
        switch await presentedEvidence(request, app: app, revision: revision, networkKey: networkKey, limiter: byAddress) {
        case .failure(let refusal): return refusal.response
        case .success(let read):
            switch await verifyAndRecord(
                read.evidence, app: app, settings: read.settings, revision: read.revision, now: now, endpoint: "purchases")
            {
            case .failure(let refusal): return refusal.response
            case .success(let (record, verified)):
                return Self.ok(
                    CustomerAnswer(
                        record, at: verified.answeredAt(now), catalog: read.settings.catalog, full: false,
                        appTransaction: verified.appTransaction
                    ).json)
            }
        }
    }

    /// The evidence an app sends verified as `app`'s, recorded (bound to its customer by the app's
    /// transfer policy), and that customer read back by the rule every app's read follows
    /// (``holder(of:app:endpoint:)``): the one place that does it, for the purchases and the
    /// content endpoints alike. Refusals are counted under `endpoint`; a purchase another customer
    /// keeps is refused 409 with the presenting customer's own entitlements, so that the app can say
    /// what the person does have instead of dropping the purchase silently.
    ///
    /// The App Store's evidence is recorded as it is signed. Google Play's says only that Google
    /// signed it once: what is recorded is what Google's API says of it now
    /// (``playSubmission(_:_:app:now:)``), and when Google cannot say it now, the customer is read
    /// as the ledger holds them, or 202 when it does not hold the purchase yet.
    func verifyAndRecord(
        _ evidence: PresentedEvidence, app: String, settings config: AppPurchases, revision: Int, now: Date, endpoint: String
    ) async -> Result<(CustomerRecord, VerifiedEvidence), EndpointRefusal> {
        func refused(_ response: Response) -> Result<(CustomerRecord, VerifiedEvidence), EndpointRefusal> {
            .failure(EndpointRefusal(response: response))
        }
        let verified: VerifiedEvidence
        switch await verifyEvidence(evidence, app: app, settings: config, revision: revision, endpoint: endpoint) {
        case .failure(let refusal): return .failure(refusal)
        case .success(let found): verified = found
        }
        let submission: PurchaseSubmission
        if let play = verified.googlePlay {
            switch await playSubmission(verified, play, app: app, now: now) {
            case .failure(let refusal): return .failure(refusal)
            case .success(.record(let found)): submission = found
            case .success(.queued(let reason)):
                switch await holder(of: verified, app: app, endpoint: endpoint) {
                case .success(let record): return .success((record, verified))
                case .failure(let refusal) where refusal.response.status == .notFound: return refused(Self.queued(reason))
                case .failure(let refusal): return .failure(refusal)
                }
            }
        } else {
            submission = PurchaseSubmission(
                app: app, receivedAt: now, source: .app, transactions: verified.transactions.map { Kept($0) },
                appAccount: verified.appAccountToken, transferPolicy: config.transferPolicy, sendsWebhooks: config.webhookURL != nil)
        }
        let outcome: PurchaseOutcome
        switch await committer.outcome(of: submission) {
        case .success(let recorded): outcome = recorded
        case .failure(let error): return refused(storeFailure(error))
        }
        for transfer in outcome.transfers { metrics.recordTransfer(transfer.outcome.rawValue) }
        for _ in 0..<outcome.refusedClaims { metrics.recordTransfer(TransferEvent.Outcome.refused.rawValue) }
        if let refusal = outcome.refusal {
            // The presenting customer's own entitlements, when an app account that has some presented it.
            var own: CustomerAnswer?
            if verified.claimant.kind == .appAccount, let record = try? await store.customer(app: app, id: verified.claimant.value) {
                own = CustomerAnswer(record, at: now, catalog: config.catalog, full: false)
            }
            return refused(refuse(refusal, endpoint: endpoint, customer: own))
        }
        return await holder(of: verified, app: app, endpoint: endpoint).map { ($0, verified) }
    }

    /// Hex to bytes, ignoring the dashes of a UUID and the colons of a MAC address.
    static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.filter { $0 != "-" && $0 != ":" }.utf8)
        guard !digits.isEmpty, digits.count % 2 == 0, digits.count <= 64 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index...index + 1], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return bytes
    }

    // MARK: - Customers

    /// `GET /v1/apps/{app}/customers/{id}[?at=RFC3339]`, for a `backend` token (or an editor's or viewer's).
    func customer(_ request: Request, app: String, id: String, revision: Int?, now: Date) async -> Response {
        guard request.method == .get || request.method == .head else {
            return CatalogResponder.methodNotAllowed(request, allow: "GET, HEAD")
        }
        if let refusal = await backendToken(request, app: app) { return refusal.response }
        let at: Date
        switch Self.instant(of: request, default: now) {
        case .failure(let refusal): return refusal.response
        case .success(let instant): at = instant
        }
        return await customerDocument(app: app, id: id, revision: revision, at: at)
    }

    /// A backend's token checked (editors' and viewers' tokens read too); nil when it is good. On a
    /// serving replica, 421: tokens are the editor node's, and an app asks by its evidence here.
    func backendToken(_ request: Request, app: String, writes: Bool = false) async -> EndpointRefusal? {
        guard let tokens else {
            return EndpointRefusal(
                response: JSONError.response(
                    .misdirectedRequest,
                    "this node is a serving replica: its store role does not read tokens, so a backend reads customers and their content on the editor node; an app asks by its evidence here (POST /v1/apps/\(app)/customers/lookup, POST /v1/apps/\(app)/content)"
                ))
        }
        switch await AdminAPI.authenticate(request, store: tokens) {
        case .failure(let refusal): return EndpointRefusal(response: refusal.response)
        case .success(let token) where writes && token.role == .viewer:
            return EndpointRefusal(response: JSONError.response(.forbidden, "a viewer's token reads only"))
        case .success: return nil
        }
    }

    /// Customer `id` (any key) of `app` at `at`, in full, with the ledger catalog of published
    /// `revision`: what a backend's read and the dashboard's customer page answer.
    func customerDocument(app: String, id: String, revision: Int?, at: Date) async -> Response {
        guard let revision else { return JSONError.response(.notFound, "no published app '\(app)'") }
        let config: AppPurchases
        switch await settings.app(app, revision: revision) {
        case .failure(let error): return JSONError.response(.serviceUnavailable, "\(error)")
        case .success(let found): config = found
        }
        do {
            guard let record = try await store.customer(app: app, id: id) else {
                return JSONError.response(.notFound, "no customer of '\(app)' has the key '\(id)'")
            }
            let answer = CustomerAnswer(record, at: at, catalog: config.catalog, full: true)
            let ids = record.transactions.compactMap(\.transactionId)
            guard let store = appStoreAPI?.store, !ids.isEmpty else { return Self.ok(answer.json) }
            let answers = try await store.consumptionAnswers(app: app, transactionIds: ids)
            guard !answers.isEmpty else { return Self.ok(answer.json) }
            var body = answer.body
            body.consumptionAnswers = answers.map(CustomerAnswer.ConsumptionAnswerRow.init)
            return Self.ok(CustomerAnswer.encode(body))
        } catch {
            return JSONError.response(.serviceUnavailable, "the purchase store does not answer")
        }
    }

    /// `POST /v1/apps/{app}/customers/{id}/import`: the whole App Store history of the customer
    /// who made transaction `id`, fetched from the App Store Server API, verified and recorded, then
    /// the customer answered as `GET` answers them (docs/app-store-api.md, "Import"). A backend's or
    /// an editor's token; the editor node only.
    func customerImport(_ request: Request, app: String, id: String, revision: Int?, now: Date) async -> Response {
        guard request.method == .post else { return CatalogResponder.methodNotAllowed(request, allow: "POST") }
        if let refusal = await backendToken(request, app: app, writes: true) { return refusal.response }
        guard let appStoreAPI else {
            return JSONError.response(.misdirectedRequest, "the App Store Server API is called from the editor node only")
        }
        guard let revision else { return JSONError.response(.notFound, "no published app '\(app)'") }
        let config: AppPurchases
        switch await settings.app(app, revision: revision) {
        case .failure(let error): return JSONError.response(.serviceUnavailable, "\(error)")
        case .success(let found): config = found
        }
        guard config.serverAPI != nil else {
            return JSONError.response(
                .conflict, "\(app) names no App Store Server API key (serverAPIKeyId, serverAPIIssuerId, serverAPIKeyFile)")
        }
        let importer = CustomerImporter(app: config, clients: await appStoreAPI.clients.clients(config), store: store)
        do {
            let summary = try await importer.importCustomer(id)
            guard summary.customers > 0 else {
                return JSONError.response(.notFound, summary.refusals.first ?? "Apple knows no transaction \(id)")
            }
            logger.info(
                "appstore.import",
                metadata: ["feed.app": "\(app)", "purchases": "\(summary.purchases)", "refused": "\(summary.refused)"])
        } catch let error as AppStoreAPIError {
            return JSONError.response(.badGateway, "\(error)")
        } catch {
            logger.error("appstore.import.failed", metadata: ["feed.app": "\(app)", "error": "\(error)"])
            return JSONError.response(.serviceUnavailable, "the purchase store does not answer")
        }
        return await customerDocument(app: app, id: id, revision: revision, at: now)
    }

    // MARK: - Shared steps

    /// `?at=` of a customer's read: an RFC 3339 instant, `now` without one, 400 for anything else.
    static func instant(of request: Request, default now: Date) -> Result<Date, EndpointRefusal> {
        guard let text = request.uri.queryParameters.get("at") else { return .success(now) }
        guard let parsed = CustomerAnswer.instant(String(text)) else {
            return .failure(
                EndpointRefusal(
                    response: JSONError.response(
                        .badRequest, "at=\(text.prefix(64)) must be an RFC 3339 instant, such as 2025-01-31T12:00:00Z")))
        }
        return .success(parsed)
    }

    /// The checks the head decides: a published app, its settings, JSON, the size.
    func prepare(_ request: Request, app: String, revision: Int?, limit: Int) async -> Result<(AppPurchases, Int), EndpointRefusal> {
        switch Self.checkHead(
            app: app, revision: revision, contentType: request.headers[.contentType],
            contentLength: request.headers[.contentLength].flatMap(Int.init), limit: limit)
        {
        case .failure(let refusal): return .failure(EndpointRefusal(response: refusal.response))
        case .success(let revision): return await appSettings(app, revision: revision).map { ($0, revision) }
        }
    }

    /// What the head alone decides: the revision the app is published at, or the refusal of an
    /// app that is not published, a body that is not JSON, or one larger than `limit` by its
    /// `Content-Length`.
    static func checkHead(app: String, revision: Int?, contentType: String?, contentLength: Int?, limit: Int)
        -> Result<Int, HeadRefusal>
    {
        guard let revision else { return .failure(HeadRefusal(.notFound, "no published app '\(app)'")) }
        guard ReportIntake.isJSON(contentType) else {
            return .failure(HeadRefusal(.unsupportedMediaType, "send Content-Type: application/json"))
        }
        if let contentLength, contentLength > limit {
            return .failure(HeadRefusal(.contentTooLarge, "the body is \(contentLength) bytes; the limit is \(limit)"))
        }
        return .success(revision)
    }

    /// A refusal ``checkHead(app:revision:contentType:contentLength:limit:)`` decides, answered as
    /// `JSONError`: on Hummingbird's path as a `Response`, on the lean path as its bytes.
    struct HeadRefusal: Error {
        let status: HTTPResponse.Status
        let message: String

        init(_ status: HTTPResponse.Status, _ message: String) {
            self.status = status
            self.message = message
        }

        var response: Response { JSONError.response(status, message) }
    }

    /// `app`'s purchase settings at `revision`; 503 when its purchase record cannot be read.
    func appSettings(_ app: String, revision: Int) async -> Result<AppPurchases, EndpointRefusal> {
        await settings.app(app, revision: revision).mapError {
            EndpointRefusal(response: JSONError.response(.serviceUnavailable, "\($0)"))
        }
    }

    static func body(_ request: Request, limit: Int) async -> Result<String, EndpointRefusal> {
        do {
            let buffer = try await request.body.collect(upTo: limit)
            return .success(String(decoding: buffer.readableBytesView, as: UTF8.self))
        } catch is NIOTooManyBytesError {
            return .failure(EndpointRefusal(response: JSONError.response(.contentTooLarge, "the body is larger than \(limit) bytes")))
        } catch {
            return .failure(EndpointRefusal(response: JSONError.response(.badRequest, "the body could not be read")))
        }
    }

    /// A refusal, counted: 400 for malformed evidence, 409 for a purchase bound to another
    /// customer, 422 for an unknown product, 403 for the rest (forged, another app's, another
    /// environment's). `customer`: the presenting customer's own answer, beside a 409.
    func refuse(_ refusal: PurchaseRefusal, endpoint: String, customer: CustomerAnswer? = nil) -> Response {
        metrics.recordPurchaseRefusal(endpoint: endpoint, code: refusal.code.rawValue)
        let status: HTTPResponse.Status =
            switch refusal.code {
            case .malformed: .badRequest
            case .boundToAnotherCustomer: .conflict
            case .unknownProduct: .unprocessableContent
            default: .forbidden
            }
        let body = RefusalAnswer(
            error: .init(message: refusal.reason, code: refusal.code.rawValue, status: refusal.code.appleStatus), customer: customer?.body)
        return Response(
            status: status, headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: ServiceJSON.encode(body))))
    }

    /// 503 so that Apple, or the app, sends it again.
    func storeFailure(_ error: any Error) -> Response {
        logger.error("purchases.store", metadata: ["error": "\(error)"])
        var response: Response
        if error is CommitQueueFull {
            metrics.recordCommitQueueFull()
            response = JSONError.response(.serviceUnavailable, "too much is waiting for the store; send it again later")
            response.headers[.retryAfter] = "1"
        } else {
            response = JSONError.response(.serviceUnavailable, "it could not be stored; send it again later")
            response.headers[.retryAfter] = "5"
        }
        return response
    }

    static func ok(_ json: [UInt8]) -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: json)))
    }
}

/// `POST …/notifications/app-store`'s answer: the notification's id, and `stored` the first time or
/// `duplicate` when it was already stored.
struct NotificationAnswer: Codable, Sendable, Equatable {
    var notificationUUID: String
    var stored: Bool?
    var duplicate: Bool?

    /// The bytes `ServiceJSON.encode` gives (keys sorted), written by hand: `JSONEncoder` took 0.7%
    /// of a stored notification's CPU for these few bytes (docs/benchmarks.md, "Notifications on
    /// the lean path, and pairs run at once").
    var json: [UInt8] {
        var json = JSONWriter(capacity: 96)
        json.beginObject()
        if let duplicate {
            json.key("duplicate")
            json.boolean(duplicate)
        }
        json.key("notificationUUID")
        json.string(notificationUUID)
        if let stored {
            json.key("stored")
            json.boolean(stored)
        }
        json.endObject()
        return json.bytes
    }
}

/// Refused evidence: the reason, its stable code (docs/purchases.md, "Refusals") and Apple's old status
/// where one fits; beside a `bound-to-another-customer`, the presenting customer's own entitlements.
struct RefusalAnswer: Codable, Sendable, Equatable {
    /// What was refused.
    struct Detail: Codable, Sendable, Equatable {
        var message: String
        var code: String
        var status: Int?
    }

    var error: Detail
    /// The customer the app account presenting the purchase is (``CustomerAnswer``, without history),
    /// when it is one: what they do have.
    var customer: CustomerAnswer.Body?
}
