import ArgumentParser
import CatalogKit
import Foundation

/// `catalog import …`: bring product definitions from elsewhere into the catalog.
struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Bring product definitions from another format into the catalog.",
        subcommands: [ImportStoreKitCommand.self, ImportPlistCommand.self]
    )

    /// A format is required, as for the root command: help to standard error, exit 64.
    func run() throws {
        FileHandle.standardError.write(Array((Self.helpMessage() + "\n").utf8))
        throw ExitCode.validationFailure
    }
}

/// `catalog export …`: write the catalog in another format.
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write an app's catalog in another format.",
        subcommands: [ExportStoreKitCommand.self]
    )

    func run() throws {
        FileHandle.standardError.write(Array((Self.helpMessage() + "\n").utf8))
        throw ExitCode.validationFailure
    }
}

struct ImportStoreKitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storekit",
        abstract: "Import an Xcode StoreKit configuration file (.storekit, versions 1 to 5) into an app's sources.",
        discussion: """
            Writes catalog/<app>.plist (or catalog/<app>/storekit.plist for a folder app) as a \
            canonical property list. Products the app already has are reported and skipped, \
            unless --overwrite. Nothing is written if the file is malformed or the result \
            breaks a catalog rule. Exit status: 0 on success, 1 on errors, 64 on misuse. \
            See docs/storekit.md for the mapping.
            """
    )

    @OptionGroup var config: ConfigOptions
    @OptionGroup var options: CatalogOptions

    @Argument(help: "The .storekit file.")
    var file: String

    @Option(help: "The app's bundle identifier. Required.")
    var app: String

    @Flag(help: "Replace what the catalog says about products the file also defines.")
    var overwrite = false

    func validate() throws {
        if let problem = AppName.problem(app) { throw ValidationError(problem) }
    }

    func run() async throws {
        let workflow = try options.workflow(config.settings())
        let result = try await exitOnFailure {
            try workflow.importStoreKit(from: URL(fileURLWithPath: file), displayPath: file, app: app, overwrite: overwrite)
        }
        try finish(result, app: app)
    }
}

/// What every import prints: its diagnostics, then what it wrote, or exit status 1 on an error.
func finish(_ result: CatalogWorkflow.ProductImport, app: String) throws {
    report(result.diagnostics)
    if result.hasErrors {
        printError("nothing was written")
        throw ExitCode(1)
    }
    var counts = ["\(result.added.count) added", "\(result.replaced.count) replaced"]
    if !result.skipped.isEmpty { counts.append("\(result.skipped.count) skipped") }
    print("\(app): \(result.wrote ? "wrote" : "unchanged") \(result.target): \(counts.joined(separator: ", "))")
}

struct ExportStoreKitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storekit",
        abstract: "Write an app's products as an Xcode StoreKit configuration file for local testing.",
        discussion: """
            Format 4, which current Xcode versions open, or format 5 (Xcode 26) when a subscription has billing \
            plans or per-plan introductory offers; no account-specific settings or ids; the same \
            sources always give the same bytes. Retired products are left out. Exit status: 0 on success, 1 on \
            errors, 64 on misuse. See docs/storekit.md for the mapping.
            """
    )

    @OptionGroup var config: ConfigOptions
    @OptionGroup var options: CatalogOptions

    @Argument(help: "The app's bundle identifier.")
    var app: String

    @Option(
        name: .shortAndLong,
        help: ArgumentHelp("Where to write: a file, or - for standard output. Default: <app>.storekit.", valueName: "file"))
    var output: String?

    func validate() throws {
        if let problem = AppName.problem(app) { throw ValidationError(problem) }
    }

    func run() async throws {
        let export = try options.workflow(config.settings()).exportStoreKit(app: app)
        report(export.diagnostics)
        guard let bytes = export.bytes else { throw ExitCode(1) }
        let path = output ?? "\(app).storekit"
        if path == "-" {
            FileHandle.standardOutput.write(bytes)
            return
        }
        try await exitOnFailure { try AtomicFile.write(bytes, to: URL(fileURLWithPath: path)) }
        let opens = export.format == 5 ? "for its billing plans: needs Xcode 26 or later" : "which current Xcode versions open"
        print(
            "\(app): wrote \(path): \(export.productCount) product\(export.productCount == 1 ? "" : "s"), .storekit format \(export.format) (\(opens))"
        )
    }
}
