import ArgumentParser
import CatalogKit
import Foundation
import PropertyList

/// Where the sources and the published tree are (`--catalog`, `--public`), shared by every
/// command, each read as ``Settings`` says: flag, `CATALOG_CATALOG` / `CATALOG_PUBLIC`, the
/// `--config` file, default.
struct CatalogOptions: ParsableArguments {
    @Option(
        name: Setting.catalog.long,
        help: ArgumentHelp("The catalog sources: <bundle-id>.plist, <bundle-id>.xml or <bundle-id>/ folders. Default: catalog."))
    var catalog: String?

    @Option(
        name: Setting.publicDirectory.long,
        help: ArgumentHelp("The published tree, served as is by any static host. Default: public."))
    var publicDirectory: String?

    /// The two folders as configured. `sourcesRequired`: a missing sources folder is an error
    /// (every command but `catalog reports` and a replica's `serve`, which can do without).
    func paths(_ settings: Settings, sourcesRequired: Bool = true) throws -> CatalogPaths {
        let paths = CatalogPaths(
            catalog: try settings.value(.catalog, flag: catalog, default: "catalog") ?? "catalog",
            publicDirectory: try settings.value(.publicDirectory, flag: publicDirectory, default: "public") ?? "public")
        if sourcesRequired && !paths.hasSources {
            throw ValidationError("catalog directory '\(paths.catalog)' does not exist")
        }
        return paths
    }

    /// The workflow on the configured folders, signing as `signing` says (nil: unsigned).
    func workflow(_ settings: Settings, signing: SigningOptions? = nil) throws -> CatalogWorkflow {
        var workflow = try paths(settings).workflow
        workflow.signer = try signing?.signer(settings)
        return workflow
    }
}

/// The sources folder and the published tree, resolved.
struct CatalogPaths {
    var catalog: String
    var publicDirectory: String

    /// Whether the sources folder exists.
    var hasSources: Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: catalog, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    var workflow: CatalogWorkflow {
        CatalogWorkflow(
            catalogDirectory: URL(fileURLWithPath: catalog, isDirectory: true),
            catalogDisplayPath: catalog,
            publicDirectory: URL(fileURLWithPath: publicDirectory, isDirectory: true))
    }
}

/// Diagnostics go to standard error, one per line, so that editors and CI can parse them.
func report(_ diagnostics: [Diagnostic]) {
    for diagnostic in diagnostics {
        FileHandle.standardError.write(Array((diagnostic.description + "\n").utf8))
    }
    let errors = diagnostics.filter { $0.severity == .error }.count
    let warnings = diagnostics.count - errors
    if !diagnostics.isEmpty {
        FileHandle.standardError.write(
            Array("\(errors) error\(errors == 1 ? "" : "s"), \(warnings) warning\(warnings == 1 ? "" : "s")\n".utf8))
    }
}

extension FileHandle {
    func write(_ bytes: [UInt8]) {
        write(Data(bytes))
    }
}

/// `error: message` on standard error, as every command reports a failure that is not a diagnostic.
func printError(_ message: String) {
    FileHandle.standardError.write(Array("error: \(message)\n".utf8))
}

/// Runs `body`; a failure becomes its diagnostics and `error: …` on standard error, and exit
/// status 1. Every command reports a failed workflow step this one way.
func exitOnFailure<Result>(_ body: () async throws -> Result) async throws -> Result {
    do {
        return try await body()
    } catch let exit as ExitCode {
        throw exit
    } catch {
        if let diagnosed = error as? any DiagnosedError { report(diagnosed.diagnostics) }
        printError("\(error)")
        throw ExitCode(1)
    }
}
