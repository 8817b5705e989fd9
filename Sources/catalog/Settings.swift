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
///
/// A mistake never passes silently (``rejectUnknown()``): behind a proxy, a misspelt
/// `trusted-proxy` would make every client one network, and nothing could ever be quarantined.
final class Settings {
    private let environment: ConfigReader
    private let file: ConfigReader?
    private let fileName: String?
    /// The `CATALOG_` variables of the environment, by name.
    private let catalogVariables: [String]
    /// The file's top-level keys and the shape of each value, read apart from
    /// swift-configuration, which has no way to list what nobody asked for.
    private let fileKeys: [String: Shape]
    private enum Shape { case value, list, other }
    /// Every setting asked for, and whether it is a list.
    private var asked: [String: Bool] = [:]
    /// Every setting resolved so far: its name, value (or `<redacted>`) and source.
    private(set) var effective: [(name: String, value: String, source: String)] = []

    init(configFile: String?, environment: [String: String] = ProcessInfo.processInfo.environment) async throws {
        self.environment = ConfigReader(
            provider: KeyMappingProvider(upstream: EnvironmentVariablesProvider(environmentVariables: environment)) {
                $0.prepending(["catalog"])
            })
        fileName = configFile
        catalogVariables = environment.keys.filter { $0.hasPrefix("CATALOG_") }.sorted()
        do {
            if let configFile {
                file = ConfigReader(provider: try await FileProvider<JSONSnapshot>(filePath: .init(configFile)))
                let object = try JSONSerialization.jsonObject(with: try Data(contentsOf: URL(fileURLWithPath: configFile)))
                guard let keys = object as? [String: Any] else { throw ValidationError("not a JSON object of settings") }
                fileKeys = keys.mapValues { value in
                    switch value {
                    case let list as [Any]: list.allSatisfy { $0 is String || $0 is NSNumber } ? .list : .other
                    case is String, is NSNumber: .value
                    default: .other
                    }
                }
            } else {
                file = nil
                fileKeys = [:]
            }
        } catch {
            throw ValidationError("cannot read the configuration file \(configFile ?? ""): \(error)")
        }
    }

    /// Variables of the environment named `CATALOG_…` that are not settings: the scripts' own.
    static let otherVariables: Set<String> = ["CATALOG_BIN", "CATALOG_API_TOKEN", "CATALOG_UNSAFE_ACKNOWLEDGE_BEFORE_COMMIT"]

    /// Throws, naming the key and where it is, for a `CATALOG_` variable or a file key that is
    /// no setting asked for, and for a file value of the wrong shape (a string where a list
    /// belongs, or the reverse). Call once every setting has been asked for.
    func rejectUnknown() throws {
        let byVariable = Dictionary(uniqueKeysWithValues: asked.keys.map { (environmentName($0), $0) })
        for variable in catalogVariables where byVariable[variable] == nil && !Self.otherVariables.contains(variable) {
            throw ValidationError("the environment's \(variable) is no setting\(suggestion(for: variable, among: Array(byVariable.keys)))")
        }
        for (key, shape) in fileKeys.sorted(by: { $0.key < $1.key }) {
            guard let wantsList = asked[key] else {
                throw ValidationError("\(fileName ?? ""): '\(key)' is no setting\(suggestion(for: key, among: Array(asked.keys)))")
            }
            if shape != (wantsList ? .list : .value) {
                throw ValidationError(
                    "\(fileName ?? ""): '\(key)' must be \(wantsList ? "a list, such as [\"127.0.0.1\"]" : "a single value, not a list")")
            }
        }
    }

    /// `; did you mean '…'?` for the known name nearest to `name`, once case, `-` and `_` are
    /// set aside, within three edits; or nothing.
    private func suggestion(for name: String, among names: [String]) -> String {
        func folded(_ text: String) -> [Character] {
            Array((text.hasPrefix("CATALOG_") ? String(text.dropFirst(8)) : text).lowercased().filter { $0.isLetter || $0.isNumber })
        }
        let wanted = folded(name)
        let nearest = names.map { ($0, editDistance(wanted, folded($0))) }.min { ($0.1, $0.0) < ($1.1, $1.0) }
        guard let nearest, nearest.1 <= 3 else { return "" }
        return "; did you mean '\(nearest.0)'?"
    }

    /// Levenshtein's distance: insertions, deletions and substitutions.
    private func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1]
            for (j, y) in b.enumerated() {
                current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1)))
            }
            previous = current
        }
        return previous[b.count]
    }

    /// The setting `name`: `flag` if given, else the environment's, else the file's, else `fallback`.
    func value<Value: ExpressibleByArgument>(
        _ name: String, flag: Value?, default fallback: Value?, secret: Bool = false
    ) throws -> Value? {
        asked[name] = false
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
        asked[name] = true
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
