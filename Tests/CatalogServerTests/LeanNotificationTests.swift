import Foundation
import NIOHTTP1
import Testing

@testable import CatalogServer

/// App Store notifications on the lean path (``LeanPostHandler``): over real HTTP on loopback, on
/// a real store, answered as Hummingbird's path answers them, in request order among everything
/// else a connection sends.
@Suite struct LeanNotificationTests {
    typealias Endpoints = PurchaseEndpointTests

    /// A request of `body` to `path` as raw HTTP/1.1: plain (the lean path), or with `fields` added.
    static func post(_ body: String, to path: String = Endpoints.notificationsPath, fields: [String] = []) -> String {
        var head = ["POST \(path) HTTP/1.1", "Host: x", "Content-Type: application/json"] + fields
        if !fields.contains(where: { $0.lowercased().hasPrefix("transfer-encoding") }) { head.append("Content-Length: \(body.utf8.count)") }
        return head.joined(separator: "\r\n") + "\r\n\r\n" + body
    }

    /// `body` chunked: the lean path leaves a chunked body to Hummingbird's.
    static func chunked(_ body: String) -> String {
        post(String(body.utf8.count, radix: 16) + "\r\n" + body + "\r\n0\r\n\r\n", fields: ["Transfer-Encoding: chunked"])
    }

    static func notification(_ jws: String) -> String { "{\"signedPayload\":\"\(jws)\"}" }

