import AppStore
import Foundation
import HTTPSemantics
import Time

/// Where the App Store Server API answers.
public enum AppStoreAPIEnvironment: String, Sendable, Hashable, CaseIterable {
    /// Real purchases.
    case production
    /// The sandbox: App Review, TestFlight and sandbox accounts.
    case sandbox

    /// The environments `app` accepts evidence of, production first: those its API is asked in
    /// (Xcode's has none).
    public static func accepted(by app: AppPurchases) -> [AppStoreAPIEnvironment] {
        let accepted = app.verifier.app.environments
        return allCases.filter { accepted.contains($0 == .production ? .production : .sandbox) }
    }

    /// A base URL to call instead of Apple's: https, or http to a loopback host only (a stand-in of
    /// the API on the same machine); nil for anything else.
    public static func baseURL(_ text: String) -> URL? {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(),
            scheme == "https" || (scheme == "http" && ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host))
        else { return nil }
        return url
    }

    /// Apple's base URL for this environment: the hosts Apple recommends since 2026-05-05 (the
    /// older `*.itunes.apple.com` ones still answer).
    public var baseURL: URL {
        switch self {
        case .production: URL(string: "https://api.storekit.apple.com")!
        case .sandbox: URL(string: "https://api.storekit-sandbox.apple.com")!
        }
    }
}

/// When a failed call is tried again (docs/app-store-api.md, "Retries"): 429 and 5xx answers,
/// Apple's `..._RETRYABLE` errors, and calls that got no answer; after `Retry-After` when Apple
/// sends one (at most ``maximumRetryAfter``), otherwise after a delay doubling from ``firstDelay``
/// to ``maximumDelay``, scaled by a random factor in [0.5, 1).
public struct APIRetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first included.
    public var maximumAttempts: Int
    /// The delay after the first failure.
    public var firstDelay: Duration
    /// The longest delay of the doubling.
    public var maximumDelay: Duration
    /// The longest `Retry-After` honoured; a longer one fails the call (the caller's own schedule,
    /// durable, takes it from there).
    public var maximumRetryAfter: Duration
    /// How long one attempt may take, answer included.
    public var attemptTimeout: Duration

    /// The defaults: 5 attempts, 1 s doubling to 60 s, `Retry-After` up to 10 minutes, 30 s an attempt.
    public init(
        maximumAttempts: Int = 5, firstDelay: Duration = .seconds(1), maximumDelay: Duration = .seconds(60),
        maximumRetryAfter: Duration = .seconds(600), attemptTimeout: Duration = .seconds(30)
    ) {
        self.maximumAttempts = maximumAttempts
        self.firstDelay = firstDelay
        self.maximumDelay = maximumDelay
        self.maximumRetryAfter = maximumRetryAfter
        self.attemptTimeout = attemptTimeout
    }
}

/// One attempt of one call, as `/metrics` counts it.
public struct APICallRecord: Sendable, Hashable {
    /// The operation (`notificationHistory`, `transactionHistory`, ...).
    public var operation: String
    /// The HTTP status as text, or `unreachable` when no answer came.
    public var outcome: String
    /// How long the attempt took.
    public var seconds: Double
}

/// A client of the App Store Server API for one app in one environment. Every call carries a
/// token from its ``APITokenSource``, is bounded in time, and is retried by its ``APIRetryPolicy``;
/// what it returns is Apple's answer unverified: signed fields go through `SignedDataVerifier`.
public struct AppStoreServerAPIClient: Sendable {
    /// Where calls go: Apple's base URL for the environment, or a stand-in's in tests.
    public let baseURL: URL
    /// The environment the base URL serves.
    public let environment: AppStoreAPIEnvironment
    let tokens: APITokenSource
    let transport: any APITransport
    let policy: APIRetryPolicy
    let observe: @Sendable (APICallRecord) -> Void
    let sleep: @Sendable (Duration) async throws -> Void
    let now: @Sendable () -> Date

    /// A client. `baseURL` defaults to Apple's for `environment`; `observe` sees every attempt;
    /// `sleep` and `now` are the waits between attempts and the clock the tokens are minted by.
    public init(
        environment: AppStoreAPIEnvironment, baseURL: URL? = nil, tokens: APITokenSource, transport: any APITransport,
        policy: APIRetryPolicy = APIRetryPolicy(), observe: @escaping @Sendable (APICallRecord) -> Void = { _ in },
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.environment = environment
        self.baseURL = baseURL ?? environment.baseURL
        self.tokens = tokens
        self.transport = transport
        self.policy = policy
        self.observe = observe
        self.sleep = sleep
        self.now = now
    }

