import ArgumentParser
import CMallocTuning

@main
struct CatalogCommand: ParsableCommand {
    static func main() {
        // Big catalogs render feeds of many megabytes; see the module's header for why.
        cmalloctuning_fix_mmap_threshold(1 << 20)
        Self.main(nil)
    }

    static let configuration = CommandConfiguration(
        commandName: "catalog",
        abstract: "Validate and publish in-app-purchase product catalogs.",
        subcommands: [ValidateCommand.self, BuildCommand.self]
    )
}
