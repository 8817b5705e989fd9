import CatalogKit
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing
import Time

@testable import CatalogServer

/// ``LeanConnectionHandler`` in memory: the front of the server's HTTP/1 pipeline (the handler,
/// NIO's decoder with the server's limits, ``ForwardedRequestTracker``) on an `EmbeddedChannel`,
/// with a stand-in for the application behind it that answers when the test says so. Every
/// deadline is reached by moving the loop's virtual clock, so nothing here waits or depends on
/// the machine's speed; the same rules on real sockets are in `HostileClientTests`,
/// `ProtectionTests` and `TLSDeadlineTests`.
@Suite struct LeanConnectionHandlerTests {
    static let readDeadline = TimeAmount.seconds(10)
    static let idleTimeout = TimeAmount.seconds(30)
    static let feed = "GET /v1/apps/\(CatalogServerTests.app)/catalog.json HTTP/1.1\r\nHost: x\r\n\r\n"
    static let other = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"

    /// One connection, and what the test sees of it.
    final class Connection {
        let fixture: CatalogServerTests.Fixture
        let loop = EmbeddedEventLoop()
        let channel: EmbeddedChannel
        let application = Application()
        let reads = ReadCounter()
        let store: FeedStore

        /// `clock`, when given, is the wall clock feeds are answered by.
        init(clock: (@Sendable () -> Timestamp)? = nil) throws {
            fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
            channel = EmbeddedChannel(loop: loop)
            var configuration = ServeConfiguration()
            configuration.readDeadline = LeanConnectionHandlerTests.readDeadline
            configuration.idleTimeout = LeanConnectionHandlerTests.idleTimeout
            if let clock { configuration.clock = clock }
            store = FeedStore(tree: fixture.publicTree, logger: Logger(label: "test"))
            let handler = LeanConnectionHandler(store: store, metrics: ServerMetrics(), configuration: configuration)
            let pipeline = channel.pipeline.syncOperations
            try pipeline.addHandler(reads)
            try pipeline.addHandler(handler)
            try pipeline.configureHTTPServerPipeline(
                withPipeliningAssistance: false, withErrorHandling: true, withOutboundHeaderValidation: false,
                withEncoderConfiguration: .init(), withDecoderLimitConfiguration: LeanHTTP1Channel.decoderLimits)
            try pipeline.addHandler(ForwardedRequestTracker(connection: handler))
            try pipeline.addHandler(application)
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
        }

        deinit {
            _ = try? channel.finish()
            fixture.remove()
        }

        func send(_ text: String) throws {
            try channel.writeInbound(ByteBuffer(string: text))
        }

        /// Everything written to the client since the last call.
        func received() throws -> String {
            var text = ""
            while let buffer = try channel.readOutbound(as: ByteBuffer.self) { text += String(buffer: buffer) }
            return text
        }

        func advance(_ amount: TimeAmount) {
            loop.advanceTime(by: amount)
        }

        /// The client stops or starts reading: the socket fills or drains.
        func setWritable(_ writable: Bool) {
            channel.isWritable = writable
            channel.pipeline.fireChannelWritabilityChanged()
        }
    }

    /// The application behind the decoder: answers every request with its path as the body, at
    /// once or, while `holding`, when told to.
    final class Application: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        var holding = false
        /// Answers as soon as a request's head is read, as an application that refuses a request by
        /// its head does, without waiting for its body.
        var answeringHeads = false
        /// Paths of the requests read whole.
        private(set) var requests: [String] = []
        private var unanswered: [String] = []
        private var path = ""
        private var context: ChannelHandlerContext?

