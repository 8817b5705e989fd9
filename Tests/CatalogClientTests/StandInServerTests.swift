import CatalogClient
import CatalogKit
import Foundation
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

/// What the real server does not produce on demand (5xx, silence, `no-store`, a bare 304), from a
/// small Hummingbird stand-in on loopback.
@Suite struct StandInServerTests {
    static let path = "/v1/apps/com.example.client/products.json"

    /// Serves `respond` (given the request's number, from 1) at the feed path during `body`.
    private func withStandIn(
        _ respond: @escaping @Sendable (Int) async throws -> Response,
        _ body: @Sendable (URL, _ requests: @Sendable () -> Int) async throws -> Void
    ) async throws {
        let count = Mutex(0)
        let router = Router()
        router.get(RouterPath(Self.path)) { _, _ in
            let number = count.withLock {
                $0 += 1
                return $0
            }
            return try await respond(number)
        }
        try await Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0))).test(.live) { client in
            let port = try #require(client.port)
            let server = try #require(URL(string: "http://127.0.0.1:\(port)"))
            try await body(server, { count.withLock { $0 } })
        }
    }

    private static func feed(_ json: String) -> Response {
        Response(status: .ok, headers: [.contentType: "application/json", .eTag: #""v1""#], body: .init(byteBuffer: .init(string: json)))
    }

    /// 503s are retried with backoff, and the third attempt's answer is the list.
    @Test func serverErrorsAreRetried() async throws {
        let fixture = try ServedCatalog(ids: [])
        defer { fixture.remove() }
        try await withStandIn({ number in
            number < 3 ? Response(status: .serviceUnavailable, headers: [.retryAfter: "0"]) : Self.feed(#"["com.example.client.coins"]"#)
        }) { server, requests in
            let list = await fixture.client(server: server) { $0.fetchAttempts = 3 }.products(platform: .iOS, appVersion: nil)
            #expect(list.source == .network)
            #expect(list.identifiers == ["com.example.client.coins"])
            #expect(requests() == 3)
        }
    }

    /// When every attempt fails, the attempts stop at the configured number and the cache answers.
    @Test func attemptsAreBoundedThenTheCacheAnswers() async throws {
        let fixture = try ServedCatalog(ids: [])
        defer { fixture.remove() }
        try await withStandIn({ number in
            number == 1 ? Self.feed(#"["com.example.client.coins"]"#) : Response(status: .internalServerError)
        }) { server, requests in
            let first = await fixture.client(server: server).products(platform: .iOS, appVersion: nil)
            #expect(first.source == .network)
            let second = await fixture.client(server: server) { $0.fetchAttempts = 3 }.refresh(platform: .iOS, appVersion: nil)
            #expect(second.source == .staleCache)
            #expect(second.status == 500)
            #expect(second.error?.code == .server)
            #expect(second.identifiers == ["com.example.client.coins"])
            #expect(requests() == 4, "one download, then three attempts")
        }
    }

    /// A server that accepts the request and never answers costs one timeout, then the fallback.
    @Test func aSilentServerTimesOut() async throws {
        let fixture = try ServedCatalog(ids: [])
        defer { fixture.remove() }
        // Silent until the client has given up; then the server may shut down without waiting.
        let released = Mutex(false)
        try await withStandIn({ _ in
            while !released.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(50)) }
            return Self.feed("[]")
        }) { server, _ in
            defer { released.withLock { $0 = true } }
            let client = fixture.client(server: server) {
                $0.requestTimeout = 1
                $0.fetchAttempts = 1
            }
            let list = await client.products(platform: .iOS, appVersion: nil)
            #expect(list.source == .fallback)
            #expect(list.error?.code == .transport)
            #expect(list.identifiers == ["com.example.client.bundled"])
        }
    }

    /// A 200 with `no-store` is used but not kept: the next client has no cache.
    @Test func noStoreIsNotCached() async throws {
        let fixture = try ServedCatalog(ids: [])
        defer { fixture.remove() }
        try await withStandIn({ number in
            if number > 1 { return Response(status: .serviceUnavailable) }
            var response = Self.feed(#"["com.example.client.coins"]"#)
            response.headers[.cacheControl] = "no-store"
            return response
        }) { server, _ in
            let first = await fixture.client(server: server).products(platform: .iOS, appVersion: nil)
            #expect(first.identifiers == ["com.example.client.coins"])
            let next = await fixture.client(server: server) { $0.fetchAttempts = 1 }.products(platform: .iOS, appVersion: nil)
            #expect(next.source == .fallback)
        }
    }

    /// A 304 without Cache-Control keeps the max-age the 200 gave: the next call needs no request.
    @Test func a304WithoutCacheControlKeepsTheStoredMaxAge() async throws {
        let fixture = try ServedCatalog(ids: [])
        defer { fixture.remove() }
        try await withStandIn({ number in
            if number == 1 {
                var response = Self.feed(#"["com.example.client.coins"]"#)
                response.headers[.cacheControl] = "max-age=300"
                return response
            }
            return Response(status: .notModified, headers: [.eTag: #""v1""#])
        }) { server, requests in
            let client = fixture.client(server: server)
            _ = await client.products(platform: .iOS, appVersion: nil)
            let refreshed = await client.refresh(platform: .iOS, appVersion: nil)
            #expect(refreshed.source == .notModified)
            let next = await client.products(platform: .iOS, appVersion: nil)
            #expect(next.source == .freshCache)
            #expect(requests() == 2)
        }
    }

    /// A JSON array of one identifier of `count` bytes: a feed the client would take, as big as asked.
    private static func hugeFeed(_ count: Int) -> [UInt8] {
        Array(#"[""#.utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: count) + Array(#""]"#.utf8)
    }

    /// The attack: a hostile mirror's gzip bomb, 100 MB of feed in about 100 KB on the wire. The
    /// client used to take whatever URLSession decompressed, whole, into memory. Now the decoded
    /// body stops at ``CatalogClient/Configuration/maximumResponseBytes``: the fetch fails with a
    /// clear error and the fallback answers.
    @Test func aGzipBombIsCutOffAtTheCap() async throws {
        let fixture = try ServedCatalog(ids: [])
        defer { fixture.remove() }
        let bomb = try Gzip.compress(Self.hugeFeed(100_000_000))
        #expect(bomb.count < 1_000_000)
        try await withStandIn({ _ in
            Response(
                status: .ok, headers: [.contentType: "application/json", .contentEncoding: "gzip"],
                body: .init(byteBuffer: .init(bytes: bomb)))
        }) { server, _ in
            let list = await fixture.client(server: server) { $0.fetchAttempts = 1 }.products(platform: .iOS, appVersion: nil)
            #expect(list.source == .fallback)
            #expect(list.identifiers == ["com.example.client.bundled"])
            #expect(list.error?.message.contains("larger than") == true, "\(String(describing: list.error))")
        }
    }

    /// The same with a cache: the bomb fails the refresh, and the last good list answers (stale).
    @Test func aGzipBombLeavesTheCachedListInPlace() async throws {
        let fixture = try ServedCatalog(ids: [])
        defer { fixture.remove() }
        let bomb = try Gzip.compress(Self.hugeFeed(8 << 20))
        try await withStandIn({ number in
            if number == 1 { return Self.feed(#"["com.example.client.coins"]"#) }
            return Response(
                status: .ok, headers: [.contentType: "application/json", .contentEncoding: "gzip"],
                body: .init(byteBuffer: .init(bytes: bomb)))
        }) { server, _ in
            let client = fixture.client(server: server) {
                $0.fetchAttempts = 1
                $0.maximumResponseBytes = 1 << 20
            }
            #expect(await client.products(platform: .iOS, appVersion: nil).source == .network)
            let refreshed = await client.refresh(platform: .iOS, appVersion: nil)
            #expect(refreshed.source == .staleCache)
            #expect(refreshed.identifiers == ["com.example.client.coins"])
            #expect(refreshed.error?.code == .responseTooLarge, "\(String(describing: refreshed.error))")
        }
    }

    /// A `Content-Length` over the cap is refused from the headers, before the body: the stand-in
    /// declares 64 MiB, sends 64 KiB and holds the rest back until the client has answered. A
    /// client that waited for the body would wait for its timeout instead.
    @Test func aContentLengthOverTheCapIsRefusedBeforeTheBody() async throws {
        let fixture = try ServedCatalog(ids: [])
        defer { fixture.remove() }
        let total = 64 << 20
        let first = 65_536
        let written = Mutex(0)
        let released = Mutex(false)
        try await withStandIn({ _ in
            let feed = Self.hugeFeed(total - 4)
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: ResponseBody(contentLength: feed.count) { writer in
                    try await writer.write(ByteBuffer(bytes: feed[0..<first]))
                    written.withLock { $0 = first }
                    // Held until the client has answered (at most 30 s, should it never).
                    for _ in 0..<3_000 where !released.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
                    try await writer.write(ByteBuffer(bytes: feed[first...]))
                    written.withLock { $0 = feed.count }
                    try await writer.finish(nil)
                })
        }) { server, _ in
            defer { released.withLock { $0 = true } }
            let client = fixture.client(server: server) {
                $0.fetchAttempts = 1
                $0.requestTimeout = 20
                $0.maximumResponseBytes = 1 << 20
            }
            let list = await client.products(platform: .iOS, appVersion: nil)
            #expect(written.withLock { $0 } == first, "answered with the body still held back")
            #expect(list.source == .fallback)
            #expect(list.error?.code == .responseTooLarge, "\(String(describing: list.error))")
            #expect(list.error?.message.contains("Content-Length") == true, "\(String(describing: list.error))")
        }
    }
}
