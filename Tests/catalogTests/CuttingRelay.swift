import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP relay on 127.0.0.1 in front of a server, which stops one download at a byte count.
///
/// Every connection is passed on both ways to the server's port. The first one to carry `cutAfter`
/// bytes from the server stops there: its first `cutAfter` bytes reach the client, and the rest are
/// never read from the server. The test can then act while that response is surely mid-body (kill
/// the server, say), and ``release()`` ends the connection. Later connections pass through, to
/// whatever listens on the port by then. The cut lands at the same byte however fast the machine
/// is, where watching a download's progress to kill the server inside it raced it.
final class CuttingRelay: @unchecked Sendable {
    let port: Int
    private let upstreamPort: Int
    private let cutAfter: Int
    private let listener: Int32
    private let lock = NSLock()
    /// Whether a connection was stopped; the sockets it holds until ``release()``.
    private var cut = false
    private var held: ConnectionEnds?

    init(upstreamPort: Int, cutAfter: Int) throws {
        self.upstreamPort = upstreamPort
        self.cutAfter = cutAfter
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw RelayError("socket(): errno \(errno)") }
        var address = Self.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && listen(descriptor, 64) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard listening else {
            close(descriptor)
            throw RelayError("cannot listen on 127.0.0.1: errno \(errno)")
        }
        listener = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in acceptConnections() }
    }

    /// Whether a connection has been stopped, waiting for it up to `seconds`.
    func waitForCut(seconds: Int) async throws -> Bool {
        for _ in 0..<(seconds * 100) {
            if lock.withLock({ cut }) { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    /// Ends the stopped connection: its client sees it close mid-response.
    func release() {
        lock.withLock { held }?.shutdownBoth()
    }

    /// Stops accepting, and ends the stopped connection; the listening socket is closed once the
    /// thread that accepted on it has returned (and released the relay).
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        release()
    }

    deinit {
        close(listener)
    }

    private func acceptConnections() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else {
                if errno == EINTR { continue }
                return
            }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(port: upstreamPort)
            let connected =
                server >= 0
                && withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                    }
                }
            guard connected else {
                // The server is not there (being started again): the client tries again.
                if server >= 0 { close(server) }
                close(client)
                continue
            }
            let ends = ConnectionEnds(client: client, server: server)
            Thread.detachNewThread { [self] in
                pump(from: client, to: server, of: ends, counting: false)
                ends.pumpEnded()
            }
            Thread.detachNewThread { [self] in
                pump(from: server, to: client, of: ends, counting: true)
                ends.pumpEnded()
            }
        }
    }

    /// Copies `source` to `destination` until either ends; from the server (`counting`), stops at
    /// `cutAfter` bytes on the first connection to carry that many, and holds it.
    private func pump(from source: Int32, to destination: Int32, of ends: ConnectionEnds, counting: Bool) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var carried = 0
        while true {
            var count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            var stopHere = false
            if counting && carried + count >= cutAfter {
                stopHere = lock.withLock {
                    guard !cut else { return false }
                    cut = true
                    held = ends
                    return true
                }
                if stopHere { count = cutAfter - carried }
            }
            guard writeAll(buffer, count: count, to: destination) else { break }
            carried += count
            // Held: nothing more is read or written until the test releases the connection.
            if stopHere { return }
        }
        // Either side ended: so does the other direction.
        ends.shutdownBoth()
    }

    private func writeAll(_ buffer: [UInt8], count: Int, to destination: Int32) -> Bool {
        var written = 0
        while written < count {
            let result = buffer.withUnsafeBytes { send(destination, $0.baseAddress! + written, count - written, Int32(MSG_NOSIGNAL)) }
            if result < 0 && errno == EINTR { continue }
            guard result > 0 else { return false }
            written += result
        }
        return true
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return address
    }

    /// The two sockets of one relayed connection, closed once both directions have ended, and
    /// never shut down after that (their numbers may belong to another connection by then).
    private final class ConnectionEnds: @unchecked Sendable {
        private let client: Int32
        private let server: Int32
        private let lock = NSLock()
        private var running = 2
        private var closed = false

        init(client: Int32, server: Int32) {
            self.client = client
            self.server = server
        }

        /// Ends both directions, which wakes a pump blocked in `read`.
        func shutdownBoth() {
            lock.withLock {
                guard !closed else { return }
                shutdown(client, Int32(SHUT_RDWR))
                shutdown(server, Int32(SHUT_RDWR))
            }
        }

        func pumpEnded() {
            lock.withLock {
                running -= 1
                guard running == 0 else { return }
                close(client)
                close(server)
                closed = true
            }
        }
    }

    struct RelayError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
