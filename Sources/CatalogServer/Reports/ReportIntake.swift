import AppStore
import CatalogKit
import Crypto
import HTTPTypes
import Hummingbird
import Ledger
import NIOCore
import Time

/// What the report endpoint answers, whichever path received the request: a status and a JSON
/// body, with `Retry-After` for a limit, and `Connection: close` when the body was refused unread.
struct ReportAnswer: Sendable {
    var status: HTTPResponse.Status
    var json: [UInt8]
    var retryAfter: Int? = nil
    var closeConnection = false
    /// The `reportId` a 202 stored the report under (its key in the store with the app): what
    /// the access log ties the acceptance to its commit with.
    var reportID: String? = nil

    static func error(_ status: HTTPResponse.Status, _ message: String, retryAfter: Int? = nil) -> ReportAnswer {
        ReportAnswer(status: status, json: JSONError.body(message), retryAfter: retryAfter)
    }

    /// The headers besides the framing ones (Content-Length, Date), in the order they are sent.
    var headers: [(HTTPField.Name, String)] {
        var headers: [(HTTPField.Name, String)] = [(.contentType, "application/json")]
        if status == .accepted { headers.append((.cacheControl, "no-store")) }
        if let retryAfter { headers.append((.retryAfter, String(retryAfter))) }
        if closeConnection { headers.append((.connection, "close")) }
        return headers
    }

    var response: Response {
        var fields = HTTPFields()
        for (name, value) in headers { fields[name] = value }
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: json)))
    }
}

/// `POST /v1/apps/{app}/invalid-identifiers`: checks, limits, then a durable commit before 202.
///
/// The order of the checks is the order of their cost: what the head alone decides (app,
/// media type, size, the address's rate) comes before reading the body, and the body is read
/// only up to the limit. Both paths that receive reports (Hummingbird's, and the connection
/// handler's for plain ones) ask the same two questions: ``checkHead`` and ``receive``.
struct ReportIntake: Sendable {
    let store: any ReportStore
    let committer: ReportCommitter
    let byAddress: RateLimiter?
    let byInstall: RateLimiter?
    let clients: ClientAddressResolver
    let networks: NetworkHasher
    let appTransactions: ReportAppTransactions?
    /// An app's purchase settings as the purchase endpoints read them, or nil when it has none to
    /// read (no catalog sources, or sources that do not validate).
    let purchaseSettings: @Sendable (String) async -> AppStoreApp?
    /// The catalog products each Play product id of an app is sold as, at the revision it serves:
    /// Android apps report Play's ids.
    let playProducts: @Sendable (String) async -> [String: [String]]
    let metrics: ServerMetrics?

    init(
        store: any ReportStore, configuration: ReportsConfiguration, metrics: ServerMetrics? = nil,
        purchaseSettings: @escaping @Sendable (String) async -> AppStoreApp? = { _ in nil },
        playProducts: @escaping @Sendable (String) async -> [String: [String]] = { _ in [:] }
    ) {
        self.store = store
        #if DEBUG
            committer = GroupCommitter(
                store: store, maximumQueued: configuration.maximumQueuedReports,
                acknowledgeBeforeCommit: configuration.acknowledgeBeforeCommit, observer: metrics?.recordCommit)
        #else
            committer = GroupCommitter(store: store, maximumQueued: configuration.maximumQueuedReports, observer: metrics?.recordCommit)
        #endif
        byAddress = configuration.perAddress.map { RateLimiter($0) }
        byInstall = configuration.perInstall.map { RateLimiter($0) }
        clients = ClientAddressResolver(trustedProxies: configuration.trustedProxies, header: configuration.forwardingHeader)
        networks = NetworkHasher(secret: configuration.networkSecret, prefixes: configuration.networkPrefixes)
        appTransactions = configuration.appTransactions
        self.purchaseSettings = purchaseSettings
        self.playProducts = playProducts
        self.metrics = metrics
    }

    /// The client a request came from: the peer, or what a trusted proxy forwarded for.
    /// `fields` gives every line of a header field by its lower-case name.
    func client(peer: String?, fields: (String) -> [String]) -> ClientAddress? {
        clients.client(peer: peer.flatMap { IPAddress($0) }, fields: fields)
    }

    /// The client the access log names: by `intake`'s rule (``client(peer:fields:)``, which knows
    /// the trusted proxies) on a server that takes reports, else the peer.
    static func loggedClient(_ intake: ReportIntake?, peer: String?, fields: (String) -> [String]) -> ClientAddress? {
        intake?.client(peer: peer, fields: fields) ?? peer.flatMap { IPAddress($0) }.map(ClientAddress.init(peer:))
    }