        func handlerAdded(context: ChannelHandlerContext) { self.context = context }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                path = head.uri
                if answeringHeads {
                    unanswered.append(path)
                    answer()
                }
            case .body: break
            case .end:
                requests.append(path)
                guard !answeringHeads else { return }
                unanswered.append(path)
                if !holding { answer() }
            }
        }

        func answer() {
            guard let context else { return }
            for path in unanswered {
                var head = HTTPResponseHead(version: .http1_1, status: .ok)
                head.headers.add(name: "Content-Length", value: "\(path.utf8.count)")
                context.write(wrapOutboundOut(.head(head)), promise: nil)
                context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: path)))), promise: nil)
                context.write(wrapOutboundOut(.end(nil)), promise: nil)
            }
            unanswered.removeAll()
            context.flush()
        }
    }

    /// Counts the reads the pipeline issues to the socket.
    final class ReadCounter: ChannelOutboundHandler, RemovableChannelHandler {
        typealias OutboundIn = Never
        private(set) var count = 0

        func read(context: ChannelHandlerContext) {
            count += 1
            context.read()
        }
    }

    @Test func aFeedIsAnsweredInFrontOfTheDecoder() throws {
        let connection = try Connection()
        let reads = connection.reads.count
        try connection.send(Self.feed)
        #expect(try connection.received().hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(connection.application.requests.isEmpty)
        // Nothing behind owes an answer: the next read is asked for from here.
        #expect(connection.reads.count == reads + 1)
    }

    /// The feed a connection answered last is found again only while it is current: a reload in
    /// the same second is answered, on the same connection, with the new revision.
    @Test func aReloadIsSeenByTheNextRequestInTheSameSecond() throws {
        let second = Timestamp.now
        let connection = try Connection(clock: { second })
        try connection.send(Self.feed)
        let before = try connection.received()
        #expect(before.contains("com.example.served.coins") && !before.contains("com.example.served.gems"))
        try connection.send(Self.feed)
        #expect(try connection.received() == before, "the same feed, found again")
        try connection.fixture.publish(["com.example.served.coins", "com.example.served.gems"])
        #expect(connection.store.reloadIfChanged(logger: Logger(label: "test")))
        try connection.send(Self.feed)
        #expect(try connection.received().contains("com.example.served.gems"))
    }

    @Test func aSmallFeedIsOneWriteOfItsHeadAndBody() throws {
        let connection = try Connection()
        try connection.send(Self.feed)
        let written = try #require(try connection.channel.readOutbound(as: ByteBuffer.self))
        #expect(try connection.channel.readOutbound(as: ByteBuffer.self) == nil)
        let feed = try connection.fixture.servedFeed(.catalog)
        let response = Array(written.readableBytesView)
        let head = try #require(String(bytes: response.prefix(response.count - feed.identity.bytes.count), encoding: .utf8))
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n") && head.hasSuffix("\r\n\r\n"))
        #expect(head.contains("Content-Length: \(feed.identity.bytes.count)\r\n"))
        #expect(Array(response.suffix(feed.identity.bytes.count)) == feed.identity.bytes)
    }

    /// A connection asking for many small feeds in one second holds no more than the budget in
    /// copies of their bodies: the rest are sent from the buffers every connection shares.
    @Test func copiesOfBodiesStayWithinTheirBudget() throws {
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        let products = try fixture.servedFeed(.products)
        let catalog = try fixture.servedFeed(.catalog)
        var cache = ResponseCache(inlineBodyBudget: catalog.identity.bytes.count)
        func ask(_ feed: ServedFeed, second: Int64 = 2_000_000_000) -> ResponseCache.Response {
            cache.response(for: feed, .init(gzip: false, status: 200), head: false, now: Timestamp(secondsSince1970: second)) {
                (ByteBuffer(string: "HTTP/1.1 200 OK\r\n\r\n"), ByteBuffer(bytes: feed.identity.bytes))
            }
        }
        let first = ask(catalog)
        #expect(first.body == nil && first.bodyBytes == catalog.identity.bytes.count)
        #expect(first.head.readableBytes == "HTTP/1.1 200 OK\r\n\r\n".utf8.count + catalog.identity.bytes.count)
        // The budget is spent: the next body stays apart, and is still counted.
        let second = ask(products)
        #expect(second.body?.readableBytes == products.identity.bytes.count && second.bodyBytes == products.identity.bytes.count)
        // A new second starts the cache, and its budget, again.
        #expect(ask(products, second: 2_000_000_001).body == nil)
    }

    @Test func anIdleConnectionIsClosedAtTheIdleTimeout() throws {
        let connection = try Connection()
        connection.advance(Self.idleTimeout - .milliseconds(1))
        #expect(connection.channel.isActive)
        connection.advance(.milliseconds(1))
        #expect(!connection.channel.isActive)
    }

    @Test func theIdleClockRestartsWithEachAnswer() throws {
        let connection = try Connection()
        connection.advance(Self.idleTimeout - .seconds(1))
        try connection.send(Self.feed)
        try connection.send(Self.other)
        connection.advance(Self.idleTimeout - .seconds(1))
        #expect(connection.channel.isActive)
        connection.advance(.seconds(1))
        #expect(!connection.channel.isActive)
    }

    @Test func slowHeadersAreClosedAtTheReadDeadlineOfTheirFirstByte() throws {
        let connection = try Connection()
        // One byte a second, each well within any per-read timeout.
        for byte in Self.feed.utf8.prefix(Int(Self.readDeadline.nanoseconds / 1_000_000_000)) {
            #expect(connection.channel.isActive)
            try connection.send(String(UnicodeScalar(byte)))
            connection.advance(.seconds(1))
        }
        #expect(!connection.channel.isActive)
        #expect(try connection.received().isEmpty)
    }

    @Test func aBodyThatNeverEndsIsClosedAtTheReadDeadline() throws {
        let connection = try Connection()
        try connection.send(
            "POST /v1/apps/\(CatalogServerTests.app)/invalid-identifiers HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{")
        connection.advance(Self.readDeadline - .seconds(1))
        try connection.send("\"ids")
        connection.advance(.seconds(1))
        #expect(!connection.channel.isActive)
        #expect(connection.application.requests.isEmpty)
    }

    @Test func aBodyThatArrivesAfterItsAnswerStillHasTheReadDeadline() throws {
        let connection = try Connection()
        connection.application.answeringHeads = true
        try connection.send("POST /v1/apps/\(CatalogServerTests.app)/invalid-identifiers HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n")
        #expect(try connection.received().hasPrefix("HTTP/1.1 200 OK"))
        // Answered, but its body is still owed: the request is being read, not idle.
        try connection.send("{")
        connection.advance(Self.readDeadline - .milliseconds(1))
        #expect(connection.channel.isActive)
        connection.advance(.milliseconds(1))
        #expect(!connection.channel.isActive)
    }

    @Test func theEndOfInputHandsWhatArrivedToTheDecoder() throws {
        let connection = try Connection()
        try connection.send("GET /v1/apps/\(CatalogServerTests.app)/catalog.json HTTP/1.1\r\nHost: x\r\n")
        // Half a request, then the client half-closes: the decoder judges what arrived.
        connection.channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(try connection.received().hasPrefix("HTTP/1.1 400"))
        #expect(connection.application.requests.isEmpty)
    }

    @Test func theApplicationsTimeIsNotTheClients() throws {
        let connection = try Connection()
        connection.application.holding = true
        try connection.send(Self.other)
        connection.advance(Self.idleTimeout * 10)
        #expect(connection.channel.isActive)
        connection.application.answer()
        #expect(try connection.received().hasSuffix("/healthz"))
        connection.advance(Self.idleTimeout - .milliseconds(1))
        #expect(connection.channel.isActive)
        connection.advance(.milliseconds(1))
        #expect(!connection.channel.isActive)
    }

    @Test func feedsBehindAPassedOnRequestAreAnsweredAfterIt() throws {
        let connection = try Connection()
        connection.application.holding = true
        try connection.send(Self.other + Self.feed)
        // Nothing overtakes the request the application holds.
        #expect(try connection.received().isEmpty)
        connection.application.answer()
        let answers = try connection.received()
        let healthz = try #require(answers.range(of: "/healthz"))
        let feed = try #require(answers.range(of: "catalog.json"))
        #expect(healthz.lowerBound < feed.lowerBound)
        // Answered, the connection's feeds go the lean path again.
        try connection.send(Self.feed)
        #expect(try connection.received().hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(connection.application.requests == ["/healthz", "/v1/apps/\(CatalogServerTests.app)/catalog.json"])
    }

    @Test func aFullSocketHoldsAnswersAndReadsUntilItDrains() throws {
        let connection = try Connection()
        try connection.send(Self.feed)
        _ = try connection.received()
        let reads = connection.reads.count
        connection.setWritable(false)
        try connection.send(Self.feed + Self.feed)
        try connection.send(Self.other)
        // Nothing answered, nothing passed on, nothing more read.
        #expect(try connection.received().isEmpty)
        #expect(connection.application.requests.isEmpty)
        connection.channel.read()
        #expect(connection.reads.count == reads)
        // Drained: the held requests are answered in order and the held read is issued.
        connection.setWritable(true)
        let answers = try connection.received()
        #expect(answers.components(separatedBy: "HTTP/1.1 200 OK\r\n").count == 4)
        #expect(answers.hasSuffix("/healthz"))
        #expect(connection.reads.count > reads)
    }

    @Test func aClientThatDoesNotReadItsAnswersIsClosedAtTheReadDeadline() throws {
        let connection = try Connection()
        try connection.send(Self.feed)
        connection.setWritable(false)
        connection.advance(Self.readDeadline - .milliseconds(1))
        #expect(connection.channel.isActive)
        connection.advance(.milliseconds(1))
        #expect(!connection.channel.isActive)
    }

    @Test func aClientThatDrainsInTimeIsKept() throws {
        let connection = try Connection()
        try connection.send(Self.feed)
        connection.setWritable(false)
        connection.advance(Self.readDeadline - .seconds(1))
        connection.setWritable(true)
        connection.advance(.seconds(1))
        #expect(connection.channel.isActive)
    }

    @Test func aLongHeaderBlockIsTheDecodersToJudge() throws {
        let connection = try Connection()
        let padding = String(repeating: "a", count: LeanRequestParser.maxHeaderBlock)
        try connection.send("GET /v1/apps/\(CatalogServerTests.app)/catalog.json HTTP/1.1\r\nHost: x\r\nX-Pad: \(padding)\r\n\r\n")
        #expect(connection.application.requests == ["/v1/apps/\(CatalogServerTests.app)/catalog.json"])
        // Handed over for good: later feeds are the decoder's too.
        try connection.send(Self.feed)
        #expect(connection.application.requests.count == 2)
    }

    @Test func headersPastTheDecodersLimitsAreRefusedAndNothingAfterIsAnswered() throws {
        let connection = try Connection()
        let padding = String(repeating: "a", count: LeanHTTP1Channel.decoderLimits.maxHeaderFieldSize + 1)
        do {
            try connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: \(padding)\r\n\r\n" + Self.feed)
        } catch {
            // The decoder's error, after its handler answered it.
        }
        let answer = try connection.received()
        #expect(answer.hasPrefix("HTTP/1.1 4"))
        #expect(!answer.contains("200 OK"))
        #expect(connection.application.requests.isEmpty)
    }
}

extension CatalogServerTests.Fixture {
    /// The feed of `kind` that a request naming no platform or version is answered with, as a
    /// server loads it.
    func servedFeed(_ kind: FeedKind) throws -> ServedFeed {
        let store = FeedStore(tree: publicTree, logger: Logger(label: "test"))
        return try store.index.feed(app: CatalogServerTests.app, kind: kind, platform: nil, appVersion: nil, at: .now).get()
    }
}
