import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// `catalog serve` as a child process of the tests, on a free loopback port, run in a
/// workspace: the whole program, as a user starts it.
struct ServeProcess {
    let process = Process()
    let port: Int
    let log: URL

    init(in workspace: CommandTests.Workspace, _ arguments: [String] = []) throws {
        port = try Self.freePort()
        log = workspace.root.appendingPathComponent("serve-\(port).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.executableURL = try CommandTests.executable()
        process.arguments = ["serve", "--port", String(port)] + arguments
        process.currentDirectoryURL = workspace.root
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
    }

    func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    /// The body of `GET path` once the server answers it with 200, polling for up to `seconds`
    /// (a first start builds the catalog); nil if it never did.
    func body(of path: String, within seconds: Int = 10, until done: (String) -> Bool = { _ in true }) async throws -> String? {
        var last: String?
        for _ in 0..<(seconds * 10) {
            if let (data, response) = try? await URLSession.shared.data(from: url(path)), (response as? HTTPURLResponse)?.statusCode == 200
            {
                last = String(decoding: data, as: UTF8.self)
                if done(last!) { return last }
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        return last
    }

    /// Sends `signal` and waits up to ten seconds; the exit status, or nil if it did not stop.
    func stop(with signal: Int32 = SIGTERM) async throws -> Int32? {
        kill(process.processIdentifier, signal)
        for _ in 0..<100 where process.isRunning { try await Task.sleep(for: .milliseconds(100)) }
        if process.isRunning {
            process.terminate()
            return nil
        }
        return process.terminationReason == .exit ? process.terminationStatus : -1
    }

    var logText: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    /// A port nothing listens on now: the kernel picks it for a socket bound to port 0.
    private static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else { throw POSIXError(.EADDRNOTAVAIL) }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
