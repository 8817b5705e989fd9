import CatalogTestSupport
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

    /// `environment` is added to this process's own, whose `CATALOG_` variables are left out
    /// (as ``CommandTests/run(_:in:environment:)`` does), so that only the test's settings count.
    /// `port` is a free one unless given (a server started again where its clients know it).
    init(
        in workspace: CommandTests.Workspace, _ arguments: [String] = [], environment: [String: String] = [:], port: Int? = nil
    ) throws {
        self.port = try port ?? LoopbackListener().port  // free now: the listener closes at once
        log = workspace.root.appendingPathComponent("serve-\(self.port).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.executableURL = try CommandTests.executable()
        process.arguments = ["serve", "--port", String(self.port)] + arguments
        process.currentDirectoryURL = workspace.root
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("CATALOG_") }.merging(environment) { $1 }
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
}
