import CatalogKit
import CatalogTestSupport
import Foundation
import Testing

/// `catalog token` and `catalog audit` as processes, on the default SQLite store of a workspace.
@Suite struct TokenCommandTests {
    /// The audit log's rows without their time column: `# ACTOR ACTION APP SUMMARY`.
    private func auditRows(_ workspace: CommandTests.Workspace, _ arguments: String...) throws -> [String] {
        let audit = try CommandTests.run(["audit"] + arguments, in: workspace.root)
        #expect(audit.status == 0)
        return audit.stdout.split(separator: "\n").dropFirst().map { line in
            var fields = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            fields.remove(at: 1)
            return fields.joined(separator: " ")
        }
    }

    @Test func createListRevokeAndAudit() throws {
        try CommandTests.withWorkspace { workspace in
            let created = try workspace.run("token", "create", "alice", "--role", "editor")
            #expect(created.status == 0)
            let secret = created.stdout.trimmingCharacters(in: .newlines)
            #expect(secret.hasPrefix("cat_") && secret.count == 47, "printed once: \(created.stdout)")
            #expect(try workspace.run("token", "create", "bob", "--role", "viewer").status == 0)

            let taken = try workspace.run("token", "create", "alice", "--role", "viewer")
            #expect(taken.status == 1)
            #expect(taken.stderr == "error: a token named 'alice' already exists; revoke it first or choose another name\n")
            #expect(try workspace.run("token", "create", "bad name", "--role", "viewer").status == 64)
            #expect(try workspace.run("token", "create", "carol", "--role", "admin").status == 64)

            let store = try #require(workspace.read("var/catalog.sqlite").map { Data($0.utf8) })
            #expect(!String(decoding: store, as: UTF8.self).contains(secret), "the store keeps the hash, not the token")

            #expect(try workspace.run("token", "revoke", "bob").stdout == "revoked 'bob'\n")
            let again = try workspace.run("token", "revoke", "bob")
            #expect(again.status == 1 && again.stderr == "error: no active token named 'bob'\n")

            let list = try workspace.run("token", "list").stdout.split(separator: "\n").map {
                $0.split(separator: " ", omittingEmptySubsequences: true).enumerated().filter { [0, 1].contains($0.offset) }.map(\.element)
                    .joined(separator: " ")
            }
            #expect(list == ["NAME ROLE", "alice editor", "bob viewer"])

            let actor = LocalUserName.current
            #expect(
                try auditRows(workspace) == [
                    "3 \(actor) token-revoke - revoked token 'bob'",
                    "2 \(actor) token-create - created viewer token 'bob'",
                    "1 \(actor) token-create - created editor token 'alice'",
                ])
        }
    }

    /// Verdicts and releases land in the audit log with who made them.
    @Test func feedbackAndReleasesAreAudited() async throws {
        try await CommandTests.withWorkspaceAsync { workspace in
            try workspace.write("catalog/com.example.app.plist", FeedbackCommandTests.catalog)
            #expect(try workspace.run("build").status == 0)
            try await FeedbackCommandTests.storeReports(invalidReports("com.example.level2", installs: 20, at: .now), in: workspace)
            #expect(try workspace.run("feedback").status == 0)
            #expect(try workspace.run("feedback", "release", "com.example.app", "com.example.level2").status == 0)
            let rows = try auditRows(workspace, "--app", "com.example.app")
            #expect(rows.count == 2)
            #expect(
                rows.first?.hasPrefix("2 \(LocalUserName.current) release com.example.app com.example.app: released com.example.level2")
                    == true)
            #expect(
                rows.last?.hasPrefix("1 \(LocalUserName.current) verdict com.example.app com.example.app: quarantined com.example.level2")
                    == true)
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
