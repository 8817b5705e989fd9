import CatalogKit
import CatalogServer
import CatalogTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The attacks of ``HostileClientTests`` and ``ProtectionTests``, over TLS, and those that only TLS
/// has (a handshake never finished). Each held a connection for good when the TLS listener was
/// Hummingbird's channel with its defaults: no handshake deadline, no read deadline, no idle
/// timeout and no connection cap.
@Suite struct TLSHostileClientTests {
    /// A server with TLS, a read deadline (and handshake deadline) of `deadlines` and an idle
    /// timeout of twice that unless given, and its certificates.
    private static func application(
        _ fixture: CatalogServerTests.Fixture, maxConnections: Int = 1000, deadlines: TimeAmount = .seconds(1),
        idleTimeout: TimeAmount? = nil
    ) throws -> (some ApplicationProtocol, TestCertificates.Files) {
        let files = try TestCertificates.make(in: fixture.root)
        var configuration = ServeConfiguration()
        configuration.readDeadline = deadlines
        configuration.idleTimeout = idleTimeout ?? deadlines * 2
        configuration.maxConnections = maxConnections
        let tls = try ReloadingCertificate(certificate: files.certificate.path, key: files.key.path, logger: Logger(label: "test"))
        let app = buildApplication(
            publicDirectory: fixture.publicTree, port: 0, configuration: configuration, tls: tls, logger: Logger(label: "test"))
        return (app, files)
    }

    private static let feed = "/v1/apps/\(CatalogServerTests.app)/catalog.json"

    /// A TLS record header announcing a 512-byte ClientHello, and only its first bytes.
    static let halfClientHello: [UInt8] =
        [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03] + Array(repeating: 7, count: 32)

