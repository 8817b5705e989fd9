import CatalogKit
import CatalogServer
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

/// One keep-alive connection carrying requests answered on the lean feed path and requests
/// answered by the application, in any order, HEAD and GET: every response is framed as its own
/// request asks (a HEAD's without a body, a GET's with all of it), and nothing leaks from one to
/// the next.
///
/// NIO's response encoder pairs each response with the method of a request its decoder read, to
/// leave out bodies of HEAD responses. Lean responses skip the encoder, so when lean requests
/// also went through the decoder, a lean HEAD made the next forwarded GET's response lose its
/// body: schemathesis found it as a GET that never finished.
@Suite struct ConnectionFramingTests {
    static let snapshotPath = "/v1/apps/\(CatalogServerTests.app)/revisions/1/products.json"

    @Test func leanAndForwardedResponsesShareAConnection() async throws {
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        let application = buildApplication(publicDirectory: fixture.publicTree, port: 0, logger: Logger(label: "test"))
        try await application.test(.live) { client in
            let socket = try LoopbackSocket(port: try #require(client.port))
            defer { socket.close() }
            let exchanges: [(method: String, path: String)] = [
                ("HEAD", CatalogServerTests.feedPath),  // lean
                ("GET", Self.snapshotPath),  // forwarded
                ("HEAD", "/v1/apps"),  // forwarded
                ("GET", CatalogServerTests.feedPath),  // lean
                ("HEAD", Self.snapshotPath),  // forwarded
                ("HEAD", CatalogServerTests.feedPath),  // lean
                ("GET", "/v1/apps"),  // forwarded
                ("GET", "/healthz"),  // forwarded
            ]
            for (method, path) in exchanges {
                let exchange = "\(method) \(path)"
                try #require(socket.send(Array("\(exchange) HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8)), "\(exchange)")
                let response = try await socket.awaitWholeResponse(toHead: method == "HEAD")
                // Stop at the first wrong answer: every later one would be off by its bytes.
                try #require(response.statusLine == "HTTP/1.1 200 OK", "\(exchange)")
                try #require(response.contentLength > 0, "\(exchange) says how long its body is (or would be)")
                try #require(response.body.count == (method == "HEAD" ? 0 : response.contentLength), "\(exchange)")
            }
            try await Task.sleep(for: .milliseconds(100))
            #expect(socket.receive().isEmpty, "bytes after the last response")
        }
    }
}

extension LoopbackSocket {
    struct Response {
        var statusLine: String
        var contentLength: Int
        var body: [UInt8]
    }

    /// One response: its head, then as many body bytes as Content-Length says, none for a
    /// response to HEAD. Waits up to ten seconds; a response cut short comes back with the body
    /// it has.
    func awaitWholeResponse(toHead: Bool) async throws -> Response {
        try await awaitResponses(toHeads: [toHead]).first ?? Response(statusLine: "", contentLength: 0, body: [])
    }

    /// Responses to pipelined requests, one per element of `toHeads` (whether that request was
    /// a HEAD), read as they come; fewer if the rest do not arrive within ten seconds.
    func awaitResponses(toHeads: [Bool]) async throws -> [Response] {
        var bytes: [UInt8] = []
        var responses: [Response] = []
        let end = Array("\r\n\r\n".utf8)
        for _ in 0..<1000 {
            bytes += receive()
            while responses.count < toHeads.count, let split = bytes.firstRange(of: end) {
                let head = String(decoding: bytes[..<split.lowerBound], as: UTF8.self).split(separator: "\r\n")
                let length =
                    head.lazy.compactMap { line -> Int? in
                        let parts = line.split(separator: ":", maxSplits: 1)
                        guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
                        return Int(parts[1].trimmingCharacters(in: .whitespaces))
                    }.first ?? 0
                let bodyLength = toHeads[responses.count] ? 0 : length
                guard bytes.count - split.upperBound >= bodyLength else { break }
                let body = Array(bytes[split.upperBound..<(split.upperBound + bodyLength)])
                responses.append(Response(statusLine: String(head.first ?? ""), contentLength: length, body: body))
                bytes.removeFirst(split.upperBound + bodyLength)
            }
            if responses.count == toHeads.count { return responses }
            try await Task.sleep(for: .milliseconds(10))
        }
        return responses
    }
}
