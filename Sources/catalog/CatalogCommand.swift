import ArgumentParser

@main
struct CatalogCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "catalog",
        abstract: "Validate and publish in-app-purchase product catalogs.",
        subcommands: [ValidateCommand.self, BuildCommand.self]
    )
}
