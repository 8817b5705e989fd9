import ArgumentParser
import CatalogKit

struct ValidateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check every catalog source and report all problems, compiler-style.",
        discussion: "Exit status: 0 when there are no errors (warnings allowed), 1 on errors, 64 on misuse."
    )

    @OptionGroup var config: ConfigOptions
    @OptionGroup var options: CatalogOptions

    func run() throws {
        let validation = try options.workflow(config.settings()).validate()
        report(validation.diagnostics)
        if validation.hasErrors { throw ExitCode(1) }
        let products = validation.catalogs.reduce(0) { $0 + $1.products.count }
        print(
            "\(validation.catalogs.count) app\(validation.catalogs.count == 1 ? "" : "s"), \(products) product\(products == 1 ? "" : "s"): valid"
        )
    }
}
