import ArgumentParser
import Configuration
import Foundation

/// Where each `catalog serve` setting comes from, first found wins: its flag; the environment
/// variable `CATALOG_` and the flag's name in upper snake case (`--report-limit-address` is
/// `CATALOG_REPORT_LIMIT_ADDRESS`); the `--config` JSON file, keyed by the flag's name
/// (`"report-limit-address": 600`); the default.
///
/// Values from the environment and the file are read through swift-configuration and parsed by
/// the flag's own parser, so each is checked exactly as on the command line; a list comes as a
/// JSON array or, in the environment, comma-separated. What was used and from where is kept for
/// `--print-config`, secrets redacted.
final class Settings {
    private let environment: ConfigReader
    private let file: ConfigReader?
    private let fileName: String?
    /// Every setting resolved so far: its name, value (or `<redacted>`) and source.
    private(set) var effective: [(name: String, value: String, source: String)] = []

    init(configFile: String?, environment: [String: String] = ProcessInfo.processInfo.environment) async throws {
        self.environment = ConfigReader(
            provider: KeyMappingProvider(upstream: EnvironmentVariablesProvider(environmentVariables: environment)) {
                $0.prepending(["catalog"])
            })
        fileName = configFile
        do {
            if let configFile {
                file = ConfigReader(provider: try await FileProvider<JSONSnapshot>(filePath: .init(configFile)))
            } else {
                file = nil
            }
        } catch {
            throw ValidationError("cannot read the configuration file \(configFile ?? ""): \(error)")
        }
    }

    /// The setting `name`: `flag` if given, else the environment's, else the file's, else `fallback`.
    func value<Value: ExpressibleByArgument>(
        _ name: String, flag: Value?, default fallback: Value?, secret: Bool = false
    ) throws -> Value? {
        let resolved: (Value?, String)
        if let flag {
            resolved = (flag, "--\(name)")
        } else if let text = environment.string(forKey: ConfigKey(name), isSecret: secret) {
            resolved = (try parse(text, name, from: environmentName(name)), environmentName(name))
        } else if let file,
            let text = file.string(forKey: ConfigKey(name), isSecret: secret) ?? file.int(forKey: ConfigKey(name)).map(String.init)
                ?? file.bool(forKey: ConfigKey(name)).map(String.init)
        {
            resolved = (try parse(text, name, from: fileName ?? ""), fileName ?? "")
        } else {
            resolved = (fallback, "default")
        }
        record(name, resolved.0.map { secret ? "<redacted>" : "\($0)" } ?? "(none)", resolved.1)
        return resolved.0
    }

    /// A repeatable setting: the flags if any were given, else the environment's list, else the file's.
    func values<Value: ExpressibleByArgument>(_ name: String, flags: [Value]) throws -> [Value] {
        let resolved: ([Value], String)
        if !flags.isEmpty {
            resolved = (flags, "--\(name)")
        } else if let list = environment.stringArray(forKey: ConfigKey(name)) {
            resolved = (try list.map { try parse($0, name, from: environmentName(name)) }, environmentName(name))
        } else if let file, let list = file.stringArray(forKey: ConfigKey(name)) {
            resolved = (try list.map { try parse($0, name, from: fileName ?? "") }, fileName ?? "")
        } else {
            resolved = ([], "default")
        }
        record(name, resolved.0.map { "\($0)" }.joined(separator: ","), resolved.1)
        return resolved.0
    }

    /// Records a setting resolved elsewhere (a secret read from a file, say), for `--print-config`.
    func record(_ name: String, _ value: String, _ source: String) {
        effective.append((name, value, source))
    }

    /// `--print-config`: one `name = value  # source` line per setting, secrets redacted.
    var description: String {
        let width = effective.map { $0.name.count }.max() ?? 0
        return effective.map { "\($0.name.padding(toLength: width, withPad: " ", startingAt: 0)) = \($0.value)  # \($0.source)" }
            .joined(separator: "\n")
    }

    func environmentName(_ name: String) -> String {
        "CATALOG_" + name.uppercased().replacingOccurrences(of: "-", with: "_")
    }

    private func parse<Value: ExpressibleByArgument>(_ text: String, _ name: String, from source: String) throws -> Value {
        guard let value = Value(argument: text) else {
            throw ValidationError("\(source): '\(text)' is not a valid value for --\(name)")
        }
        return value
    }
}
