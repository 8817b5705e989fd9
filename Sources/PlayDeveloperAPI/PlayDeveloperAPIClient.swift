import Foundation
import GooglePlay
import OutboundAPI

/// Why a call of the Play Developer API failed, with Google's status, `reason` and message when
/// its error body has them (`{"error": {"code", "message", "status", "errors": [{"reason"}]}}`).
public struct PlayAPIError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure it is.
    public enum Kind: String, Sendable, Hashable {
        /// 401: the access token was refused.
        case unauthorized
        /// 429, or Google's rate-limit reasons: slow down, then again.
        case throttled
        /// 5xx: Google could not answer now.
        case unavailable
        /// No answer at all.
        case unreachable
        /// 410: the purchase is gone (expired more than 60 days ago, or its token invalidated).
        case gone
        /// Any other 4xx: the request is wrong (a token Google does not know is 400 `invalid`).
        case refused
        /// A 2xx answer that is not what the operation returns.
        case malformed
        /// The service account's key file could not make a token.
        case credentials
    }

    /// The kind.
    public var kind: Kind
    /// The operation (`subscriptionPurchase`, `acknowledgeSubscription`, `token`, ...).
    public var operation: String
    /// The HTTP status, when an answer came.
    public var status: Int?
    /// Google's `reason` (`invalid`, `purchaseTokenNoLongerValid`, `rateLimitExceeded`, ...).
    public var reason: String?
    /// Google's message, or what went wrong.
    public var message: String?

    /// An error.
    public init(_ kind: Kind, operation: String, status: Int? = nil, reason: String? = nil, message: String? = nil) {
        self.kind = kind
        self.operation = operation
        self.status = status
        self.reason = reason
        self.message = message
    }

    /// Google's reasons for a quota or rate limit (which older quotas answered with 403).
    static let rateLimitReasons: Set<String> = ["rateLimitExceeded", "userRateLimitExceeded", "quotaExceeded"]

    /// Whether the call may be tried again as it is.
    public var isRetryable: Bool {
        switch kind {
        case .throttled, .unavailable, .unreachable: true
        case .unauthorized, .gone, .refused, .malformed, .credentials: false
        }
    }

    public var description: String {
        var text = "\(operation): \(kind.rawValue)"
        if let status { text += " (\(status)\(reason.map { " \($0)" } ?? ""))" }
        if let message { text += ": \(message)" }
        return text
    }

    /// What a non-2xx answer of the API means.
    static func apiFailure(_ response: APIResponse, operation: String) -> PlayAPIError {
        struct Body: Decodable {
            struct Detail: Decodable {
                var reason: String?
            }
            struct Failure: Decodable {
                var message: String?
                var status: String?
                var errors: [Detail]?
            }
            var error: Failure?
        }
        let body = (try? JSONDecoder().decode(Body.self, from: Data(response.body)))?.error
        let reason = body?.errors?.first?.reason
        let kind: Kind =
            switch response.status {
            case 401: .unauthorized
            case 429: .throttled
            case 403 where reason.map(rateLimitReasons.contains) == true: .throttled
            case 410: .gone
            case 500...: .unavailable
            default: .refused
            }
        return PlayAPIError(kind, operation: operation, status: response.status, reason: reason ?? body?.status, message: body?.message)
    }

    /// What a non-2xx answer of the token endpoint means (RFC 6749 §5.2: `error`,
    /// `error_description`): `invalid_grant` and the like are the key's, not to be tried again.
    static func tokenFailure(_ response: APIResponse) -> PlayAPIError {
        struct Body: Decodable {
            var error: String?
            var error_description: String?
        }
        let body = try? JSONDecoder().decode(Body.self, from: Data(response.body))
        let kind: Kind =
            switch response.status {
            case 429: .throttled
            case 500...: .unavailable
            default: .credentials
            }
        return PlayAPIError(kind, operation: "token", status: response.status, reason: body?.error, message: body?.error_description)
    }
}

/// A client of the Google Play Developer API for one app (docs/google-play.md, "The Play Developer
/// API"): every call carries an access token of the app's service account, is bounded in time, and
/// is retried by the shared ``APIRetryPolicy``; a refused token is replaced once.
public struct PlayDeveloperAPIClient: Sendable {
    /// Google's base URL.
    public static let googleBaseURL = URL(string: "https://androidpublisher.googleapis.com")!

    /// Where calls go: Google's, or a stand-in's in tests.
    public let baseURL: URL
    /// The app's package name.
    public let packageName: String
    let tokens: PlayAccessTokens
    let caller: APICaller
    let now: @Sendable () -> Date

    /// A client for `packageName`, with the service account's `tokens`.
    public init(
        packageName: String, baseURL: URL? = nil, tokens: PlayAccessTokens, caller: APICaller,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.packageName = packageName
        self.baseURL = baseURL ?? Self.googleBaseURL
        self.tokens = tokens
        self.caller = caller
        self.now = now
    }

    // MARK: - Operations

    /// `purchases.subscriptionsv2.get`: the subscription purchase `token` names, now.
    public func subscriptionPurchase(_ token: String) async throws(PlayAPIError) -> PlaySubscriptionPurchase {
        try await call(
            "subscriptionPurchase", method: "GET", path: "/purchases/subscriptionsv2/tokens/\(try segment(token, "subscriptionPurchase"))")
    }

