import PropertyList
import Time

/// Typed access to a decoded plist value: a diagnostic at the value when it has the wrong kind.
/// Shared by the decoders of every plist the catalog reads (sources, feedback files).
extension PropertyListNode {
    func string(key: String, file: String, into diagnostics: inout [Diagnostic]) -> Located<String>? {
        guard case .string(let text) = value else {
            diagnostics.append(.error("'\(key)' must be a <string>, found \(value.kindName)", file: file, at: position))
            return nil
        }
        return Located(text, at: position)
    }

    func integer(key: String, file: String, into diagnostics: inout [Diagnostic]) -> Located<Int64>? {
        guard case .integer(let number) = value else {
            diagnostics.append(.error("'\(key)' must be an <integer>, found \(value.kindName)", file: file, at: position))
            return nil
        }
        return Located(number, at: position)
    }

    func boolean(key: String, file: String, into diagnostics: inout [Diagnostic]) -> Located<Bool>? {
        guard case .boolean(let flag) = value else {
            diagnostics.append(.error("'\(key)' must be <true/> or <false/>, found \(value.kindName)", file: file, at: position))
            return nil
        }
        return Located(flag, at: position)
    }

    func date(key: String, file: String, into diagnostics: inout [Diagnostic]) -> Located<Timestamp>? {
        switch value {
        case .date(let moment):
            return Located(moment, at: position)
        case .string(let text):
            guard let moment = Timestamp(iso8601: text) else {
                diagnostics.append(.error(DateRules.message(key: key, text: text), file: file, at: position))
                return nil
            }
            return Located(moment, at: position)
        default:
            diagnostics.append(.error("'\(key)' must be a <date>, found \(value.kindName)", file: file, at: position))
            return nil
        }
    }

    func stringArray(key: String, file: String, into diagnostics: inout [Diagnostic]) -> Located<
        [Located<String>]
    >? {
        guard case .array(let items) = value else {
            diagnostics.append(
                .error("'\(key)' must be an <array> of strings, found \(value.kindName)", file: file, at: position))
            return nil
        }
        var values: [Located<String>] = []
        var malformed = false
        for item in items {
            guard case .string(let text) = item.value else {
                diagnostics.append(
                    .error("each entry of '\(key)' must be a <string>, found \(item.value.kindName)", file: file, at: item.position))
                malformed = true
                continue
            }
            values.append(Located(text, at: item.position))
        }
        // A list with a malformed entry is not judged again (it is not "empty", say).
        return malformed ? nil : Located(values, at: position)
    }
}
