// Usage: nio-floor PORT BODY_FILE ETAG LAST_MODIFIED
//
// The NIO floor of scripts/bench-serve: scripts/lib/floor-server.c's answers on SwiftNIO, the
// event loops `catalog serve` runs on. One event loop, NIO's defaults (reads as the socket is
// readable, a pooled receive buffer), and a handler that looks for the end of each head and
// whether it carries a validator (then 304, whatever the validator says), writes the answer
// prepared beforehand and flushes at the end of each read. No HTTP decoder, deadlines, limits,
// logs or metrics: not a server to run, a measure of what NIO's channel costs a request, the
// bound `catalog serve` cannot pass while NIO carries its reads and writes.
import Foundation
import NIOCore
import NIOPosix

let arguments = CommandLine.arguments
guard arguments.count == 5, let port = Int(arguments[1]) else {
    FileHandle.standardError.write(Data("usage: nio-floor PORT BODY_FILE ETAG LAST_MODIFIED\n".utf8))
    exit(64)
}
let body = try Data(contentsOf: URL(fileURLWithPath: arguments[2]))
let formatter = DateFormatter()
formatter.locale = Locale(identifier: "en_US_POSIX")
formatter.timeZone = TimeZone(identifier: "GMT")
formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
// The same header fields as the C floor's answers.
let fields = """
    Date: \(formatter.string(from: Date()))\r
    ETag: \(arguments[3])\r
    Last-Modified: \(arguments[4])\r
    Cache-Control: public, max-age=300\r
    Vary: Accept-Encoding\r

    """
var full = ByteBuffer(string: "HTTP/1.1 200 OK\r\n\(fields)Content-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n")
full.writeBytes(body)
let notModified = ByteBuffer(string: "HTTP/1.1 304 Not Modified\r\n\(fields)\r\n")

/// One answer per complete head in what a read brought (wrk sends one request at a time).
final class FloorHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let full: ByteBuffer
    let notModified: ByteBuffer

    init(full: ByteBuffer, notModified: ByteBuffer) {
        self.full = full
        self.notModified = notModified
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        unwrapInboundIn(data).withUnsafeReadableBytes { bytes in
            var start = 0
            var index = 0
            while index + 3 < bytes.count {
                guard bytes[index] == 13, bytes[index + 1] == 10, bytes[index + 2] == 13, bytes[index + 3] == 10 else {
                    index += 1
                    continue
                }
                let head = UnsafeRawBufferPointer(rebasing: bytes[start..<index])
                let conditional = head.contains("If-None-Match") || head.contains("If-Modified-Since")
                context.write(wrapOutboundOut(conditional ? notModified : full), promise: nil)
                index += 4
                start = index
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

extension UnsafeRawBufferPointer {
    /// Whether `field` occurs in these bytes, compared without copying either.
    func contains(_ field: StaticString) -> Bool {
        field.withUTF8Buffer { needle in
            guard count >= needle.count else { return false }
            return (0...(count - needle.count)).contains { offset in
                memcmp(baseAddress! + offset, needle.baseAddress!, needle.count) == 0
            }
        }
    }
}

let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
let answers = (full: full, notModified: notModified)
let channel = try ServerBootstrap(group: group)
    .serverChannelOption(.backlog, value: 1024)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(FloorHandler(full: answers.full, notModified: answers.notModified))
        }
    }
    .bind(host: "127.0.0.1", port: port).wait()
try channel.closeFuture.wait()
