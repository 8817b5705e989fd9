import ArgumentParser
import CatalogKit
import Logging
import Time

struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Create, list and revoke the tokens of the editor API.",
        discussion: "Only a token's SHA-256 is stored; its text is printed once, when it is created.",
        subcommands: [Create.self, List.self, Revoke.self]
    )

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "create", abstract: "Make a token and print it once.")

        @OptionGroup var config: ConfigOptions
        @OptionGroup var storeOptions: StoreOptions

        @Argument(help: "The token's name: what the audit log shows as the actor.")
        var name: String

        @Option(help: "editor (reads and changes), viewer (reads) or backend (reads customers only, for the developer's server). Required.")
        var role: EditorRole

        func validate() throws {
            if let problem = TokenSecret.nameProblem(name) { throw ValidationError(problem) }
        }

        func run() async throws {
            let secret = TokenSecret.generate()
            let now = Timestamp.now
            try await storeOptions.withStore(config.settings(), logger: Logger(label: "catalog.token")) { store in
                // One transaction: a token is never stored without its audit entry.
                do {
                    try await store.createToken(
                        EditorToken(name: name, role: role, secretHash: TokenSecret.hash(secret), createdAt: now),
                        audit: AuditEntry(
                            at: now, actor: LocalUser.name, action: .tokenCreate, summary: "created \(role.rawValue) token '\(name)'"))
                } catch let error as TokenNameTaken {
                    printError(error.description)
                    throw ExitCode(1)
                }
            }
            print(secret)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List tokens: name, role, created, revoked.")

        @OptionGroup var config: ConfigOptions
        @OptionGroup var storeOptions: StoreOptions

        func run() async throws {
            let tokens = try await storeOptions.withStore(config.settings(), logger: Logger(label: "catalog.token")) {
                try await $0.tokens()
            }
            let rows =
                [["NAME", "ROLE", "CREATED", "REVOKED"]]
                + tokens.map { [$0.name, $0.role.rawValue, $0.createdAt.iso8601, $0.revokedAt?.iso8601 ?? "-"] }
            print(formatTable(rows))
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "revoke", abstract: "Revoke a token: it stops working at once.")

        @OptionGroup var config: ConfigOptions
        @OptionGroup var storeOptions: StoreOptions

        @Argument(help: "The token's name.")
        var name: String

        func run() async throws {
            let now = Timestamp.now
            try await storeOptions.withStore(config.settings(), logger: Logger(label: "catalog.token")) { store in
                let entry = AuditEntry(at: now, actor: LocalUser.name, action: .tokenRevoke, summary: "revoked token '\(name)'")
                guard try await store.revokeToken(named: name, at: now, audit: entry) else {
                    printError("no active token named '\(name)'")
                    throw ExitCode(1)
                }
            }
            print("revoked '\(name)'")
        }
    }
}

extension EditorRole: ExpressibleByArgument {}

struct AuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Show the audit log: every publish, verdict, release and token change, newest first."
    )

    @OptionGroup var config: ConfigOptions
    @OptionGroup var storeOptions: StoreOptions

    @Option(help: "Only this app's entries. Default: every app's.")
    var app: String?

    @Option(help: "At most this many entries. Default: 100.")
    var limit = 100

    @Flag(help: "Print JSON instead of a table.")
    var json = false

    func validate() throws {
        guard limit > 0 else { throw ValidationError("--limit must be at least 1") }
    }

    func run() async throws {
        let entries = try await storeOptions.withStore(config.settings(), logger: Logger(label: "catalog.audit")) {
            try await $0.auditLog(app: app, limit: limit)
        }
        if json {
            print(String(decoding: try prettyJSON(entries), as: UTF8.self))
            return
        }
        let rows =
            [["#", "TIME", "ACTOR", "ACTION", "APP", "SUMMARY"]]
            + entries.map { [String($0.sequence), $0.at.iso8601, $0.actor, $0.action.rawValue, $0.app ?? "-", $0.summary] }
        print(formatTable(rows))
    }
}
