import Foundation
import HTTPSemantics
import Time

/// When a failed call is tried again: the answers a store's client judges retryable (429, 5xx, its
/// own codes) and calls that got no answer; after `Retry-After` when the answer sends one (at most
/// ``maximumRetryAfter``), otherwise after a delay doubling from ``firstDelay`` to
/// ``maximumDelay``, scaled by a random factor in [0.5, 1).
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
    /// The operation (`notificationHistory`, `subscriptionPurchase`, ...).
    public var operation: String
    /// The HTTP status as text, or `unreachable` when no answer came.
    public var outcome: String
    /// How long the attempt took.
    public var seconds: Double

    /// A record.
    public init(operation: String, outcome: String, seconds: Double) {
        self.operation = operation
        self.outcome = outcome
        self.seconds = seconds
    }
}

/// The outbound pattern every store's API client shares (docs/app-store-api.md, "Retries";
/// docs/google-play.md, "The Play Developer API"): each attempt bounded in time and observed, failed
/// ones retried by an ``APIRetryPolicy``. What an answer means is the store's to judge.
public struct APICaller: Sendable {
    /// Sends each attempt.
    public let transport: any APITransport
    /// When attempts are tried again.
    public let policy: APIRetryPolicy
    let observe: @Sendable (APICallRecord) -> Void
    let sleep: @Sendable (Duration) async throws -> Void
    let now: @Sendable () -> Date

    /// A caller. `observe` sees every attempt; `sleep` and `now` are the waits between attempts and
    /// the clock `Retry-After` moments are read against.
    public init(
        transport: any APITransport, policy: APIRetryPolicy = APIRetryPolicy(),
        observe: @escaping @Sendable (APICallRecord) -> Void = { _ in },
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.transport = transport
        self.policy = policy
        self.observe = observe
        self.sleep = sleep
        self.now = now
    }

    /// One call of `operation`, retried by the policy; the successful (2xx) answer.
    ///
    /// - Parameters:
    ///   - request: the attempt's request, made again for each (a fresh token, say).
    ///   - judge: what a non-2xx answer means, and whether it may be tried again.
    ///   - unreachable: the failure of an attempt that got no answer, which may be tried again.
    public func send<Failure: Error>(
        _ operation: String, request: () async throws(Failure) -> APIRequest,
        judge: (APIResponse) -> (failure: Failure, retryable: Bool), unreachable: (any Error) -> Failure
    ) async throws(Failure) -> APIResponse {
        var attempt = 0
        while true {
            attempt += 1
            let outgoing = try await request()
            let started = ContinuousClock.now
            let failure: Failure
            let retryable: Bool
            var retryAfter: Duration?
            do {
                let response = try await transport.send(outgoing, timeout: policy.attemptTimeout)
                observe(APICallRecord(operation: operation, outcome: String(response.status), seconds: Self.seconds(since: started)))
                if (200..<300).contains(response.status) { return response }
                (failure, retryable) = judge(response)
                retryAfter = Self.retryAfter(response, now: now())
            } catch {
                observe(APICallRecord(operation: operation, outcome: "unreachable", seconds: Self.seconds(since: started)))
                (failure, retryable) = (unreachable(error), true)
            }
            guard retryable, attempt < policy.maximumAttempts else { throw failure }
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

    /// `Retry-After`: RFC 9110 §10.2.3's seconds or HTTP date, and the moment in milliseconds since
    /// 1970 that Apple documents ("Identifying rate limits"), a number too large to be seconds.
    public static func retryAfter(_ response: APIResponse, now: Date) -> Duration? {
        guard let value = response.header("Retry-After")?.trimmingCharacters(in: .whitespaces) else { return nil }
        if let number = Int64(value), number >= 0 {
            guard number > 1_000_000_000_000 else { return .seconds(number) }
            return .milliseconds(max(0, number - Int64((now.timeIntervalSince1970 * 1000).rounded(.down))))
        }
        let moment = Timestamp(secondsSince1970: Int64(now.timeIntervalSince1970))
        guard let date = HTTPDate.parse(value, now: moment) else { return nil }
        return .seconds(max(0, date.secondsSince1970 - moment.secondsSince1970))
    }

    /// `base` with `path` and the query, each value percent-encoded.
    public static func url(_ base: URL, path: String, query: [(String, String)]) -> String {
        var text = base.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        text += path
        if !query.isEmpty {
            text += "?" + query.map { "\($0.0)=\(percentEncoded($0.1))" }.joined(separator: "&")
        }
        return text
    }

    /// A value with everything but RFC 3986's unreserved characters percent-encoded.
    public static func percentEncoded(_ value: String) -> String {
        var unreserved = CharacterSet.alphanumerics
        unreserved.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? value
    }

    /// A base URL to call instead of the store's: https, or http to a loopback host only (a stand-in
    /// of the API on the same machine); nil for anything else.
    public static func baseURL(_ text: String) -> URL? {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(),
            scheme == "https" || (scheme == "http" && ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host))
        else { return nil }
        return url
    }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}
