import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The editor dashboard in a real browser: `scripts/browser-test` drives headless Chromium
/// through Selenium against the `catalog` executable of this build (sign in, edit, a refused
/// value, another editor's change, preview and publish, history, the public feed, the reports
/// chart, 360 px, sign out).
///
/// Chromium, chromedriver or selenium missing is a failure, not a skip: a suite that passes
/// without having looked at the page proves nothing. `.ci/run` installs them. Screenshots go to
/// `$BROWSER_ARTIFACTS`, else `.build/browser-artifacts/`.
@Suite struct BrowserTests {
    /// The script bounds each of its waits; this only stops a wedged browser from hanging CI.
    static let limit: Duration = .seconds(600)

    static var repository: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    @Test func anEditorSignsInEditsPublishesAndSeesTheRevision() async throws {
        let script = Self.repository.appendingPathComponent("scripts/browser-test")
        #expect(FileManager.default.isExecutableFile(atPath: script.path), "scripts/browser-test is missing")
        // .ci/run puts selenium in a virtual environment and names its python here.
        let python = ProcessInfo.processInfo.environment["BROWSER_TEST_PYTHON"] ?? "python3"
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("browser-test-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: log) }
        let output = try FileHandle(forWritingTo: log)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [python, script.path, "--catalog-bin", try CommandTests.executable().path]
        process.currentDirectoryURL = Self.repository
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = ContinuousClock.now + Self.limit
        while process.isRunning && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(200)) }
        let stuck = process.isRunning
        if stuck {
            process.terminate()
            process.waitUntilExit()
        }
        try output.close()
        let text = String(decoding: try Data(contentsOf: log), as: UTF8.self)
        #expect(!stuck, "scripts/browser-test did not finish within \(Self.limit):\n\(text)")
        #expect(process.terminationStatus == 0, "scripts/browser-test failed:\n\(text)")
    }
}
