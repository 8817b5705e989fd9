import Time

/// Writes an Apple XML property list as Xcode and `plutil` do: the standard declaration and
/// DOCTYPE, one element per line, nested content indented by a tab.
///
/// Files this writes are read, diffed and committed by people, so the same values always give
/// the same bytes: keys are written in the order the caller writes them, and nothing depends on
/// the clock or on hashing.
public struct PropertyListWriter: Sendable {
    public private(set) var bytes: [UInt8] = []
    private var depth = 0

    public init() {
        bytes.append(contentsOf: Self.header.utf8)
    }

    static let header = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">

        """

    /// The document, closed: call once the root value is written.
    public var document: [UInt8] {
        bytes + Array("</plist>\n".utf8)
    }

    /// A comment line, for telling readers what the file is and how to change it.
    public mutating func comment(_ text: String) {
        // XML comments cannot hold `--`; break each pair up rather than write a malformed file.
        var safe = ""
        for character in text {
            if character == "-" && safe.last == "-" { safe += " " }
            safe.append(character)
        }
        line("<!-- " + safe + " -->")
    }

    public mutating func beginDictionary() {
        line("<dict>")
        depth += 1
    }

    public mutating func endDictionary() {
        depth -= 1
        line("</dict>")
    }

    public mutating func beginArray() {
        line("<array>")
        depth += 1
    }

    public mutating func endArray() {
        depth -= 1
        line("</array>")
    }

    /// A dictionary key; the next call writes its value.
    public mutating func key(_ key: String) {
        element("key", escaped(key))
    }

    public mutating func string(_ value: String) {
        element("string", escaped(value))
    }

    public mutating func integer(_ value: Int64) {
        element("integer", String(value))
    }

    /// A finite number in Swift's shortest round-tripping form, which the reader parses back to
    /// the same value.
    public mutating func real(_ value: Double) {
        precondition(value.isFinite, "a plist <real> written here must be finite")
        element("real", value.description)
    }

    public mutating func boolean(_ value: Bool) {
        line(value ? "<true/>" : "<false/>")
    }

    public mutating func date(_ value: Timestamp) {
        element("date", value.iso8601)
    }

    /// Base64, on one line.
    public mutating func data(_ bytes: [UInt8]) {
        element("data", Base64.encode(bytes))
    }

    /// Any value, nested values included, dictionary keys in their order.
    public mutating func value(_ value: PropertyListValue) {
        switch value {
        case .string(let text): string(text)
        case .integer(let number): integer(number)
        case .real(let number) where number.isFinite: real(number)
        case .real(let number):
            // Read from a file that spelled it so (`inf`); written back the way Apple spells it.
            element("real", number.isNaN ? "nan" : number > 0 ? "+infinity" : "-infinity")
        case .boolean(let flag): boolean(flag)
        case .date(let moment): date(moment)
        case .data(let bytes): data(bytes)
        case .array(let items):
            beginArray()
            for item in items { self.value(item.value) }
            endArray()
        case .dictionary(let dictionary):
            beginDictionary()
            for entry in dictionary.entries {
                key(entry.key)
                self.value(entry.value.value)
            }
            endDictionary()
        }
    }

    private mutating func element(_ name: String, _ content: String) {
        line("<\(name)>\(content)</\(name)>")
    }

    private mutating func line(_ text: String) {
        bytes.append(contentsOf: repeatElement(UInt8(ascii: "\t"), count: depth))
        bytes.append(contentsOf: text.utf8)
        bytes.append(0x0A)
    }

    /// Text content escaped for XML; characters XML 1.0 cannot hold at all (most control
    /// characters) become U+FFFD, so that what is written can always be read back.
    private func escaped(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\t", "\n":
                result.unicodeScalars.append(scalar)
            case "\r":
                // A literal CR would be read back as LF (XML end-of-line handling).
                result += "&#13;"
            case _ where scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF:
                result += "\u{FFFD}"
            default:
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
