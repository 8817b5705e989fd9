import CatalogKit
import CatalogTestSupport
import Foundation
import Testing

/// Issue 27, item 7: every command reads the store and the sources as `catalog serve` does
/// (flag, `CATALOG_…`, the `--config` file, default), and `catalog feedback` never judges an
/// app by a store that cannot be the one its verdicts came from.
@Suite struct CommandSettingsTests {
    /// `token create` and `token list` find the store in the `--config` file, as `serve` does,
    /// and no command made a `var/catalog.sqlite` of its own.
    @Test func tokenCommandsReadTheStoreFromTheConfigFile() async throws {
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("settings.json", #"{"store": "sqlite:data/shared.sqlite"}"#)
            try FileManager.default.createDirectory(at: workspace.root.appendingPathComponent("data"), withIntermediateDirectories: true)
            let created = try await workspace.run("token", "create", "ops", "--role", "viewer", "--config", "settings.json")
            #expect(created.status == 0, "\(created.stderr)")
            let listed = try await workspace.run("token", "list", "--store", "sqlite:data/shared.sqlite")
            #expect(listed.stdout.contains("ops"), "\(listed.stdout)")
            let viaEnvironment = try await CommandTests.run(
                ["token", "list"], in: workspace.root, environment: ["CATALOG_STORE": "sqlite:data/shared.sqlite"])
            #expect(viaEnvironment.stdout.contains("ops"), "\(viaEnvironment.stdout)")
            #expect(!workspace.exists("var"))
        }
    }

    /// `build` and `validate` find the sources and the published tree where `serve` does: in
    /// `CATALOG_CATALOG` / `CATALOG_PUBLIC` and the `--config` file.
    @Test func buildReadsTheFoldersFromTheEnvironmentAndTheFile() async throws {
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("sources/com.example.app.plist", FeedbackCommandTests.catalog)
            try workspace.write("settings.json", #"{"catalog": "sources", "public": "site"}"#)
            let fromFile = try await workspace.run("build", "--config", "settings.json")
            #expect(fromFile.status == 0, "\(fromFile.stderr)")
            #expect(workspace.exists("site/v1/apps/com.example.app/products.json"))
            let fromEnvironment = try await CommandTests.run(
                ["validate"], in: workspace.root, environment: ["CATALOG_CATALOG": "sources", "CATALOG_PUBLIC": "site"])
            #expect(fromEnvironment.status == 0 && fromEnvironment.stdout.contains("1 app"), "\(fromEnvironment.stderr)")
            #expect(!workspace.exists("public"))
        }
    }

    /// `catalog reports --store URL` from a folder with no `catalog/`: the reports, without verdicts.
    @Test func reportsNeedNoSourcesFolder() async throws {
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("catalog/com.example.app.plist", FeedbackCommandTests.catalog)
            #expect(try await workspace.run("build").status == 0)
            try await FeedbackCommandTests.storeReports(invalidReports("com.example.level2", installs: 3, at: .now), in: workspace)
            let elsewhere = workspace.root.appendingPathComponent("elsewhere", isDirectory: true)
            try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
            let store = "sqlite:" + workspace.root.appendingPathComponent("var/catalog.sqlite").path
            let run = try await CommandTests.run(["reports", "--store", store], in: elsewhere)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.contains("com.example.level2"), "\(run.stdout)")
            #expect(run.stderr.contains("no catalog sources at 'catalog'"), "\(run.stderr)")
        }
    }

    /// Issue 27: `catalog feedback` against an empty store (the wrong one) cleared every verdict
    /// and exited 0. An app whose verdicts rest on reports is not judged by a store holding none
    /// of its reports: exit 1, the app and the store named, the feedback file untouched.
    @Test func feedbackRefusesToJudgeVerdictsByAStoreWithoutTheirReports() async throws {
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("catalog/com.example.app.plist", FeedbackCommandTests.catalog)
            #expect(try await workspace.run("build").status == 0)
            // level2 quarantined, level1 suspect: a suspect is what an empty store "cleared".
            try await FeedbackCommandTests.storeReports(
                invalidReports("com.example.level2", installs: 20, at: .now)
                    + invalidReports("com.example.level1", installs: 5, at: .now, installPrefix: "other"), in: workspace)
            let judged = try await workspace.run("feedback")
            #expect(judged.status == 0 && judged.stdout.contains("quarantined com.example.level2"), "\(judged.stdout)")
            #expect(judged.stdout.contains("suspect com.example.level1"), "\(judged.stdout)")
            let file = try #require(workspace.read("catalog/com.example.app.feedback.plist"))

            let wrong = try await workspace.run("feedback", "--store", "sqlite:var/empty.sqlite")
            #expect(wrong.status == 1, "\(wrong.stdout)")
            #expect(wrong.stderr.contains("judging the reports in sqlite:var/empty.sqlite"), "\(wrong.stderr)")
            #expect(
                wrong.stderr.contains(
                    "the verdicts of 'com.example.app' rest on reports, and the store sqlite:var/empty.sqlite holds none"),
                "\(wrong.stderr)")
            #expect(wrong.stdout == "", "no verdict changed: \(wrong.stdout)")
            #expect(workspace.read("catalog/com.example.app.feedback.plist") == file)
            // The right store still judges.
            #expect(try await workspace.run("feedback").status == 0)
        }
    }

    /// The names agree across commands: `--root-key` and `--output` for keys, with the old
    /// `--root` and `--directory` still read (and hidden from help); durations as `1d`.
    @Test func keyFlagsAgreeWithTheOtherCommands() async throws {
        try await CommandTests.withWorkspace { workspace in
            #expect(try await workspace.run("keys", "create", "--output", "keys").status == 0)
            #expect(workspace.exists("keys/root.jwk"))
            let rotated = try await workspace.run("keys", "rotate", "--root-key", "keys/root.jwk", "--output", "keys/signing-2.jwk")
            #expect(rotated.status == 0, "\(rotated.stderr)")
            let old = try await workspace.run("keys", "rotate", "--root", "keys/root.jwk", "--output", "keys/signing-3.jwk")
            #expect(old.status == 0, "\(old.stderr)")
            let help = try await workspace.run("keys", "rotate", "--help")
            #expect(help.stdout.contains("--root-key") && !help.stdout.contains("--root <"), "\(help.stdout)")
            let missing = try await workspace.run("keys", "rotate", "--output", "keys/signing-4.jwk")
            #expect(missing.status == 64 && missing.stderr.contains("--root-key"), "\(missing.stderr)")
            let verifyHelp = try await workspace.run("verify", "--help")
            #expect(verifyHelp.stdout.contains("--grace <duration>") && verifyHelp.stdout.contains("Default: 1d"), "\(verifyHelp.stdout)")
        }
    }
}
