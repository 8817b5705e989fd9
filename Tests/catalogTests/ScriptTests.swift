import Foundation
import Testing

/// The checks that drive the `catalog` executable of this build from outside, as scripts under
/// `scripts/`: each must exit 0.
///
/// What a script needs that is missing (Chromium, chromedriver, nginx, selenium, schemathesis, joserfc) is a
/// failure, not a skip: a suite that passes without having looked proves nothing. `scripts/setup test`
/// installs them, the Python packages in a virtual environment whose python `TEST_PYTHON` names.
@Suite struct ScriptTests {
    /// The scripts bound each of their waits; this only stops a wedged run from hanging CI.
    static let limit: Duration = .seconds(900)

    static var repository: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    /// The editor dashboard in headless Chromium through Selenium (sign in, edit, a refused
    /// value, another editor's change, preview and publish, history, the public feed, rollback,
    /// the reports chart, 360 px, sign out). Screenshots go to `$BROWSER_ARTIFACTS`, else
    /// `.build/browser-artifacts/`.
    @Test func anEditorSignsInEditsPublishesAndSeesTheRevision() async throws {
        try await Self.run("browser-test")
    }

    /// schemathesis against the OpenAPI document and the live server: every operation, valid
    /// and invalid requests, each answer checked against the document.
    @Test func theServerAnswersAsItsOpenAPIDocumentSays() async throws {
        try await Self.run("api-fuzz")
    }

    /// Signed feeds through nginx serving `public/`: `catalog fetch` in enforce mode accepts them,
    /// joserfc (an independent JOSE implementation) verifies them, and a tampered feed or gzip
    /// copy on the host is refused with the cached list served; an app with platforms and
    /// app-version bands gets each variant's own list, verified, from its own path.
    @Test func signedFeedsVerifyThroughAStaticHost() async throws {
        try await Self.run("signed-static-host")
    }

    /// Issue 26: behind nginx configured as docs/operations.md shows, one machine's forged
    /// forwarding headers take nothing off sale, and 25 real networks still quarantine.
    @Test func oneMachineBehindTheGuidesProxyTakesNothingOffSale() async throws {
        try await Self.run("proxy-trust-test")
    }

    /// Issue 28: every command block that README.md, docs/operations.md, docs/editing.md,
    /// docs/client.md and docs/signing.md mark runnable, run in a fresh folder holding the
    /// `catalog/` sample with this build's `catalog` on PATH, its output compared where the
    /// guide shows it; the guide's nginx site passes `nginx -t`, and the guide's systemd unit
    /// finds every path it names once the guide's setup step has run.
    @Test func theGuidesDoWhatTheySay() async throws {
        try await Self.run("doc-test")
    }

    /// Issue 30: behind nginx caching as a CDN would (`proxy_cache` keyed on the whole URL, the
    /// server's own `Cache-Control`), a signed content URL's second download, and a range of it,
    /// come from the cache, and still do with catalog stopped; an altered URL is catalog's 403,
    /// never cached.
    @Test func theSecondDownloadOfASignedURLComesFromTheCDNsCache() async throws {
        try await Self.run("content-cdn-test")
    }

    static func run(_ name: String) async throws {
        let script = repository.appendingPathComponent("scripts/\(name)")
        try #require(FileManager.default.isExecutableFile(atPath: script.path), "scripts/\(name) is missing")
        let python = ProcessInfo.processInfo.environment["TEST_PYTHON"] ?? "python3"
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: log) }
        let output = try FileHandle(forWritingTo: log)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [python, script.path, "--catalog-bin", try CommandTests.executable().path]
        process.currentDirectoryURL = repository
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = ContinuousClock.now + limit
        while process.isRunning && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(200)) }
        let stuck = process.isRunning
        if stuck {
            process.terminate()
            process.waitUntilExit()
        }
        try output.close()
        let text = String(decoding: try Data(contentsOf: log), as: UTF8.self)
        #expect(!stuck, "scripts/\(name) did not finish within \(limit):\n\(text)")
        #expect(process.terminationStatus == 0, "scripts/\(name) failed:\n\(text)")
    }

    /// Runs `scripts/NAME` on `folder` with this build's catalog (`CATALOG_BIN`) and `environment`:
    /// the scripts that check verdicts against a corpus. The exit status and everything it printed.
    static func check(_ name: String, _ folder: URL, environment: [String: String] = [:]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", repository.appendingPathComponent("scripts/\(name)").path, folder.path]
        var variables = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        variables["CATALOG_BIN"] = try CommandTests.executable().path
        process.environment = variables
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }
}
