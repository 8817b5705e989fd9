import AppStore
import Foundation
import OutboundAPI

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
        APICaller.baseURL(text)
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

/// A client of the App Store Server API for one app in one environment. Every call carries a
/// token from its ``APITokenSource``, is bounded in time, and is retried by its ``APIRetryPolicy``;
/// what it returns is Apple's answer unverified: signed fields go through `SignedDataVerifier`.
public struct AppStoreServerAPIClient: Sendable {
    /// Where calls go: Apple's base URL for the environment, or a stand-in's in tests.
    public let baseURL: URL
    /// The environment the base URL serves.
    public let environment: AppStoreAPIEnvironment
    let tokens: APITokenSource
    let caller: APICaller
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
        caller = APICaller(transport: transport, policy: policy, observe: observe, sleep: sleep, now: now)
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
        let url = APICaller.url(baseURL, path: path, query: query)
        return try await caller.send(
            operation,
            request: { () async throws(AppStoreAPIError) -> APIRequest in
                let token: String
                do {
                    token = try await tokens.token(now: now())
                } catch {
                    throw AppStoreAPIError(.credentials, operation: operation, message: "\(error)")
                }
                var headers = [("Authorization", "Bearer \(token)"), ("Accept", "application/json"), ("User-Agent", "iap-catalog")]
                if body != nil { headers.append(("Content-Type", "application/json")) }
                return APIRequest(method: method, url: url, headers: headers, body: body)
            },
            judge: { response in
                let failure = Self.failure(response, operation: operation)
                return (failure, Self.isRetryable(failure))
            },
            unreachable: { AppStoreAPIError(.unreachable, operation: operation, message: "\($0)") })
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
}
