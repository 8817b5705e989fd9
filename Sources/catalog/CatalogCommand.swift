import ArgumentParser
import CMallocTuning
import Foundation

@main
struct CatalogCommand: AsyncParsableCommand {
    static func main() async {
        // Big catalogs render feeds of many megabytes; see the module's header for why.
        cmalloctuning_fix_mmap_threshold(1 << 20)
        do {
            var command = try parseAsRoot()
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }

    /// A subcommand is required: without one, print the help to standard error and exit 64.
    func run() throws {
        FileHandle.standardError.write(Array((Self.helpMessage() + "\n").utf8))
        throw ExitCode.validationFailure
    }

    static let configuration = CommandConfiguration(
        commandName: "catalog",
        abstract: "Validate and publish in-app-purchase product catalogs.",
        subcommands: [
            ValidateCommand.self, BuildCommand.self, HistoryCommand.self, DiffCommand.self, RollbackCommand.self, ServeCommand.self,
            ReportsCommand.self, FeedbackCommand.self, FetchCommand.self, TokenCommand.self, AuditCommand.self, ImportCommand.self,
            ExportCommand.self, BackupCommand.self, StoreCommand.self, KeysCommand.self, SignCommand.self, VerifyCommand.self,
            PurchasesCommand.self, CustomersCommand.self, ConvertCommand.self, ContentCommand.self, AppStoreCommand.self,
            PlayStoreCommand.self,
        ]
    )
}
