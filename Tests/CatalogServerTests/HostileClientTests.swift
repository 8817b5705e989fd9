import CatalogKit
import CatalogServer
import CatalogTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The attacks of docs/contract.md section 3 ("Protection"), each as a client would mount it on
/// a public server: every one of them held a connection, grew memory or answered out of order
/// before the connection handler kept deadlines by request state and backpressure.
@Suite struct HostileClientTests {
    private static func application(
        _ fixture: CatalogServerTests.Fixture, maxConnections: Int = 1000, deadlines: TimeAmount = .seconds(1)
    ) -> some ApplicationProtocol {
        var configuration = ServeConfiguration()
        configuration.readDeadline = deadlines
        configuration.idleTimeout = deadlines * 2
        configuration.maxConnections = maxConnections
        return buildApplication(publicDirectory: fixture.publicTree, port: 0, configuration: configuration, logger: Logger(label: "test"))
    }

    private static let feed = "/v1/apps/\(CatalogServerTests.app)/catalog.json"

    /// A client that pipelines feed requests and never reads the answers: the server stops
    /// reading from it once its answers back up, so its requests stop going anywhere, and it
    /// closes the connection once nothing was read for the read deadline. Before, the server kept
    /// reading and queueing answers for as long as the client kept sending (1 GB in 20 s).
    @Test func aClientThatNeverReadsIsNotReadFromAndIsClosed() async throws {
        // About 3,000 products: a catalog feed of a few hundred kilobytes, as real ones are.
        let fixture = try CatalogServerTests.Fixture(ids: (0..<3000).map { "com.example.served.product\($0)" })
        defer { fixture.remove() }
        try await Self.application(fixture).test(.live) { client in
            let socket = try LoopbackSocket(port: try #require(client.port))
            defer { socket.close() }
            let requests = Array(String(repeating: "GET \(Self.feed) HTTP/1.1\r\nHost: x\r\n\r\n", count: 1000).utf8)
            var sent = 0
            var closed = false
            let start = ContinuousClock.now
            while ContinuousClock.now - start < .seconds(8), sent < 64 << 20 {
                let count = requests.withUnsafeBytes {
                    send(socket.descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
                }
                if count > 0 {
                    sent += count
                } else if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                    try await Task.sleep(for: .milliseconds(10))
                } else {
                    closed = true
                    break
                }
            }
            // Answers written for it (counted when queued): a few, until its socket stopped taking
            // them. The server used to answer every request it could read, whether taken or not.
            let metrics = try LoopbackSocket(port: try #require(client.port))
            defer { metrics.close() }
            #expect(metrics.send(Array("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".utf8)))
            let answered =
                String(decoding: try await metrics.awaitResponses(1).first?.body ?? [], as: UTF8.self).split(separator: "\n")
                .first { $0.hasPrefix(#"catalog_http_requests_total{route="catalog",status="200"}"#) }
                .flatMap { $0.split(separator: " ").last.flatMap { Double($0) } } ?? 0
            closed = closed || socket.drainsToEnd()
            #expect(closed, "a client that reads nothing was still connected after \(sent) bytes of requests")
            #expect(answered < 1000, "\(Int(answered)) answers queued for a client that reads none")
        }
    }

    /// A body sent after the answer to its request, then silence: the request it belongs to was
    /// never read whole, so the read deadline still applies and closes the connection. Before, the
    /// late body made the server count one more request than it had and stop keeping time.
    @Test func aBodySentAfterTheAnswerDoesNotHoldTheConnection() async throws {
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        try await Self.application(fixture).test(.live) { client in
            let socket = try LoopbackSocket(port: try #require(client.port))
            defer { socket.close() }
            #expect(socket.send(Array("GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n".utf8)))
            // On a loaded machine the answer may take longer than the deadline of the request it
            // answers (its body is missing): then the connection is closed first, as it should be.
            if !(try await socket.awaitResponse()).isEmpty { _ = socket.send(Array("x".utf8)) }
            #expect(try await socket.awaitClose(within: .seconds(8)), "the connection was still open after the late body")
        }
    }

    /// A keep-alive connection that asks for nothing more is closed after the idle timeout,
    /// whichever path answered its last request.
    @Test(arguments: ["/healthz", feed])
    func anIdleConnectionIsClosed(path: String) async throws {
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        try await Self.application(fixture).test(.live) { client in
            let socket = try LoopbackSocket(port: try #require(client.port))
            defer { socket.close() }
            #expect(socket.send(Array("GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n".utf8)))
            #expect(String(decoding: try await socket.awaitResponse(), as: UTF8.self).hasPrefix("HTTP/1.1 200 OK"))
            #expect(try await socket.awaitClose(within: .seconds(8)), "an idle connection was still open")
        }
    }

    /// `Content-Length: 0` twice is a request the lean reader does not plainly understand; the
    /// feed request pipelined behind it must not be answered before it. Before, the feed's 200
    /// came back first and a pipelining proxy paired the two answers wrongly.
    @Test func aRequestTheDecoderRefusesIsNeverOvertaken() async throws {
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        try await Self.application(fixture).test(.live) { client in
            let socket = try LoopbackSocket(port: try #require(client.port))
            defer { socket.close() }
            let requests =
                "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n"
                + "GET \(Self.feed) HTTP/1.1\r\nHost: x\r\n\r\n"
            #expect(socket.send(Array(requests.utf8)))
            let responses = RawResponse.parse(try await socket.receiveUntilClose(within: .seconds(10)), heads: [])
            // Answered 400 and closed, or closed: never the feed first.
            #expect(responses.first.map { $0.status == 400 } ?? true, "first answer: \(responses.map(\.status))")
        }
    }

    /// Every mix of requests the lean path answers and requests it passes on, pipelined on one
    /// connection in many orders: each answer pairs with its request (a 404 names the app asked for).
    @Test func pipelinedMixesArePairedWithTheirRequests() async throws {
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        let products = "/v1/apps/\(CatalogServerTests.app)/products.json"
        struct Case {
            var request: String
            var status: Int
            var isHead = false
            var bodyContains: String? = nil
        }
        @Sendable func missing(_ n: Int) -> Case {
            Case(
                request: "GET /v1/apps/com.example.missing\(n)/products.json HTTP/1.1\r\nHost: x\r\n\r\n", status: 404,
                bodyContains: "missing\(n)")
        }
        let cases: [Case] = [
            Case(request: "GET \(products) HTTP/1.1\r\nHost: x\r\n\r\n", status: 200, bodyContains: "coins"),
            Case(request: "HEAD \(products) HTTP/1.1\r\nHost: x\r\n\r\n", status: 200, isHead: true),
            Case(request: "GET \(products)?platform=macos HTTP/1.1\r\nHost: x\r\n\r\n", status: 200, bodyContains: "mac"),
            Case(request: "GET \(products)?platform=amiga HTTP/1.1\r\nHost: x\r\n\r\n", status: 400, bodyContains: "amiga"),
            Case(request: "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", status: 200, bodyContains: "ok"),
            Case(request: "GET /v1/apps HTTP/1.1\r\nHost: x\r\n\r\n", status: 200, bodyContains: CatalogServerTests.app),
            Case(request: "DELETE \(products) HTTP/1.1\r\nHost: x\r\n\r\n", status: 405),
            Case(request: "GET \(products) HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", status: 200, bodyContains: "coins"),
            missing(1), missing(2), missing(3),
        ]
        // Requests with a body hand the connection over for good: last, so the mix before them is read by both readers.
        let withBody = Case(request: "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nab", status: 200, bodyContains: "ok")
        var generator = SplitMix64(seed: 7)
        let rounds = (0..<12).map { round in
            var order = cases.shuffled(using: &generator)
            order.insert(withBody, at: round % (order.count + 1))
            order.append(missing(100 + round))
            return order
        }
        try await Self.application(fixture).test(.live) { client in
            for (round, order) in rounds.enumerated() {
                let socket = try LoopbackSocket(port: try #require(client.port))
                defer { socket.close() }
                #expect(socket.send(Array(order.map(\.request).joined().utf8)))
                let heads = Set(order.indices.filter { order[$0].isHead })
                let responses = try await socket.awaitResponses(order.count, heads: heads)
                #expect(responses.map(\.status) == order.map(\.status), "round \(round)")
                for (response, expected) in zip(responses, order) {
                    if let text = expected.bodyContains {
                        #expect(String(decoding: response.body, as: UTF8.self).contains(text), "round \(round): \(expected.request)")
                    }
                }
            }
        }
    }

    /// Past `maxConnections`, a new connection is closed as soon as it is accepted, and
    /// `/metrics` counts it; once a connection closes, new ones are served again.
    @Test func connectionsPastTheLimitAreRefused() async throws {
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        try await Self.application(fixture, maxConnections: 3, deadlines: .seconds(60)).test(.live) { client in
            let port = try #require(client.port)
            // The test client may hold a connection of its own: open until one is refused.
            var served: [LoopbackSocket] = []
            var refused = false
            for _ in 0..<5 where !refused {
                let socket = try LoopbackSocket(port: port)
                _ = socket.send(Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
                if try await socket.awaitResponse().isEmpty {
                    refused = try await socket.awaitClose(within: .seconds(1))
                    socket.close()
                } else {
                    served.append(socket)
                }
            }
            #expect(refused, "no connection past the limit was refused")
            #expect(served.count <= 3)
            for socket in served { socket.close() }
            var metrics = ""
            for _ in 0..<50 where !metrics.hasPrefix("HTTP/1.1 200 OK") {
                try await Task.sleep(for: .milliseconds(100))
                let socket = try LoopbackSocket(port: port)
                defer { socket.close() }
                #expect(socket.send(Array("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".utf8)))
                metrics = String(decoding: try await socket.awaitResponse(), as: UTF8.self)
            }
            #expect(metrics.contains(/catalog_connections_refused_total [1-9]/), "\(metrics)")
        }
    }

    /// A revision snapshot is read and checked once, then answered from memory: asking for it
    /// again costs no read and no hash (a client could otherwise make the server re-read and
    /// re-hash a large file per request). Shown by damaging the file after the first answer.
    @Test func snapshotsAreAnsweredFromMemoryAfterTheFirstRead() async throws {
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        let path = "/v1/apps/\(CatalogServerTests.app)/revisions/1/products.json"
        try await fixture.application().test(.live) { client in
            let first = try await client.execute(uri: path, method: .get)
            #expect(first.status == .ok)
            let file = fixture.publicTree.root.appendingPathComponent("v1/apps/\(CatalogServerTests.app)/revisions/1/products.json")
            try Data("damaged".utf8).write(to: file)
            let second = try await client.execute(uri: path, method: .get)
            #expect(second.status == .ok)
            #expect(second.body == first.body)
        }
    }
}

extension LoopbackSocket {
    /// Whether the server closes the connection within `limit`, reading (and dropping) whatever it
    /// still sends until then.
    func awaitClose(within limit: Duration) async throws -> Bool {
        let start = ContinuousClock.now
        while ContinuousClock.now - start < limit {
            if drainsToEnd() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        // A last look: on a loaded machine this task may have slept past the limit, while the
        // server closed the connection in time.
        return drainsToEnd()
    }

    /// Everything the server sends until it closes the connection or `limit` passes.
    func receiveUntilClose(within limit: Duration) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        let start = ContinuousClock.now
        while ContinuousClock.now - start < limit {
            let received = receive()
            if received.isEmpty {
                if isClosedByPeer() { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            bytes += received
        }
        return bytes
    }

    /// Reads what is there without waiting; true if the stream ended (closed or reset).
    func drainsToEnd() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count == 0 { return true }
            if count < 0 { return errno != EAGAIN && errno != EWOULDBLOCK }
        }
    }
}
