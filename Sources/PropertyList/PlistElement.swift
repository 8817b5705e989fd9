internal import CLibXML2
import Time

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The element names of the plist format.
enum PlistElement: UInt8, CaseIterable {
    case plist, dict, array, key, string, integer, real, `true`, `false`, date, data

    var isScalar: Bool {
        switch self {
        case .plist, .dict, .array: false
        case .key, .string, .integer, .real, .true, .false, .date, .data: true
        }
    }

    /// The element name as a C string, for replayed events. A literal per case, not a table of
    /// arrays: reading an array out of a table costs a reference count on every replayed element.
    var cName: StaticString {
        switch self {
        case .plist: "plist"
        case .dict: "dict"
        case .array: "array"
        case .key: "key"
        case .string: "string"
        case .integer: "integer"
        case .real: "real"
        case .true: "true"
        case .false: "false"
        case .date: "date"
        case .data: "data"
        }
    }

    /// The value of a scalar element with this text, or the problem with it: one definition
    /// for the builder and for reading plain elements in place (``PlainElementCursor``).
    func scalarValue(_ text: UnsafeBufferPointer<UInt8>) -> (value: PropertyListValue?, problem: String?) {
        switch self {
        case .string:
            return (.string(String(decoding: text, as: UTF8.self)), nil)
        case .integer:
            guard let value = parseInteger(text) else { return (nil, integerProblem(text)) }
            return (.integer(value), nil)
        case .real:
            let literal = trimmed(text)
            guard !literal.isEmpty, let value = Double(literal) else { return (nil, "'\(literal)' is not a valid <real>") }
            return (.real(value), nil)
        case .true, .false:
            guard text.allSatisfy(isXMLWhitespace) else { return (nil, "<\(self)/> must be empty") }
            return (.boolean(self == .true), nil)
        case .date:
            let literal = trimmed(text)
            guard let date = Timestamp(iso8601: literal) else {
                return (nil, "'\(literal)' is not a valid <date>; expected YYYY-MM-DDTHH:MM:SSZ")
            }
            return (.date(date), nil)
        case .data:
            guard let bytes = Base64.decode(text) else { return (nil, "<data> is not valid base64") }
            return (.data(bytes), nil)
        case .key, .array, .dict, .plist:
            return (nil, nil)
        }
    }

    private func integerProblem(_ text: UnsafeBufferPointer<UInt8>) -> String {
        let literal = trimmed(text)
        let isNumeral =
            !literal.isEmpty && literal.drop { $0 == "-" || $0 == "+" }.allSatisfy(\.isASCIIDigit)
            && literal.contains(where: \.isASCIIDigit)
        return isNumeral
            ? "integer \(literal) does not fit in 64 bits"
            : "'\(literal)' is not a valid <integer>"
    }

    init?(_ name: UnsafePointer<UInt8>) {
        // Compare raw bytes: this runs for every element of files with millions of them.
        func equals(_ literal: StaticString) -> Bool {
            strcmp(
                UnsafeRawPointer(name).assumingMemoryBound(to: CChar.self),
                UnsafeRawPointer(literal.utf8Start).assumingMemoryBound(to: CChar.self)) == 0
        }
        switch name[0] {
        case UInt8(ascii: "k") where equals("key"): self = .key
        case UInt8(ascii: "s") where equals("string"): self = .string
        case UInt8(ascii: "i") where equals("integer"): self = .integer
        case UInt8(ascii: "d") where equals("dict"): self = .dict
        case UInt8(ascii: "d") where equals("date"): self = .date
        case UInt8(ascii: "d") where equals("data"): self = .data
        case UInt8(ascii: "a") where equals("array"): self = .array
        case UInt8(ascii: "r") where equals("real"): self = .real
        case UInt8(ascii: "t") where equals("true"): self = .true
        case UInt8(ascii: "f") where equals("false"): self = .false
        case UInt8(ascii: "p") where equals("plist"): self = .plist
        default: return nil
        }
    }
}

/// Element kinds by the address of their name. libxml2 interns element names in its parser's
/// dictionary, where they stay until the parse ends: during one parse, a name keeps one
/// address and no other string takes it. Most start tags then need no string comparison;
/// an address not seen yet is compared by bytes. One cache per parse.
struct ElementNameCache {
    /// The name address of each kind seen so far, by raw value.
    private var addresses = [UnsafePointer<UInt8>?](repeating: nil, count: PlistElement.allCases.count)

    mutating func element(named name: UnsafePointer<UInt8>) -> PlistElement? {
        for index in addresses.indices where addresses[index] == name { return PlistElement(rawValue: UInt8(index)) }
        guard let element = PlistElement(name) else { return nil }
        addresses[Int(element.rawValue)] = name
        return element
    }
}

func isXMLWhitespace(_ byte: UInt8) -> Bool {
    byte == 0x20 || byte == 0x0A || byte == 0x09 || byte == 0x0D
}

/// `bytes` without XML whitespace at either end.
func trimmedSlice(_ bytes: UnsafeBufferPointer<UInt8>) -> Slice<UnsafeBufferPointer<UInt8>> {
    var slice = bytes[...]
    while let first = slice.first, isXMLWhitespace(first) { slice = slice.dropFirst() }
    while let last = slice.last, isXMLWhitespace(last) { slice = slice.dropLast() }
    return slice
}

func trimmed(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
    String(decoding: trimmedSlice(bytes), as: UTF8.self)
}

/// A decimal integer with optional sign and surrounding whitespace, or nil (including on overflow).
func parseInteger(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
    var slice = trimmedSlice(bytes)
    var negative = false
    if let sign = slice.first, sign == UInt8(ascii: "-") || sign == UInt8(ascii: "+") {
        negative = sign == UInt8(ascii: "-")
        slice = slice.dropFirst()
    }
    guard !slice.isEmpty else { return nil }
    var value: Int64 = 0
    for byte in slice {
        guard byte >= 48 && byte <= 57 else { return nil }
        let digit = Int64(byte - 48)
        // Accumulate negatively so that Int64.min parses.
        let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
        let (next, overflow2) = shifted.subtractingReportingOverflow(digit)
        if overflow1 || overflow2 { return nil }
        value = next
    }
    if negative { return value }
    let (positive, overflow) = Int64(0).subtractingReportingOverflow(value)
    return overflow ? nil : positive
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
