import CatalogKit
import CatalogServer
import CatalogTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Storage
import Testing
import Time

/// `POST /v1/apps/{app}/invalid-identifiers` through real HTTP into a real SQLite file.
@Suite struct ReportEndpointTests {
    static let path = "/v1/apps/\(CatalogServerTests.app)/invalid-identifiers"
    static let json: HTTPFields = [.contentType: "application/json"]
    static let publishedByExamples = [
        "com.example.a", "com.example.gone", "com.example.level1", "com.example.level2", "com.example.served.a", "com.example.served.b",
        "com.example.served.c", "com.example.served.d",
    ]

    /// A served fixture and a fresh SQLite store beside it; `body` gets the client and the store.
    private func withServer(
        limits: (address: RateLimit?, install: RateLimit?) = (nil, nil),
        _ body: @Sendable (any TestClientProtocol, SQLiteStore) async throws -> Void
    ) async throws {
        // The examples' identifiers are published: only those are stored one by one.
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"] + Self.publishedByExamples)
        defer { fixture.remove() }
        let store = try await SQLiteStore.open(path: fixture.root.appendingPathComponent("var/catalog.sqlite").path)
        var reports = ReportsConfiguration()
        reports.perAddress = limits.address
        reports.perInstall = limits.install
        let app = buildApplication(
            publicDirectory: fixture.publicTree, port: 0, reportStore: store, reportsConfiguration: reports, logger: Logger(label: "test"))
        try await app.test(.live) { client in try await body(client, store) }
    }

    private func post(_ client: some TestClientProtocol, _ body: String, headers: HTTPFields = json, path: String = path) async throws
        -> TestResponse
    {
        try await client.execute(uri: path, method: .post, headers: headers, body: ByteBuffer(string: body))
    }

    private func storedReports(_ store: SQLiteStore) async throws -> Int {
        try await store.aggregate(AggregateQuery()).reduce(0) { $0 + $1.reports }
    }

    @Test func acceptsAReportOnceItIsStored() async throws {
        try await withServer { client, store in
            let response = try await post(client, ReportExamples.valid)
            #expect(response.status == .accepted)
            #expect(String(buffer: response.body) == #"{"accepted":2}"#)
            #expect(response.headers[.cacheControl] == "no-store")
            let aggregates = try await store.aggregate(AggregateQuery(app: CatalogServerTests.app))
            #expect(aggregates.map(\.identifier).sorted() == ["com.example.gone", "com.example.level2"])
            #expect(aggregates.allSatisfy { $0.installs == 1 && $0.platform == .iOS && $0.environment == .production })
            #expect(aggregates.allSatisfy { $0.requestedReports == 1 && $0.feedRevisions == [12] && $0.storefronts == ["USA"] })
        }
    }

