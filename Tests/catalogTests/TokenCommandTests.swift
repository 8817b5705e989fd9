import CatalogKit
import CatalogTestSupport
import Foundation
import Testing

/// `catalog token` and `catalog audit` as processes, on the default SQLite store of a workspace.
@Suite struct TokenCommandTests {
    /// The audit log's rows without their time column: `# ACTOR ACTION APP SUMMARY`.
    private func auditRows(_ workspace: CommandTests.Workspace, _ arguments: String...) async throws -> [String] {
        let audit = try await CommandTests.run(["audit"] + arguments, in: workspace.root)
        #expect(audit.status == 0)
        return audit.stdout.split(separator: "\n").dropFirst().map { line in
            var fields = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            fields.remove(at: 1)
            return fields.joined(separator: " ")
        }
    }

    /// `catalog backup`: the copy is a store of its own (its tokens listed from it); a PostgreSQL
    /// store and an existing file are refused with a clear message.
    @Test func backupCopiesTheStore() async throws {
        try await CommandTests.withWorkspace { workspace in
            #expect(try await workspace.run("token", "create", "alice", "--role", "editor").status == 0)
            let backup = try await workspace.run("backup", "var/copy.sqlite")
            #expect(backup.status == 0, "\(backup.stderr)")
            let listed = try await workspace.run("token", "list", "--store", "sqlite:var/copy.sqlite")
            #expect(listed.status == 0 && listed.stdout.contains("alice"), "\(listed.stdout)")
            let again = try await workspace.run("backup", "var/copy.sqlite")
            #expect(again.status == 1 && again.stderr.contains("exists"), "\(again.stderr)")
            let postgres = try await workspace.run("backup", "copy", "--store", "postgres://catalog@127.0.0.1/catalog")
            #expect(postgres.status == 1 && postgres.stderr.contains("pg_dump"))
        }
    }

    @Test func createListRevokeAndAudit() async throws {
        try await CommandTests.withWorkspace { workspace in
            let created = try await workspace.run("token", "create", "alice", "--role", "editor")
            #expect(created.status == 0)
            let secret = created.stdout.trimmingCharacters(in: .newlines)
            #expect(secret.hasPrefix("cat_") && secret.count == 47, "printed once: \(created.stdout)")
            #expect(try await workspace.run("token", "create", "bob", "--role", "viewer").status == 0)

            let taken = try await workspace.run("token", "create", "alice", "--role", "viewer")
            #expect(taken.status == 1)
            #expect(taken.stderr == "error: a token named 'alice' already exists; revoke it first or choose another name\n")
            #expect(try await workspace.run("token", "create", "bad name", "--role", "viewer").status == 64)
            #expect(try await workspace.run("token", "create", "carol", "--role", "admin").status == 64)

            let store = try #require(workspace.read("var/catalog.sqlite").map { Data($0.utf8) })
            #expect(!String(decoding: store, as: UTF8.self).contains(secret), "the store keeps the hash, not the token")

            #expect(try await workspace.run("token", "revoke", "bob").stdout == "revoked 'bob'\n")
            let again = try await workspace.run("token", "revoke", "bob")
            #expect(again.status == 1 && again.stderr == "error: no active token named 'bob'\n")

            let list = try await workspace.run("token", "list").stdout.split(separator: "\n").map {
                $0.split(separator: " ", omittingEmptySubsequences: true).enumerated().filter { [0, 1].contains($0.offset) }.map(\.element)
                    .joined(separator: " ")
            }
            #expect(list == ["NAME ROLE", "alice editor", "bob viewer"])

            let actor = LocalUserName.current
            #expect(
                try await auditRows(workspace) == [
                    "3 \(actor) token-revoke - revoked token 'bob'",
                    "2 \(actor) token-create - created viewer token 'bob'",
                    "1 \(actor) token-create - created editor token 'alice'",
                ])
        }
    }

    /// Every publication and rollback from the command line is in the audit log, with the
    /// manifest's hash before and after; a build that publishes nothing adds nothing.
    @Test func publicationsAndRollbacksAreAudited() async throws {
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("catalog/com.example.app.plist", CommandTests.seed)
            #expect(try await workspace.run("build", "--message", "first").status == 0)
            #expect(try await workspace.run("build").status == 0, "unchanged")
            try workspace.write("catalog/com.example.app.plist", plist("<array><string>com.example.level1</string></array>"))
            #expect(try await workspace.run("build").status == 1, "level2 vanished without being retired")
            try workspace.write(
                "catalog/com.example.app.plist",
                plist(
                    """
                    <dict><key>products</key><array>
                    <dict><key>id</key><string>com.example.level1</string></dict>
                    <dict><key>id</key><string>com.example.level2</string><key>status</key><string>retired</string></dict>
                    <dict><key>id</key><string>com.example.rocket_car</string></dict>
                    </array></dict>
                    """))
            #expect(try await workspace.run("build").status == 0)
            #expect(try await workspace.run("rollback", "com.example.app", "1").status == 0)
            let rows = try await auditRows(workspace, "--app", "com.example.app")
            let actor = LocalUserName.current
            #expect(
                rows.map { $0.split(separator: " ").prefix(4).joined(separator: " ") } == [
                    "3 \(actor) rollback com.example.app", "2 \(actor) publish com.example.app", "1 \(actor) publish com.example.app",
                ])
            let json = try await workspace.run("audit", "--json")
            let entries = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
            #expect(entries.count == 3)
            #expect(entries.last?["beforeHash"] == nil, "nothing was published before the first build")
            #expect((entries.last?["afterHash"] as? String)?.count == 64)
            #expect(
                entries[1]["beforeHash"] as? String == entries[2]["afterHash"] as? String, "hashes chain from one publication to the next")
        }
    }

    /// Verdicts and releases land in the audit log with who made them.
    @Test func feedbackAndReleasesAreAudited() async throws {
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("catalog/com.example.app.plist", FeedbackCommandTests.catalog)
            #expect(try await workspace.run("build").status == 0)
            try await FeedbackCommandTests.storeReports(invalidReports("com.example.level2", installs: 20, at: .now), in: workspace)
            #expect(try await workspace.run("feedback").status == 0)
            #expect(try await workspace.run("feedback", "release", "com.example.app", "com.example.level2").status == 0)
            let rows = try await auditRows(workspace, "--app", "com.example.app")
            let actor = LocalUserName.current
            #expect(rows.count == 3)
            #expect(rows[0].hasPrefix("3 \(actor) release com.example.app com.example.app: released com.example.level2"))
            #expect(rows[1].hasPrefix("2 \(actor) verdict com.example.app com.example.app: quarantined com.example.level2"))
            #expect(rows[2].hasPrefix("1 \(actor) publish com.example.app published revision 1: 3 added"))
        }
    }
}

/// The login name the commands record as the actor, as the tests see it.
enum LocalUserName {
    static var current: String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/id")
        process.arguments = ["-un"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try? process.run()
        process.waitUntilExit()
        return String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).trimmingCharacters(in: .newlines)
    }
}
