import CatalogKit
import CatalogTestSupport
import Content
import Crypto
import Foundation
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import CatalogServer

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 30, item 4: `GET` of a signed content URL on the lean path. In memory first (an
/// `EmbeddedChannel` with the server's HTTP/1 pipeline and a virtual clock): refusals before any
/// file is opened, `FileRegion`s written only as the socket drains, deadlines by progress. Then on
/// real sockets on loopback: RFC 9110's range examples, and a download cut mid-file and resumed.
@Suite struct ContentServingTests {
    static let readDeadline = TimeAmount.seconds(10)
    static let idleTimeout = TimeAmount.seconds(30)

    /// A key ring of one key, `k1`.
    static let ring: ContentKeyRing = {
        do {
            return try ContentKeyRing(keys: [ContentSigningKey(id: "k1", secret: Array(repeating: 7, count: 32))], current: "k1")
        } catch {
            fatalError("a fixed, valid key ring: \(error)")
        }
    }()

    /// `count` bytes that differ from offset to offset (a prime period), so a misplaced range shows.
    static func bytes(_ count: Int) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 % 251) })
    }

    /// A signed URL for `digest`, valid an hour.
    static func url(_ digest: ContentDigest, ring: ContentKeyRing = ring, expires: Date = Date().addingTimeInterval(3600)) -> String {
        ring.sign(digest: digest, expires: expires).pathAndQuery
    }

    static func get(_ url: String, _ fields: String = "") -> String {
        "GET \(url) HTTP/1.1\r\nHost: x\r\n\(fields)\r\n"
    }

    // MARK: - In memory

    /// Makes the socket unwritable after each `FileRegion`, as a client reading slower than the
    /// server sends does: the handler must then wait for the socket to drain.
    final class WritabilityGate: ChannelOutboundHandler, RemovableChannelHandler {
        typealias OutboundIn = IOData
        var channel: EmbeddedChannel?
        var closing = true

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            if closing, case .fileRegion = unwrapOutboundIn(data) { channel?.isWritable = false }
            context.write(data, promise: promise)
        }
    }

    /// One connection with the content files of a fixture.
    final class Connection {
        let fixture: CatalogServerTests.Fixture
        let loop = EmbeddedEventLoop()
        let channel: EmbeddedChannel
        let files: ContentFiles
        let gate = WritabilityGate()

        init(ring: ContentKeyRing? = ContentServingTests.ring) throws {
            fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
            channel = EmbeddedChannel(loop: loop)
            gate.channel = channel
            var configuration = ServeConfiguration()
            configuration.readDeadline = ContentServingTests.readDeadline
            configuration.idleTimeout = ContentServingTests.idleTimeout
            let store = FeedStore(tree: fixture.publicTree, logger: Logger(label: "test"))
            files = ContentFiles(keyRing: ring, tree: fixture.publicTree)
            let handler = LeanConnectionHandler(store: store, metrics: ServerMetrics(), configuration: configuration, content: files)
            let pipeline = channel.pipeline.syncOperations
            try pipeline.addHandler(gate)
            try pipeline.addHandler(handler)
            try pipeline.configureHTTPServerPipeline(
                withPipeliningAssistance: false, withErrorHandling: true, withOutboundHeaderValidation: false,
                withEncoderConfiguration: .init(), withDecoderLimitConfiguration: LeanHTTP1Channel.decoderLimits)
            try pipeline.addHandler(ForwardedRequestTracker(connection: handler))
            try pipeline.addHandler(LeanConnectionHandlerTests.Application())
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
        }

        deinit {
            _ = try? channel.finish()
            fixture.remove()
        }

        func store(_ data: Data) throws -> ContentDigest {
            try BlobStore(root: fixture.publicTree.content).put(data).digest
        }

        func send(_ text: String) throws {
            try channel.writeInbound(ByteBuffer(string: text))
        }

        /// What was written since the last call: bytes as text, and each file region as its range.
        func received() throws -> (text: String, regions: [Range<Int>]) {
            var text = ""
            var regions: [Range<Int>] = []
            while let data = try channel.readOutbound(as: IOData.self) {
                switch data {
                case .byteBuffer(let buffer): text += String(buffer: buffer)
                case .fileRegion(let region): regions.append(region.readerIndex..<region.endIndex)
                }
            }
            return (text, regions)
        }

        func setWritable(_ writable: Bool) {
            channel.isWritable = writable
            channel.pipeline.fireChannelWritabilityChanged()
        }
    }

    /// Attack: URLs this server did not sign, or no longer honours: expired, too far ahead, an
    /// altered signature, another file's digest under a valid signature, a key it does not have,
    /// a second spelling. Each is refused with 403 and its stable code, and no file is opened
    /// (counted by ``ContentFiles/opened``). Before the lean path knew `/v1/content/`, these went to
    /// the application, which answered 404 for them all.
    @Test func expiredOrAlteredURLsAreRefusedWithNoFileOpened() throws {
        let connection = try Connection()
        let digest = try connection.store(Self.bytes(1000))
        let other = ContentDigest.of(Data("another file".utf8))
        let good = Self.url(digest)
        let signature = try #require(good.split(separator: "sig=").last)
        let flipped = String(signature.first == "A" ? "B" : "A") + signature.dropFirst()
        let stranger = try ContentKeyRing(keys: [ContentSigningKey.generate(id: "k9")], current: "k9")
        let attacks: [(String, String)] = [
            (Self.url(digest, expires: Date().addingTimeInterval(-5)), "expired"),
            (Self.url(digest, expires: Date().addingTimeInterval(3 * 86_400)), "too-far-ahead"),
            (good.replacingOccurrences(of: String(signature), with: flipped), "bad-signature"),
            (good.replacingOccurrences(of: digest.hex, with: other.hex), "bad-signature"),
            (Self.url(digest, ring: stranger), "unknown-key"),
            (good.replacingOccurrences(of: "?exp=", with: "?exp=0"), "malformed"),
            (good.replacingOccurrences(of: digest.hex, with: digest.hex.uppercased()), "malformed"),
        ]
        for (url, code) in attacks {
            try connection.send(Self.get(url))
            let answer = try connection.received().text
            #expect(answer.hasPrefix("HTTP/1.1 403 Forbidden\r\n"), "\(url): \(answer)")
            #expect(answer.contains(#""code":"\#(code)""#), "\(url): \(answer)")
            #expect(answer.contains("Cache-Control: no-store"))
        }
        #expect(connection.files.opened.load(ordering: .relaxed) == 0)
        // A good URL of a file this server does not hold is the first to look at the disk.
        try connection.send(Self.get(Self.url(other)))
        #expect(try connection.received().text.hasPrefix("HTTP/1.1 404 Not Found\r\n"))
        #expect(connection.files.opened.load(ordering: .relaxed) == 1)
        try connection.send(Self.get(good))
        let served = try connection.received()
        #expect(served.text.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(served.text)")
        #expect(served.regions == [0..<1000])
    }

    /// Keys rotate without a restart and without breaking a URL already issued: the server reads the
    /// key file again when it changes (looked at once a second). A new current key signs; the old
    /// key's URL verifies until the old key is removed, then is refused; a broken file is ignored.
    @Test func keysRotateWithoutARestart() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("content-keys-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("keys.json")
        let (old, new) = (try ContentSigningKey.generate(id: "2026-01"), try ContentSigningKey.generate(id: "2026-02"))
        func write(current: String, _ keys: [ContentSigningKey]) throws {
            let members = keys.map { #""\#($0.id)":"\#($0.secretBase64URL)""# }.joined(separator: ",")
            try Data(#"{"current":"\#(current)","keys":{\#(members)}}"#.utf8).write(to: file)
        }
        try write(current: old.id, [old])
        let source = ContentKeySource(ring: try ContentConfiguration.keyRing(file: file.path), file: file.path, logger: nil)
        let start = NIODeadline.uptimeNanoseconds(1_000_000_000)
        let digest = ContentDigest.of(Data("file".utf8))
        let issued = try #require(source.current(at: start)).sign(digest: digest, expires: Date().addingTimeInterval(600))
        func verifies(_ ring: ContentKeyRing?) -> ContentURLRefusal.Code? {
            guard let ring else { return .malformed }
            if case .failure(let refusal) = ring.verify(path: issued.path, query: issued.query, now: Date()) { return refusal.code }
            return nil
        }

        try write(current: new.id, [old, new])
        #expect(source.current(at: start + .milliseconds(500))?.currentKeyId == old.id, "looked at once a second, not per request")
        let rotated = source.current(at: start + .seconds(2))
        #expect(rotated?.currentKeyId == new.id)
        #expect(verifies(rotated) == nil, "a URL of the old key still verifies while the key is in the file")

        try write(current: new.id, [new])
        #expect(verifies(source.current(at: start + .seconds(4))) == .unknownKey)

        try Data("{not json".utf8).write(to: file)
        #expect(source.current(at: start + .seconds(6))?.currentKeyId == new.id, "a broken file keeps the last good ring")
    }

    /// A refusal's body is as openapi.yaml documents it: a message and the stable code.
    @Test func refusalsAreAsDocumented() throws {
        for (status, code) in [(403, "expired"), (404, "not-found")] {
            let response = ContentRefusal(status: status, code: code, message: "why \"quoted\"").response(now: .now)
            let body = response.body.reduce(into: [UInt8]()) { bytes, segment in
                if case .bytes(let piece) = segment { bytes += piece }
            }
            let schema = try ServiceJSONTests.schema("/v1/content/{sha256}", "get", String(status))
            #expect(ServiceJSONTests.problems(try ServiceJSONTests.parse(body), schema) == [])
        }
    }

    /// Without `--content-keys` a content URL is answered 503, saying why.
    @Test func withoutKeysContentIs503() throws {
        let connection = try Connection(ring: nil)
        try connection.send(Self.get(Self.url(ContentDigest.of(Data("x".utf8)))))
        let answer = try connection.received().text
        #expect(answer.hasPrefix("HTTP/1.1 503 Service Unavailable\r\n"), "\(answer)")
        #expect(answer.contains("--content-keys"))
    }

    /// Backpressure: a file goes out as `FileRegion`s (no byte of it in memory), one more only
    /// when the socket drains; a request pipelined behind the download is answered after its last
    /// byte. Before this, the lean path handed every content request to the application.
    @Test func aFileGoesOutAsRegionsOnlyAsTheSocketDrains() throws {
        let connection = try Connection()
        let region = Int(LeanConnectionHandler.regionBytes)
        let length = 2 * region + 7
        let digest = try connection.store(Self.bytes(length))
        try connection.send(Self.get(Self.url(digest)) + LeanConnectionHandlerTests.feed)
        var answer = try connection.received()
        #expect(answer.text.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer.text)")
        #expect(answer.text.contains("Content-Length: \(length)\r\n"))
        #expect(answer.text.contains("ETag: \(digest.entityTag)\r\n"))
        #expect(answer.text.contains("Repr-Digest: \(digest.reprDigestFieldValue)\r\n"))
        #expect(answer.text.contains("Accept-Ranges: bytes\r\n"))
        #expect(answer.text.contains("Cache-Control: public, max-age="))
        #expect(answer.regions == [0..<region])
        connection.setWritable(true)
        answer = try connection.received()
        #expect(answer.regions == [region..<2 * region])
        #expect(answer.text.isEmpty, "the pipelined feed was answered before the file was sent: \(answer.text)")
        connection.gate.closing = false
        connection.setWritable(true)
        answer = try connection.received()
        #expect(answer.regions == [2 * region..<length])
        #expect(answer.text.hasPrefix("HTTP/1.1 200 OK\r\n"), "the feed behind the download: \(answer.text)")
    }

    /// Hostile client: a slow reader of a large file. Each time the socket fills, the client has the
    /// read deadline to drain it; one that drains keeps its connection however long the whole file
    /// takes (past both the read deadline and the idle timeout), one that stops is closed.
    @Test func aStalledDownloadIsClosedAtTheDeadlineOfItsLastProgress() throws {
        let connection = try Connection()
        let digest = try connection.store(Self.bytes(6 * Int(LeanConnectionHandler.regionBytes)))
        try connection.send(Self.get(Self.url(digest)))
        _ = try connection.received()
        for _ in 0..<4 {
            connection.setWritable(false)
            connection.loop.advanceTime(by: .seconds(9))
            #expect(connection.channel.isActive)
            connection.setWritable(true)
            #expect(try connection.received().regions.count == 1)
        }
        connection.setWritable(false)
        connection.loop.advanceTime(by: .seconds(9))
        #expect(connection.channel.isActive, "45 s into a download that progresses, past the idle timeout")
        connection.loop.advanceTime(by: .seconds(1))
        #expect(!connection.channel.isActive, "a download that stopped draining was still open at the deadline")
    }

    /// Many and overlapping ranges never send a byte twice: overlapping ones are coalesced, and
    /// past eight parts the whole file is sent once. A HEAD sends the headers and opens no body.
    @Test func manyOrOverlappingRangesSendEachByteOnce() throws {
        let connection = try Connection()
        connection.gate.closing = false
        let digest = try connection.store(Self.bytes(10_000))
        let url = Self.url(digest)
        try connection.send(Self.get(url, "Range: bytes=0-999,0-999,500-1500,0-1500\r\n"))
        var answer = try connection.received()
        #expect(answer.text.contains("206 Partial Content") && answer.text.contains("Content-Range: bytes 0-1500/10000"))
        #expect(answer.regions == [0..<1501])
        let many = (0..<32).map { "\($0 * 300)-\($0 * 300 + 9)" }.joined(separator: ",")
        try connection.send(Self.get(url, "Range: bytes=\(many)\r\n"))
        answer = try connection.received()
        #expect(answer.text.hasPrefix("HTTP/1.1 200 OK"), "\(answer.text)")
        #expect(answer.regions == [0..<10_000])
        try connection.send("HEAD \(url) HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = try connection.received()
        #expect(answer.text.contains("Content-Length: 10000\r\n"))
        #expect(answer.regions.isEmpty)
    }

    // MARK: - On sockets

    /// A server on loopback with the content of `files` (name → bytes) stored, and its socket's port.
    static func withServer(_ files: [Data], _ body: @Sendable (Int, [ContentDigest]) async throws -> Void) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("content-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let tree = PublicTree(root: root.appendingPathComponent("public"))
        try FileManager.default.createDirectory(at: tree.root, withIntermediateDirectories: true)
        let digests = try files.map { try BlobStore(root: tree.content).put($0).digest }
        var configuration = ServeConfiguration()
        configuration.content.keyRing = ring
        let application = buildApplication(publicDirectory: tree, port: 0, configuration: configuration, logger: Logger(label: "test"))
        try await application.test(.live) { client in try await body(try #require(client.port), digests) }
    }

    /// RFC 9110 §14's examples, on a representation of 10,000 bytes as there, over one keep-alive
    /// connection: the first 500 bytes, the second 500, the final 500 (two ways), the first and
    /// last bytes, and the multipart example; then coalescing, 416, `If-Range`, and the same over
    /// HTTP/1.0 (which the general path answers).
    @Test func rangesAnswerAsRFC9110sExamples() async throws {
        let file = Self.bytes(10_000)
        try await Self.withServer([file]) { port, digests in
            let digest = digests[0]
            let url = Self.url(digest)
            let http = try RawHTTP(port: port)
            defer { http.close() }
            let singles: [(String, Int, String?, Range<Int>)] = [
                ("bytes=0-499", 206, "bytes 0-499/10000", 0..<500),
                ("bytes=500-999", 206, "bytes 500-999/10000", 500..<1000),
                ("bytes=-500", 206, "bytes 9500-9999/10000", 9500..<10_000),
                ("bytes=9500-", 206, "bytes 9500-9999/10000", 9500..<10_000),
                ("bytes=500-600,601-999", 206, "bytes 500-999/10000", 500..<1000),
                ("bytes=500-700,601-999", 206, "bytes 500-999/10000", 500..<1000),
                ("bytes=0-", 206, "bytes 0-9999/10000", 0..<10_000),
                ("items=0-5", 200, nil, 0..<10_000),
            ]
            for (range, status, contentRange, bytes) in singles {
                let answer = try await http.exchange(Self.get(url, "Range: \(range)\r\n"))
                #expect(answer.status == status, "\(range)")
                #expect(answer.headers["content-range"] == contentRange, "\(range)")
                #expect(answer.body == [UInt8](file[bytes]), "\(range)")
                #expect(answer.headers["etag"] == digest.entityTag)
                #expect(answer.headers["repr-digest"] == digest.reprDigestFieldValue)
                #expect(answer.headers["accept-ranges"] == "bytes")
                #expect(answer.headers["cache-control"]?.hasSuffix(", immutable") == true)
            }
            for range in ["bytes=0-0,-1", "bytes=0-999,4500-5499,-1000"] {
                let answer = try await http.exchange(Self.get(url, "Range: \(range)\r\n"))
                #expect(answer.status == 206)
                let type = try #require(answer.headers["content-type"])
                #expect(type.hasPrefix("multipart/byteranges; boundary="))
                let boundary = String(type.dropFirst("multipart/byteranges; boundary=".count))
                let parts = Self.parts(answer.body, boundary: boundary)
                let expected: [Range<Int>] = range == "bytes=0-0,-1" ? [0..<1, 9999..<10_000] : [0..<1000, 4500..<5500, 9000..<10_000]
                #expect(parts.map(\.range) == expected.map { "bytes \($0.lowerBound)-\($0.upperBound - 1)/10000" }, "\(range)")
                #expect(parts.map(\.body) == expected.map { [UInt8](file[$0]) }, "\(range)")
            }
            let unsatisfiable = try await http.exchange(Self.get(url, "Range: bytes=10000-\r\n"))
            #expect(unsatisfiable.status == 416)
            #expect(unsatisfiable.headers["content-range"] == "bytes */10000")
            let matching = try await http.exchange(Self.get(url, "Range: bytes=0-9\r\nIf-Range: \(digest.entityTag)\r\n"))
            #expect(matching.status == 206)
            let weak = try await http.exchange(Self.get(url, "Range: bytes=0-9\r\nIf-Range: W/\(digest.entityTag)\r\n"))
            #expect(weak.status == 200 && weak.body.count == 10_000)

            let old = try RawHTTP(port: port)
            defer { old.close() }
            let viaApplication = try await old.exchange("GET \(url) HTTP/1.0\r\nRange: bytes=-500\r\n\r\n")
            #expect(viaApplication.status == 206)
            #expect(viaApplication.headers["content-range"] == "bytes 9500-9999/10000")
            #expect(viaApplication.body == [UInt8](file[9500..<10_000]))
        }
    }

    /// Issue 30: a download cut mid-file resumes by range. The client reads part of a file of 8 MiB,
    /// drops the connection, asks for the rest with `Range` on a new one, and the bytes it
    /// assembled hash to the digest the URL names.
    @Test func aDownloadCutMidFileResumesByRangeAndTheDigestMatches() async throws {
        let file = Self.bytes(8 << 20)
        try await Self.withServer([file]) { port, digests in
            let url = Self.url(digests[0])
            let first = try RawHTTP(port: port)
            let part = try await first.exchange(Self.get(url), bodyLimit: 1 << 20)
            first.close()
            #expect(part.status == 200)
            #expect(part.body.count >= 1 << 20 && part.body.count < file.count, "\(part.body.count)")
            let second = try RawHTTP(port: port)
            defer { second.close() }
            let rest = try await second.exchange(Self.get(url, "Range: bytes=\(part.body.count)-\r\nIf-Range: \(digests[0].entityTag)\r\n"))
            #expect(rest.status == 206)
            #expect(rest.headers["content-range"] == "bytes \(part.body.count)-\(file.count - 1)/\(file.count)")
            #expect(part.body == [UInt8](file.prefix(part.body.count)))
            #expect(rest.body.count == file.count - part.body.count)
            let mismatch = zip(rest.body, file.dropFirst(part.body.count)).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            #expect(mismatch == nil, "the rest differs from byte \(mismatch ?? -1)")
            #expect(ContentDigest.of(part.body + rest.body) == digests[0])
        }
    }

    /// Over TLS a file cannot go zero-copy: HTTP/1.1 (the lean path) sends it in chunks read off the
    /// event loop, HTTP/2 (the general path) through the response body's writer. curl, trusting only
    /// the test's CA, downloads the whole file and a range on both, and the bytes are the file's.
    @Test func overTLSAFileArrivesWholeOnHTTP1AndHTTP2() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("content-tls-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let tree = PublicTree(root: root.appendingPathComponent("public"))
        try FileManager.default.createDirectory(at: tree.root, withIntermediateDirectories: true)
        let file = Self.bytes(3 * (1 << 20) + 5)
        let digest = try BlobStore(root: tree.content).put(file).digest
        let certificates = try TestCertificates.make(in: root)
        let tls = try ReloadingCertificate(
            certificate: certificates.certificate.path, key: certificates.key.path, logger: Logger(label: "test"))
        var configuration = ServeConfiguration()
        configuration.content.keyRing = Self.ring
        let application = buildApplication(
            publicDirectory: tree, port: 0, configuration: configuration, tls: tls, logger: Logger(label: "test"))
        try await application.test(.live) { client in
            let url = "https://localhost:\(try #require(client.port))" + Self.url(digest)
            for (flag, version) in [("--http1.1", "1.1"), ("--http2", "2")] {
                let whole = root.appendingPathComponent("whole\(version)")
                let answer = try await Self.curl(url, ca: certificates.ca, flag: flag, output: whole)
                #expect(answer == "200 \(version)")
                #expect(try ContentDigest.of(Data(contentsOf: whole)) == digest, "\(flag)")
                let part = root.appendingPathComponent("part\(version)")
                let ranged = try await Self.curl(url, ca: certificates.ca, flag: flag, output: part, range: "1048570-2097160")
                #expect(ranged == "206 \(version)")
                #expect(try Data(contentsOf: part) == file[1_048_570...2_097_160], "\(flag)")
            }
        }
    }

    /// curl's status and HTTP version for `url`, its body written to `output`.
    static func curl(_ url: String, ca: URL, flag: String, output: URL, range: String? = nil) async throws -> String {
        try await offThePool {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            process.arguments =
                ["-sS", "--max-time", "60", "--cacert", ca.path, flag, "-o", output.path, "-w", "%{http_code} %{http_version}"]
                + (range.map { ["-r", $0] } ?? []) + [url]
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            try process.run()
            let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return text
        }
    }

    /// The parts of a multipart body: each one's Content-Range and bytes (found byte by byte: the
    /// parts are binary).
    static func parts(_ body: [UInt8], boundary: String) -> [(range: String, body: [UInt8])] {
        let delimiter = Array("\r\n--\(boundary)".utf8)
        var starts: [Int] = []
        var from = 0
        while let found = RawHTTP.find(delimiter, in: body, from: from) {
            starts.append(found)
            from = found + delimiter.count
        }
        var parts: [(range: String, body: [UInt8])] = []
        for (index, start) in starts.dropLast().enumerated() {
            let partStart = start + delimiter.count
            guard let headEnd = RawHTTP.find([13, 10, 13, 10], in: body, from: partStart) else { continue }
            let head = String(decoding: body[partStart..<headEnd], as: UTF8.self)
            guard let line = head.components(separatedBy: "\r\n").first(where: { $0.hasPrefix("Content-Range: ") }) else { continue }
            parts.append((String(line.dropFirst("Content-Range: ".count)), Array(body[(headEnd + 4)..<starts[index + 1]])))
        }
        return parts
    }
}

/// A plain HTTP/1.1 client on a socket, enough to read the server's answers byte for byte: the
/// head, then `Content-Length` bytes of body (or fewer, `bodyLimit`, to cut a download).
final class RawHTTP {
    let socket: LoopbackSocket
    private var buffer: [UInt8] = []

    init(port: Int) throws {
        socket = try LoopbackSocket(port: port)
    }

    func close() { socket.close() }

    /// An answer: status, fields by lower-cased name, body.
    struct Answer {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
    }

    /// Sends `request` and reads its answer (up to `bodyLimit` bytes of its body, at least).
    func exchange(_ request: String, bodyLimit: Int? = nil) async throws -> Answer {
        #expect(socket.send(Array(request.utf8)))
        var headEnd: Int?
        while headEnd == nil {
            headEnd = Self.find([13, 10, 13, 10], in: buffer, from: 0)
            if headEnd == nil { try await fill() }
        }
        let end = headEnd ?? 0
        let head = String(decoding: buffer[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        buffer.removeFirst(end + 4)
        let status = Int(head.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let isHead = request.hasPrefix("HEAD ")
        let length = isHead ? 0 : Int(headers["content-length"] ?? "0") ?? 0
        let wanted = min(length, bodyLimit ?? length)
        while buffer.count < wanted { try await fill() }
        let body = Array(buffer.prefix(wanted))
        buffer.removeFirst(body.count)
        return Answer(status: status, headers: headers, body: body)
    }

    /// Waits up to ten seconds for more bytes.
    private func fill() async throws {
        for _ in 0..<10_000 {
            let bytes = socket.receive()
            if !bytes.isEmpty {
                buffer += bytes
                return
            }
            if socket.isClosedByPeer() { throw POSIXError(.ECONNRESET) }
            try await Task.sleep(for: .milliseconds(1))
        }
        throw POSIXError(.ETIMEDOUT)
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard haystack.count - start >= needle.count else { return nil }
        for index in start...(haystack.count - needle.count) where haystack[index..<index + needle.count].elementsEqual(needle) {
            return index
        }
        return nil
    }
}
