import AppStoreTestSupport
import Crypto
import FeedSigning
import Foundation
import Hummingbird
import LoopbackServer
import NIOCore
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A stand-in for Apple's App Store Server API on loopback, following Apple's documentation
/// (docs/app-store-api.md, "Tested here"), since no machine here reaches Apple:
///
/// - every call's bearer token is checked as Apple describes: ES256 by a key the stand-in was
///   given under its `kid`, `typ` JWT, `iss` the issuer id, `aud` `appstoreconnect-v1`, `bid` the
///   bundle id, `iat` not in the future, `exp` not past and at most an hour after `iat`; a token
///   that fails any of these is answered 401 with no body, as Apple does;
/// - `Get Notification History` pages its window with `paginationToken` and `hasMore`, the token
///   bound to the request's body (another body with it is `INVALID_PAGINATION_TOKEN`), and refuses
///   a window reaching further back than 180 days or ending before it starts;
/// - `Get Transaction History` (v2) pages a customer's transactions with `revision` and `hasMore`;
/// - faults are queued by the test: an answer of any status with Apple's error body and
///   `Retry-After`, a slow answer, a connection cut in the middle of its body.
public final class AppStoreAPIStandIn: Sendable {
    /// A fault the next request meets, in queue order.
    public enum Fault: Sendable {
        /// This status, with Apple's error body when `code` is set, and `Retry-After` when given.
        case status(Int, code: Int? = nil, retryAfter: String? = nil)
        /// The answer waits this long first.
        case slow(Duration)
        /// The answer's headers promise more body than comes, and the connection closes.
        case cut
    }

    /// One call the stand-in answered.
    public struct Call: Sendable, Hashable {
        public var operation: String
        public var status: Int
        /// The token's `kid`, when its header could be read.
        public var kid: String?
        public var query: [String: String]
    }

    /// A customer: every transaction id of theirs answers their whole history.
    public struct Customer: Sendable {
        public var signedTransactions: [String]
        public var transactionIds: Set<String>
        public var statuses: [(group: String, status: Int, originalTransactionId: String, transaction: String, renewal: String?)]

        public init(
            signedTransactions: [String], transactionIds: Set<String>,
            statuses: [(group: String, status: Int, originalTransactionId: String, transaction: String, renewal: String?)] = []
        ) {
            self.signedTransactions = signedTransactions
            self.transactionIds = transactionIds
            self.statuses = statuses
        }
    }

    struct State {
        var keys: [String: Data] = [:]  // x9.63 bytes: P256's key type is not Sendable
        var notifications: [(firstSent: Int64, signedPayload: String, failed: Bool)] = []
        var customers: [Customer] = []
        var faults: [Fault] = []
        var calls: [Call] = []
        var consumption: [(transactionId: String, body: [UInt8])] = []
        var testNotifications: [String: (signedPayload: String, results: [(Int64, String)])] = [:]
    }

    public let issuerId: String
    public let bundleId: String
    /// Notifications in a page of history, and transactions in a page of a customer's.
    public let pageSize: Int
    let now: @Sendable () -> Date
    let state = Mutex(State())
    /// Signs the `TEST` notification that `Request a Test Notification` sends.
    let pki: AppStoreTestPKI?
    /// Where Apple would post notifications (`Request a Test Notification` posts there).
    let notificationURL = Mutex<URL?>(nil)
    let server: LoopbackServer

    /// The stand-in's base URL, in place of Apple's.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(server.port)")! }

    private init(
        issuerId: String, bundleId: String, pageSize: Int, pki: AppStoreTestPKI?, now: @escaping @Sendable () -> Date,
        server: LoopbackServer
    ) {
        self.issuerId = issuerId
        self.bundleId = bundleId
        self.pageSize = pageSize
        self.pki = pki
        self.now = now
        self.server = server
    }

    // MARK: - What the test sets

    /// Accepts tokens signed by `key` under `kid` (a key made in App Store Connect).
    public func accept(kid: String, key: P256.Signing.PublicKey) {
        let bytes = key.x963Representation
        state.withLock { $0.keys[kid] = bytes }
    }
    /// Stops accepting `kid` (a key revoked in App Store Connect).
    public func revoke(kid: String) { state.withLock { _ = $0.keys.removeValue(forKey: kid) } }
    /// Adds a notification Apple first tried to send at `firstSent`; `failed` when every attempt failed.
    public func addNotification(_ signedPayload: String, firstSent: Date, failed: Bool = false) {
        state.withLock {
            $0.notifications.append((Self.milliseconds(firstSent), signedPayload, failed))
            $0.notifications.sort { $0.firstSent < $1.firstSent }
        }
    }
    /// Adds a customer.
    public func addCustomer(_ customer: Customer) { state.withLock { $0.customers.append(customer) } }
    /// Queues faults for the next requests.
    public func inject(_ faults: Fault...) { state.withLock { $0.faults += faults } }
    /// Where `Request a Test Notification` posts the test notification.
    public func setNotificationURL(_ url: URL?) { notificationURL.withLock { $0 = url } }