    /// `purchases.productsv2.getproductpurchasev2`: the one-time product purchase `token` names, now.
    public func productPurchase(_ token: String) async throws(PlayAPIError) -> PlayProductPurchase {
        try await call("productPurchase", method: "GET", path: "/purchases/productsv2/tokens/\(try segment(token, "productPurchase"))")
    }

    /// `purchases.subscriptions.acknowledge` (there is no v2 one): the subscription `token` of
    /// `productId` is the app's, and Google keeps it past its three days.
    public func acknowledgeSubscription(productId: String, token: String) async throws(PlayAPIError) {
        let path =
            "/purchases/subscriptions/\(try segment(productId, "acknowledgeSubscription"))/tokens/\(try segment(token, "acknowledgeSubscription")):acknowledge"
        _ = try await send("acknowledgeSubscription", method: "POST", path: path, body: Array("{}".utf8))
    }

    /// `purchases.products.acknowledge`: the one-time purchase is the app's, not consumed.
    public func acknowledgeProduct(productId: String, token: String) async throws(PlayAPIError) {
        let path =
            "/purchases/products/\(try segment(productId, "acknowledgeProduct"))/tokens/\(try segment(token, "acknowledgeProduct")):acknowledge"
        _ = try await send("acknowledgeProduct", method: "POST", path: path, body: Array("{}".utf8))
    }

    /// `purchases.products.consume`: the consumable is used up (which also acknowledges it) and may
    /// be bought again.
    public func consumeProduct(productId: String, token: String) async throws(PlayAPIError) {
        let path = "/purchases/products/\(try segment(productId, "consumeProduct"))/tokens/\(try segment(token, "consumeProduct")):consume"
        _ = try await send("consumeProduct", method: "POST", path: path, body: nil)
    }

    /// One page of `purchases.voidedpurchases.list`: orders voided from `start` to `end` (Google keeps
    /// 30 days), subscriptions included, from `pageToken` (nil for the first page), oldest first.
    public func voidedPurchases(from start: Date, to end: Date, pageToken: String?) async throws(PlayAPIError) -> PlayVoidedPurchasesPage {
        var query = [
            ("startTime", String(Int64(start.timeIntervalSince1970 * 1000))), ("endTime", String(Int64(end.timeIntervalSince1970 * 1000))),
            ("type", "1"), ("maxResults", "1000"),
        ]
        if let pageToken { query.append(("token", pageToken)) }
        return try await call("voidedPurchases", method: "GET", path: "/purchases/voidedpurchases", query: query)
    }

    // MARK: - Calls

    func call<Response: Decodable>(_ operation: String, method: String, path: String, query: [(String, String)] = [])
        async throws(PlayAPIError)
        -> Response
    {
        let response = try await send(operation, method: method, path: path, query: query, body: nil)
        do {
            return try JSONDecoder().decode(Response.self, from: Data(response.body))
        } catch {
            throw PlayAPIError(
                .malformed, operation: operation, status: response.status, message: "the answer is not what \(operation) returns")
        }
    }

    /// One call, retried by the policy; a 401 gets a new token and one more try.
    func send(_ operation: String, method: String, path: String, query: [(String, String)] = [], body: [UInt8]?) async throws(PlayAPIError)
        -> APIResponse
    {
        let url = APICaller.url(
            baseURL, path: "/androidpublisher/v3/applications/\(try segment(packageName, operation))" + path, query: query)
        for attempt in 1...2 {
            do {
                return try await caller.send(
                    operation,
                    request: { () async throws(PlayAPIError) -> APIRequest in
                        let token = try await tokens.token(now: now())
                        var headers = [("Authorization", "Bearer \(token)"), ("Accept", "application/json"), ("User-Agent", "iap-catalog")]
                        if body != nil { headers.append(("Content-Type", "application/json")) }
                        return APIRequest(method: method, url: url, headers: headers, body: body)
                    },
                    judge: { response in
                        let failure = PlayAPIError.apiFailure(response, operation: operation)
                        return (failure, failure.isRetryable)
                    },
                    unreachable: { PlayAPIError(.unreachable, operation: operation, message: "\($0)") })
            } catch  where error.kind == .unauthorized && attempt == 1 {
                await tokens.invalidate()
            }
        }
        throw PlayAPIError(.unauthorized, operation: operation, status: 401, message: "a new access token was refused too")
    }

    /// A package name, product id or purchase token as one path segment: Google's are letters,
    /// digits, `.`, `_` and `-`; anything else is refused here rather than sent.
    func segment(_ value: String, _ operation: String) throws(PlayAPIError) -> String {
        guard !value.isEmpty, value.utf8.count <= 1024,
            value.utf8.allSatisfy({ byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2D
                    || byte == 0x5F || byte == 0x2E
            })
        else { throw PlayAPIError(.refused, operation: operation, message: "not a package name, product id or token: \(value.prefix(40))") }
        return value
    }
}

/// One page of `purchases.voidedpurchases.list`.
public struct PlayVoidedPurchasesPage: Decodable, Sendable {
    /// Paging.
    public struct TokenPagination: Decodable, Sendable {
        /// The next page's token; absent on the last page.
        public var nextPageToken: String?
    }

    /// The voided orders, oldest first.
    public var voidedPurchases: [PlayVoidedPurchase]?
    /// Paging.
    public var tokenPagination: TokenPagination?
}
