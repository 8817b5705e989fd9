import FeedSigning
import Foundation
import Hummingbird
import LoopbackServer
import NIOCore
import Synchronization
import _CryptoExtras

/// A stand-in for Google's OAuth token endpoint and the Play Developer API on loopback, following
/// Google's documentation (docs/google-play.md, "Tested here"), since no machine here reaches Google:
///
/// - `POST /token` takes the JWT bearer grant only (form-encoded `grant_type` and `assertion`), and
///   checks the assertion as Google's "Using OAuth 2.0 for Server to Server Applications" describes:
///   RS256 by a key registered under its `kid`, `iss` the account, `scope` the Play Developer API's,
///   `aud` the token URL, `iat` not in the future and `exp` after now and at most an hour after
///   `iat`. A failure is 400 `invalid_grant` with Google's `error_description`; a good one gets a
///   bearer token of ``tokenLifetime``.
/// - Every API call needs a bearer token it issued and that has not expired (else 401 with Google's
///   error body, status `UNAUTHENTICATED`), for the package it serves.
/// - Purchases are what the test sets, and change when it sets them again; an unknown token is 400
///   `invalid` ("Invalid Value"), as Google answers one. Acknowledging twice succeeds, unless
///   ``refuseSecondAcknowledgement`` asks for Google's reported 400 `invalidPurchaseState`.
/// - `voidedpurchases` pages with `token` and `maxResults` (or `pageSelection.*`), over a window of
///   at most 30 days.
/// - Faults are queued by the test: any status with Google's error body, `reason` and
///   `Retry-After`, or a connection cut in the middle of its body.
public final class PlayAPIStandIn: Sendable {
    /// A fault the next API request meets, in queue order.
    public enum Fault: Sendable {
        /// This status, with Google's error body naming `reason`, and `Retry-After` when given.
        case status(Int, reason: String = "backendError", retryAfter: String? = nil)
        /// The answer's headers promise more body than comes, and the connection closes.
        case cut
        /// The token endpoint answers this status once.
        case tokenStatus(Int, error: String)
        /// This request is answered as usual: what puts a fault on a later one.
        case none
    }

    /// One call the stand-in answered.
    public struct Call: Sendable, Hashable {
        /// `token`, `subscriptionPurchase`, `productPurchase`, `acknowledgeSubscription`,
        /// `acknowledgeProduct`, `consumeProduct`, `voidedPurchases`.
        public var operation: String
        /// What it answered.
        public var status: Int
        /// The purchase token, where the call names one.
        public var token: String?
    }

    struct State {
        var keys: [String: Data] = [:]  // DER: the RSA key type is not Sendable
        var accessTokens: [String: Date] = [:]
        var subscriptions: [String: [String: any Sendable]] = [:]
        var products: [String: [String: any Sendable]] = [:]
        var voided: [[String: any Sendable]] = []
        var faults: [Fault] = []
        var calls: [Call] = []
        var refuseSecondAcknowledgement = false
        var down = false
    }

    /// The service account Google knows.
    public let serviceAccount: String
    /// The package the API serves.
    public let packageName: String
    /// How long an access token lives.
    public let tokenLifetime: TimeInterval
    /// Voided purchases in a page.
    public let pageSize: Int
    let now: @Sendable () -> Date
    let state = Mutex(State())
    let server: LoopbackServer

    /// The stand-in's base URL, in place of `https://androidpublisher.googleapis.com`.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(server.port)")! }
    /// Its token endpoint, in place of `https://oauth2.googleapis.com/token`.
    public var tokenURL: URL { URL(string: "http://127.0.0.1:\(server.port)/token")! }

    private init(
        serviceAccount: String, packageName: String, tokenLifetime: TimeInterval, pageSize: Int, now: @escaping @Sendable () -> Date,
        server: LoopbackServer
    ) {
        self.serviceAccount = serviceAccount
        self.packageName = packageName
        self.tokenLifetime = tokenLifetime
        self.pageSize = pageSize
        self.now = now
        self.server = server
    }

    // MARK: - What the test sets

