import ArgumentParser
import Foundation
import Logging
import Storage

/// `catalog backup FILE`: an online, consistent copy of a SQLite store while the server runs.
struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy the SQLite store to a new file, consistently, while the server keeps writing.",
        discussion: """
            The copy is the store as of one moment (SQLite's VACUUM INTO, in one read transaction), \
            compacted, and opens as a store of its own. For a PostgreSQL store use pg_dump.
            """
    )

    @OptionGroup var config: ConfigOptions
    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: ArgumentHelp("The new file; it must not exist.", valueName: "file"))
    var file: String

    func run() async throws {
        guard case .sqlite(let path) = try storeOptions.url(config.settings()) else {
            printError("catalog backup copies a SQLite store; back a PostgreSQL store up with pg_dump")
            throw ExitCode(1)
        }
        guard FileManager.default.fileExists(atPath: path) else {
            printError("there is no store at \(path)")
            throw ExitCode(1)
        }
        do {
            let store = try await SQLiteStore.open(path: path)
            try await store.backup(to: file)
            try await store.close()
        } catch {
            printError("cannot back up \(path) to \(file): \(error)")
            throw ExitCode(1)
        }
        print("backed up \(path) to \(file)")
    }
}
