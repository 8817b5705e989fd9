import CatalogKit
import CatalogTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Glibc)
    import Glibc
#endif

/// The real `catalog` executable, run as a subprocess in a temporary working directory with
/// `catalog/` and `public/` in it, as an editor or CI would run it.
@Suite struct CommandTests {
    // MARK: - Running the executable

    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Where SwiftPM put the `catalog` executable: next to the test bundle (macOS) or the test
    /// executable (Linux, where `Bundle.main` is the build directory itself).
    static func executable() throws -> URL {
        var candidates: [URL] = []
        if let first = ProcessInfo.processInfo.arguments.first {
            candidates.append(URL(fileURLWithPath: first).deletingLastPathComponent())
        }
        candidates.append(Bundle.main.bundleURL)
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent())
        for bundle in Bundle.allBundles where bundle.bundleURL.pathExtension == "xctest" {
            candidates.append(bundle.bundleURL.deletingLastPathComponent())
        }
        for directory in candidates {
            let url = directory.appendingPathComponent("catalog")
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue,
                FileManager.default.isExecutableFile(atPath: url.path)
            {
                return url
            }
        }
        Issue.record(
            "the catalog executable is missing; looked in \(candidates.map(\.path)). Build it first: swift build --build-tests")
        throw MissingExecutable()
    }

    struct MissingExecutable: Error {}

    /// Runs `catalog arguments…` in `directory`; output goes through files, so no pipe can fill up.
    /// ``run(_:in:environment:)`` on a thread of its own: waiting for a process must not hold one of
    /// the few threads every test's tasks (and the servers of other tests) run on.
    static func run(_ arguments: [String], in directory: URL, environment: [String: String] = [:]) async throws -> Run {
        try await offThePool { try runBlocking(arguments, in: directory, environment: environment) }
    }

    private static func runBlocking(_ arguments: [String], in directory: URL, environment: [String: String]) throws -> Run {
        let process = Process()
        process.executableURL = try executable()
        process.arguments = arguments
        process.currentDirectoryURL = directory
        // The caller's CATALOG_ settings must not leak into a test's.
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("CATALOG_") }.merging(environment) { $1 }
        let outURL = directory.appendingPathComponent(".stdout-\(UUID().uuidString)")
        let errURL = directory.appendingPathComponent(".stderr-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        defer {
            try? FileManager.default.removeItem(at: outURL)
            try? FileManager.default.removeItem(at: errURL)
        }
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try out.close()
        try err.close()
        return Run(
            status: process.terminationStatus,
            stdout: String(decoding: try Data(contentsOf: outURL), as: UTF8.self),
            stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
    }

    /// A temporary working directory with `catalog/`; removed afterwards.
    struct Workspace {
        let root: URL

        init() throws {
            root = FileManager.default.temporaryDirectory
                .appendingPathComponent("catalog-command-tests-\(UUID().uuidString)", isDirectory: true)
            try FileManager.default.createDirectory(at: root.appendingPathComponent("catalog"), withIntermediateDirectories: true)
        }

        func write(_ path: String, _ text: String) throws {
            let url = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
        }

        func read(_ path: String) -> String? {
            FileManager.default.contents(atPath: root.appendingPathComponent(path).path).map { String(decoding: $0, as: UTF8.self) }
        }

        func exists(_ path: String) -> Bool {
            FileManager.default.fileExists(atPath: root.appendingPathComponent(path).path)
        }

        func run(_ arguments: String...) async throws -> Run {
            try await CommandTests.run(arguments, in: root)
        }

        /// Every file below `root` (output capture files excluded) with its bytes.
        func files() -> [String: Data] {
            var result: [String: Data] = [:]
            let base = root.resolvingSymlinksInPath().path
            guard let enumerator = FileManager.default.enumerator(atPath: base) else { return result }
            while let relative = enumerator.nextObject() as? String {
                var isDirectory: ObjCBool = false
                let path = base + "/" + relative
                if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
                    result[relative] = FileManager.default.contents(atPath: path)
                }
            }
            return result
        }

        func remove() {
            try? FileManager.default.removeItem(at: root)
        }
    }

    static func withWorkspace<T>(_ body: (Workspace) async throws -> T) async throws -> T {
        let workspace = try Workspace()
        defer { workspace.remove() }
        return try await body(workspace)
    }

    static let seed = seedCatalog

    /// A demo-like clean catalog: Apple's minimal form, the full form in catalog XML, and a folder app.
    static func writeDemo(_ workspace: Workspace) throws {
        try workspace.write("catalog/com.example.app.plist", seed)
        try workspace.write(
            "catalog/com.example.game.xml",
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <catalog xmlns="urn:iap-catalog:1" app="com.example.game">
            \t<platforms>
            \t\t<platform>iOS</platform>
            \t\t<platform>macOS</platform>
            \t</platforms>
            \t<product id="com.example.game.coins" type="consumable" referenceName="Coins"/>
            \t<product id="com.example.game.pro" type="auto-renewable" minimumAppVersion="2.0">
            \t\t<subscription group="premium" period="P1M" rank="1"/>
            \t</product>
            \t<product id="com.example.game.old" type="non-consumable" status="retired"/>
            </catalog>

            """)
        try workspace.write(
            "catalog/com.example.tools/settings.plist",
            plist(
                """
                <dict>
                \t<key>app</key>
                \t<string>com.example.tools</string>
                \t<key>platforms</key>
                \t<array>
                \t\t<string>macOS</string>
                \t</array>
                </dict>
                """))
        try workspace.write(
            "catalog/com.example.tools/products.plist",
            plist(
                """
                <array>
                \t<string>com.example.tools.export</string>
                </array>
                """))
    }

    // MARK: - validate

    @Test func validateCleanCatalog() async throws {
        try await Self.withWorkspace { workspace in
            try Self.writeDemo(workspace)
            let run = try await workspace.run("validate")
            #expect(run.status == 0)
            #expect(run.stdout == "3 apps, 7 products: valid\n")
            #expect(run.stderr == "")
            #expect(!workspace.exists("public"))
        }
    }

    /// The demo catalog shipped in the repository validates clean and builds.
    @Test func repositoryDemoCatalog() async throws {
        let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let demo = package.appendingPathComponent("catalog", isDirectory: true)
        try #require(FileManager.default.fileExists(atPath: demo.path), "no demo catalog at \(demo.path)")
        try await Self.withWorkspace { workspace in
            let run = try await workspace.run("validate", "--catalog", demo.path)
            #expect(run.status == 0)
            #expect(run.stderr == "")
            #expect(run.stdout.hasSuffix(" products: valid\n"))
            let build = try await workspace.run("build", "--catalog", demo.path, "--public", "site")
            #expect(build.status == 0)
            let apps = try FileManager.default.contentsOfDirectory(atPath: workspace.root.appendingPathComponent("site/v1/apps").path)
            #expect(!apps.isEmpty)
            for app in apps {
                let bytes = try Data(contentsOf: workspace.root.appendingPathComponent("site/v1/apps/\(app)/products.json"))
                #expect(try JSONSerialization.jsonObject(with: bytes) is [String], "\(app)")
            }
        }
    }

    @Test func validateWithWarningsOnly() async throws {
        try await Self.withWorkspace { workspace in
            try workspace.write("catalog/com.example.app.plist", plist("<array>\n\t<string>com.example.Level-1</string>\n</array>"))
            let run = try await workspace.run("validate")
            #expect(run.status == 0)
            #expect(run.stdout == "1 app, 1 product: valid\n")
            #expect(
                run.stderr == """
                    catalog/com.example.app.plist:5:2: warning: product id 'com.example.Level-1' contains '-'; older App Store rules and other stores reject it
                    catalog/com.example.app.plist:5:2: warning: product id 'com.example.Level-1' contains upper case letters; other stores reject them
                    0 errors, 2 warnings

                    """)
        }
    }

    @Test func validateWithErrors() async throws {
        try await Self.withWorkspace { workspace in
            try Self.writeDemo(workspace)
            try workspace.write(
                "catalog/com.example.app.plist",
                plist(
                    """
                    <array>
                    \t<string>com.example.level1</string>
                    \t<string>com.example.level1</string>
                    \t<string>com.example.Level2</string>
                    \t<integer>3</integer>
                    </array>
                    """))
            let run = try await workspace.run("validate")
            #expect(run.status == 1)
            #expect(run.stdout == "")
            #expect(
                run.stderr == """
                    catalog/com.example.app.plist:6:2: error: duplicate product id 'com.example.level1' (first at 5:2)
                    catalog/com.example.app.plist:7:2: warning: product id 'com.example.Level2' contains upper case letters; other stores reject them
                    catalog/com.example.app.plist:8:2: error: expected a product identifier <string>, found <integer>
                    2 errors, 1 warning

                    """)
        }
    }

    /// Diagnostics show the catalog directory as it was typed.
    @Test func validateShowsTheCatalogPathAsTyped() async throws {
        try await Self.withWorkspace { workspace in
            try workspace.write("sources/com.example.app.plist", plist("<array>\n\t<string>bad id</string>\n</array>"))
            let run = try await workspace.run("validate", "--catalog", "sources")
            #expect(run.status == 1)
            #expect(
                run.stderr == """
                    sources/com.example.app.plist:5:2: error: product id 'bad id' contains ' '; only letters, digits, '.', '_' and '-' are allowed
                    1 error, 0 warnings

                    """)
            let slash = try await workspace.run("validate", "--catalog", "sources/")
            #expect(slash.stderr.hasPrefix("sources/com.example.app.plist:5:2: error: "))
        }
    }

    @Test(arguments: [
        [],
        ["validate", "--bogus"],
        ["build", "--bogus"],
        ["validate", "--catalog", "missing"],
        ["build", "--catalog", "missing"],
        ["validate", "--catalog"],
        ["publish"],
        ["validate", "extra"],
        ["feedback", "release", "com.example.app"],
        ["feedback", "--store", "mysql://localhost/reports"],
    ])
    func misuseExitsWith64(arguments: [String]) async throws {
        try await Self.withWorkspace { workspace in
            try Self.writeDemo(workspace)
            let run = try await CommandTests.run(arguments, in: workspace.root)
            #expect(run.status == 64)
            #expect(run.stdout == "")
            #expect(run.stderr.contains("Usage: catalog") || run.stderr.contains("USAGE: catalog"))
            #expect(!workspace.exists("public"))
        }
    }

    @Test func missingCatalogDirectoryIsNamed() async throws {
        try await Self.withWorkspace { workspace in
            let run = try await workspace.run("validate", "--catalog", "missing")
            #expect(run.status == 64)
            #expect(run.stderr.hasPrefix("Error: catalog directory 'missing' does not exist\n"))
        }
    }

    // MARK: - build

    @Test func buildSeedExample() async throws {
        try await Self.withWorkspace { workspace in
            try workspace.write("catalog/com.example.app.plist", Self.seed)
            let run = try await workspace.run("build")
            #expect(run.status == 0)
            #expect(run.stderr == "")
            #expect(run.stdout == "com.example.app: published revision 1: 3 on sale, 0 known; products 3 added; 2 of 2 feeds changed\n")
            let expected = seedProductsJSON
            #expect(workspace.read("public/v1/apps/com.example.app/products.json") == expected)
            #expect(workspace.read("public/v1/apps/com.example.app/revisions/1/products.json") == expected)
            let gzip = try #require(
                FileManager.default.contents(
                    atPath: workspace.root.appendingPathComponent("public/v1/apps/com.example.app/products.json.gz").path))
            #expect(Gzip.decompress([UInt8](gzip)).map { String(decoding: $0, as: UTF8.self) } == expected)

            // Unchanged sources: nothing published, nothing touched.
            let before = workspace.files().filter { $0.key.hasPrefix("public/") }
            let again = try await workspace.run("build")
            #expect(again.status == 0)
            #expect(again.stdout == "com.example.app: unchanged at revision 1\n")
            #expect(workspace.files().filter { $0.key.hasPrefix("public/") } == before)
        }
    }

    @Test func buildPrintsASummaryLinePerApp() async throws {
        try await Self.withWorkspace { workspace in
            try Self.writeDemo(workspace)
            let run = try await workspace.run("build", "--public", "site")
            #expect(run.status == 0)
            #expect(run.stderr == "")
            #expect(
                run.stdout == """
                    com.example.app: published revision 1: 3 on sale, 0 known; products 3 added; 2 of 2 feeds changed
                    com.example.game: published revision 1: 2 on sale, 1 known; products 3 added; 18 of 18 feeds changed
                    com.example.tools: published revision 1: 1 on sale, 0 known; products 1 added; 4 of 4 feeds changed

                    """)
            #expect(workspace.read("site/v1/apps/com.example.game/products.json") == #"["com.example.game.coins","com.example.game.pro"]"#)
            #expect(workspace.read("site/v1/apps/com.example.tools/products.json") == #"["com.example.tools.export"]"#)
            #expect(!workspace.exists("public"))
        }
    }

    @Test func buildWithErrorsPublishesNothing() async throws {
        try await Self.withWorkspace { workspace in
            try Self.writeDemo(workspace)
            try workspace.write("catalog/com.example.broken.plist", plist("<array>\n\t<string>bad id</string>\n</array>"))
            let run = try await workspace.run("build")
            #expect(run.status == 1)
            #expect(run.stdout == "")
            #expect(
                run.stderr == """
                    catalog/com.example.broken.plist:5:2: error: product id 'bad id' contains ' '; only letters, digits, '.', '_' and '-' are allowed
                    1 error, 0 warnings

                    """)
            #expect(!workspace.exists("public"))
            // The store opens only once the catalog has validated: none is made for a failed build.
            #expect(!workspace.exists("var"))
        }
    }

    /// The store is opened beside the build, and its errors are said as before: after publishing,
    /// when the audit log must be written, and not at all when nothing is published.
    @Test func aStoreThatCannotBeOpenedIsSaidOnlyWhenItIsNeeded() async throws {
        try await Self.withWorkspace { workspace in
            try Self.writeDemo(workspace)
            try workspace.write("blocker", "a file where the store's folder would be")
            let first = try await workspace.run("build", "--store", "sqlite:blocker/catalog.sqlite")
            #expect(first.status == 1)
            #expect(first.stderr.hasPrefix("error: cannot open the report store sqlite:blocker/catalog.sqlite: "), "\(first.stderr)")
            #expect(workspace.exists("public/v1/apps/com.example.app/manifest.json"))
            let unchanged = try await workspace.run("build", "--store", "sqlite:blocker/catalog.sqlite")
            #expect(unchanged.status == 0, "\(unchanged.stderr)")
            #expect(unchanged.stderr == "")
            #expect(try await workspace.run("build").status == 0)
            #expect(!workspace.exists("var"))
        }
    }

    @Test func dryRunPrintsTheDiffAndWritesNothing() async throws {
        try await Self.withWorkspace { workspace in
            try workspace.write("catalog/com.example.app.plist", Self.seed)
            let first = try await workspace.run("build", "--dry-run")
            #expect(first.status == 0)
            #expect(first.stderr == "")
            #expect(
                first.stdout == """
                    com.example.app: would publish revision 1: 3 on sale, 0 known; products 3 added; 2 of 2 feeds changed
                      + com.example.level1
                      + com.example.level2
                      + com.example.rocket_car

                    """)
            #expect(!workspace.exists("public"))

            #expect(try await workspace.run("build").status == 0)
            try workspace.write(
                "catalog/com.example.app.plist",
                plist(
                    """
                    <dict>
                    \t<key>products</key>
                    \t<array>
                    \t\t<dict>
                    \t\t\t<key>id</key>
                    \t\t\t<string>com.example.level1</string>
                    \t\t</dict>
                    \t\t<dict>
                    \t\t\t<key>id</key>
                    \t\t\t<string>com.example.level2</string>
                    \t\t\t<key>referenceName</key>
                    \t\t\t<string>Level 2</string>
                    \t\t</dict>
                    \t\t<dict>
                    \t\t\t<key>id</key>
                    \t\t\t<string>com.example.rocket_car</string>
                    \t\t\t<key>status</key>
                    \t\t\t<string>retired</string>
                    \t\t</dict>
                    \t\t<dict>
                    \t\t\t<key>id</key>
                    \t\t\t<string>com.example.level3</string>
                    \t\t</dict>
                    \t</array>
                    </dict>
                    """))
            let before = workspace.files()
            let second = try await workspace.run("build", "--dry-run")
            #expect(second.status == 0)
            #expect(
                second.stdout == """
                    com.example.app: would publish revision 2: 3 on sale, 1 known; products 1 added, 2 changed; 2 of 2 feeds changed
                      + com.example.level3
                      ~ com.example.level2: referenceName added: Level 2
                      ~ com.example.rocket_car: status cleared → retired

                    """)
            #expect(workspace.files() == before)
            #expect(!workspace.exists("public/v1/apps/com.example.app/revisions/2"))
        }
    }

    @Test func helpListsTheCommands() async throws {
        try await Self.withWorkspace { workspace in
            let run = try await workspace.run("--help")
            #expect(run.status == 0)
            let lines = run.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(lines.contains { $0.hasPrefix("validate ") })
            #expect(lines.contains { $0.hasPrefix("build ") })
            #expect(run.stdout.contains("USAGE: catalog <subcommand>"))

            let build = try await workspace.run("build", "--help")
            #expect(build.status == 0)
            #expect(build.stdout.contains("--dry-run"))
            #expect(build.stdout.contains("--catalog <catalog>"))
            #expect(build.stdout.contains("--public <public>"))
        }
    }
}

/// `catalog serve` as a process: it answers, then stops cleanly on SIGTERM and SIGINT.
@Suite struct ServeCommandTests {
    @Test(arguments: [SIGTERM, SIGINT])
    func stopsGracefullyOnSignal(_ signal: Int32) async throws {
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("catalog/com.example.app.plist", CommandTests.seed)
            let server = try ServeProcess(in: workspace)
            defer { if server.process.isRunning { server.process.terminate() } }

            // Up within ten seconds: it builds the catalog first, then listens.
            #expect(try await server.body(of: "/v1/apps/com.example.app/products.json") == seedProductsJSON)
            let status = try await server.stop(with: signal)
            #expect(status == 0, "exit status 0 within ten seconds of the signal")
        }
    }
}
