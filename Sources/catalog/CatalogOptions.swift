import ArgumentParser
import CatalogKit
import Foundation
import PropertyList

/// Where the sources and the published tree are, shared by every command.
struct CatalogOptions: ParsableArguments {
    @Option(help: "The catalog sources: <bundle-id>.plist, <bundle-id>.xml or <bundle-id>/ folders.")
    var catalog: String = "catalog"

    @Option(name: .customLong("public"), help: "The published tree, served as is by any static host.")
    var publicDirectory: String = "public"

    func validate() throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: catalog, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ValidationError("catalog directory '\(catalog)' does not exist")
        }
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
