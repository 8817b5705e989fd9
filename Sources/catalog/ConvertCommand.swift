import ArgumentParser
import CatalogKit
import Foundation

/// `catalog convert APP`: Apple's plain array of identifiers into the full form, so that a
/// published identifier can be kept with status `retired` (docs/catalog-format.md).
struct ConvertCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "convert",
        abstract: "Rewrite an app's plain array of identifiers (product_ids.plist) into the full form, keeping every id.",
        discussion: """
            The plain array cannot give a product a status; the full form (a dict with 'app' and \
            'products', one dict per identifier, in the same order) can, so that a published \
            identifier is kept with status 'retired'. Files already in the full form are left as \
            they are. Exit status: 0 on success, 1 on errors, 64 on misuse.
            """
    )

    @OptionGroup var config: ConfigOptions
    @OptionGroup var options: CatalogOptions

    @Argument(help: "The app's bundle identifier.")
    var app: String

    func run() async throws {
        let workflow = try options.workflow(config.settings())
        let converted = try await exitOnFailure { try workflow.convertIdentifierArrays(app: app) }
        if converted.isEmpty { print("\(app): already in the full form; nothing to convert") }
        for file in converted { print("\(app): converted \(file) to the full form; every identifier kept") }
    }
}
