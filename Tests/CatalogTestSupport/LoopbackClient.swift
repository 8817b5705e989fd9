import Dispatch

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One HTTP/1.1 request from a chosen source address of 127.0.0.0/8 to a server on 127.0.0.1:
/// how tests play clients on distinct networks (127.0.N.1 for N in 0…255 are 256 IPv4 /24s) on
/// one machine. The request is sent whole with `Connection: close`; the answer is read to the end.
public enum LoopbackClient {
    public struct Answer: Sendable {
        public var status: Int
        /// The raw response: head and body.
        public var text: String
    }

    /// ``request(from:port:method:path:headers:body:)`` on a thread of its own: its blocking
    /// socket calls must not hold one of the few threads that run the server's own tasks.
    public static func send(
        from source: String, port: Int, method: String = "POST", path: String, headers: [(String, String)] = [],
        body: String = ""
    ) async throws -> Answer {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(
                    with: Result { try request(from: source, port: port, method: method, path: path, headers: headers, body: body) })
            }
        }
    }

    /// Sends `method path` with `headers` and `body` from `source` to 127.0.0.1:`port`, blocking.
    public static func request(
        from source: String, port: Int, method: String = "POST", path: String, headers: [(String, String)] = [],
        body: String = ""
    ) throws -> Answer {
        #if canImport(Glibc)
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw LoopbackClientError("socket(): errno \(errno)") }
        defer { close(descriptor) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        func address(_ host: String, _ port: Int) -> sockaddr_in {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr(host)
            address.sin_port = UInt16(port).bigEndian
            return address
        }
        var local = address(source, 0)
        var remote = address("127.0.0.1", port)
        let length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) } }
        guard bound == 0 else { throw LoopbackClientError("cannot bind \(source): errno \(errno)") }
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, length) }
        }
        guard connected == 0 else { throw LoopbackClientError("cannot connect from \(source) to port \(port): errno \(errno)") }

        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" { head += "Content-Length: \(body.utf8.count)\r\n" }
        let request = Array((head + "\r\n" + body).utf8)
        var sent = 0
        while sent < request.count {
            let count = request[sent...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { throw LoopbackClientError("send from \(source): errno \(errno)") }
            sent += count
        }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            response += buffer[0..<count]
        }
        let text = String(decoding: response, as: UTF8.self)
        // "HTTP/1.1 202 Accepted": the status is the second word.
        let words = text.prefix { $0 != "\r" }.split(separator: " ")
        guard words.count >= 2, let status = Int(words[1]) else {
            throw LoopbackClientError("no HTTP answer from port \(port) to \(source)")
        }
        return Answer(status: status, text: text)
    }
}

public struct LoopbackClientError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = "loopback client: \(description)" }
}
