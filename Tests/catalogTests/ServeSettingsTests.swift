import Foundation
import Storage
import Testing

@testable import catalog

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Where `catalog serve` takes each setting from (docs/operations.md): its flag, else
/// `CATALOG_<NAME>`, else the `--config` file, else the default; secrets from files or the
/// environment, never printed. `--print-config` shows what `run` would use, resolved the same way.
@Suite struct ServeSettingsTests {
    /// The effective value and source of each line of `--print-config`, by setting name.
    static func effective(_ output: String) -> [String: (value: String, source: String)] {
        var settings: [String: (value: String, source: String)] = [:]
        for line in output.split(separator: "\n") {
            guard let equals = line.range(of: " = "), let hash = line.range(of: "  # ", options: .backwards) else { continue }
            let name = line[..<equals.lowerBound].trimmingCharacters(in: .whitespaces)
            settings[name] = (String(line[equals.upperBound..<hash.lowerBound]), String(line[hash.upperBound...]))
        }
        return settings
    }

    @Test func aFlagBeatsTheEnvironmentWhichBeatsTheFileWhichBeatsTheDefault() async throws {
        try await CommandTests.withWorkspace { workspace in
            try workspace.write(
                "serve.json",
                #"{"port": 9001, "host": "127.0.0.2", "read-deadline": 7, "idle-timeout": 40, "trusted-proxy": ["10.0.0.0/8"]}"#)
            let run = try await CommandTests.run(
                ["serve", "--config", "serve.json", "--port", "9003", "--print-config"], in: workspace.root,
                environment: ["CATALOG_PORT": "9002", "CATALOG_HOST": "127.0.0.3", "CATALOG_TRUSTED_PROXY": "192.168.0.0/16,fd00::/8"])
            #expect(run.status == 0, "\(run.stderr)")
            let settings = Self.effective(run.stdout)
            #expect(settings["port"]?.value == "9003" && settings["port"]?.source == "--port")
            #expect(settings["host"]?.value == "127.0.0.3" && settings["host"]?.source == "CATALOG_HOST")
            #expect(settings["trusted-proxy"]?.value == "192.168.0.0/16,fd00::/8")
            #expect(settings["read-deadline"]?.value == "7" && settings["read-deadline"]?.source == "serve.json")
            #expect(settings["idle-timeout"]?.value == "40")
            #expect(settings["report-limit-address"]?.value == "600" && settings["report-limit-address"]?.source == "default")
        }
    }

    /// The PostgreSQL password may come in CATALOG_STORE or a file; neither reaches the output,
    /// and the effective store is shown without it.
    @Test func secretsComeFromTheEnvironmentOrAFileAndAreNeverPrinted() async throws {
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("password", "from-the-file\n")
            let run = try await CommandTests.run(
                ["serve", "--store-password-file", "password", "--print-config"], in: workspace.root,
                environment: ["CATALOG_STORE": "postgres://catalog:from-the-environment@db.example/catalog"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(!run.stdout.contains("from-the-file") && !run.stdout.contains("from-the-environment"))
            let settings = Self.effective(run.stdout)
            #expect(settings["store"]?.value == "<redacted>" && settings["store"]?.source == "CATALOG_STORE")
            #expect(settings["store (effective)"]?.value == "postgres://catalog@db.example:5432/catalog")
        }
    }

    /// A value that would be refused as a flag is refused from the environment or the file too,
    /// naming where it came from.
    @Test(arguments: [
        (["CATALOG_PORT": "eighty"], "", "CATALOG_PORT: 'eighty' is not a valid value for --port"),
        ([:], #"{"read-deadline": 0}"#, "--read-deadline must be 1 to 3600 seconds"),
        (["CATALOG_TRUSTED_PROXY": "10.0.0.0/8,nowhere"], "", "--trusted-proxy 'nowhere' is not an address or CIDR block"),
    ])
    func aBadValueIsRefusedWhereverItComesFrom(environment: [String: String], file: String, message: String) async throws {
        try await Self.expectRefusal(environment: environment, file: file, message: message)
    }

    /// `--retention-days` takes the span syntax of every other duration (`90d`, `12w`, `36h`), and a
    /// bare number is still days, from a flag, the environment or the file alike.
    static let retentions: [(flags: [String], environment: [String: String], seconds: Int64)] = [
        (["--retention-days", "12w"], [:], 12 * 604_800), (["--retention-days", "36h"], [:], 36 * 3600),
        (["--retention-days", "30"], [:], 30 * 86_400), ([], ["CATALOG_RETENTION_DAYS": "2w"], 14 * 86_400),
        ([], ["CATALOG_RETENTION_DAYS": "7"], 7 * 86_400), ([], [:], 90 * 86_400),
    ]

    @Test(arguments: retentions)
    func retentionIsASpanOrABareNumberOfDays(flags: [String], environment: [String: String], seconds: Int64) throws {
        let options = try ReportsOptions.parse(flags)
        let resolved = try options.resolve(Settings(configFile: nil, environment: environment), store: .sqlite(path: "var/catalog.sqlite"))
        #expect(resolved.configuration.retention == .seconds(seconds))
    }

    @Test(arguments: [
        (["CATALOG_RETENTION_DAYS": "12h"], "", "--retention-days must be from 1d to 36600d (100 years); got 12h"),
        ([:], #"{"retention-days": 0}"#, "--retention-days must be from 1d to 36600d (100 years); got 0"),
        ([:], #"{"retention-days": "36601d"}"#, "--retention-days must be from 1d to 36600d"),
        (["CATALOG_RETENTION_DAYS": "90 days"], "", "CATALOG_RETENTION_DAYS: '90 days' is not a valid value for --retention-days"),
    ])
    func aRetentionOutsideItsRangeIsRefused(environment: [String: String], file: String, message: String) async throws {
        try await Self.expectRefusal(environment: environment, file: file, message: message)
    }

    /// `serve --print-config` with `environment` and, unless empty, `file` as `--config`: exits
    /// 64 and says `message`.
    private static func expectRefusal(environment: [String: String], file: String, message: String) async throws {
        try await CommandTests.withWorkspace { workspace in
            var arguments = ["serve", "--print-config"]
            if !file.isEmpty {
                try workspace.write("serve.json", file)
                arguments += ["--config", "serve.json"]
            }
            let run = try await CommandTests.run(arguments, in: workspace.root, environment: environment)
            #expect(run.status == 64, "\(run.stdout)")
            #expect(run.stderr.contains(message), "\(run.stderr)")
        }
    }

    /// Issue 26: a misspelt key or variable, or a string where a list belongs, was dropped
    /// without a word, and behind a proxy every client became the proxy's one network. Each is
    /// now an error at start that names the key and where it is.
    @Test(arguments: [
        ([:], #"{"trusted_proxy": ["127.0.0.1"]}"#, "serve.json: 'trusted_proxy' is no setting; did you mean 'trusted-proxy'?"),
        ([:], #"{"prot": 8080}"#, "serve.json: 'prot' is no setting"),
        ([:], #"{"trusted-proxy": "127.0.0.1"}"#, #"serve.json: 'trusted-proxy' must be a list, such as ["127.0.0.1"]"#),
        ([:], #"{"port": [8080]}"#, "serve.json: 'port' must be a single value, not a list"),
        ([:], #"{"port": {"value": 8080}}"#, "serve.json: 'port' must be a single value"),
        ([:], #"["port", 8080]"#, "cannot read the configuration file serve.json"),
        (
            ["CATALOG_TRUSTED_PROXIES": "127.0.0.1"], "",
            "the environment's CATALOG_TRUSTED_PROXIES is no setting; did you mean 'CATALOG_TRUSTED_PROXY'?"
        ),
        (["CATALOG_PROT": "8080"], "", "the environment's CATALOG_PROT is no setting"),
    ])
    func aMistakeInTheSettingsIsAnErrorThatNamesIt(environment: [String: String], file: String, message: String) async throws {
        try await Self.expectRefusal(environment: environment, file: file, message: message)
    }

    /// The scripts' own variables are no settings and are left alone.
    @Test func theScriptsOwnVariablesAreLeftAlone() async throws {
        try await CommandTests.withWorkspace { workspace in
            let run = try await CommandTests.run(
                ["serve", "--print-config"], in: workspace.root, environment: ["CATALOG_BIN": "/usr/local/bin/catalog"])
            #expect(run.status == 0, "\(run.stderr)")
        }
    }

    /// A trusted proxy block that could hold clients, or admin routes on the port the proxy
    /// forwards to, are said at start (and by `--print-config`).
    @Test func trustThatCouldBeTurnedIsSaidAtStart() async throws {
        try await CommandTests.withWorkspace { workspace in
            let wide = try await CommandTests.run(
                ["serve", "--trusted-proxy", "0.0.0.0/0", "--trusted-proxy", "203.0.113.0/24", "--print-config"], in: workspace.root)
            #expect(wide.status == 0, "\(wide.stderr)")
            #expect(wide.stdout.contains("# warning: --trusted-proxy 0.0.0.0/0 covers every address"))
            #expect(wide.stdout.contains("# warning: --trusted-proxy 203.0.113.0/24 covers public addresses"))
            #expect(wide.stdout.contains("# warning: the editor API, the dashboard and /metrics answer on the port the proxy forwards to"))
            #expect(Self.effective(wide.stdout)["trusted-proxy-header"]?.value == "x-forwarded-for")
            let narrow = try await CommandTests.run(
                ["serve", "--trusted-proxy", "127.0.0.1", "--admin-port", "9999", "--print-config"], in: workspace.root)
            #expect(narrow.status == 0, "\(narrow.stderr)")
            #expect(!narrow.stdout.contains("# warning"), "\(narrow.stdout)")
        }
    }
}

/// Issue 27: every setting is named once, in ``Setting/all``; this walks that table, so that a
/// setting added to it is shown by `--print-config` and can be set from the environment and from
/// the `--config` file, or this fails naming it.
@Suite struct SettingsTableTests {
    /// A valid value for each setting, other than its default, and the flags it needs beside it
    /// to be valid at all (a TLS key needs a certificate). A setting missing here fails the walk.
    private static let samples: [String: (value: String, companions: [String])] = {
        let postgres = ["--store", "postgres://catalog@db.example/catalog"]
        return [
            "catalog": ("sources", []), "public": ("published", []), "store": ("sqlite:other.sqlite", []),
            "store-password-file": ("password", postgres), "signing-key": ("keys/signing.jwk", []), "signature-lifetime": ("3d", []),
            "log-level": ("debug", []), "log-format": ("json", []), "access-log": ("on", []), "access-log-feed-sample": ("5", []),
            "log-full-addresses": ("on", []), "host": ("127.0.0.2", []), "port": ("9009", []),
            "tls-certificate": ("cert.pem", ["--tls-key", "key.pem"]), "tls-key": ("key.pem", ["--tls-certificate", "cert.pem"]),
            "admin-port": ("9010", []), "admin-host": ("127.0.0.3", []), "read-deadline": ("7s", []), "idle-timeout": ("45s", []),
            "max-connections": ("500", []), "report-limit-address": ("100", []), "report-limit-install": ("5", []),
            "trusted-proxy": ("10.0.0.0/8", []), "trusted-proxy-header": ("forwarded", []), "report-network-ipv4-prefix": ("20", []),
            "report-network-ipv6-prefix": ("40", []), "report-evidence-ipv6-prefix": ("30", []),
            "report-network-secret-file": ("secret.key", []),
            "root-certificate": ("root.pem", []), "report-quota": ("5000", []), "retention-days": ("30", []),
            "cache-control": ("no-cache", []), "feeds": ("store", postgres), "feeds-cache": ("cache", ["--feeds", "store"] + postgres),
            "feeds-poll": ("5s", []), "auto-feedback": ("1h", []),
            "content-keys": ("content-keys.json", []), "content-url-lifetime": ("15m", []),
            "reconcile-interval": ("30m", []), "app-store-api-url": ("http://127.0.0.1:9/", []),
            "google-push-keys": ("google-certs.json", []), "play-api-url": ("http://127.0.0.1:9/", []),
        ]
    }()

    /// A workspace where every sample is valid: the sources folder, a signing key, a password file.
    private static func withSampleWorkspace(_ body: (CommandTests.Workspace) async throws -> Void) async throws {
        try await CommandTests.withWorkspace { workspace in
            try FileManager.default.createDirectory(at: workspace.root.appendingPathComponent("sources"), withIntermediateDirectories: true)
            #expect(try await workspace.run("keys", "create", "--output", "keys").status == 0)
            try workspace.write("password", "secret\n")
            try await body(workspace)
        }
    }

    /// The operators' table (docs/operations.md, "Settings") has a row for every setting, with its variable.
    @Test func theOperatorsGuideListsEverySetting() throws {
        let guide = try String(
            contentsOf: NewcomerTests.repository.appendingPathComponent("docs/operations.md"), encoding: .utf8)
        let rows = guide.split(separator: "\n").filter { $0.hasPrefix("| `--") }
        for setting in Setting.all {
            #expect(
                rows.contains {
                    ($0.hasPrefix("| `\(setting.flag) ") || $0.hasPrefix("| `\(setting.flag)`")) && $0.contains("`\(setting.variable)`")
                },
                "docs/operations.md has no row for \(setting.flag) (\(setting.variable))")
        }
    }

    @Test func everySettingIsPrintedAndCanBeSetFromTheEnvironmentAndTheFile() async throws {
        #expect(Setting.all.count == Setting.named.count, "a name is in the table twice")
        try await Self.withSampleWorkspace { workspace in
            let defaults = try await CommandTests.run(["serve", "--print-config"], in: workspace.root)
            #expect(defaults.status == 0, "\(defaults.stderr)")
            let printed = ServeSettingsTests.effective(defaults.stdout)
            for setting in Setting.all {
                #expect(printed[setting.name]?.source == "default", "\(setting.name) is not in --print-config: \(defaults.stdout)")
                guard let sample = Self.samples[setting.name] else {
                    Issue.record("no sample value for \(setting.name): add one to SettingsTableTests.samples")
                    continue
                }
                let shown = setting.isSecret ? "<redacted>" : sample.value
                let fromEnvironment = try await CommandTests.run(
                    ["serve", "--print-config"] + sample.companions, in: workspace.root, environment: [setting.variable: sample.value])
                #expect(fromEnvironment.status == 0, "\(setting.variable): \(fromEnvironment.stderr)")
                let viaEnvironment = ServeSettingsTests.effective(fromEnvironment.stdout)[setting.name]
                #expect(
                    viaEnvironment?.value == shown && viaEnvironment?.source == setting.variable,
                    "\(setting.variable): \(fromEnvironment.stdout)")

                let json = setting.isList ? "[\"\(sample.value)\"]" : "\"\(sample.value)\""
                try workspace.write("settings.json", "{\"\(setting.name)\": \(json)}")
                let fromFile = try await CommandTests.run(
                    ["serve", "--print-config", "--config", "settings.json"] + sample.companions, in: workspace.root)
                #expect(fromFile.status == 0, "\(setting.name) in the file: \(fromFile.stderr)")
                let viaFile = ServeSettingsTests.effective(fromFile.stdout)[setting.name]
                #expect(viaFile?.value == shown && viaFile?.source == "settings.json", "\(setting.name) in the file: \(fromFile.stdout)")
            }
        }
    }
}

/// Logs an operator can use: JSON lines with an access line per request, clients as their network.
@Suite struct ServeLogTests {
    @Test func jsonLogsHaveAnAccessLinePerRequestWithTheClientsNetworkOnly() async throws {
        try await CommandTests.withWorkspace { workspace in
            try CommandTests.writeDemo(workspace)
            let server = try ServeProcess(
                in: workspace, ["--log-format", "json", "--access-log", "on", "--access-log-feed-sample", "1", "--log-level", "info"])
            defer { if server.process.isRunning { server.process.terminate() } }
            #expect(try await server.body(of: "/v1/apps/com.example.app/products.json") != nil)
            #expect(try await server.body(of: "/healthz") != nil)
            // A report, then its commit and latency in /metrics as histograms.
            var request = URLRequest(url: server.url("/v1/apps/com.example.app/invalid-identifiers"))
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.setValue("trace-42", forHTTPHeaderField: "X-Request-Id")
            request.httpBody = Data(#"{"invalidProductIdentifiers":["com.example.level1"],"installId":"logs"}"#.utf8)
            let (_, response) = try await URLSession.shared.data(for: request)
            #expect((response as? HTTPURLResponse)?.statusCode == 202)
            let metrics = try await server.body(of: "/metrics") ?? ""
            for histogram in ["catalog_reports_commit_batch_size", "catalog_reports_commit_seconds", "catalog_reports_latency_seconds"] {
                #expect(metrics.contains("\(histogram)_count 1"), "\(histogram)")
            }
            #expect(metrics.contains(/catalog_feed_answer_seconds_count [1-9]/), "feed answers are timed")
            #expect(try await server.stop() == 0)
            let lines = try String(contentsOf: server.log, encoding: .utf8).split(separator: "\n")
            let objects = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            #expect(objects.count == lines.count, "every line is a JSON object: \(lines.filter { !$0.hasPrefix("{") })")
            let access = objects.filter { $0["label"] as? String == "catalog.access" }
            let paths = Set(access.compactMap { $0["http.path"] as? String })
            #expect(
                paths.isSuperset(of: ["/v1/apps/com.example.app/products.json", "/healthz", "/v1/apps/com.example.app/invalid-identifiers"]
                ),
                "\(paths)")
            for line in access {
                #expect(line["client.network"] as? String == "127.0.0.0/24", "\(line)")
                #expect(line["http.status"] != nil && line["duration_ms"] != nil && line["http.bytes"] != nil)
            }
            #expect(!lines.contains { $0.contains("127.0.0.1\"") && $0.contains("catalog.access") }, "a full address was logged")
            // The report's line carries the id it was stored under and the client's request id.
            let report = try #require(access.first { $0["http.path"] as? String == "/v1/apps/com.example.app/invalid-identifiers" })
            #expect(report["request.id"] as? String == "trace-42")
            #expect((report["report.id"] as? String)?.isEmpty == false)
            #expect(access.allSatisfy { $0["request.id"] != nil })
        }
    }
}