    /// Whether a POST refused by its head alone closes the connection: Hummingbird would read and
    /// discard the body to keep it, which is cheap for a small body of known length; anything else
    /// closes, unread.
    static func refusalCloses(contentLength: Int?, limit: Int) -> Bool {
        !(contentLength.map { $0 <= limit } ?? false)
    }

    /// The keyed hash of `client`'s network, as reports store it.
    func network(of client: ClientAddress?) -> String? {
        client.map { networks.networkID(of: $0.address) }
    }

    /// The answer the head alone decides, or nil to read the body (at most
    /// `ReportDecoder.maximumBodyBytes`). Takes from the client network's rate when it returns nil.
    func checkHead(app: String, isPublished: Bool, contentType: String?, contentLength: Int?, client: ClientAddress?) -> ReportAnswer? {
        let limit = ReportDecoder.maximumBodyBytes
        func refuse(_ status: HTTPResponse.Status, _ message: String, retryAfter: Int? = nil) -> ReportAnswer {
            var answer = ReportAnswer.error(status, message, retryAfter: retryAfter)
            answer.closeConnection = Self.refusalCloses(contentLength: contentLength, limit: limit)
            return answer
        }
        guard isPublished else { return refuse(.notFound, "no published app '\(app)'") }
        guard Self.isJSON(contentType) else {
            return refuse(.unsupportedMediaType, "a report must be sent as Content-Type: application/json")
        }
        if let contentLength, contentLength > limit {
            return refuse(.contentTooLarge, "the body is \(contentLength) bytes; the limit is \(limit)")
        }
        // A network, not an address, is the bucket: an IPv6 client has a /64 of addresses to itself.
        if let wait = byAddress?.take(client.map { networks.prefixes.key(of: $0.address) } ?? "unknown") {
            return refuse(.tooManyRequests, "too many reports from this network; retry after \(wait) s", retryAfter: wait)
        }
        return nil
    }

    /// Decodes the body, applies the install's rate, notes the client's network, keeps only the
    /// identifiers the app published, verifies an attached AppTransaction, and commits;
    /// `completion` once the report is durable, or with the refusal (on the committer's thread
    /// when it commits).
    ///
    /// - Parameters:
    ///   - published: every identifier the app ever published; nil keeps all (a server whose
    ///     index has no history for the app).
    ///   - network: ``network(of:)`` of the client, which a connection may keep between requests.
    func receive(
        _ body: some Collection<UInt8>, app: String, published: IdentifierHistory?, network: String?, now: Timestamp,
        completion: @escaping @Sendable (ReportAnswer) -> Void
    ) {
        var report: InvalidIdentifierReport
        switch ReportDecoder.decode(body, app: app, receivedAt: now) {
        case .failure(let rejection): return completion(.error(.badRequest, rejection.description))
        case .success(let decoded): report = decoded
        }
        let appTransaction = report.appTransaction
        report.appTransaction = nil  // verified below, never stored
        if let install = report.installID, let wait = byInstall?.take(install) {
            return completion(.error(.tooManyRequests, "too many reports from this install; retry after \(wait) s", retryAfter: wait))
        }
        report.network = network
        let named = report.invalid.count
        for product in report.unfetched { metrics?.recordUnfetchedProduct(app: app, status: product.status.name) }
        guard report.platform != .android else {
            // Play's ids become the catalog's, read from the revision served.
            Task {
                let unknown = report.resolvePlayProducts(await playProducts(app))
                if unknown > 0 { metrics?.recordUnpublishedIdentifiers(app: app, count: unknown) }
                keep(report, named: named, appTransaction: appTransaction, app: app, published: published, completion: completion)
            }
            return
        }
        keep(report, named: named, appTransaction: appTransaction, app: app, published: published, completion: completion)
    }

