import CatalogKit
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

@testable import CatalogServer

/// The lean path and the general pipeline on one connection, through real HTTP on loopback.
@Suite struct LeanConnectionTests {
    static let feedPath = CatalogServerTests.feedPath

    /// A request as a client sends it, with `fields` (each ending in CRLF) after `Host`.
    func request(_ path: String, _ fields: String = "", method: String = "GET") -> String {
        "\(method) \(path) HTTP/1.1\r\nHost: localhost\r\n\(fields)\r\n"
    }

    /// A live server on a one-product catalog: `body` gets a raw connection to it and the feed's
    /// validators, read by a first GET on another connection.
    func withFeedConnection(
        _ body: @escaping @Sendable (_ socket: LoopbackSocket, _ etag: String, _ lastModified: String) async throws -> Void
    ) async throws {
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        try await fixture.application().test(.live) { client in
            let first = try await client.execute(uri: Self.feedPath, method: .get)
            let socket = try LoopbackSocket(port: try #require(client.port))
            defer { socket.close() }
            try await body(socket, try #require(first.headers[.eTag]), try #require(first.headers[.lastModified]))
        }
    }

    @Test func pipelinedFeedAndOtherRequestsAreAnsweredInOrder() async throws {
        try await withFeedConnection { socket, etag, _ in
            let requests = [
                request(Self.feedPath),
                request("/healthz"),
                request(Self.feedPath, "If-None-Match: \(etag)\r\n"),
                request(Self.feedPath, method: "HEAD"),
                // After a HEAD answered by the lean path, the general path's GET still has its body.
                request("/v1/apps"),
                // A HEAD the general path answers has no body either, and the next GET has its.
                request("/v1/apps", method: "HEAD"),
                request("/v1/apps/com.example.unknown/products.json"),
                // Read as a feed request; not a published app, so the general path refuses it.
                request("/v1/apps/../products.json"),
                request(Self.feedPath + "?platform=ios"),
                request("/healthz"),
                request(Self.feedPath),
            ]
            #expect(socket.send(Array(requests.joined().utf8)))
            let answers = try await socket.awaitResponses(requests.count, heads: [3, 5])
            try #require(answers.count == requests.count)
            #expect(answers.map(\.status) == [200, 200, 304, 200, 200, 200, 404, 404, 200, 200, 200])
            #expect(answers[0].body == Array(#"["com.example.served.coins","com.example.served.mac"]"#.utf8))
            #expect(answers[3].body.isEmpty && answers[3].field("etag") == etag)
            #expect(String(decoding: answers[4].body, as: UTF8.self).contains(CatalogServerTests.app))
            #expect(answers[5].body.isEmpty && answers[5].field("content-length") == answers[4].field("content-length"))
            #expect(answers[8].body == Array(#"["com.example.served.coins"]"#.utf8))
            #expect(answers[10].body == answers[0].body)
            #expect(!socket.isClosedByPeer())
        }
    }

    /// One request or a few at a time, each batch sent once the previous one is answered: the
    /// connection keeps being read after batches the lean path answered alone, after requests
    /// the application answered, and after a mix of both.
    @Test func batchesOfLeanAndGeneralRequestsKeepTheConnectionReading() async throws {
        try await withFeedConnection { socket, etag, _ in
            let lean = request(Self.feedPath, "If-None-Match: \(etag)\r\n")
            let general = request("/healthz")
            let batches: [(requests: [String], statuses: [Int])] = [
                ([lean], [304]), ([lean], [304]), ([general], [200]), ([lean], [304]),
                ([general, lean], [200, 304]), ([lean], [304]), ([lean, general], [304, 200]), ([general], [200]),
                ([lean, lean, lean], [304, 304, 304]),
            ]
            for round in 0..<3 {
                for (requests, statuses) in batches {
                    #expect(socket.send(Array(requests.joined().utf8)))
                    let answers = try await socket.awaitResponses(statuses.count)
                    #expect(answers.map(\.status) == statuses, "round \(round): \(requests.count) requests")
                }
            }
            #expect(!socket.isClosedByPeer())
        }
    }

    /// Each request split in two at every byte, the second part sent a little later: the parts
    /// make one request whether the lean path or the general one answers it.
    @Test func requestsSplitAtEveryByteAreAnsweredOnce() async throws {
        try await withFeedConnection { socket, etag, _ in
            let pair = Array((request(Self.feedPath, "if-none-match: \(etag)\r\n") + request("/healthz")).utf8)
            for split in 1..<pair.count {
                #expect(socket.send(Array(pair[..<split])))
                try await Task.sleep(for: .milliseconds(2))
                #expect(socket.send(Array(pair[split...])))
                let answers = try await socket.awaitResponses(2)
                #expect(answers.map(\.status) == [304, 200], "split at byte \(split)")
            }
        }
    }

    @Test func conditionalHeadersAreReadInAnyCaseAndRepetition() async throws {
        try await withFeedConnection { socket, etag, lastModified in
            let cases: [(fields: String, status: Int)] = [
                ("IF-NONE-MATCH: \(etag)\r\n", 304),
                ("if-modified-since: \(lastModified)\r\n", 304),
                ("If-None-Match: \"other\"\r\nif-none-match: \(etag)\r\n", 304),
                ("If-Modified-Since: \(lastModified)\r\nIf-Modified-Since: \(lastModified)\r\n", 200),
                ("If-None-Match: \"other\"\r\nIf-Modified-Since: \(lastModified)\r\n", 200),
                ("ACCEPT-ENCODING: gzip\r\nIf-None-Match: \(etag)\r\n", 200),
            ]
            for (fields, status) in cases {
                #expect(socket.send(Array(request(Self.feedPath, fields).utf8)))
                let answers = try await socket.awaitResponses(1)
                #expect(answers.first?.status == status, "\(fields)")
            }
            #expect(socket.send(Array(request(Self.feedPath, "accept-encoding: GZIP\r\n").utf8)))
            #expect(try await socket.awaitResponses(1).first?.field("content-encoding") == "gzip")
        }
    }

    @Test func malformedAndOversizedRequestsGetTheGeneralPathsAnswer() async throws {
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        try await fixture.application().test(.live) { client in
            for bytes in [
                "GET \(Self.feedPath) HTTP/1.1\r\nHost: localhost\r\nX-Big: \(String(repeating: "a", count: 20_000))\r\n\r\n",
                "GET \(Self.feedPath) HTTP/1.1\r\nHost : localhost\r\n\r\n",
                "GET \(Self.feedPath) HTTP/1.1\r\nX-Folded: a\r\n b\r\n\r\n",
            ] {
                let socket = try LoopbackSocket(port: try #require(client.port))
                defer { socket.close() }
                #expect(socket.send(Array(bytes.utf8)))
                let answer = try await socket.awaitResponse()
                #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 400"), "\(bytes.prefix(80))")
            }
        }
    }

    @Test func connectionCloseAndHTTP10AreAnsweredByTheGeneralPath() async throws {
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        try await fixture.application().test(.live) { client in
            for (bytes, closes) in [
                ("GET \(Self.feedPath) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", true),
                ("GET \(Self.feedPath) HTTP/1.0\r\n\r\n", false),
            ] {
                let socket = try LoopbackSocket(port: try #require(client.port))
                defer { socket.close() }
                #expect(socket.send(Array(bytes.utf8)))
                let answers = try await socket.awaitResponses(1)
                #expect(answers.first?.status == 200)
                #expect(answers.first?.body == Array(#"["com.example.served.coins","com.example.served.mac"]"#.utf8))
                if closes {
                    for _ in 0..<500 where !socket.isClosedByPeer() { try await Task.sleep(for: .milliseconds(10)) }
                    #expect(socket.isClosedByPeer())
                }
            }
        }
    }
}

extension LoopbackSocket {
    /// The first `count` responses the server sends (fewer if they do not all come within ten
    /// seconds); those at the indices in `heads` answer HEAD and have no body.
    func awaitResponses(_ count: Int, heads: Set<Int> = []) async throws -> [RawResponse] {
        var bytes: [UInt8] = []
        var parsed: [RawResponse] = []
        for _ in 0..<1000 {
            bytes += receive()
            parsed = RawResponse.parse(bytes, heads: heads)
            if parsed.count >= count { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        return parsed
    }
}

/// One HTTP/1.1 response as received: status, fields and a Content-Length body.
struct RawResponse {
    var status: Int
    var fields: [(name: String, value: String)]
    var body: [UInt8]

    func field(_ name: String) -> String? {
        fields.first { $0.name.lowercased() == name }?.value
    }

    /// The complete responses at the start of `bytes`; those at the indices in `heads` answer
    /// HEAD and have no body.
    static func parse(_ bytes: [UInt8], heads: Set<Int>) -> [RawResponse] {
        var responses: [RawResponse] = []
        var rest = bytes[...]
        while let end = rest.firstRange(of: Array("\r\n\r\n".utf8)) {
            let lines = String(decoding: rest[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
            guard let status = lines.first?.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { break }
            let fields = lines.dropFirst().compactMap { line -> (name: String, value: String)? in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            }
            var response = RawResponse(status: status, fields: fields, body: [])
            let length = heads.contains(responses.count) ? 0 : response.field("content-length").flatMap { Int($0) } ?? 0
            guard rest[end.upperBound...].count >= length else { break }
            response.body = Array(rest[end.upperBound...].prefix(length))
            rest = rest[(end.upperBound + length)...]
            responses.append(response)
        }
        return responses
    }
}