    /// Notifications of every kind pipelined with other requests in one write: each answer pairs
    /// with its request, a refusal decided by the head keeps the connection, and what the lean
    /// path stores is stored once, as the general path's is.
    @Test func pipelinedNotificationsArePairedWithTheirRequests() async throws {
        try await Endpoints.withServer { client, server in
            let first = try Endpoints.renewal(server.pki, uuid: "a0b1c2d3-0000-4000-8000-0000000000a1")
            let second = try Endpoints.renewal(server.pki, uuid: "a0b1c2d3-0000-4000-8000-0000000000a2")
            let requests: [(request: String, status: Int, contains: String)] = [
                (Self.post(Self.notification(first)), 200, #""stored":true"#),
                ("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 200, "ok"),
                (Self.post(Self.notification(first)).replacingOccurrences(of: "application/json", with: "text/plain"), 415, "Content-Type"),
                (Self.post(Self.notification(first)), 200, #""duplicate":true"#),
                (Self.chunked(Self.notification(second)), 200, #""stored":true"#),
                (Self.post(#"{"signedPayload":"x"}"#), 400, "compact JWS"),
                (
                    Self.post(Self.notification(first), to: "/v1/apps/com.example.missing/notifications/app-store"), 404,
                    "com.example.missing"
                ),
                ("GET /v1/apps/\(Endpoints.app)/products.json HTTP/1.1\r\nHost: x\r\n\r\n", 200, "com.example.app.coins"),
            ]
            let socket = try LoopbackSocket(port: try #require(client.port))
            defer { socket.close() }
            #expect(socket.send(Array(requests.map(\.request).joined().utf8)))
            let answers = try await socket.awaitResponses(requests.count)
            #expect(answers.map(\.status) == requests.map(\.status))
            for (answer, request) in zip(answers, requests) {
                #expect(String(decoding: answer.body, as: UTF8.self).contains(request.contains), "\(request.request.prefix(60))")
            }
            let stored = try await server.store.notifications(app: Endpoints.app, after: 0, limit: 10)
            #expect(
                stored.map(\.notificationId).sorted() == ["a0b1c2d3-0000-4000-8000-0000000000a1", "a0b1c2d3-0000-4000-8000-0000000000a2"])
            let metrics = String(decoding: server.metrics.render(), as: UTF8.self)
            #expect(metrics.contains(#"route="notifications",status="200"} 3"#), "\(metrics)")
        }
    }

    /// The same requests on both paths (plain, and with `Connection: close`, which the lean path
    /// leaves to Hummingbird's) get the same status, fields and body.
    @Test func bothPathsAnswerAlike() async throws {
        try await Endpoints.withServer { client, server in
            let forger = try Endpoints.PKI.ecdsa()
            let forged = Self.notification(try Endpoints.renewal(forger, uuid: "a0b1c2d3-0000-4000-8000-0000000000b1"))
            // Stored: each path its own notification, their answers alike but for its id.
            let stored = ["b2", "b3"].map { "a0b1c2d3-0000-4000-8000-0000000000\($0)" }
            let fresh = try stored.map { Self.notification(try Endpoints.renewal(server.pki, uuid: $0)) }
            // Then a duplicate: the first of them again, on both.
            for bodies in [
                [forged, forged], [#"{"signedPayload":"x.y.z"}"#, #"{"signedPayload":"x.y.z"}"#], fresh, [fresh[0], fresh[0]],
            ] {
                var answers: [RawResponse] = []
                for (body, fields) in zip(bodies, [[], ["Connection: close"]]) {
                    let socket = try LoopbackSocket(port: try #require(client.port))
                    defer { socket.close() }
                    #expect(socket.send(Array(Self.post(body, fields: fields).utf8)))
                    var answer = try await socket.awaitResponses(1)
                    if bodies == fresh, !answer.isEmpty {
                        answer[0].body = Array(
                            String(decoding: answer[0].body, as: UTF8.self).replacingOccurrences(of: stored[1], with: stored[0]).utf8)
                    }
                    answers += answer
                }
                try #require(answers.count == 2)
                #expect(answers[0].status == answers[1].status)
                #expect(answers[0].body == answers[1].body, "\(String(decoding: answers[0].body, as: UTF8.self))")
                func fields(_ answer: RawResponse) -> [String] {
                    answer.fields.map { $0.name.lowercased() + ": " + $0.value }.filter {
                        !$0.hasPrefix("date:") && !$0.hasPrefix("connection:")
                    }
                    .sorted()
                }
                #expect(fields(answers[0]) == fields(answers[1]))
            }
        }
    }

    /// A body announced past the limit is refused 413 before a byte of it is read, and the
    /// connection closed: the server does not read what it will not take.
    @Test func aBodyPastTheLimitIsRefusedUnreadAndTheConnectionClosed() async throws {
        try await Endpoints.withServer { client, _ in
            let socket = try LoopbackSocket(port: try #require(client.port))
            defer { socket.close() }
            let length = PurchaseEndpoints.maximumNotificationBytes + 1
            let head =
                "POST \(Endpoints.notificationsPath) HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: \(length)\r\n\r\n"
            #expect(socket.send(Array(head.utf8)))
            let answer = RawResponse.parse(try await socket.receiveUntilClose(within: .seconds(10)), heads: [])
            #expect(answer.map(\.status) == [413])
            #expect(answer.first?.field("connection") == "close")
        }
    }

    /// A notification whose body trickles in is cut off at the read deadline, as any request is:
    /// on the lean path the body is gathered behind the connection handler that keeps the deadline.
    @Test func aSlowBodyIsCutOffAtTheDeadline() async throws {
        try await Endpoints.withServer(readDeadline: .seconds(1)) { client, _ in
            let socket = try LoopbackSocket(port: try #require(client.port))
            defer { socket.close() }
            // The head, announcing 40 bytes, then one byte every 200 ms.
            let request = Self.post(String(repeating: "a", count: 40))
            #expect(socket.send(Array(request.dropLast(40).utf8)))
            let closed = try await socket.trickle(Array(repeating: Array("a".utf8), count: 40))
            #expect(closed, "a notification still trickling in after the deadline was not cut off")
        }
    }

    /// Which heads the lean path takes: plain POSTs to the two paths, nothing else.
    @Test func theLeanPathTakesPlainPostsOnly() {
        func head(_ uri: String, method: HTTPMethod = .POST, version: HTTPVersion = .http1_1, _ fields: [(String, String)] = [])
            -> HTTPRequestHead
        {
            HTTPRequestHead(version: version, method: method, uri: uri, headers: HTTPHeaders([("Content-Length", "2")] + fields))
        }
        let app = Endpoints.app
        #expect(LeanPostHandler.post(head("/v1/apps/\(app)/notifications/app-store")) == .notification(app: app))
        #expect(LeanPostHandler.post(head("/v1/apps/\(app)/invalid-identifiers")) == .report(app: app))
        for refused in [
            head("/v1/apps/\(app)/notifications/app-store", method: .GET),
            head("/v1/apps/\(app)/notifications/app-store", version: .http1_0),
            head("/v1/apps/\(app)/notifications/app-store", [("Connection", "close")]),
            head("/v1/apps/\(app)/notifications/app-store", [("Transfer-Encoding", "chunked")]),
            head("/v1/apps/\(app)/notifications/app-store", [("Expect", "100-continue")]),
            head("/v1/apps/\(app)/notifications/app-store?x=1"),
            head("/v1/apps/com%2Eexample/notifications/app-store"),
            head("/v1/apps/\(app)/notifications/google-play"),
            head("/v1/apps/a/b/notifications/app-store"),
            head("/v1/apps//notifications/app-store"),
        ] {
            #expect(LeanPostHandler.post(refused) == nil, "\(refused.method) \(refused.uri) \(refused.headers)")
        }
    }
}
