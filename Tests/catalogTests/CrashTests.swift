import CatalogKit
import CatalogTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `catalog build` killed with SIGKILL at random moments: whatever the moment, the published tree
/// is one complete revision whose every file matches its manifest, and the next build succeeds.
@Suite struct CrashTests {
    @Test func killedBuildsLeaveACompleteRevision() async throws {
        let binary = try catalogBinary()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("crash-\(UUID().uuidString)")
        let catalog = root.appendingPathComponent("catalog")
        let publicDirectory = root.appendingPathComponent("public")
        try FileManager.default.createDirectory(at: catalog, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }

        var productCount = 3000
        func writeCatalog() throws {
            var body = ""
            for index in 0..<productCount {
                body +=
                    "\t\t<dict><key>id</key><string>com.example.crash.item\(index)</string>"
                    + "<key>type</key><string>consumable</string>"
                    + (index % 7 == 0 ? "<key>platforms</key><array><string>iOS</string></array>" : "")
                    + "<key>metadata</key><dict><key>n</key><integer>\(index)</integer></dict></dict>\n"
            }
            let text = """
                <?xml version="1.0" encoding="UTF-8"?>
                <plist version="1.0"><dict><key>platforms</key><array><string>iOS</string><string>macOS</string></array>
                <key>products</key><array>
                \(body)</array></dict></plist>
                """
            try Data(text.utf8).write(to: catalog.appendingPathComponent("com.example.crash.plist"))
        }
        func build() async throws -> (status: Int32, duration: TimeInterval) {
            let start = Date()
            let process = try run(binary, ["build", "--catalog", catalog.path, "--public", publicDirectory.path])
            try await waitForExit(process)
            return (process.terminationStatus, Date().timeIntervalSince(start))
        }

        try writeCatalog()
        #expect(try await build().status == 0)
        // Time a rebuild: it also reads and compares the previous revision, like the killed ones.
        productCount += 1
        try writeCatalog()
        let first = try await build()
        #expect(first.status == 0)
        var kills = 0
        // How long a build takes now. Sleeps overshoot and builds speed up or slow down with the
        // machine's load: a build that had ended before its kill shortens the span, so that kills
        // keep landing however loaded the machine is.
        var span = max(first.duration, 0.05)
        // Kills land across the whole run, most of them in its second half, where writing happens.
        for cycle in 0..<40 {
            productCount += 1
            try writeCatalog()
            let process = try run(binary, ["build", "--catalog", catalog.path, "--public", publicDirectory.path])
            let moment = cycle % 4 == 0 ? Double.random(in: 0...span) : Double.random(in: span * 0.4...span * 1.1)
            try await Task.sleep(for: .seconds(moment))
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                kills += 1
            } else {
                span = max(span * 0.7, 0.01)
            }
            try await waitForExit(process)
            try expectCompleteRevision(publicDirectory, app: "com.example.crash")
        }
        let last = try await build()
        #expect(last.status == 0)
        try expectCompleteRevision(publicDirectory, app: "com.example.crash")
        let tree = PublicTree(root: publicDirectory)
        let manifest = try #require(try tree.currentManifest("com.example.crash"))
        let ids =
            try JSONSerialization.jsonObject(
                with: Data(tree.feedBytes("com.example.crash", revision: manifest.revision, directory: "", name: "products.json")))
            as? [String]
        #expect(ids?.count == productCount, "the final build publishes the final sources")
        #expect(kills > 0, "no build was killed mid-way; the test proved nothing")
    }

    /// Every file the current manifest names exists with the hash it records.
    private func expectCompleteRevision(_ publicDirectory: URL, app: String) throws {
        let tree = PublicTree(root: publicDirectory)
        let manifest = try #require(try tree.currentManifest(app))
        for variant in manifest.variants {
            for (name, record) in [("products.json", variant.products), ("catalog.json", variant.catalog)] {
                let bytes = try tree.feedBytes(app, revision: manifest.revision, directory: variant.directory, name: name)
                #expect(ContentHash.sha256Hex(bytes) == record.sha256, "\(variant.directory)\(name)")
                let compressed = try tree.feedBytes(app, revision: manifest.revision, directory: variant.directory, name: name + ".gz")
                #expect(ContentHash.sha256Hex(compressed) == record.gzip.sha256, "\(variant.directory)\(name).gz")
            }
        }
        // The static copies are some complete revision's default feeds, never a partial file.
        let staticIDs = try Data(contentsOf: tree.appDirectory(app).appendingPathComponent("products.json"))
        #expect((try? JSONSerialization.jsonObject(with: staticIDs)) is [String])
    }
}

/// The `catalog` executable built next to the test bundle; a missing one fails loudly.
private func catalogBinary() throws -> URL {
    var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for _ in 0..<4 {
        let candidate = directory.appendingPathComponent("catalog")
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        directory = directory.deletingLastPathComponent()
    }
    let fallback = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(".build/debug/catalog")
    if FileManager.default.isExecutableFile(atPath: fallback.path) { return fallback }
    Issue.record("the catalog executable was not built next to the tests (looked near \(CommandLine.arguments[0]))")
    throw CocoaError(.fileNoSuchFile)
}

/// Waits for `process` on a thread of its own: this test runs for a minute or more, and a test
/// thread blocked that long starves every other test's servers.
private func waitForExit(_ process: Process) async throws {
    // `nonisolated(unsafe)`: the process is only waited on there, and read here once it has exited.
    nonisolated(unsafe) let running = process
    _ = try await offThePool { running.waitUntilExit() }
}

private func run(_ binary: URL, _ arguments: [String]) throws -> Process {
    let process = Process()
    process.executableURL = binary
    process.arguments = arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    return process
}
