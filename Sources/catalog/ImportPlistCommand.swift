import ArgumentParser
import CatalogKit
import Foundation

/// `catalog import plist`: the product lists apps already ship, into the catalog.
struct ImportPlistCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plist",
        abstract: "Import a product list an app already ships (a property list) into an app's sources.",
        discussion: """
            Recognises Apple's product_ids.plist (an array of identifiers), Apple's StoreKit sample \
            Products.plist (identifier to display string, or display name to identifier), \
            StoreHelper's Products and Subscriptions, a dictionary of groups, and product \
            dictionaries with an identifier key and a type, and says which it read, or why it \
            recognises none. Writes catalog/<app>.plist (or catalog/<app>/storekit.plist for a \
            folder app) as a canonical property list; products the app already has are skipped \
            unless --overwrite. Exit status: 0 on success, 1 on errors, 64 on misuse.
            """
    )

    @OptionGroup var config: ConfigOptions
    @OptionGroup var options: CatalogOptions

    @Argument(help: "The property list file.")
    var file: String

    @Option(help: "The app's bundle identifier. Required.")
    var app: String

    @Flag(help: "Replace what the catalog says about products the file also lists.")
    var overwrite = false

    func validate() throws {
        if let problem = AppName.problem(app) { throw ValidationError(problem) }
    }

    func run() async throws {
        let workflow = try options.workflow(config.settings())
        let result = try await exitOnFailure {
            try workflow.importProductList(from: URL(fileURLWithPath: file), displayPath: file, app: app, overwrite: overwrite)
        }
        if let shape = result.shape { print("\(file): read \(shape)") }
        try finish(result, app: app)
    }
}