    // MARK: - Operations

    /// `Get Notification History`: one page of the window `request` names, from `paginationToken`
    /// (nil for the first page).
    public func notificationHistory(_ request: NotificationHistoryRequest, paginationToken: String?) async throws(AppStoreAPIError)
        -> NotificationHistoryResponse
    {
        try await call(
            "notificationHistory", method: "POST", path: "/inApps/v1/notifications/history",
            query: paginationToken.map { [("paginationToken", $0)] } ?? [], body: try encode(request, "notificationHistory"))
    }

    /// `Get Transaction History` (v2): one page of the history of the customer who made
    /// `transactionId`, from `revision` (nil for the first page), oldest first.
    public func transactionHistory(_ transactionId: String, revision: String?) async throws(AppStoreAPIError) -> TransactionHistoryResponse
    {
        var query = [("sort", "ASCENDING")]
        if let revision { query.append(("revision", revision)) }
        return try await call(
            "transactionHistory", method: "GET", path: "/inApps/v2/history/\(try pathSegment(transactionId, "transactionHistory"))",
            query: query, body: nil)
    }

    /// `Get All Subscription Statuses` of the customer who made `transactionId`.
    public func subscriptionStatuses(_ transactionId: String) async throws(AppStoreAPIError) -> StatusResponse {
        try await call(
            "subscriptionStatuses", method: "GET",
            path: "/inApps/v1/subscriptions/\(try pathSegment(transactionId, "subscriptionStatuses"))", query: [], body: nil)
    }

    /// `Send Consumption Information` (the current version, `v2`): what the developer knows of the
    /// transaction a customer asked a refund of. Apple answers 202 with no body.
    public func sendConsumptionInformation(_ transactionId: String, _ request: ConsumptionRequest) async throws(AppStoreAPIError) {
        _ = try await send(
            "consumption", method: "PUT",
            path: "/inApps/v2/transactions/consumption/\(try pathSegment(transactionId, "consumption"))", query: [],
            body: try encode(request, "consumption"))
    }

    /// `Request a Test Notification`: Apple sends one to the app's notification URL.
    public func requestTestNotification() async throws(AppStoreAPIError) -> SendTestNotificationResponse {
        try await call("requestTestNotification", method: "POST", path: "/inApps/v1/notifications/test", query: [], body: nil)
    }

    /// `Get Test Notification Status` of the test notification `token` names.
    public func testNotificationStatus(_ token: String) async throws(AppStoreAPIError) -> CheckTestNotificationResponse {
        try await call(
            "testNotificationStatus", method: "GET",
            path: "/inApps/v1/notifications/test/\(try pathSegment(token, "testNotificationStatus"))", query: [], body: nil)
    }

    // MARK: - Calls

    /// One call, retried by the policy; its answer decoded as `Response`.
    func call<Response: Decodable>(
        _ operation: String, method: String, path: String, query: [(String, String)], body: [UInt8]?
    ) async throws(AppStoreAPIError) -> Response {
        let response = try await send(operation, method: method, path: path, query: query, body: body)
        do {
            return try JSONDecoder().decode(Response.self, from: Data(response.body))
        } catch {
            throw AppStoreAPIError(.malformed, operation: operation, status: response.status)
        }
    }

