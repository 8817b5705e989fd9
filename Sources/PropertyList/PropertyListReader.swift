internal import CLibXML2

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads Apple XML property lists into ``PropertyListNode`` values that remember their source positions.
///
/// A streaming SAX2 pass, not a DOM. For big files, the elements of one top-level array
/// (say the `products` of a root dict) can be handed to the caller one by one as they
/// complete, so the whole tree never exists in memory at once.
public struct PropertyListReader: Sendable {
    public var limits: ReaderLimits

    public init(limits: ReaderLimits = ReaderLimits()) {
        self.limits = limits
    }

    /// The outcome of reading one file: its root value, if it was readable, and every problem found.
    public struct Result: Sendable {
        public var root: PropertyListNode?
        public var diagnostics: [Diagnostic]
    }

    /// Reads a whole property list.
    public func read(_ source: SourceFile) -> Result {
        read(source, streamingArray: nil) { _ in }
    }

    /// Reads a property list, handing the elements of the array at `key` of the root dict to
    /// `element` as each completes instead of keeping them; that array appears empty in the result.
    public func read(
        _ source: SourceFile, streamingArray key: String?, element: (PropertyListNode) -> Void
    ) -> Result {
        withoutActuallyEscaping(element) { element in
            let builder = PropertyListBuilder(streamingKey: key, onStreamedElement: element)
            var diagnostics = XMLStreamParser.parse(source, limits: limits, handler: builder)
            diagnostics += builder.problems.map { Diagnostic(.error, file: source.path, at: $0.position, $0.message) }
            if builder.root == nil && !diagnostics.containsErrors {
                diagnostics.append(.error("no property list found", file: source.path, at: .startOfFile))
            }
            diagnostics.sort()
            return Result(root: diagnostics.containsErrors && builder.root == nil ? nil : builder.root,
                          diagnostics: diagnostics)
        }
    }
}

/// The element names of the plist format.
private enum PlistElement {
    case plist, dict, array, key, string, integer, real, `true`, `false`, date, data

