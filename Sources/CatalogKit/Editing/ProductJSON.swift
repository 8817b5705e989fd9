import PropertyList
import Time

/// A product definition sent as JSON (the editor API's request bodies), read into the plist
/// dict the sources hold: the same keys, each value as the plist value the source decoder reads.
///
/// Strings for `availableFrom` and `availableUntil` that are ISO 8601 dates become `<date>`;
/// numbers without a fraction or exponent become `<integer>`, others `<real>`. `null` has no
/// plist form: leave the key out instead. `quarantine`, which the editor API's product listing
/// carries from the feedback file, is not part of a definition and is dropped, so that a listed
/// product can be sent back as it is.
public enum ProductJSON {
    /// Why a body is not a product definition.
    public struct Problem: Error, CustomStringConvertible {
        public var description: String
    }

    static let dateKeys: Set<String> = ["availableFrom", "availableUntil"]

    /// The dict of one JSON object; a ``Problem`` naming the member or byte that is wrong.
    public static func definition(_ bytes: [UInt8]) throws(Problem) -> PropertyListDictionary {
        do {
            return try bytes.withUnsafeBufferPointer { buffer in
                var scanner = JSONScanner(buffer)
                guard try scanner.peekKind() == .object else { throw Problem(description: "the body must be a JSON object") }
                let value = try read(&scanner, path: "", depth: 0)
                try scanner.expectEnd()
                guard case .dictionary(let dictionary) = value else { throw Problem(description: "the body must be a JSON object") }
                return dictionary
            }
        } catch let problem as Problem {
            throw problem
        } catch let error as JSONScanner.SyntaxError {
            throw Problem(description: "the body is not valid JSON: \(error.message)")
        } catch {
            throw Problem(description: "the body is not valid JSON")
        }
    }

    /// `path` names the value in messages: `metadata.tags[2]`; empty for the body itself.
    private static func read(_ scanner: inout JSONScanner, path: String, depth: Int) throws -> PropertyListValue {
        guard depth < JSONScanner.maximumDepth else {
            throw Problem(description: "values are nested more than \(JSONScanner.maximumDepth) deep")
        }
        switch try scanner.peekKind() {
        case .object:
            var entries: [PropertyListDictionary.Entry] = []
            var seen = Set<String>()
            try scanner.readObject { member, scanner in
                guard seen.insert(member).inserted else { throw Problem(description: "member '\(member)' appears twice") }
                let value = try read(&scanner, path: depth == 0 ? member : "\(path).\(member)", depth: depth + 1)
                if depth == 0 && member == "quarantine" { return }
                entries.append(.init(key: member, keyPosition: .startOfFile, value: PropertyListNode(value, at: .startOfFile)))
            }
            return .dictionary(PropertyListDictionary(entries: entries))
        case .array:
            var items: [PropertyListNode] = []
            try scanner.readArray { index, scanner in
                items.append(PropertyListNode(try read(&scanner, path: "\(path)[\(index)]", depth: depth + 1), at: .startOfFile))
            }
            return .array(items)
        case .string:
            let text = try scanner.readString()
            if depth == 1, dateKeys.contains(path), let moment = Timestamp(iso8601: text) { return .date(moment) }
            return .string(text)
        case .number:
            let text = try scanner.readNumber()
            if let integer = Int64(text) { return .integer(integer) }
            guard let real = Double(text), real.isFinite else { throw Problem(description: "number \(text) has no plist form") }
            return .real(real)
        case .boolean:
            return .boolean(try scanner.readBoolean())
        case .null:
            throw Problem(description: "'\(path)' is null, which has no plist form; leave the member out instead")
        }
    }
}