    /// Reports are answered on the connection handler's path, feeds on theirs, everything else
    /// by Hummingbird: requests sent together on one connection are still answered in order,
    /// whichever path each takes and however long a commit takes.
    @Test func pipelinedReportsFeedsAndOtherRequestsAreAnsweredInOrder() async throws {
        try await withServer { client, store in
            let socket = try LoopbackSocket(port: try #require(client.port))
            defer { socket.close() }
            func report(_ id: String) -> String {
                let body = #"{"invalidProductIdentifiers":["com.example.served.\#(id)"],"installId":"pipelined"}"#
                return "POST \(Self.path) HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                    + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
            }
            let requests = [
                report("a"), "GET \(CatalogServerTests.feedPath) HTTP/1.1\r\nHost: localhost\r\n\r\n", report("b"),
                "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n", report("c"), "HEAD /v1/apps HTTP/1.1\r\nHost: localhost\r\n\r\n",
                "POST \(Self.path) HTTP/1.1\r\nHost: localhost\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n{}",
                report("d"),
            ]
            #expect(socket.send(Array(requests.joined().utf8)))
            let responses = try await socket.awaitResponses(requests.count, heads: [5])
            #expect(responses.map(\.status) == [202, 200, 202, 200, 202, 200, 415, 202])
            #expect(String(decoding: responses.first?.body ?? [], as: UTF8.self) == #"{"accepted":1}"#)
            let health = String(decoding: responses.dropFirst(3).first?.body ?? [], as: UTF8.self)
            #expect(health.contains("ok"))
            #expect(try await storedReports(store) == 4)
        }
    }

    @Test func aRetriedReportIsStoredOnce() async throws {
        try await withServer { client, store in
            let first = try await post(client, ReportExamples.valid)
            let retry = try await post(client, ReportExamples.valid)
            #expect(first.status == .accepted)
            #expect(retry.status == .accepted)
            #expect(String(buffer: retry.body) == #"{"accepted":2,"duplicate":true}"#)
            // Two identifiers, one report each.
            #expect(try await storedReports(store) == 2)
        }
    }

    @Test func everyBadBodyIsA400AndStoresNothing() async throws {
        try await withServer { client, store in
            for (body, message) in ReportExamples.rejected {
                let response = try await post(client, body)
                #expect(response.status == .badRequest, "\(body.prefix(80))")
                #expect(String(buffer: response.body) == #"{"error":{"message":"\#(jsonEscaped(message))"}}"#)
            }
            #expect(try await storedReports(store) == 0)
        }
    }

    @Test func refusalsBeforeTheBody() async throws {
        try await withServer { client, store in
            let plain = try await post(client, ReportExamples.valid, headers: [.contentType: "text/plain"])
            #expect(plain.status == .unsupportedMediaType)
            let none = try await post(client, ReportExamples.valid, headers: [:])
            #expect(none.status == .unsupportedMediaType)
            let charset = try await post(client, ReportExamples.valid, headers: [.contentType: "Application/JSON; charset=utf-8"])
            #expect(charset.status == .accepted)
            let unknown = try await post(client, ReportExamples.valid, path: "/v1/apps/com.example.unknown/invalid-identifiers")
            #expect(unknown.status == .notFound)
            #expect(String(buffer: unknown.body) == #"{"error":{"message":"no published app 'com.example.unknown'"}}"#)
            let get = try await client.execute(uri: Self.path, method: .get)
            #expect(get.status == .methodNotAllowed)
            #expect(get.headers[.allow] == "POST")
            let big = try await post(client, String(repeating: " ", count: ReportDecoder.maximumBodyBytes + 1))
            #expect(big.status == .contentTooLarge)
            #expect(try await storedReports(store) == 2, "only the report with a charset parameter")
        }
    }

    /// A client announcing a huge body gets its 413 and the connection closed at once: the
    /// server does not read megabytes it has already refused.
    @Test func anOversizedBodyIsRefusedBeforeItIsRead() async throws {
        try await withServer { client, store in
            let socket = try LoopbackSocket(port: try #require(client.port))
            defer { socket.close() }
            let head = "POST \(Self.path) HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n"
            #expect(socket.send(Array(head.utf8) + Array(repeating: UInt8(ascii: " "), count: 1000)))
            #expect(String(decoding: try await socket.awaitResponse(), as: UTF8.self).hasPrefix("HTTP/1.1 413 Payload Too Large"))
            var closed = socket.isClosedByPeer()
            for _ in 0..<1000 where !closed {
                try await Task.sleep(for: .milliseconds(10))
                closed = socket.isClosedByPeer()
            }
            #expect(closed, "the connection is closed rather than the refused body read")
            #expect(try await storedReports(store) == 0)
        }
    }

    /// A chunked body has no length to check up front: reading stops at the limit.
    @Test func anOversizedChunkedBodyIsRefused() async throws {
        try await withServer { client, _ in
            let socket = try LoopbackSocket(port: try #require(client.port))
            defer { socket.close() }
            let head =
                "POST \(Self.path) HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            let chunk = "4000\r\n" + String(repeating: " ", count: 0x4000) + "\r\n"
            #expect(socket.send(Array((head + String(repeating: chunk, count: 5)).utf8)))
            #expect(String(decoding: try await socket.awaitResponse(), as: UTF8.self).hasPrefix("HTTP/1.1 413 Payload Too Large"))
        }
    }

    @Test func rateLimitsPerInstallAnswer429AndStoreNothing() async throws {
        try await withServer(limits: (nil, RateLimit(perMinute: 1, burst: 2))) { client, store in
            func report(_ install: String) -> String {
                #"{"invalidProductIdentifiers":["com.example.a"],"installId":"\#(install)"}"#
            }
            #expect(try await post(client, report("one")).status == .accepted)
            #expect(try await post(client, report("one")).status == .accepted)
            let limited = try await post(client, report("one"))
            #expect(limited.status == .tooManyRequests)
            #expect(limited.headers[.retryAfter].flatMap(Int.init).map { $0 >= 1 && $0 <= 60 } == true)
            #expect(try await post(client, report("two")).status == .accepted, "another install has its own budget")
            #expect(try await storedReports(store) == 3)
        }
    }

    @Test func rateLimitsPerAddressAnswer429AndStoreNothing() async throws {
        try await withServer(limits: (RateLimit(perMinute: 1, burst: 3), nil)) { client, store in
            for install in ["a", "b", "c"] {
                #expect(
                    try await post(client, #"{"invalidProductIdentifiers":["com.example.a"],"installId":"\#(install)"}"#).status
                        == .accepted)
            }
            let limited = try await post(client, #"{"invalidProductIdentifiers":["com.example.a"],"installId":"d"}"#)
            #expect(limited.status == .tooManyRequests)
            #expect(limited.headers[.retryAfter] != nil)
            #expect(try await storedReports(store) == 3)
        }
    }

    /// Raw reports past the retention are pruned as soon as the server starts.
    @Test func reportsPastTheRetentionArePruned() async throws {
        // The examples' identifiers are published: only those are stored one by one.
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"] + Self.publishedByExamples)
        defer { fixture.remove() }
        let store = try await SQLiteStore.open(path: fixture.root.appendingPathComponent("reports.sqlite").path)
        let now = Timestamp.now
        func report(ageInDays days: Int64) -> InvalidIdentifierReport {
            InvalidIdentifierReport(
                app: CatalogServerTests.app, reportID: "age-\(days)",
                receivedAt: Timestamp(secondsSince1970: now.secondsSince1970 - days * 86_400),
                invalid: ["com.example.a"])
        }
        _ = try await store.store([report(ageInDays: 91), report(ageInDays: 89), report(ageInDays: 0)])
        let app = buildApplication(publicDirectory: fixture.publicTree, port: 0, reportStore: store, logger: Logger(label: "test"))
        try await app.test(.live) { _ in
            var remaining = 3
            for _ in 0..<100 where remaining != 2 {
                try await Task.sleep(for: .milliseconds(50))
                remaining = try await store.aggregate(AggregateQuery()).reduce(0) { $0 + $1.reports }
            }
            #expect(remaining == 2, "the 91-day-old report is pruned, the 89-day-old one kept")
        }
    }

    @Test func readinessAsksTheStoreAndMetricsCountReports() async throws {
        try await withServer { client, _ in
            let ready = try await client.execute(uri: "/readyz", method: .get)
            #expect(ready.status == .ok)
            _ = try await post(client, ReportExamples.valid)
            _ = try await post(client, "{}")
            let metrics = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
            #expect(metrics.contains(#"catalog_http_requests_total{route="reports",status="202"} 1"#))
            #expect(metrics.contains(#"catalog_http_requests_total{route="reports",status="400"} 1"#))
        }
    }
}

/// `text` as it appears inside a JSON string written by the server.
private func jsonEscaped(_ text: String) -> String {
    var json = JSONWriter()
    json.string(text)
    return String(decoding: json.bytes.dropFirst().dropLast(), as: UTF8.self)
}