    /// Accepts assertions signed by `key` under `kid` (a key of the service account).
    public func accept(kid: String, key: _RSA.Signing.PublicKey) {
        let bytes = key.derRepresentation
        state.withLock { $0.keys[kid] = bytes }
    }
    /// Stops accepting `kid` (a key deleted in the console).
    public func revoke(kid: String) { state.withLock { _ = $0.keys.removeValue(forKey: kid) } }
    /// Forgets every access token issued (they are refused from now on).
    public func expireAccessTokens() { state.withLock { $0.accessTokens.removeAll() } }
    /// Sets what `subscriptionsv2.get` answers for `token` (Google's JSON, as an object).
    public func setSubscription(_ token: String, _ purchase: [String: any Sendable]) {
        state.withLock { $0.subscriptions[token] = purchase }
    }
    /// Sets what `productsv2.getproductpurchasev2` answers for `token`.
    public func setProduct(_ token: String, _ purchase: [String: any Sendable]) { state.withLock { $0.products[token] = purchase } }
    /// Adds a voided purchase (Google's JSON) to the list.
    public func addVoided(_ voided: [String: any Sendable]) { state.withLock { $0.voided.append(voided) } }
    /// Queues faults for the next requests.
    public func inject(_ faults: Fault...) { state.withLock { $0.faults += faults } }
    /// Whether the API answers every call 503 (an outage) until told otherwise; the token endpoint answers.
    public func setDown(_ down: Bool) { state.withLock { $0.down = down } }
    /// Whether a second acknowledgement is refused with 400 `invalidPurchaseState`.
    public func refuseSecondAcknowledgement(_ refuse: Bool) { state.withLock { $0.refuseSecondAcknowledgement = refuse } }

    /// Every call answered, in order.
    public var calls: [Call] { state.withLock { $0.calls } }
    /// The acknowledgement state of a subscription or product purchase.
    public func acknowledgementState(_ token: String) -> String? {
        state.withLock { ($0.subscriptions[token] ?? $0.products[token])?["acknowledgementState"] as? String }
    }
    /// The consumption state of a product purchase.
    public func consumptionState(_ token: String) -> String? {
        state.withLock { state in
            let lines = state.products[token]?["productLineItem"] as? [[String: any Sendable]]
            return (lines?.first?["productOfferDetails"] as? [String: any Sendable])?["consumptionState"] as? String
        }
    }

    // MARK: - Running

    /// A stand-in on a free loopback port.
    public static func start(
        serviceAccount: String = "catalog@example-project.iam.gserviceaccount.com", packageName: String = "com.example.game",
        tokenLifetime: TimeInterval = 3599, pageSize: Int = 2, now: @escaping @Sendable () -> Date = { Date() }
    ) async throws -> PlayAPIStandIn {
        let server = await LoopbackServer.start(label: "test.play-api")
        let standIn = PlayAPIStandIn(
            serviceAccount: serviceAccount, packageName: packageName, tokenLifetime: tokenLifetime, pageSize: pageSize, now: now,
            server: server)
        server.handle { try await standIn.answer($0) }
        return standIn
    }

    /// Stops the server.
    public func stop() async {
        await server.stop()
    }

    /// The JSON of a service account key file for `key`, naming this stand-in's token endpoint.
    public func keyFile(kid: String, key: _RSA.Signing.PrivateKey) -> Data {
        let object: [String: String] = [
            "type": "service_account", "project_id": "example-project", "private_key_id": kid, "private_key": key.pemRepresentation,
            "client_email": serviceAccount, "client_id": "1234567890", "token_uri": tokenURL.absoluteString,
        ]
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
    }

    // MARK: - Answering