    /// One call, retried by the policy; the successful (2xx) answer.
    func send(_ operation: String, method: String, path: String, query: [(String, String)], body: [UInt8]?) async throws(AppStoreAPIError)
        -> APIResponse
    {
        let url = Self.url(baseURL, path: path, query: query)
        var attempt = 0
        while true {
            attempt += 1
            let token: String
            do {
                token = try await tokens.token(now: now())
            } catch {
                throw AppStoreAPIError(.credentials, operation: operation, message: error.description)
            }
            var headers = [("Authorization", "Bearer \(token)"), ("Accept", "application/json"), ("User-Agent", "iap-catalog")]
            if body != nil { headers.append(("Content-Type", "application/json")) }
            let request = APIRequest(method: method, url: url, headers: headers, body: body)
            let started = ContinuousClock.now
            let failure: AppStoreAPIError
            var retryAfter: Duration?
            do {
                let response = try await transport.send(request, timeout: policy.attemptTimeout)
                observe(APICallRecord(operation: operation, outcome: String(response.status), seconds: Self.seconds(since: started)))
                if (200..<300).contains(response.status) { return response }
                failure = Self.failure(response, operation: operation)
                retryAfter = Self.retryAfter(response, now: now())
            } catch {
                observe(APICallRecord(operation: operation, outcome: "unreachable", seconds: Self.seconds(since: started)))
                failure = AppStoreAPIError(.unreachable, operation: operation, message: "\(error)")
            }
            guard Self.isRetryable(failure), attempt < policy.maximumAttempts else { throw failure }
            let delay = retryAfter ?? backoff(after: attempt)
            if delay > policy.maximumRetryAfter { throw failure }
            do {
                try await sleep(delay)
            } catch {
                throw failure
            }
        }
    }

    /// The doubling delay after `attempt` failures, with its random factor.
    func backoff(after attempt: Int) -> Duration {
        var delay = policy.firstDelay
        for _ in 1..<attempt where delay < policy.maximumDelay { delay *= 2 }
        return min(delay, policy.maximumDelay) * Double.random(in: 0.5..<1)
    }

    static func isRetryable(_ error: AppStoreAPIError) -> Bool {
        switch error.kind {
        case .throttled, .unavailable, .unreachable: true
        case .refused: error.code.map { AppStoreAPIError.retryableCodes.contains($0) } ?? false
        case .unauthorized, .malformed, .credentials: false
        }
    }

    /// What a non-2xx answer means, with Apple's code and message when the body has them.
    static func failure(_ response: APIResponse, operation: String) -> AppStoreAPIError {
        let body = try? JSONDecoder().decode(ErrorBody.self, from: Data(response.body))
        let kind: AppStoreAPIError.Kind =
            switch response.status {
            case 401: .unauthorized
            case 429: .throttled
            case 500...: .unavailable
            default: .refused
            }
        return AppStoreAPIError(kind, operation: operation, status: response.status, code: body?.errorCode, message: body?.errorMessage)
    }

    /// `Retry-After`: Apple documents a moment in milliseconds since 1970 ("Identifying rate
    /// limits"); RFC 9110 §10.2.3's seconds and HTTP date are read too, a number too small to be a
    /// moment since 2001 being seconds.
    static func retryAfter(_ response: APIResponse, now: Date) -> Duration? {
        guard let value = response.header("Retry-After")?.trimmingCharacters(in: .whitespaces) else { return nil }
        if let number = Int64(value), number >= 0 {
            guard number > 1_000_000_000_000 else { return .seconds(number) }
            return .milliseconds(max(0, number - Int64((now.timeIntervalSince1970 * 1000).rounded(.down))))
        }
        let moment = Timestamp(secondsSince1970: Int64(now.timeIntervalSince1970))
        guard let date = HTTPDate.parse(value, now: moment) else { return nil }
        return .seconds(max(0, date.secondsSince1970 - moment.secondsSince1970))
    }

    static func url(_ base: URL, path: String, query: [(String, String)]) -> String {
        var text = base.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        text += path
        if !query.isEmpty {
            text += "?" + query.map { "\($0.0)=\(percentEncoded($0.1))" }.joined(separator: "&")
        }
        return text
    }

    /// A query value with everything but RFC 3986's unreserved characters percent-encoded.
    static func percentEncoded(_ value: String) -> String {
        var unreserved = CharacterSet.alphanumerics
        unreserved.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? value
    }

    /// A transaction id or token as one path segment: Apple's are digits or base64url-like; anything
    /// else is refused here rather than sent.
    func pathSegment(_ value: String, _ operation: String) throws(AppStoreAPIError) -> String {
        guard !value.isEmpty, value.utf8.count <= 512,
            value.utf8.allSatisfy({ byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2D
                    || byte == 0x5F || byte == 0x2E
            })
        else {
            throw AppStoreAPIError(.refused, operation: operation, message: "not a transaction id or token: \(value.prefix(40))")
        }
        return value
    }

    func encode(_ value: some Encodable, _ operation: String) throws(AppStoreAPIError) -> [UInt8] {
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            return Array(try encoder.encode(value))
        } catch {
            throw AppStoreAPIError(.malformed, operation: operation, message: "cannot encode the request")
        }
    }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}