    /// A socket that opens TCP and sends nothing, or half a ClientHello, then waits: closed once
    /// the handshake deadline passes (plus the TLS handler's own bounded shutdown).
    @Test(arguments: [[UInt8](), halfClientHello])
    func aHandshakeNeverFinishedIsClosed(sent: [UInt8]) async throws {
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        let (app, _) = try Self.application(fixture)
        try await app.test(.live) { client in
            let socket = try LoopbackSocket(port: try #require(client.port))
            defer { socket.close() }
            if !sent.isEmpty { #expect(socket.send(sent)) }
            #expect(try await socket.awaitClose(within: .seconds(12)), "a connection without a handshake was still open")
        }
    }

    /// Past `maxConnections`, a new connection is closed as soon as it is accepted, before any TLS,
    /// and `/metrics` counts it: the one limit of the listener, whichever protocol.
    @Test func connectionsPastTheLimitAreRefused() async throws {
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        let (app, files) = try Self.application(fixture, maxConnections: 3, deadlines: .seconds(60))
        try await app.test(.live) { client in
            let port = try #require(client.port)
            let sockets = try (0..<5).map { _ in try LoopbackSocket(port: port) }
            // A refused one is closed at once; admitted ones wait for a handshake for a minute.
            var refused = 0
            for _ in 0..<40 where refused < 2 {
                try await Task.sleep(for: .milliseconds(50))
                refused = sockets.filter { $0.isClosedByPeer() }.count
            }
            #expect(refused >= 2, "\(refused) of 5 connections refused with a limit of 3")
            for socket in sockets { socket.close() }
            var metrics = ""
            for _ in 0..<50 where !metrics.contains("catalog_connections_refused_total") {
                try await Task.sleep(for: .milliseconds(100))
                guard let probe = try? await TLSProbe.connect(port: port, ca: files.ca, alpn: ["http/1.1"]) else { continue }
                defer { probe.close() }
                probe.send(Array("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8))
                _ = await probe.awaitClose(within: .seconds(5))
                metrics = String(decoding: probe.received, as: UTF8.self)
            }
            #expect(metrics.contains(/catalog_connections_refused_total [1-9]/), "\(metrics)")
        }
    }

    /// HTTP/1.1 over TLS: header bytes each in a TLS record of its own, 200 ms apart; the read
    /// deadline, from the request's first byte, closes the connection.
    @Test func slowHeadersOverTLSAreCutOffAtTheDeadline() async throws {
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        // An idle timeout far beyond the trickle: what cuts it off must be the read deadline.
        let (app, files) = try Self.application(fixture, idleTimeout: .seconds(60))
        try await app.test(.live) { client in
            let probe = try await TLSProbe.connect(port: try #require(client.port), ca: files.ca, alpn: ["http/1.1"])
            defer { probe.close() }
            #expect(probe.negotiated == "http/1.1")
            var closed = false
            for byte in Array("GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".utf8)
            where !closed {
                probe.send([byte])
                try await Task.sleep(for: .milliseconds(200))
                closed = !probe.isActive
            }
            #expect(closed, "a request still trickling in over TLS after its deadline was not cut off")
        }
    }

    /// A connection that completes its handshake and asks for nothing, or asks once and then
    /// nothing, is closed after the idle timeout: HTTP/1.1 by the connection handler, HTTP/2
    /// (a client that answers neither the GOAWAY nor its PING) by the HTTP/2 connection deadline.
    @Test(arguments: ["http/1.1", "h2"])
    func anIdleConnectionOverTLSIsClosed(alpn: String) async throws {
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        let (app, files) = try Self.application(fixture)
        try await app.test(.live) { client in
            let probe = try await TLSProbe.connect(port: try #require(client.port), ca: files.ca, alpn: [alpn])
            defer { probe.close() }
            #expect(probe.negotiated == alpn)
            if alpn == "h2" {
                probe.send(HTTP2Bytes.preface)
            } else {
                probe.send(Array("GET \(Self.feed) HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            }
            #expect(await probe.awaitClose(within: .seconds(12)), "an idle \(alpn) connection was still open")
            if alpn == "http/1.1" { #expect(String(decoding: probe.received, as: UTF8.self).hasPrefix("HTTP/1.1 200 OK")) }
        }
    }

    /// HTTP/2: a stream whose request never ends (a body trickled one byte every 200 ms) is closed
    /// at the read deadline, and the connection, left with no stream, after the idle timeout.
    @Test func aTrickledHTTP2StreamIsCutOffAndItsConnectionClosed() async throws {
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        let (app, files) = try Self.application(fixture)
        try await app.test(.live) { client in
            let probe = try await TLSProbe.connect(port: try #require(client.port), ca: files.ca, alpn: ["h2"])
            defer { probe.close() }
            probe.send(HTTP2Bytes.preface + HTTP2Bytes.openStream)
            let start = ContinuousClock.now
            while probe.isActive && ContinuousClock.now - start < .seconds(15) {
                probe.send(HTTP2Bytes.dataByte)
                try await Task.sleep(for: .milliseconds(200))
            }
            #expect(!probe.isActive, "an HTTP/2 connection trickling one request's body was still open")
        }
    }

    /// HTTP/2: a client that asks for a feed of a few hundred kilobytes and reads nothing. Its
    /// stream's flow-control window (64 KiB) fills and stays shut: the stream is reset at the read
    /// deadline, and the connection, with no stream left, closed after the idle timeout.
    @Test func anHTTP2ClientThatNeverReadsIsClosed() async throws {
        let fixture = try CatalogServerTests.Fixture(ids: (0..<3000).map { "com.example.served.product\($0)" })
        defer { fixture.remove() }
        let (app, files) = try Self.application(fixture)
        try await app.test(.live) { client in
            let probe = try await TLSProbe.connect(port: try #require(client.port), ca: files.ca, alpn: ["h2"])
            defer { probe.close() }
            try await probe.stopReading()
            probe.send(HTTP2Bytes.preface + HTTP2Bytes.get(Self.feed))
            #expect(await probe.awaitClose(within: .seconds(15)), "an HTTP/2 client that reads nothing was still connected")
        }
    }

    /// A client that pipelines feed requests over TLS and never reads the answers: once its
    /// answers back up, the server reads nothing more from it and closes it after the read deadline.
    @Test func aClientThatNeverReadsOverTLSIsClosed() async throws {
        // A catalog feed of a few hundred kilobytes, so that the answers fill the socket buffers.
        let fixture = try CatalogServerTests.Fixture(ids: (0..<3000).map { "com.example.served.product\($0)" })
        defer { fixture.remove() }
        let (app, files) = try Self.application(fixture)
        try await app.test(.live) { client in
            let probe = try await TLSProbe.connect(port: try #require(client.port), ca: files.ca, alpn: ["http/1.1"])
            defer { probe.close() }
            try await probe.stopReading()
            let requests = Array(String(repeating: "GET \(Self.feed) HTTP/1.1\r\nHost: x\r\n\r\n", count: 100).utf8)
            let start = ContinuousClock.now
            while probe.isActive && ContinuousClock.now - start < .seconds(15) {
                // Only while the server takes them: the client's own buffer stays small.
                if probe.isWritable { probe.send(requests) }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(!probe.isActive, "a TLS client that reads nothing was still connected")
        }
    }
}

/// Raw HTTP/2 frames, enough to open a connection and a stream that never ends.
enum HTTP2Bytes {
    /// The client's connection preface and an empty SETTINGS frame.
    static let preface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + [0, 0, 0, 0x04, 0, 0, 0, 0, 0]

    /// HEADERS on stream 1 (END_HEADERS, not END_STREAM: a body is to follow): `POST /` with
    /// HPACK's static table (`:method POST` 0x83, `:scheme https` 0x87, `:path /` 0x84) and a
    /// literal `:authority localhost`.
    static let openStream: [UInt8] = {
        let block: [UInt8] = [0x83, 0x87, 0x84, 0x01, 0x09] + Array("localhost".utf8)
        return [0, 0, UInt8(block.count), 0x01, 0x04, 0, 0, 0, 1] + block
    }()

    /// HEADERS on stream 1 that end the request (END_HEADERS, END_STREAM): `GET path`.
    static func get(_ path: String) -> [UInt8] {
        let block: [UInt8] =
            [0x82, 0x87, 0x04, UInt8(path.utf8.count)] + Array(path.utf8) + [0x01, 0x09] + Array("localhost".utf8)
        return [0, 0, UInt8(block.count), 0x01, 0x05, 0, 0, 0, 1] + block
    }

    /// One byte of body on stream 1.
    static let dataByte: [UInt8] = [0, 0, 1, 0x00, 0x00, 0, 0, 0, 1, UInt8(ascii: "a")]
}

/// A TLS connection to the server under test through NIO, trusting the test's CA: the test
/// decides every byte sent, and whether anything is read.
final class TLSProbe: Sendable {
    private let channel: any Channel
    private let recorder: Recorder
    /// The protocol ALPN settled on.
    let negotiated: String?

    private init(channel: any Channel, recorder: Recorder, negotiated: String?) {
        self.channel = channel
        self.recorder = recorder
        self.negotiated = negotiated
    }

    /// Connects to 127.0.0.1:`port` as `localhost`, offering `alpn`, and completes the handshake.
    static func connect(port: Int, ca: URL, alpn: [String]) async throws -> TLSProbe {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .file(ca.path)
        configuration.applicationProtocols = alpn
        let context = try NIOSSLContext(configuration: configuration)
        let recorder = Recorder()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: context, serverHostname: "localhost"))
                    try channel.pipeline.syncOperations.addHandler(RecordingHandler(recorder: recorder))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        do {
            return TLSProbe(channel: channel, recorder: recorder, negotiated: try await recorder.handshake())
        } catch {
            channel.close(promise: nil)
            throw error
        }
    }

    var isActive: Bool { channel.isActive }
    var isWritable: Bool { channel.isWritable }
    /// Every byte received so far, decrypted.
    var received: [UInt8] { recorder.bytes.withLock { $0 } }

    /// Queues `bytes` and returns: a write to a server that reads nothing would never complete.
    func send(_ bytes: [UInt8]) {
        channel.writeAndFlush(channel.allocator.buffer(bytes: bytes), promise: nil)
    }

    /// Reads nothing more: what the server sends stays in the socket's buffers.
    func stopReading() async throws {
        try await channel.setOption(ChannelOptions.autoRead, value: false).get()
    }

    /// Whether the server closes the connection within `limit`.
    func awaitClose(within limit: Duration) async -> Bool {
        let start = ContinuousClock.now
        while channel.isActive && ContinuousClock.now - start < limit {
            try? await Task.sleep(for: .milliseconds(50))
        }
        return !channel.isActive
    }

    /// What arrived once anything has, waiting up to `limit`.
    func awaitReceived(within limit: Duration) async -> String {
        let start = ContinuousClock.now
        while received.isEmpty && channel.isActive && ContinuousClock.now - start < limit {
            try? await Task.sleep(for: .milliseconds(20))
        }
        return String(decoding: received, as: UTF8.self)
    }

    func close() {
        channel.close(promise: nil)
    }

    /// What a connection received, shared between its event loop and the test.
    final class Recorder: Sendable {
        let bytes = Mutex<[UInt8]>([])
        private let result = Mutex<Result<String?, any Error>?>(nil)

        /// The negotiated protocol once the handshake completes; throws if it failed.
        func handshake() async throws -> String? {
            for _ in 0..<1000 {
                if let result = result.withLock({ $0 }) { return try result.get() }
                try await Task.sleep(for: .milliseconds(10))
            }
            throw ChannelError.connectTimeout(.seconds(10))
        }

        func finish(_ outcome: Result<String?, any Error>) {
            result.withLock { if $0 == nil { $0 = outcome } }
        }
    }

    private final class RecordingHandler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        let recorder: Recorder

        init(recorder: Recorder) {
            self.recorder = recorder
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = unwrapInboundIn(data)
            recorder.bytes.withLock { $0 += buffer.readableBytesView }
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if let event = event as? TLSUserEvent, case .handshakeCompleted(let negotiated) = event {
                recorder.finish(.success(negotiated))
            }
            context.fireUserInboundEventTriggered(event)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            recorder.finish(.failure(error))
            context.close(promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            recorder.finish(.failure(ChannelError.ioOnClosedChannel))
            context.fireChannelInactive()
        }
    }
}