    func answer(_ request: Request) async throws -> Response {
        let path = request.uri.path
        let query = Dictionary(request.uri.queryParameters.map { (String($0.key), String($0.value)) }, uniquingKeysWith: { $1 })
        let body = Array(buffer: try await request.body.collect(upTo: 1 << 20))
        if path == "/token", request.method == .post {
            let (status, json) = token(body)
            record("token", status, nil)
            return Self.response(status, json)
        }
        let prefix = "/androidpublisher/v3/applications/\(packageName)/purchases/"
        guard path.hasPrefix(prefix) else { return Self.response(404, Self.googleError(404, "notFound", "Not Found")) }
        let rest = String(path.dropFirst(prefix.count))
        let (operation, token, product) = Self.operation(request.method, rest)
        guard checkBearer(request) else {
            record(operation, 401, token)
            return Self.response(
                401,
                Self.googleError(
                    401, "authError",
                    "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
                    status: "UNAUTHENTICATED"))
        }
        if state.withLock({ $0.down }) {
            record(operation, 503, token)
            return Self.response(503, Self.googleError(503, "backendError", "The service is currently unavailable.", status: "UNAVAILABLE"))
        }
        if let fault = state.withLock({ state -> Fault? in
            guard let index = state.faults.firstIndex(where: { if case .tokenStatus = $0 { false } else { true } }) else { return nil }
            return state.faults.remove(at: index)
        }) {
            switch fault {
            case .status(let status, let reason, let retryAfter):
                record(operation, status, token)
                var response = Self.response(status, Self.googleError(status, reason, "Injected by the test."))
                if let retryAfter { response.headers[.retryAfter] = retryAfter }
                return response
            case .cut:
                record(operation, 200, token)
                return Response(
                    status: .ok, headers: [.contentType: "application/json", .contentLength: "1000"],
                    body: ResponseBody { writer in
                        try await writer.write(ByteBuffer(string: #"{"kind":"androidpublisher#"#))
                        throw CancellationError()
                    })
            case .tokenStatus, .none: break
            }
        }
        let (status, json) = route(operation, token: token, product: product, query: query)
        record(operation, status, token)
        return Self.response(status, json)
    }

    func record(_ operation: String, _ status: Int, _ token: String?) {
        state.withLock { $0.calls.append(Call(operation: operation, status: status, token: token)) }
    }

    static func operation(_ method: HTTPRequest.Method, _ rest: String) -> (String, String?, String?) {
        let parts = rest.split(separator: "/").map(String.init)
        switch (method, parts.count) {
        case (.get, 3) where parts[0] == "subscriptionsv2" && parts[1] == "tokens": return ("subscriptionPurchase", parts[2], nil)
        case (.get, 3) where parts[0] == "productsv2" && parts[1] == "tokens": return ("productPurchase", parts[2], nil)
        case (.post, 4) where parts[0] == "subscriptions" && parts[2] == "tokens" && parts[3].hasSuffix(":acknowledge"):
            return ("acknowledgeSubscription", String(parts[3].dropLast(":acknowledge".count)), parts[1])
        case (.post, 4) where parts[0] == "products" && parts[2] == "tokens" && parts[3].hasSuffix(":acknowledge"):
            return ("acknowledgeProduct", String(parts[3].dropLast(":acknowledge".count)), parts[1])
        case (.post, 4) where parts[0] == "products" && parts[2] == "tokens" && parts[3].hasSuffix(":consume"):
            return ("consumeProduct", String(parts[3].dropLast(":consume".count)), parts[1])
        case (.get, 1) where parts[0] == "voidedpurchases": return ("voidedPurchases", nil, nil)
        default: return ("unknown", nil, nil)
        }
    }

    func route(_ operation: String, token: String?, product: String?, query: [String: String]) -> (Int, [UInt8]) {
        let invalid = Self.googleError(400, "invalid", "Invalid Value")
        switch operation {
        case "subscriptionPurchase":
            guard let token, let purchase = state.withLock({ $0.subscriptions[token] }) else { return (400, invalid) }
            return (200, Self.json(purchase))
        case "productPurchase":
            guard let token, let purchase = state.withLock({ $0.products[token] }) else { return (400, invalid) }
            return (200, Self.json(purchase))
        case "acknowledgeSubscription", "acknowledgeProduct", "consumeProduct":
            return state.withLock { state -> (Int, [UInt8]) in
                guard let token else { return (400, invalid) }
                let isSubscription = operation == "acknowledgeSubscription"
                guard var purchase = isSubscription ? state.subscriptions[token] : state.products[token] else { return (400, invalid) }
                // The product in the path must be the purchase's.
                let lines = (purchase[isSubscription ? "lineItems" : "productLineItem"] as? [[String: any Sendable]]) ?? []
                guard lines.contains(where: { $0["productId"] as? String == product }) else { return (400, invalid) }
                let acknowledged = purchase["acknowledgementState"] as? String == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"
                if acknowledged && state.refuseSecondAcknowledgement && operation != "consumeProduct" {
                    return (
                        400,
                        Self.googleError(
                            400, "invalidPurchaseState", "The purchase is not in a valid state to perform the desired operation.")
                    )
                }
                purchase["acknowledgementState"] = "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"
                if operation == "consumeProduct" {
                    var line = lines[0]
                    var offer = (line["productOfferDetails"] as? [String: any Sendable]) ?? [:]
                    offer["consumptionState"] = "CONSUMPTION_STATE_CONSUMED"
                    line["productOfferDetails"] = offer
                    purchase["productLineItem"] = [line] + lines.dropFirst()
                }
                if isSubscription { state.subscriptions[token] = purchase } else { state.products[token] = purchase }
                return (200, Array("{}".utf8))
            }
        case "voidedPurchases":
            return voidedPage(query)
        default:
            return (404, Self.googleError(404, "notFound", "Not Found"))
        }
    }

    /// A page of voided purchases seen from `startTime` to `endTime` (30 days at most back), by
    /// `token` (an index, as opaque to the client as Google's).
    func voidedPage(_ query: [String: String]) -> (Int, [UInt8]) {
        let nowMillis = Int64(now().timeIntervalSince1970 * 1000)
        let start = query["startTime"].flatMap(Int64.init) ?? nowMillis - 30 * 86_400_000
        let end = query["endTime"].flatMap(Int64.init) ?? nowMillis
        // Google ignores startTime when a pagination token is set: a page is of the window it began.
        let paging = query["token"] != nil || query["pageSelection.token"] != nil
        guard paging || (start >= nowMillis - 30 * 86_400_000 - 60_000 && end <= nowMillis + 60_000), start <= end else {
            return (400, Self.googleError(400, "invalid", "startTime must be within the last 30 days and before endTime."))
        }
        let size = min(query["maxResults"].flatMap(Int.init) ?? query["pageSelection.maxResults"].flatMap(Int.init) ?? 1000, pageSize)
        let offset = (query["token"] ?? query["pageSelection.token"]).flatMap { Int($0.dropFirst("page-".count)) } ?? 0
        let matching = state.withLock { $0.voided }.filter { entry in
            let time = Int64(entry["voidedTimeMillis"] as? String ?? "") ?? 0
            return start <= time && time <= end
        }
        let page = Array(matching.dropFirst(offset).prefix(size))
        var answer: [String: any Sendable] = [
            "pageInfo": ["totalResults": matching.count, "resultPerPage": size, "startIndex": offset] as [String: any Sendable],
            "voidedPurchases": page,
        ]
        if offset + size < matching.count { answer["tokenPagination"] = ["nextPageToken": "page-\(offset + size)"] }
        return (200, Self.json(answer))
    }

    /// The token endpoint: the JWT bearer grant, its assertion checked as Google describes.
    func token(_ body: [UInt8]) -> (Int, [UInt8]) {
        if let fault = state.withLock({ state -> Fault? in
            guard let index = state.faults.firstIndex(where: { if case .tokenStatus = $0 { true } else { false } }) else { return nil }
            return state.faults.remove(at: index)
        }), case .tokenStatus(let status, let error) = fault {
            return (status, Self.json(["error": error, "error_description": "Injected by the test."]))
        }
        func refuse(_ description: String) -> (Int, [UInt8]) {
            (400, Self.json(["error": "invalid_grant", "error_description": description]))
        }
        var form: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
            if parts.count == 2 { form[parts[0]] = parts[1] }
        }
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return (
                400, Self.json(["error": "unsupported_grant_type", "error_description": "Invalid grant_type: \(form["grant_type"] ?? "")"])
            )
        }
        let parts = (form["assertion"] ?? "").split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]), let claimsBytes = Base64URL.decode(parts[1]),
            let signatureBytes = Base64URL.decode(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: headerBytes) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: claimsBytes) as? [String: Any]
        else { return refuse("Invalid JWT: the assertion is not a JWT.") }
        guard header["alg"] as? String == "RS256", let kid = header["kid"] as? String,
            let keyBytes = state.withLock({ $0.keys[kid] }), let key = try? _RSA.Signing.PublicKey(derRepresentation: keyBytes),
            key.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signatureBytes), for: Data("\(parts[0]).\(parts[1])".utf8),
                padding: .insecurePKCS1v1_5)
        else { return refuse("Invalid JWT Signature.") }
        let seconds = Int64(now().timeIntervalSince1970)
        guard let iat = (claims["iat"] as? NSNumber)?.int64Value, let exp = (claims["exp"] as? NSNumber)?.int64Value,
            iat <= seconds + 60, exp > seconds, exp - iat <= 3600
        else {
            return refuse(
                "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim."
            )
        }
        guard claims["iss"] as? String == serviceAccount else { return refuse("Invalid JWT: unknown issuer.") }
        guard let aud = claims["aud"] as? String, aud == tokenURL.absoluteString || aud == "https://oauth2.googleapis.com/token" else {
            return refuse("Invalid JWT: audience is not the token endpoint.")
        }
        guard (claims["scope"] as? String)?.split(separator: " ").contains("https://www.googleapis.com/auth/androidpublisher") == true
        else {
            return (400, Self.json(["error": "invalid_scope", "error_description": "Invalid OAuth scope or ID token audience provided."]))
        }
        let token = "ya29.standin-" + UUID().uuidString.lowercased()
        let lifetime = tokenLifetime
        state.withLock { $0.accessTokens[token] = now().addingTimeInterval(lifetime) }
        return (200, Self.json(["access_token": token, "expires_in": Int(tokenLifetime), "token_type": "Bearer"]))
    }

    func checkBearer(_ request: Request) -> Bool {
        guard let authorization = request.headers[.authorization], authorization.hasPrefix("Bearer ") else { return false }
        let token = String(authorization.dropFirst(7))
        guard let expires = state.withLock({ $0.accessTokens[token] }) else { return false }
        return now() < expires
    }

    static func googleError(_ code: Int, _ reason: String, _ message: String, status: String? = nil) -> [UInt8] {
        var error: [String: any Sendable] = [
            "code": code, "message": message, "errors": [["message": message, "domain": "androidpublisher", "reason": reason]],
        ]
        if let status { error["status"] = status }
        return json(["error": error])
    }

    static func json(_ object: [String: any Sendable]) -> [UInt8] {
        (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])).map { [UInt8]($0) } ?? []
    }

    static func response(_ status: Int, _ body: [UInt8]) -> Response {
        Response(status: .init(code: status), headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}
