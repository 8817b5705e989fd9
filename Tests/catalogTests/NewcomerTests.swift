import CatalogKit
import CatalogTestSupport
import Foundation
import Testing

/// What a newcomer meets on a first day (issue 28): help that answers for the command asked
/// about, errors that name the address or the command to run, a verdict column that says what
/// is still to run, and the docs' example config, loaded as the docs say.
@Suite struct NewcomerTests {
    /// The repository, for the files the docs show.
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test func feedbackReleaseHelpIsItsOwnOutsideACatalog() async throws {
        try await CommandTests.withWorkspace { workspace in
            // No catalog/ here: the parent's options used to fail first and answer with its help.
            let elsewhere = workspace.root.appendingPathComponent("elsewhere", isDirectory: true)
            try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
            for flag in ["-h", "--help"] {
                let help = try await CommandTests.run(["feedback", "release", flag], in: elsewhere)
                #expect(help.status == 0)
                #expect(help.stdout.hasPrefix("OVERVIEW: Clear an identifier's verdict"), "\(flag): \(help.stdout)")
                #expect(help.stdout.contains("USAGE: catalog feedback release"))
            }
            // The judging run is still what `catalog feedback` alone does, with its options.
            let run = try await CommandTests.run(["feedback", "--catalog", "nowhere"], in: elsewhere)
            #expect(run.status == 64)
            #expect(run.stderr.contains("catalog directory 'nowhere' does not exist"))
        }
    }

    /// A fresh clone is consistent: the demo tree committed is what `catalog build` publishes from
    /// the demo catalog, so the first build on a clone publishes nothing new (and `git status` stays
    /// clean). It failed when the committed tree predated variant paths and content.
    @Test func theDemoTreeIsWhatTheBuildPublishes() async throws {
        try await CommandTests.withWorkspace { workspace in
            for folder in ["catalog", "public", "public.records", "public.content"] {
                try FileManager.default.copyItem(
                    at: Self.repository.appendingPathComponent(folder), to: workspace.root.appendingPathComponent(folder))
            }
            let build = try await workspace.run("build")
            #expect(build.status == 0, "\(build.stderr)")
            let lines = build.stdout.split(separator: "\n").filter { $0.hasPrefix("com.example.") }
            #expect(lines.count == 3, "\(build.stdout)")
            for line in lines { #expect(line.contains(": unchanged at revision"), "\(line)") }
        }
    }

    @Test func busyPortIsNamed() async throws {
        try await CommandTests.withWorkspace { workspace in
            try CommandTests.writeDemo(workspace)
            let occupant = try LoopbackListener()
            let serve = try await workspace.run("serve", "--port", String(occupant.port))
            #expect(serve.status == 1)
            #expect(serve.stderr.contains("127.0.0.1:\(occupant.port) is already in use"), "\(serve.stderr)")
            #expect(!serve.stderr.contains("errno"))
            withExtendedLifetime(occupant) {}
        }
    }

    @Test func retiringFromThePlainArrayNamesConvert() async throws {
        try await CommandTests.withWorkspace { workspace in
            let ids = ["com.example.level1", "com.example.level2", "com.example.rocket_car"]
            func array(_ ids: [String]) -> String {
                plist("<array>\n" + ids.map { "\t<string>\($0)</string>\n" }.joined() + "</array>")
            }
            try workspace.write("catalog/com.example.app.plist", array(ids))
            #expect(try await workspace.run("build").status == 0)

            // The editor drops an identifier from Apple's array: the error names the command.
            try workspace.write("catalog/com.example.app.plist", array(Array(ids.prefix(2))))
            let refused = try await workspace.run("build")
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("run 'catalog convert com.example.app'"), "\(refused.stderr)")

            let convert = try await workspace.run("convert", "com.example.app")
            #expect(convert.status == 0)
            #expect(
                convert.stdout == "com.example.app: converted catalog/com.example.app.plist to the full form; every identifier kept\n")
            let converted = try #require(workspace.read("catalog/com.example.app.plist"))
            #expect(converted.contains("<key>app</key>\n\t<string>com.example.app</string>"))
            #expect(converted.contains("<string>com.example.level1</string>") && converted.contains("<string>com.example.level2</string>"))

            // Now the dropped identifier can come back as retired, and the build passes.
            let retired =
                "\t\t<dict>\n\t\t\t<key>id</key>\n\t\t\t<string>com.example.rocket_car</string>\n"
                + "\t\t\t<key>status</key>\n\t\t\t<string>retired</string>\n\t\t</dict>\n\t</array>"
            try workspace.write("catalog/com.example.app.plist", converted.replacingOccurrences(of: "\t</array>", with: retired))
            let build = try await workspace.run("build")
            #expect(build.status == 0, "\(build.stderr)")

            let again = try await workspace.run("convert", "com.example.app")
            #expect(again.status == 0 && again.stdout == "com.example.app: already in the full form; nothing to convert\n")
            // A folder app's array file is converted in place, its settings left to the other files.
            try workspace.write("catalog/com.example.folder/a.plist", array(["com.example.folder.one"]))
            try workspace.write("catalog/com.example.folder/b.plist", array(["com.example.folder.two"]))
            let folder = try await workspace.run("convert", "com.example.folder")
            #expect(
                folder.stdout == """
                    com.example.folder: converted catalog/com.example.folder/a.plist to the full form; every identifier kept
                    com.example.folder: converted catalog/com.example.folder/b.plist to the full form; every identifier kept

                    """)
            #expect(workspace.read("catalog/com.example.folder/a.plist")?.contains("<key>app</key>") == false)
            #expect(try await workspace.run("validate").status == 0)

            let unknown = try await workspace.run("convert", "com.example.nothing")
            #expect(unknown.status == 1 && unknown.stderr.contains("unknown app 'com.example.nothing'"))
        }
    }

    @Test func verdictSaysWhatIsStillToRun() async throws {
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("catalog/com.example.app.plist", FeedbackCommandTests.catalog)
            #expect(try await workspace.run("build").status == 0)
            try await FeedbackCommandTests.storeReports(invalidReports("com.example.level2", installs: 20, at: .now), in: workspace)

            func verdict() async throws -> String? {
                let table = try await workspace.run("reports", "--app", "com.example.app")
                #expect(table.status == 0)
                // The cell runs from the identifier's column to the platform's.
                guard let row = table.stdout.split(separator: "\n").first(where: { $0.hasPrefix("com.example.level2 ") }),
                    let end = row.range(of: " iOS ")
                else { return nil }
                return row[..<end.lowerBound].dropFirst("com.example.level2".count).trimmingCharacters(in: .whitespaces)
            }
            // Still on sale: no feedback run has recorded it, no build has published it.
            #expect(try await verdict() == "quarantined (next feedback run)")
            #expect(try await workspace.run("feedback").status == 0)
            #expect(try await verdict() == "quarantined (next build)")
            #expect(try await workspace.run("build").status == 0)
            #expect(try await verdict() == "quarantined")
        }
    }

    @Test func exampleConfigLoads() async throws {
        try await CommandTests.withWorkspace { workspace in
            // The files the example names, as an operator makes them.
            #expect(try await workspace.run("keys", "create", "--directory", "keys").status == 0)
            try workspace.write("keys/store-password", "a password\n")
            let config = Self.repository.appendingPathComponent("docs/examples/serve.json").path
            let printed = try await workspace.run("serve", "--config", config, "--print-config")
            #expect(printed.status == 0, "\(printed.stderr)")
            #expect(printed.stdout.contains("admin-port                  = 9090  # \(config)"))
            #expect(!printed.stdout.contains("a password"))
        }
    }
}