    /// Keeps only the identifiers the app published, verifies an attached AppTransaction, and commits.
    private func keep(
        _ report: InvalidIdentifierReport, named: Int, appTransaction: String?, app: String, published: IdentifierHistory?,
        completion: @escaping @Sendable (ReportAnswer) -> Void
    ) {
        var report = report
        if let published {
            let unknown = report.keepPublished { published[$0] != nil }
            if unknown > 0 { metrics?.recordUnpublishedIdentifiers(app: app, count: unknown) }
        }
        guard !report.invalid.isEmpty else {
            // Nothing the app ever published: counted in the tally above, not stored one by one.
            return completion(ReportAnswer(status: .accepted, json: Self.accepted(count: named, stored: 0, duplicate: false)))
        }
        guard let appTransaction, let verifier = appTransactions else {
            return commit(report, named: named, completion: completion)
        }
        Task {
            let bound = ReportAppTransactions.app(bundleID: app, settings: await purchaseSettings(app))
            if case .success(let verified) = await verifier.verify(appTransaction, app: bound),
                verified.environment == report.environment?.rawValue
            {
                report.verifiedInstall = verified.installKey
            }
            metrics?.recordAppTransaction(verified: report.verifiedInstall != nil)
            commit(report, named: named, completion: completion)
        }
    }

    private func commit(_ report: InvalidIdentifierReport, named: Int, completion: @escaping @Sendable (ReportAnswer) -> Void) {
        committer.submit(report) { result in
            switch result {
            case .success(let outcome):
                completion(
                    ReportAnswer(
                        status: .accepted,
                        json: Self.accepted(count: named, stored: report.invalid.count, duplicate: outcome == .duplicate),
                        reportID: report.reportID))
            case .failure(let error as CommitQueueFull):
                self.metrics?.recordCommitQueueFull()
                completion(.error(.serviceUnavailable, "\(error); send it again later", retryAfter: 1))
            case .failure:
                completion(.error(.serviceUnavailable, "the report could not be stored; send it again later", retryAfter: 5))
            }
        }
    }

    /// `{"accepted":3}`: how many identifiers the report named; `stored` when fewer were kept
    /// one by one (the others were never published by the app), `duplicate` for a retry.
    ///
    /// Written by hand, on the report path beside the error bodies (``JSONError``). A `Codable`
    /// answer measured no different (docs/benchmarks.md, "JSON on the report path"), so this is
    /// habit, not speed; `ServiceJSONTests.reportAnswersAreAsDocumented` holds it to its schema.
    static func accepted(count: Int, stored: Int, duplicate: Bool) -> [UInt8] {
        var json = JSONWriter()
        json.beginObject()
        json.key("accepted")
        json.integer(Int64(count))
        if stored != count {
            json.key("stored")
            json.integer(Int64(stored))
        }
        if duplicate {
            json.key("duplicate")
            json.boolean(true)
        }
        json.endObject()
        return json.bytes
    }

    /// The endpoint on Hummingbird's path.
    func respond(to request: Request, app: String, published: FeedIndex.App?, peer: String?, now: Timestamp) async -> ReportAnswer {
        let limit = ReportDecoder.maximumBodyBytes
        let client = client(peer: peer) { name in
            HTTPField.Name(name).map { request.headers[values: $0] } ?? []
        }
        if let refusal = checkHead(
            app: app, isPublished: published != nil, contentType: request.headers[.contentType],
            contentLength: request.headers[.contentLength].flatMap(Int.init), client: client)
        {
            return refusal
        }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            var answer = ReportAnswer.error(.contentTooLarge, "the body is larger than \(limit) bytes")
            answer.closeConnection = true
            return answer
        } catch {
            var answer = ReportAnswer.error(.badRequest, "the body could not be read")
            answer.closeConnection = true
            return answer
        }
        let answer = await withCheckedContinuation { continuation in
            receive(body.readableBytesView, app: app, published: published?.history, network: network(of: client), now: now) {
                continuation.resume(returning: $0)
            }
        }
        return answer
    }

    /// `application/json`, with or without parameters such as `charset=utf-8`, in any case.
    /// Compared byte by byte: Foundation's trimming and lowercasing cost more than the rest of
    /// the head's checks together.
    static func isJSON(_ contentType: String?) -> Bool {
        guard var bytes = contentType?.utf8[...] else { return false }
        if let semicolon = bytes.firstIndex(of: UInt8(ascii: ";")) { bytes = bytes[..<semicolon] }
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        while let first = bytes.first, isSpace(first) { bytes = bytes.dropFirst() }
        while let last = bytes.last, isSpace(last) { bytes = bytes.dropLast() }
        let expected = "application/json".utf8
        // ASCII letters only: setting bit 5 lower-cases them and leaves '/' alone.
        return bytes.count == expected.count && zip(bytes, expected).allSatisfy { $0 | 0x20 == $1 | 0x20 }
    }
}
