import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import Synchronization

/// One HTTP request of a store's API client.
public struct APIRequest: Sendable {
    /// `GET`, `POST` or `PUT`.
    public var method: String
    /// The whole URL, query included.
    public var url: String
    /// The headers, by name and value.
    public var headers: [(String, String)]
    /// The body, when there is one.
    public var body: [UInt8]?

    /// A request.
    public init(method: String, url: String, headers: [(String, String)], body: [UInt8]? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// One HTTP answer.
public struct APIResponse: Sendable {
    /// The HTTP status.
    public var status: Int
    /// The headers, by name and value.
    public var headers: [(String, String)]
    /// The whole body.
    public var body: [UInt8]

    /// A value with these fields.
    public init(status: Int, headers: [(String, String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first value of the header `name`, case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }
}

/// Sends one request and reads its whole answer, or throws when none came within `timeout`.
public protocol APITransport: Sendable {
    func send(_ request: APIRequest, timeout: Duration) async throws -> APIResponse
    /// Closes what the transport holds open; it sends nothing afterwards.
    func shutdown() async throws
}

/// ``APITransport`` by AsyncHTTPClient, the server-side Swift ecosystem's HTTP client: pooled
/// connections, TLS with the system's trust roots, no redirects followed (the stores' APIs send
/// none; one would be a misconfiguration, reported as the answer it is), answers read up to
/// ``maximumBodyBytes``.
public final class HTTPClientTransport: APITransport {
    /// The largest answer read: a page of history is at most a few hundred KiB.
    public static let maximumBodyBytes = 8 * 1024 * 1024

    /// Made by the first request: a server whose apps name no API credentials opens no pool.
    private let pool = Mutex<(client: HTTPClient?, closed: Bool)>((nil, false))

    /// A transport with its own connection pool; ``shutdown()`` it when done.
    public init() {}

    private var client: HTTPClient {
        get throws {
            try pool.withLock { pool in
                guard !pool.closed else { throw HTTPClientError.alreadyShutdown }
                if let client = pool.client { return client }
                var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
                configuration.timeout = HTTPClient.Configuration.Timeout(connect: .seconds(10), read: .seconds(30))
                let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
                pool.client = client
                return client
            }
        }
    }

    /// Sends `request` and reads its whole answer, within `timeout`.
    public func send(_ request: APIRequest, timeout: Duration) async throws -> APIResponse {
        var outgoing = HTTPClientRequest(url: request.url)
        outgoing.method = HTTPMethod(rawValue: request.method)
        for (name, value) in request.headers { outgoing.headers.add(name: name, value: value) }
        if let body = request.body { outgoing.body = .bytes(ByteBuffer(bytes: body)) }
        let deadline =
            NIODeadline.now()
            + TimeAmount.nanoseconds(Int64(timeout.components.seconds) * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000)
        let response = try await client.execute(outgoing, deadline: deadline)
        let body = try await response.body.collect(upTo: Self.maximumBodyBytes)
        return APIResponse(
            status: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) }, body: Array(buffer: body))
    }

    /// Closes the pool's connections.
    public func shutdown() async throws {
        let client = pool.withLock { pool -> HTTPClient? in
            pool.closed = true
            defer { pool.client = nil }
            return pool.client
        }
        try await client?.shutdown()
    }
}
