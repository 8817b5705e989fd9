import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A throwaway PostgreSQL server for tests: a cluster of its own in a temporary folder, on a
/// free port of 127.0.0.1 with password authentication, and on a unix socket inside the folder.
/// `stop()` shuts it down and removes the folder.
///
/// PostgreSQL refuses to run as root, and CI runs as root: then the folder belongs to the
/// `postgres` user and the server's programs run as that user. A machine without PostgreSQL is
/// an error that says so, never a skipped test.
///
/// The server runs in the foreground as this process's child rather than daemonized by
/// `pg_ctl start`: Foundation's `Process` on Linux learns that a program exited from a socket the
/// program inherits, and a daemon it starts inherits that socket too, so waiting for `pg_ctl
/// start` would never end (swift-corelibs-foundation issue 4795).
public final class TestPostgres: Sendable {
    public static let user = "catalog"
    public static let password = "catalog-test-password"

    public let port: Int
    /// Holds the cluster (`data/`), the unix socket, the server log and the password file.
    public let folder: URL
    private let binaries: URL
    /// The running server; nil once stopped.
    private let server: Mutex<Process?>

    /// The database that `start()` creates.
    public var url: String { url(database: "catalog") }

    public func url(database: String) -> String {
        "postgres://\(Self.user):\(Self.password)@127.0.0.1:\(port)/\(database)"
    }

    private var socketFolder: URL { Self.socketFolder(in: folder) }
    private var dataFolder: URL { Self.dataFolder(in: folder) }
    private static func socketFolder(in folder: URL) -> URL { folder.appendingPathComponent("socket") }
    private static func dataFolder(in folder: URL) -> URL { folder.appendingPathComponent("data") }
    private static func logFile(in folder: URL) -> URL { folder.appendingPathComponent("server.log") }

    private init(port: Int, folder: URL, binaries: URL, server: sending Process) {
        self.port = port
        self.folder = folder
        self.binaries = binaries
        self.server = Mutex(server)
    }

