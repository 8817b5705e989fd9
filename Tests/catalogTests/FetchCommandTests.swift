import CatalogTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `catalog fetch` against `catalog serve`, both as processes: a download, a fresh-cache answer, a
/// forced revalidation, then the server gone.
@Suite struct FetchCommandTests {
    /// Runs `catalog fetch …` with its cache under `cacheHome`; output through files, as in CommandTests.
    private func fetch(_ arguments: [String], cacheHome: URL, in directory: URL) throws -> CommandTests.Run {
        let process = Process()
        process.executableURL = try CommandTests.executable()
        process.arguments = ["fetch"] + arguments
        process.currentDirectoryURL = directory
        process.environment = ProcessInfo.processInfo.environment.merging(["XDG_CACHE_HOME": cacheHome.path]) { $1 }
        let out = directory.appendingPathComponent(".fetch-out-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: out) }
        let handle = try FileHandle(forWritingTo: out)
        process.standardOutput = handle
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try handle.close()
        return CommandTests.Run(
            status: process.terminationStatus, stdout: String(decoding: try Data(contentsOf: out), as: UTF8.self), stderr: "")
    }

    /// The `key: value` lines after the identifiers.
    private func fields(_ output: String) -> [String: String] {
        var result: [String: String] = [:]
        for line in output.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":"), !line.hasPrefix("com.") else { continue }
            result[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return result
    }

    @Test func showsDownloadFreshCacheRevalidationAndStaleness() async throws {
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("catalog/com.example.app.plist", seedCatalog)
            let cacheHome = workspace.root.appendingPathComponent("xdg-cache")
            let server = try ServeProcess(in: workspace)
            defer { if server.process.isRunning { server.process.terminate() } }
            let url = server.url("/v1/apps/com.example.app/products.json").absoluteString
            var first = try fetch([url], cacheHome: cacheHome, in: workspace.root)
            for _ in 0..<100 where first.status != 0 {
                try await Task.sleep(for: .milliseconds(100))
                first = try fetch([url], cacheHome: cacheHome, in: workspace.root)
            }
            let identifiers = "com.example.level1\ncom.example.level2\ncom.example.rocket_car\n\n"
            #expect(first.status == 0)
            #expect(first.stdout.hasPrefix(identifiers), "\(first.stdout)")
            #expect(fields(first.stdout)["status"] == "200")
            #expect(fields(first.stdout)["etag"]?.hasPrefix("\"") == true)
            #expect(fields(first.stdout)["last-modified"]?.hasSuffix(" GMT") == true)
            #expect(fields(first.stdout)["stale"] == "no")
            #expect(
                FileManager.default.fileExists(atPath: cacheHome.appendingPathComponent("catalog/feeds").path),
                "the cache lives under XDG_CACHE_HOME")

            let fresh = try fetch([url], cacheHome: cacheHome, in: workspace.root)
            #expect(fresh.stdout.hasPrefix(identifiers))
            #expect(fields(fresh.stdout)["status"] == "none")
            #expect(fields(fresh.stdout)["source"]?.hasPrefix("freshCache") == true)

            let revalidated = try fetch([url, "--refresh"], cacheHome: cacheHome, in: workspace.root)
            #expect(revalidated.stdout.hasPrefix(identifiers))
            #expect(fields(revalidated.stdout)["status"] == "304")
            #expect(fields(revalidated.stdout)["etag"] == fields(first.stdout)["etag"])
            #expect(fields(revalidated.stdout)["source"]?.hasPrefix("notModified") == true)

            server.process.terminate()
            server.process.waitUntilExit()
            let stale = try fetch([url, "--refresh"], cacheHome: cacheHome, in: workspace.root)
            #expect(stale.status == 0)
            #expect(stale.stdout.hasPrefix(identifiers))
            #expect(fields(stale.stdout)["source"]?.hasPrefix("staleCache") == true)
            #expect(fields(stale.stdout)["stale"] == "yes")

            let nothing = try fetch([url], cacheHome: workspace.root.appendingPathComponent("empty"), in: workspace.root)
            #expect(nothing.status == 1)
            #expect(fields(nothing.stdout)["source"]?.hasPrefix("fallback") == true)
        }
    }
}
