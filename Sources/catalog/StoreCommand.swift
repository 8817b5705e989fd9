import ArgumentParser
import CatalogKit
import Foundation
import Logging
import Storage

/// `catalog store …`: the shared PostgreSQL store itself, as its administrator sees it.
struct StoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Administer a PostgreSQL store shared by an editor node and serving replicas.",
        subcommands: [StoreRolesCommand.self, StoreBenchContentCommand.self]
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

/// `catalog store bench-content`, hidden: one phase of `scripts/bench-content-store` (writing or
/// reading one blob as chunked rows or as a large object), timed in-process, so that the script
/// can watch this process's and the server's memory from outside.
struct StoreBenchContentCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-content",
        abstract: "Write or read one content blob in a PostgreSQL store, timed (for scripts/bench-content-store).",
        shouldDisplay: false
    )

    @Option(help: ArgumentHelp("The PostgreSQL store.", valueName: "url"))
    var store: String

    @Option(help: ArgumentHelp("rows or large-objects.", valueName: "method"))
    var method: String

    @Option(help: ArgumentHelp("write or read.", valueName: "phase"))
    var phase: String

    @Option(help: ArgumentHelp("The blob's file (write).", valueName: "file"))
    var file: String

    @Option(help: ArgumentHelp("The blob's SHA-256, hex.", valueName: "sha256"))
    var sha256: String

    func run() async throws {
        guard let method = PostgresContentBenchmark.Method(rawValue: method), ["write", "read"].contains(phase) else {
            printError("--method is rows or large-objects, --phase write or read")
            throw ExitCode.validationFailure
        }
        let url = URL(fileURLWithPath: file)
        let size = (try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.int64Value ?? 0
        guard let opened = try await openStore(try StoreURL(parsing: store), logger: Logger(label: "bench")).postgres
        else {
            printError("--store must be a PostgreSQL URL")
            throw ExitCode.validationFailure
        }
        let start = ContinuousClock.now
        var bytes = size
        if phase == "write" {
            try await PostgresContentBenchmark.write(PublishedBlob(sha256: sha256, size: size, source: url), method: method, store: opened)
        } else {
            bytes = try await PostgresContentBenchmark.read(sha256, method: method, store: opened)
        }
        let elapsed = ContinuousClock.now - start
        try await opened.close()
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print(#"{"bytes": \#(bytes), "seconds": \#(seconds)}"#)
    }
}
