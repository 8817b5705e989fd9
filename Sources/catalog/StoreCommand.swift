import ArgumentParser
import ReportStorage

/// `catalog store …`: the shared PostgreSQL store itself, as its administrator sees it.
struct StoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Administer a PostgreSQL store shared by an editor node and serving replicas.",
        subcommands: [StoreRolesCommand.self]
    )
}

/// `catalog store roles`: the SQL of the two roles (docs/storage.md, "Roles"), printed, never run.
struct StoreRolesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "roles",
        abstract: "Print the SQL that creates the editor node's and the serving replicas' PostgreSQL roles, with their exact rights.",
        discussion: """
            Run it as a superuser or the database's owner, in the store's database (psql -d DATABASE -f FILE), \
            before the editor node's first start and again once the editor node has created or migrated the tables. \
            Every statement can be run again. The editor node connects as the editor role; replicas \
            (catalog serve --feeds store) as the replica role, which reads publications and writes reports only.
            """
    )

    @Option(help: ArgumentHelp("The serving replicas' role.", valueName: "name"))
    var replicaRole = StoreRoles.defaultReplicaRole

    @Option(help: ArgumentHelp("The editor node's role, which owns the tables.", valueName: "name"))
    var editorRole = StoreRoles.defaultEditorRole

    func run() throws {
        do {
            print(try StoreRoles.sql(replicaRole: replicaRole, editorRole: editorRole), terminator: "")
        } catch {
            printError("\(error)")
            throw ExitCode.validationFailure
        }
    }
}
