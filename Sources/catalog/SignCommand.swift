import ArgumentParser
import CatalogKit
import Foundation

/// `catalog sign`: signatures re-issued over the published bytes, for static hosting, where no
/// `catalog serve` refreshes them (run it from cron or a systemd timer).
struct SignCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Sign the feeds of every app's current revision again, over the same bytes.",
        discussion: """
            Feeds and their validators do not change; only the .jws files beside them are replaced. \
            With --refresh, only signatures that expire within --within are. Exit status: 0 on \
            success, 1 on failure, 64 on misuse.
            """
    )

    @OptionGroup var config: ConfigOptions
    @OptionGroup var options: CatalogOptions
    @OptionGroup var signing: SigningOptions

    @Flag(help: "Re-issue only the signatures that expire within --within (for a timer that runs often).")
    var refresh = false

    @Option(
        help: ArgumentHelp(
            "With --refresh: how close to its expiry a signature is re-issued. Default: half the signature lifetime.", valueName: "interval"
        ))
    var within: Interval?

    func run() throws {
        let workflow = try options.workflow(config.settings(), signing: signing)
        guard let signer = workflow.signer else {
            throw ValidationError("no signing key: pass --signing-key FILE or set CATALOG_SIGNING_KEY")
        }
        let window = refresh ? within.map { TimeInterval($0.seconds) } ?? signer.lifetime / 2 : nil
        do {
            let written = try workflow.refreshSignatures(at: Date(), window: window)
            print("\(written) signature\(written == 1 ? "" : "s") written")
        } catch {
            printError("\(error)")
            throw ExitCode(1)
        }
    }
}