    /// Creates and starts a server with a database named `catalog`; returns once it accepts
    /// connections. With `tls` (a PEM certificate chain and its key), it offers TLS with them.
    public static func start(tls: (certificate: URL, key: URL)? = nil) throws -> TestPostgres {
        let binaries = try findBinaries()
        // Short: a unix socket's path must fit in about 100 bytes.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "pg-\(UUID().uuidString.prefix(8).lowercased())")
        try FileManager.default.createDirectory(at: socketFolder(in: folder), withIntermediateDirectories: true)
        do {
            var serverOptions: [String] = []
            if let tls {
                // Copied into the folder the server owns; PostgreSQL refuses a key others can read.
                let certificate = folder.appendingPathComponent("server.crt"), key = folder.appendingPathComponent("server.key")
                try FileManager.default.copyItem(at: tls.certificate, to: certificate)
                try FileManager.default.copyItem(at: tls.key, to: key)
                try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: key.path)
                serverOptions = ["-c", "ssl=on", "-c", "ssl_cert_file=\(certificate.path)", "-c", "ssl_key_file=\(key.path)"]
            }
            let passwordFile = folder.appendingPathComponent("password")
            try password.write(to: passwordFile, atomically: true, encoding: .utf8)
            if runningAsRoot {
                guard getpwnam("postgres") != nil else {
                    throw TestPostgresError(
                        "running as root, PostgreSQL needs the `postgres` user, which the postgresql package creates")
                }
                try run(URL(fileURLWithPath: "/bin/chown"), ["-R", "postgres", folder.path], asServer: false)
            }
            // --no-sync: nobody needs this cluster's files to survive a power cut; the server
            // itself still flushes every commit as it would in production.
            try run(
                binaries.appendingPathComponent("initdb"),
                [
                    "-D", dataFolder(in: folder).path, "-U", user, "--pwfile=\(passwordFile.path)", "--auth-local=trust",
                    "--auth-host=scram-sha-256", "-E", "UTF8", "--no-locale", "--no-sync",
                ])
            // Another process may take the free port before the server binds it: try another.
            var attempt = 1
            while true {
                let port = try freePort()
                do {
                    let server = TestPostgres(
                        port: port, folder: folder, binaries: binaries,
                        server: try launchServer(port: port, folder: folder, binaries: binaries, options: serverOptions))
                    do {
                        try server.psqlBlocking("CREATE DATABASE catalog", database: "postgres")
                    } catch {
                        server.stop()
                        throw error
                    }
                    return server
                } catch is ServerExited where attempt < 3 {
                    attempt += 1
                }
            }
        } catch {
            try? FileManager.default.removeItem(at: folder)
            throw error
        }
    }

    /// Starts `postgres` on `port` and waits until it accepts connections.
    private static func launchServer(port: Int, folder: URL, binaries: URL, options: [String]) throws -> sending Process {
        let log = logFile(in: folder)
        guard FileManager.default.createFile(atPath: log.path, contents: nil) else {
            throw TestPostgresError("cannot create \(log.path)")
        }
        let logHandle = try FileHandle(forWritingTo: log)
        defer { try? logHandle.close() }
        let server = process(
            binaries.appendingPathComponent("postgres"),
            [
                "-D", dataFolder(in: folder).path, "-p", "\(port)", "-k", socketFolder(in: folder).path, "-c",
                "listen_addresses=127.0.0.1",
            ] + options, asServer: true)
        server.standardOutput = logHandle
        server.standardError = logHandle
        do {
            try server.run()
        } catch {
            throw TestPostgresError("cannot run postgres: \(error)")
        }
        // What `pg_ctl -w` would do: ask until the server answers, or stops trying.
        let deadline = Date().addingTimeInterval(120)
        while true {
            let ready = try? run(
                binaries.appendingPathComponent("pg_isready"), ["-q", "-h", socketFolder(in: folder).path, "-p", "\(port)"])
            if ready != nil { return server }
            let log = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            guard server.isRunning else { throw ServerExited(log: log) }
            guard Date() < deadline else {
                server.terminate()
                throw TestPostgresError("the server did not accept connections within 2 minutes; its log:\n\(log.suffix(2000))")
            }
            usleep(100_000)
        }
    }

    /// A new, empty database; returns its URL.
    @discardableResult
    public func createDatabase(_ name: String = "t\(UUID().uuidString.filter(\.isHexDigit).prefix(12).lowercased())") async throws -> String
    {
        try await psql("CREATE DATABASE \"\(name)\"", database: "postgres")
        return url(database: name)
    }

    /// Runs `sql` as the cluster's superuser through the unix socket; returns what it printed,
    /// unaligned and without headers.
    @discardableResult
    public func psql(_ sql: String, database: String = "catalog") async throws -> String {
        try await offThePool { try self.psqlBlocking(sql, database: database) }
    }

    private func psqlBlocking(_ sql: String, database: String) throws -> String {
        try Self.run(
            binaries.appendingPathComponent("psql"),
            [
                "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", socketFolder.path, "-p", "\(port)", "-U", Self.user,
                "-d", database, "-c", sql,
            ]
        ).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Shuts the server down (fast: open sessions are disconnected) and removes its folder.
    /// Safe to call twice.
    public func stop() {
        server.withLock { server in
            guard let running = server else { return }
            server = nil
            _ = try? Self.run(binaries.appendingPathComponent("pg_ctl"), ["-D", dataFolder.path, "-m", "fast", "-w", "stop"])
            running.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: folder)
    }

    private static var runningAsRoot: Bool { geteuid() == 0 }

    /// The newest `/usr/lib/postgresql/N/bin` (Debian), or the folder of `initdb` on the PATH.
    private static func findBinaries() throws -> URL {
        let debian = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: debian.path)) ?? []
        var candidates = versions.sorted { (Int($0) ?? 0) > (Int($1) ?? 0) }.map {
            debian.appendingPathComponent($0).appendingPathComponent("bin")
        }
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            candidates.append(URL(fileURLWithPath: String(folder)))
        }
        guard
            let found = candidates.first(where: {
                FileManager.default.isExecutableFile(atPath: $0.appendingPathComponent("initdb").path)
            })
        else {
            throw TestPostgresError(
                "PostgreSQL is not installed: no initdb in /usr/lib/postgresql/*/bin or on the PATH. "
                    + "Install it (apt-get install postgresql); bash scripts/setup test does.")
        }
        return found
    }

    /// A port on 127.0.0.1 that nothing listens on now: the kernel's pick for port 0.
    private static func freePort() throws -> Int {
        try LoopbackListener().port
    }

    /// `program` with `arguments`, not started; server programs (`asServer`) run as `postgres`
    /// when we are root.
    private static func process(_ program: URL, _ arguments: [String], asServer: Bool) -> Process {
        let process = Process()
        if asServer && runningAsRoot {
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
            process.arguments = ["-u", "postgres", "--", program.path] + arguments
        } else {
            process.executableURL = program
            process.arguments = arguments
        }
        process.standardInput = FileHandle.nullDevice
        return process
    }

    /// Runs a program to its end and returns its output; throws with that output when it fails.
    @discardableResult
    private static func run(_ program: URL, _ arguments: [String], asServer: Bool = true) throws -> String {
        let process = process(program, arguments, asServer: asServer)
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        do {
            try process.run()
        } catch {
            throw TestPostgresError("cannot run \(program.path): \(error)")
        }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestPostgresError(
                "\(program.lastPathComponent) \(arguments.joined(separator: " ")) exited with \(process.terminationStatus):\n\(text)")
        }
        return text
    }
}