    /// Every call answered, in order.
    public var calls: [Call] { state.withLock { $0.calls } }
    /// Every consumption information body received, by transaction id.
    public var consumption: [(transactionId: String, body: [UInt8])] { state.withLock { $0.consumption } }

    // MARK: - Running

    /// A stand-in on a free loopback port.
    public static func start(
        issuerId: String = "57246542-96fe-1a63-e053-0824d011072a", bundleId: String = "com.example.app", pageSize: Int = 20,
        pki: AppStoreTestPKI? = nil, now: @escaping @Sendable () -> Date = { Date() }
    ) async throws -> AppStoreAPIStandIn {
        let server = await LoopbackServer.start(label: "test.app-store-api")
        let standIn = AppStoreAPIStandIn(
            issuerId: issuerId, bundleId: bundleId, pageSize: pageSize, pki: pki, now: now, server: server)
        server.handle { try await standIn.answer($0) }
        return standIn
    }

    /// Stops the server.
    public func stop() async {
        await server.stop()
    }

    // MARK: - Answering

    func answer(_ request: Request) async throws -> Response {
        let path = request.uri.path
        let query = Dictionary(request.uri.queryParameters.map { (String($0.key), String($0.value)) }, uniquingKeysWith: { $1 })
        let operation = Self.operation(request.method, path)
        let kid = Self.kid(request)
        func record(_ status: Int) {
            state.withLock { $0.calls.append(Call(operation: operation, status: status, kid: kid, query: query)) }
        }
        guard checkToken(request) else {
            record(401)
            // What Apple answers: text, not its JSON error body.
            return Response(
                status: .unauthorized, headers: [.contentType: "text/plain"],
                body: .init(byteBuffer: ByteBuffer(string: "Unauthenticated\n\nRequest ID: STANDIN\(calls.count).0.0\n")))
        }
        if let fault = state.withLock({ $0.faults.isEmpty ? nil : $0.faults.removeFirst() }) {
            switch fault {
            case .status(let status, let code, let retryAfter):
                record(status)
                var headers: HTTPFields = [.contentType: "application/json"]
                if let retryAfter { headers[.retryAfter] = retryAfter }
                let body = code.map { #"{"errorCode":\#($0),"errorMessage":"\#(Self.message(for: $0))"}"# } ?? ""
                return Response(status: .init(code: status), headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
            case .slow(let delay):
                try await Task.sleep(for: delay)
            case .cut:
                record(200)
                return Response(
                    status: .ok, headers: [.contentType: "application/json", .contentLength: "1000"],
                    body: ResponseBody { writer in
                        try await writer.write(ByteBuffer(string: #"{"notificationHistory":["#))
                        throw CancellationError()
                    })
            }
        }
        let body = Array(buffer: try await request.body.collect(upTo: 1 << 20))
        let (status, json) = route(operation, path: path, query: query, body: body)
        record(status)
        if operation == "requestTestNotification", status == 200, let token = json.flatMap({ Self.field($0, "testNotificationToken") }) {
            await sendTestNotification(token)
        }
        return Response(
            status: .init(code: status), headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: json ?? [])))
    }

    func route(_ operation: String, path: String, query: [String: String], body: [UInt8]) -> (Int, [UInt8]?) {
        let last = String(path.split(separator: "/").last ?? "")
        switch operation {
        case "notificationHistory": return notificationHistory(body, token: query["paginationToken"])
        case "transactionHistory": return transactionHistory(last, revision: query["revision"])
        case "subscriptionStatuses": return statuses(last)
        case "consumption":
            // Apple's rules for the body: consent given, a delivery status, a share only when delivered.
            guard let request = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
                return Self.error(400, 4_000_000)
            }
            guard request["customerConsented"] as? Bool == true else { return Self.error(400, 4_000_035) }
            let statuses = [
                "DELIVERED", "UNDELIVERED_QUALITY_ISSUE", "UNDELIVERED_WRONG_ITEM", "UNDELIVERED_SERVER_OUTAGE", "UNDELIVERED_OTHER",
            ]
            guard let delivery = request["deliveryStatus"] as? String, statuses.contains(delivery) else {
                return Self.error(400, 4_000_036)
            }
            guard request["sampleContentProvided"] is Bool else { return Self.error(400, 4_000_041) }
            if let share = request["consumptionPercentage"] as? Int,
                !(0...100_000).contains(share) || (delivery != "DELIVERED" && share != 0)
            {
                return Self.error(400, 4_000_000)
            }
            state.withLock { $0.consumption.append((last, body)) }
            return (202, nil)
        case "requestTestNotification":
            return (200, Self.json(["testNotificationToken": UUID().uuidString.lowercased() + "_" + String(Self.milliseconds(now()))]))
        case "testNotificationStatus":
            guard let test = state.withLock({ $0.testNotifications[last] }) else { return Self.error(404, 4_040_008) }
            return (
                200,
                Self.json([
                    "signedPayload": test.signedPayload,
                    "sendAttempts": test.results.map { result -> [String: any Sendable] in
                        ["attemptDate": result.0, "sendAttemptResult": result.1]
                    },
                ])
            )
        default: return Self.error(404, 4_040_000)
        }
    }

    /// One page of the window the body names.
    func notificationHistory(_ body: [UInt8], token: String?) -> (Int, [UInt8]?) {
        guard let request = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let start = (request["startDate"] as? NSNumber)?.int64Value, let end = (request["endDate"] as? NSNumber)?.int64Value
        else { return Self.error(400, 4_000_000) }
        guard start < end else { return Self.error(400, 4_000_013) }
        guard start >= Self.milliseconds(now()) - 180 * 86_400_000 else { return Self.error(400, 4_000_012) }
        let onlyFailures = (request["onlyFailures"] as? Bool) ?? false
        // The token names the next offset and the body it belongs to.
        let digest = Base64URL.encode(SHA256.hash(data: body)).prefix(16)
        var offset = 0
        if let token {
            let parts = token.split(separator: ".")
            guard parts.count == 2, let from = Int(parts[0]), parts[1] == digest else { return Self.error(400, 4_000_014) }
            offset = from
        }
        let matching = state.withLock { state in
            state.notifications.filter { $0.firstSent >= start && $0.firstSent < end && (!onlyFailures || $0.failed) }
        }
        let page = matching.dropFirst(offset).prefix(pageSize)
        let next = offset + page.count
        var answer: [String: any Sendable] = [
            "hasMore": next < matching.count,
            "notificationHistory": page.map { item -> [String: any Sendable] in
                let attempt: [String: any Sendable] = [
                    "attemptDate": item.firstSent, "sendAttemptResult": item.failed ? "UNSUCCESSFUL_HTTP_RESPONSE_CODE" : "SUCCESS",
                ]
                return ["signedPayload": item.signedPayload, "sendAttempts": [attempt]]
            },
        ]
        if next < matching.count { answer["paginationToken"] = "\(next).\(digest)" }
        return (200, Self.json(answer))
    }

    /// One page of the customer's history.
    func transactionHistory(_ transactionId: String, revision: String?) -> (Int, [UInt8]?) {
        guard let customer = state.withLock({ $0.customers.first { $0.transactionIds.contains(transactionId) } }) else {
            return Self.error(404, 4_040_010)
        }
        var offset = 0
        if let revision {
            guard let from = Int(revision.dropFirst(2)), revision.hasPrefix("r-") else { return Self.error(400, 4_000_005) }
            offset = from
        }
        let page = customer.signedTransactions.dropFirst(offset).prefix(pageSize)
        let next = offset + page.count
        return (
            200,
            Self.json([
                "revision": "r-\(next)", "hasMore": next < customer.signedTransactions.count, "bundleId": bundleId,
                "appAppleId": 1_234_567_890, "environment": "Production", "signedTransactions": Array(page),
            ])
        )
    }

    func statuses(_ transactionId: String) -> (Int, [UInt8]?) {
        guard let customer = state.withLock({ $0.customers.first { $0.transactionIds.contains(transactionId) } }) else {
            return Self.error(404, 4_040_010)
        }
        let groups = Dictionary(grouping: customer.statuses, by: \.group)
        return (
            200,
            Self.json([
                "environment": "Production", "bundleId": bundleId, "appAppleId": 1_234_567_890,
                "data": groups.keys.sorted().map { group -> [String: any Sendable] in
                    [
                        "subscriptionGroupIdentifier": group,
                        "lastTransactions": (groups[group] ?? []).map { item -> [String: any Sendable] in
                            var entry: [String: any Sendable] = [
                                "status": item.status, "originalTransactionId": item.originalTransactionId,
                                "signedTransactionInfo": item.transaction,
                            ]
                            if let renewal = item.renewal { entry["signedRenewalInfo"] = renewal }
                            return entry
                        },
                    ]
                },
            ])
        )
    }

    /// Posts a signed `TEST` notification to the notification URL, as Apple does, and keeps the outcome.
    func sendTestNotification(_ token: String) async {
        guard let pki else { return }
        let payload = AppStoreTestPKI.notification(
            type: "TEST", data: ["bundleId": bundleId], ["signedDate": Self.milliseconds(now())])
        guard let signed = try? pki.jws(payload: payload) else { return }
        var result = "SUCCESS"
        if let url = notificationURL.withLock({ $0 }) {
            var request = URLRequest(url: url, timeoutInterval: 5)
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Self.json(["signedPayload": signed]).map { Data($0) }
            do {
                let (_, response) = try await URLSession.shared.data(for: request)
                let status = (response as? HTTPURLResponse)?.statusCode ?? 0
                result = (200..<300).contains(status) ? "SUCCESS" : "UNSUCCESSFUL_HTTP_RESPONSE_CODE"
            } catch {
                result = "NO_RESPONSE"
            }
        } else {
            result = "NO_RESPONSE"
        }
        let entry = (signed, [(Self.milliseconds(now()), result)])
        state.withLock { $0.testNotifications[token] = entry }
    }

    // MARK: - The token

    /// Apple's checks of the bearer token.
    func checkToken(_ request: Request) -> Bool {
        guard let authorization = request.headers[.authorization], authorization.hasPrefix("Bearer ") else { return false }
        let parts = authorization.dropFirst(7).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]), let claimsBytes = Base64URL.decode(parts[1]),
            let signatureBytes = Base64URL.decode(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: headerBytes) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: claimsBytes) as? [String: Any],
            header["alg"] as? String == "ES256", header["typ"] as? String == "JWT", let kid = header["kid"] as? String,
            let keyBytes = state.withLock({ $0.keys[kid] }), let key = try? P256.Signing.PublicKey(x963Representation: keyBytes),
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
            key.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8))
        else { return false }
        guard claims["iss"] as? String == issuerId, claims["aud"] as? String == "appstoreconnect-v1",
            claims["bid"] as? String == bundleId, let iat = (claims["iat"] as? NSNumber)?.int64Value,
            let exp = (claims["exp"] as? NSNumber)?.int64Value
        else { return false }
        let seconds = Int64(now().timeIntervalSince1970)
        return iat <= seconds + 60 && exp > seconds && exp - iat <= 3600
    }

    static func kid(_ request: Request) -> String? {
        guard let authorization = request.headers[.authorization], authorization.hasPrefix("Bearer "),
            let first = authorization.dropFirst(7).split(separator: ".").first, let bytes = Base64URL.decode(first),
            let header = try? JSONSerialization.jsonObject(with: bytes) as? [String: Any]
        else { return nil }
        return header["kid"] as? String
    }

    static func operation(_ method: HTTPRequest.Method, _ path: String) -> String {
        switch (method, path) {
        case (.post, "/inApps/v1/notifications/history"): "notificationHistory"
        case (.get, _) where path.hasPrefix("/inApps/v2/history/"): "transactionHistory"
        case (.get, _) where path.hasPrefix("/inApps/v1/subscriptions/"): "subscriptionStatuses"
        case (.put, _) where path.hasPrefix("/inApps/v2/transactions/consumption/"): "consumption"
        case (.put, _) where path.hasPrefix("/inApps/v1/transactions/consumption/"): "consumptionV1"
        case (.post, "/inApps/v1/notifications/test"): "requestTestNotification"
        case (.get, _) where path.hasPrefix("/inApps/v1/notifications/test/"): "testNotificationStatus"
        default: "unknown"
        }
    }

    static func message(for code: Int) -> String {
        switch code {
        case 4_000_005: "Invalid request revision."
        case 4_000_012: "Invalid request. The start date is earlier than the allowed start date."
        case 4_000_013: "Invalid request. The end date precedes the start date or the dates are the same."
        case 4_000_014: "Invalid request. The pagination token is invalid."
        case 4_040_008: "Either the test notification token is expired or the notification and status are not yet available."
        case 4_040_010: "Transaction id not found."
        case 4_290_000: "Rate limit exceeded."
        case 5_000_000: "An unknown error occurred."
        case 5_000_001: "An unknown error occurred. Please try again."
        default: "Error."
        }
    }

    static func error(_ status: Int, _ code: Int) -> (Int, [UInt8]?) {
        (status, json(["errorCode": code, "errorMessage": message(for: code)]))
    }

    static func field(_ json: [UInt8], _ name: String) -> String? {
        (try? JSONSerialization.jsonObject(with: Data(json)) as? [String: Any])?[name] as? String
    }

    static func json(_ object: [String: any Sendable]) -> [UInt8]? {
        (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])).map(Array.init)
    }

    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
}