    init?(_ name: UnsafePointer<UInt8>) {
        // Compare raw bytes: this runs for every element of files with millions of them.
        func equals(_ literal: StaticString) -> Bool {
            strcmp(UnsafeRawPointer(name).assumingMemoryBound(to: CChar.self),
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

/// Builds values from SAX events with an explicit stack: no recursion, so depth costs no stack.
private final class PropertyListBuilder: XMLEventHandler {
    struct Problem {
        var position: SourcePosition
        var message: String
    }

    private enum Frame {
        case plist
        case array(items: [PropertyListNode], position: SourcePosition, streamed: Bool)
        case dictionary(DictionaryFrame)
        case scalar(PlistElement, position: SourcePosition)
        /// An unknown element: its content is skipped.
        case skipped
    }

    private struct DictionaryFrame {
        var entries: [PropertyListDictionary.Entry] = []
        var pendingKey: (name: String, position: SourcePosition)?
        /// Built once a dict grows past a few keys, so duplicate checks stay linear overall.
        var keyIndex: [String: Int]?
        /// After a duplicate key (already reported), its value is dropped silently.
        var dropsNextValue = false
        var position: SourcePosition
    }

    // Touched on every SAX event of a single-threaded parse; the runtime exclusivity check on
    // each access cost about a tenth of the reading time of a large catalog.
    @exclusivity(unchecked) private var stack: [Frame] = []
    @exclusivity(unchecked) private var text: [UInt8] = []
    private(set) var root: PropertyListNode?
    private(set) var problems: [Problem] = []
    private let streamingKey: String?
    private let onStreamedElement: (PropertyListNode) -> Void

    init(streamingKey: String?, onStreamedElement: @escaping (PropertyListNode) -> Void) {
        self.streamingKey = streamingKey
        self.onStreamedElement = onStreamedElement
        stack.reserveCapacity(16)
        text.reserveCapacity(256)
    }

    private func problem(_ message: String, at position: SourcePosition) {
        problems.append(Problem(position: position, message: message))
    }

    func startElement(_ parser: XMLStreamParser, name: UnsafePointer<UInt8>, namespace: UnsafePointer<UInt8>?,
                      attributes: XMLAttributes, at position: SourcePosition) {
        if case .skipped = stack.last {
            stack.append(.skipped)
            return
        }
        guard let element = PlistElement(name) else {
            problem("unknown property list element <\(String(cString: name))>", at: position)
            stack.append(.skipped)
            return
        }
        if stack.isEmpty {
            guard element == .plist else {
                problem("root element must be <plist>, found <\(String(cString: name))>", at: position)
                parser.stop()
                return
            }
            stack.append(.plist)
            return
        }
        if case .scalar(let kind, _) = stack.last {
            problem("<\(String(cString: name))> cannot appear inside <\(kind)>", at: position)
            stack.append(.skipped)
            return
        }
        text.removeAll(keepingCapacity: true)
        switch element {
        case .plist:
            problem("<plist> can only be the root element", at: position)
            stack.append(.skipped)
        case .array:
            stack.append(.array(items: [], position: position, streamed: isStreamedArrayStarting()))
        case .dict:
            stack.append(.dictionary(DictionaryFrame(position: position)))
        case .key, .string, .integer, .real, .true, .false, .date, .data:
            stack.append(.scalar(element, position: position))
        }
    }

    /// Whether the array starting now is the value of the streamed key in the root dict.
    private func isStreamedArrayStarting() -> Bool {
        guard let streamingKey, stack.count == 2, case .dictionary(let frame) = stack[1] else { return false }
        return frame.pendingKey?.name == streamingKey
    }

    func text(_ parser: XMLStreamParser, _ bytes: UnsafeBufferPointer<UInt8>) {
        switch stack.last {
        case .scalar:
            if text.count + bytes.count > parser.limits.maximumTextBytes {
                problem("text longer than \(parser.limits.maximumTextBytes) bytes", at: parser.cursorPosition)
                parser.stop()
                return
            }
            text.append(contentsOf: bytes)
        case .skipped, nil:
            break
        default:
            if bytes.contains(where: { !isXMLWhitespace($0) }) {
                let sample = String(decoding: bytes.prefix(20), as: UTF8.self)
                    .trimmingCharacters(in: .init(charactersIn: " \t\r\n"))
                problem("unexpected text '\(sample)' between elements", at: parser.cursorPosition)
            }
        }
    }

    func endElement(_ parser: XMLStreamParser) {
        guard let frame = stack.popLast() else { return }
        switch frame {
        case .plist:
            return
        case .skipped:
            // The end of a skipped subtree's outermost element: it stood where a value goes.
            if case .skipped = stack.last {} else { discardValue() }
            return
        case .array(let items, let position, _):
            deliver(PropertyListNode(.array(items), at: position))
        case .dictionary(let dictionary):
            if let key = dictionary.pendingKey {
                problem("key '\(key.name)' has no value", at: key.position)
            }
            deliver(PropertyListNode(.dictionary(PropertyListDictionary(entries: dictionary.entries)), at: dictionary.position))
        case .scalar(.key, let position):
            receiveKey(String(decoding: text, as: UTF8.self), at: position)
        case .scalar(let kind, let position):
            if let value = scalarValue(kind, at: position) {
                deliver(PropertyListNode(value, at: position))
            } else {
                discardValue()
            }
        }
        text.removeAll(keepingCapacity: true)
    }

    private func scalarValue(_ kind: PlistElement, at position: SourcePosition) -> PropertyListValue? {
        switch kind {
        case .string:
            return .string(String(decoding: text, as: UTF8.self))
        case .integer:
            guard let value = parseInteger(text) else {
                problem(integerProblem(), at: position)
                return nil
            }
            return .integer(value)
        case .real:
            let literal = trimmed(text)
            guard !literal.isEmpty, let value = Double(literal) else {
                problem("'\(literal)' is not a valid <real>", at: position)
                return nil
            }
            return .real(value)
        case .true, .false:
            guard text.allSatisfy(isXMLWhitespace) else {
                problem("<\(kind)/> must be empty", at: position)
                return nil
            }
            return .boolean(kind == .true)
        case .date:
            let literal = trimmed(text)
            guard let date = Timestamp(iso8601: literal) else {
                problem("'\(literal)' is not a valid <date>; expected YYYY-MM-DDTHH:MM:SSZ", at: position)
                return nil
            }
            return .date(date)
        case .data:
            guard let bytes = text.withUnsafeBufferPointer(Base64.decode) else {
                problem("<data> is not valid base64", at: position)
                return nil
            }
            return .data(bytes)
        case .key, .array, .dict, .plist:
            return nil
        }
    }

    private func integerProblem() -> String {
        let literal = trimmed(text)
        let isNumeral = !literal.isEmpty && literal.drop { $0 == "-" || $0 == "+" }.allSatisfy(\.isASCIIDigit)
            && literal.contains(where: \.isASCIIDigit)
        return isNumeral
            ? "integer \(literal) does not fit in 64 bits"
            : "'\(literal)' is not a valid <integer>"
    }

    private func receiveKey(_ key: String, at position: SourcePosition) {
        guard case .dictionary(var frame) = stack.last else {
            problem("<key> '\(key)' outside a <dict>", at: position)
            return
        }
        stack.removeLast()  // take the frame out so that its arrays are mutated in place
        defer { stack.append(.dictionary(frame)) }
        if let pending = frame.pendingKey {
            problem("key '\(pending.name)' has no value", at: pending.position)
        }
        if let first = firstPosition(of: key, in: frame) {
            problem("duplicate key '\(key)' (first at \(first))", at: position)
            frame.pendingKey = nil
            frame.dropsNextValue = true
            return
        }
        frame.pendingKey = (key, position)
    }

    private func firstPosition(of key: String, in frame: DictionaryFrame) -> SourcePosition? {
        if let index = frame.keyIndex { return index[key].map { frame.entries[$0].keyPosition } }
        return frame.entries.first { $0.key == key }?.keyPosition
    }

    /// Hands a completed value to its container.
    private func deliver(_ node: PropertyListNode) {
        guard var parent = stack.popLast() else { return }
        switch parent {
        case .plist:
            stack.append(parent)
            if root == nil {
                root = node
            } else {
                problem("<plist> holds more than one value", at: node.position)
            }
        case .array(var items, let position, let streamed):
            parent = .skipped  // drop the frame's reference so that `items` grows in place
            if streamed {
                onStreamedElement(node)
            } else {
                items.append(node)
            }
            stack.append(.array(items: items, position: position, streamed: streamed))
        case .dictionary(var frame):
            parent = .skipped  // drop the frame's reference so that `entries` grows in place
            if let key = frame.pendingKey {
                frame.entries.append(.init(key: key.name, keyPosition: key.position, value: node))
                if frame.keyIndex != nil {
                    frame.keyIndex![key.name] = frame.entries.count - 1
                } else if frame.entries.count > 12 {
                    frame.keyIndex = Dictionary(
                        frame.entries.enumerated().map { ($1.key, $0) }, uniquingKeysWith: { first, _ in first })
                }
                frame.pendingKey = nil
            } else if frame.dropsNextValue {
                frame.dropsNextValue = false
            } else {
                problem("\(node.value.kindName) in a <dict> needs a <key> before it", at: node.position)
            }
            stack.append(.dictionary(frame))
        case .scalar, .skipped:
            stack.append(parent)
        }
    }

    /// A value that was reported as invalid still uses up its dict key, so that the key is
    /// not also reported as having no value.
    private func discardValue() {
        guard case .dictionary(var frame) = stack.last else { return }
        stack.removeLast()
        if frame.pendingKey != nil { frame.pendingKey = nil } else { frame.dropsNextValue = false }
        stack.append(.dictionary(frame))
    }
}

func isXMLWhitespace(_ byte: UInt8) -> Bool {
    byte == 0x20 || byte == 0x0A || byte == 0x09 || byte == 0x0D
}

private func trimmed(_ bytes: [UInt8]) -> String {
    var slice = bytes[...]
    while let first = slice.first, isXMLWhitespace(first) { slice = slice.dropFirst() }
    while let last = slice.last, isXMLWhitespace(last) { slice = slice.dropLast() }
    return String(decoding: slice, as: UTF8.self)
}

/// A decimal integer with optional sign and surrounding whitespace, or nil (including on overflow).
private func parseInteger(_ bytes: [UInt8]) -> Int64? {
    var slice = bytes[...]
    while let first = slice.first, isXMLWhitespace(first) { slice = slice.dropFirst() }
    while let last = slice.last, isXMLWhitespace(last) { slice = slice.dropLast() }
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