public struct TestPostgresError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = "test PostgreSQL: \(description)" }
}

/// The server stopped before accepting connections, e.g. because its port was taken meanwhile.
private struct ServerExited: Error, CustomStringConvertible {
    var log: String
    var description: String { "test PostgreSQL: the server exited at once; its log:\n\(log.suffix(2000))" }
}

// MARK: - One server per suite

/// Starts one throwaway PostgreSQL server for a suite, before its first test, and stops it after
/// its last, whatever the tests did; the tests reach it through `TestPostgres.current`. Apply it
/// as `@Suite(.postgres)`, or `@Suite(.postgres(tls: true))` for a server that offers TLS with
/// certificates made for it (`TestPostgres.currentCertificates`).
///
/// A server that cannot start fails every test that asks for it, with the reason: never a skip.
/// Tests that need no server still run.
public struct PostgresServerTrait: SuiteTrait, TestScoping {
    /// Whether the server offers TLS, with a CA and a server certificate for localhost that the
    /// trait makes (`TestCertificates`).
    public var tls: Bool

    public init(tls: Bool = false) {
        self.tls = tls
    }

    /// Not recursive (the default): the scope is provided once, around the whole suite.
    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        let certificateFolder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "pg-tls-\(UUID().uuidString.prefix(8).lowercased())")
        defer { try? FileManager.default.removeItem(at: certificateFolder) }
        let started: Result<TestPostgres.SuiteServer, any Error>
        do {
            let tls = self.tls
            started = .success(try await offThePool { try Self.start(tls: tls, certificateFolder: certificateFolder) })
        } catch {
            started = .failure(error)
        }
        do {
            try await TestPostgres.$suiteServer.withValue(started) {
                try await function()
            }
        } catch {
            await Self.stop(started)
            throw error
        }
        await Self.stop(started)
    }

    private static func stop(_ started: Result<TestPostgres.SuiteServer, any Error>) async {
        guard case .success(let running) = started else { return }
        _ = try? await offThePool { running.server.stop() }
    }

    private static func start(tls: Bool, certificateFolder: URL) throws -> TestPostgres.SuiteServer {
        guard tls else { return TestPostgres.SuiteServer(server: try TestPostgres.start(), certificates: nil) }
        try FileManager.default.createDirectory(at: certificateFolder, withIntermediateDirectories: true)
        let files = try TestCertificates.make(in: certificateFolder)
        return TestPostgres.SuiteServer(server: try TestPostgres.start(tls: (files.certificate, files.key)), certificates: files)
    }
}

extension Trait where Self == PostgresServerTrait {
    /// A throwaway PostgreSQL server for the suite, without TLS (see `PostgresServerTrait`).
    public static var postgres: Self { Self(tls: false) }

    /// A throwaway PostgreSQL server for the suite; with `tls`, it offers TLS with certificates
    /// made for it (see `PostgresServerTrait`).
    public static func postgres(tls: Bool) -> Self { Self(tls: tls) }
}

extension TestPostgres {
    /// What a `PostgresServerTrait` started.
    struct SuiteServer: Sendable {
        var server: TestPostgres
        var certificates: TestCertificates.Files?
    }

    /// Set by `PostgresServerTrait` for the tests of its suite: the server, or why it could not start.
    @TaskLocal static var suiteServer: Result<SuiteServer, any Error>?

    /// The server of the enclosing `.postgres` suite. Throws why it could not start, or that the
    /// suite has no `.postgres` trait.
    public static var current: TestPostgres {
        get throws { try runningSuiteServer().server }
    }

    /// The certificates the server of the enclosing `.postgres(tls: true)` suite offers TLS with.
    public static var currentCertificates: TestCertificates.Files {
        get throws {
            guard let certificates = try runningSuiteServer().certificates else {
                throw TestPostgresError("the suite's server was started without TLS: use @Suite(.postgres(tls: true))")
            }
            return certificates
        }
    }

    private static func runningSuiteServer() throws -> SuiteServer {
        guard let started = suiteServer else {
            throw TestPostgresError("no server: the suite needs the .postgres trait, as in @Suite(.postgres)")
        }
        return try started.get()
    }
}
