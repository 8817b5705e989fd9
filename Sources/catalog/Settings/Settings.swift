import ArgumentParser
import Configuration
import Foundation

/// Where each setting of every command comes from, first found wins: its flag; the environment
/// variable `CATALOG_` and the flag's name in upper snake case (`--report-limit-address` is
/// `CATALOG_REPORT_LIMIT_ADDRESS`); the `--config` JSON file, keyed by the flag's name
/// (`"report-limit-address": 600`); the default. The names are those of the table, ``Setting``.
///
/// Values from the environment and the file are parsed by the flag's own parser, so each is
/// checked exactly as on the command line; a list comes as a JSON array or, in the environment,
/// comma-separated. What was used and from where is kept for `--print-config`, secrets redacted.
///
/// A mistake never passes silently: the initializer refuses (``rejectUnknown()``) a `CATALOG_`
/// variable or a file key that is not in the table. Behind a proxy, a misspelt `trusted-proxy`
/// would make every client one network, and nothing could ever be quarantined.
final class Settings {
    private let environment: ConfigReader
    private let fileName: String?
    /// The `CATALOG_` variables of the environment, by name.
    private let catalogVariables: [String]
    /// The file's top-level keys and their values, as JSON reads them.
    private let fileValues: [String: Any]
    private enum Shape { case value, list, other }
    /// Every setting resolved so far: its name, value (or `<redacted>`) and source.
    private(set) var effective: [(name: String, value: String, source: String)] = []

    /// Reads the environment and the file `configFile` (if any), and checks every name in them
    /// against the table.
    init(configFile: String?, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        self.environment = ConfigReader(
            provider: KeyMappingProvider(upstream: EnvironmentVariablesProvider(environmentVariables: environment)) {
                $0.prepending(["catalog"])
            })
        fileName = configFile
        catalogVariables = environment.keys.filter { $0.hasPrefix("CATALOG_") }.sorted()
        do {
            if let configFile {
                let object = try JSONSerialization.jsonObject(with: try Data(contentsOf: URL(fileURLWithPath: configFile)))
                guard let values = object as? [String: Any] else { throw ValidationError("not a JSON object of settings") }
                fileValues = values
            } else {
                fileValues = [:]
            }
        } catch {
            throw ValidationError("cannot read the configuration file \(configFile ?? ""): \(error)")
        }
        try rejectUnknown()
    }

    /// Variables of the environment named `CATALOG_…` that are not settings: the scripts' own.
    static let otherVariables: Set<String> = ["CATALOG_BIN", "CATALOG_API_TOKEN", "CATALOG_UNSAFE_ACKNOWLEDGE_BEFORE_COMMIT"]

    /// Throws, naming the key and where it is, for a `CATALOG_` variable or a file key that is
    /// not in the table (``Setting/all``), and for a file value of the wrong shape (a string where
    /// a list belongs, or the reverse).
    func rejectUnknown() throws {
        let byVariable = Dictionary(uniqueKeysWithValues: Setting.all.map { ($0.variable, $0) })
        for variable in catalogVariables where byVariable[variable] == nil && !Self.otherVariables.contains(variable) {
            throw ValidationError("the environment's \(variable) is no setting\(suggestion(for: variable, among: Array(byVariable.keys)))")
        }
        for (key, value) in fileValues.sorted(by: { $0.key < $1.key }) {
            guard let setting = Setting.named[key] else {
                throw ValidationError("\(fileName ?? ""): '\(key)' is no setting\(suggestion(for: key, among: Array(Setting.named.keys)))")
            }
            if Self.shape(value) != (setting.isList ? .list : .value) {
                throw ValidationError(
                    "\(fileName ?? ""): '\(key)' must be \(setting.isList ? "a list, such as [\"127.0.0.1\"]" : "a single value, not a list")"
                )
            }
        }
    }

    private static func shape(_ value: Any) -> Shape {
        switch value {
        case let list as [Any]: list.allSatisfy { text($0) != nil } ? .list : .other
        default: text(value) != nil ? .value : .other
        }
    }

    /// A string or a number of the file, as the command line would spell it.
    private static func text(_ value: Any) -> String? {
        switch value {
        case let string as String: string
        case let number as NSNumber: number.stringValue
        default: nil
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

    /// The setting: `flag` if given, else the environment's, else the file's, else `fallback`.
    func value<Value: ExpressibleByArgument>(_ setting: Setting, flag: Value?, default fallback: Value?) throws -> Value? {
        let resolved: (Value?, String)
        if let flag {
            resolved = (flag, setting.flag)
        } else if let text = environment.string(forKey: ConfigKey(setting.name), isSecret: setting.isSecret) {
            resolved = (try parse(text, setting, from: setting.variable), setting.variable)
        } else if let value = fileValues[setting.name], let text = Self.text(value) {
            resolved = (try parse(text, setting, from: fileName ?? ""), fileName ?? "")
        } else {
            resolved = (fallback, "default")
        }
        record(setting.name, resolved.0.map { setting.isSecret ? "<redacted>" : "\($0)" } ?? "(none)", resolved.1)
        return resolved.0
    }

    /// A repeatable setting: the flags if any were given, else the environment's list, else the file's.
    func values<Value: ExpressibleByArgument>(_ setting: Setting, flags: [Value]) throws -> [Value] {
        let resolved: ([Value], String)
        if !flags.isEmpty {
            resolved = (flags, setting.flag)
        } else if let list = environment.stringArray(forKey: ConfigKey(setting.name)) {
            resolved = (try list.map { try parse($0, setting, from: setting.variable) }, setting.variable)
        } else if let list = fileValues[setting.name] as? [Any] {
            resolved = (try list.compactMap(Self.text).map { try parse($0, setting, from: fileName ?? "") }, fileName ?? "")
        } else {
            resolved = ([], "default")
        }
        record(setting.name, resolved.0.map { "\($0)" }.joined(separator: ","), resolved.1)
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

    private func parse<Value: ExpressibleByArgument>(_ text: String, _ setting: Setting, from source: String) throws -> Value {
        guard let value = Value(argument: text) else {
            throw ValidationError("\(source): '\(text)' is not a valid value for \(setting.flag)")
        }
        return value
    }
}

/// `--config FILE`, for every command that reads settings: the JSON file of docs/operations.md
/// ("Configuration"), shared by `catalog serve` and the commands an operator runs beside it.
struct ConfigOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "A JSON file of settings, keyed by flag name (\"store\": \"sqlite:var/catalog.sqlite\"), below flags and CATALOG_ variables. Default: none.",
            valueName: "file"))
    var config: String?

    /// The settings of this run: flags are given to each group, the environment and the file read here.
    func settings() throws -> Settings {
        try Settings(configFile: config)
    }
}
