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
            return Result(
                root: diagnostics.containsErrors && builder.root == nil ? nil : builder.root,
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

/// Builds values from SAX events with an explicit stack: no recursion, so depth costs no stack.
///
/// Frames are plain structs mutated in place at the top of the stack, and dict keys are
/// interned: this runs for every element of files with millions of them.
private final class PropertyListBuilder: XMLEventHandler {
    struct Problem {
        var position: SourcePosition
        var message: String
    }

    private struct Frame {
        enum Kind: Equatable {
            case plist, array, dictionary
            /// An unknown element: its content is skipped.
            case skipped
        }

        var kind: Kind
        var position: SourcePosition
        var items: [PropertyListNode] = []
        var entries: [PropertyListDictionary.Entry] = []
        var pendingKey: String?
        var pendingKeyPosition = SourcePosition.startOfFile
        /// Built once a dict grows past a few keys, so duplicate checks stay linear overall.
        var keyIndex: [String: Int]?
        /// After a duplicate key (already reported), its value is dropped silently.
        var dropsNextValue = false
        /// The array whose elements go to the caller one by one instead of into `items`.
        var streamed = false

        init(_ kind: Kind, at position: SourcePosition) {
            self.kind = kind
            self.position = position
        }
    }

    // Touched on every SAX event of a single-threaded parse; the runtime exclusivity check on
    // each access cost about a tenth of the reading time of a large catalog.
    @exclusivity(unchecked) private var stack: [Frame] = []
    @exclusivity(unchecked) private var text: [UInt8] = []
    @exclusivity(unchecked) private var internedKeys: [(bytes: [UInt8], key: String)] = []
    /// The scalar element being read, if any. Scalars cannot nest and are most of the elements,
    /// so they are kept here rather than pushed as frames.
    @exclusivity(unchecked) private var openScalar: (kind: PlistElement, position: SourcePosition)?
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

    /// The kind of the innermost open element, read in place: `stack.last` would copy the whole
    /// frame, with a reference count on each of its arrays, on every event.
    private var topKind: Frame.Kind? {
        stack.isEmpty ? nil : stack[stack.count - 1].kind
    }

    func startElement(
        _ parser: XMLStreamParser, name: UnsafePointer<UInt8>, namespace: UnsafePointer<UInt8>?,
        attributes: XMLAttributes, at position: SourcePosition
    ) {
        if topKind == .skipped {
            stack.append(Frame(.skipped, at: position))
            return
        }
        guard let element = PlistElement(name) else {
            problem("unknown property list element <\(String(cString: name))>", at: position)
            stack.append(Frame(.skipped, at: position))
            return
        }
        guard topKind != nil else {
            guard element == .plist else {
                problem("root element must be <plist>, found <\(String(cString: name))>", at: position)
                parser.stop()
                return
            }
            stack.append(Frame(.plist, at: position))
            return
        }
        if let scalar = openScalar {
            problem("<\(String(cString: name))> cannot appear inside <\(scalar.kind)>", at: position)
            stack.append(Frame(.skipped, at: position))
            return
        }
        text.removeAll(keepingCapacity: true)
        switch element {
        case .plist:
            problem("<plist> can only be the root element", at: position)
            stack.append(Frame(.skipped, at: position))
        case .array:
            var frame = Frame(.array, at: position)
            frame.streamed = isStreamedArrayStarting()
            stack.append(frame)
        case .dict:
            var frame = Frame(.dictionary, at: position)
            // Product dicts have a dozen keys: grow once, not four times.
            frame.entries.reserveCapacity(16)
            stack.append(frame)
        case .key, .string, .integer, .real, .true, .false, .date, .data:
            openScalar = (element, position)
        }
    }

    /// Whether the array starting now is the value of the streamed key in the root dict.
    private func isStreamedArrayStarting() -> Bool {
        guard let streamingKey, stack.count == 2, stack[1].kind == .dictionary else { return false }
        return stack[1].pendingKey == streamingKey
    }

    func text(_ parser: XMLStreamParser, _ bytes: UnsafeBufferPointer<UInt8>) {
        if openScalar != nil && topKind != .skipped {
            if text.count + bytes.count > parser.limits.maximumTextBytes {
                problem("text longer than \(parser.limits.maximumTextBytes) bytes", at: parser.cursorPosition)
                parser.stop()
                return
            }
            text.append(contentsOf: bytes)
            return
        }
        switch topKind {
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
        // Skipped elements close first: they may sit inside an open scalar.
        if let scalar = openScalar, topKind != .skipped {
            openScalar = nil
            endScalar(scalar.kind, at: scalar.position)
            return
        }
        guard let frame = stack.popLast() else { return }
        switch frame.kind {
        case .plist:
            return
        case .skipped:
            // The end of a skipped subtree's outermost element: it stood where a value goes,
            // unless it sat inside a scalar, which goes on.
            if topKind != .skipped && openScalar == nil { discardValue() }
            return
        case .array:
            deliver(PropertyListNode(.array(frame.items), at: frame.position))
        case .dictionary:
            if let key = frame.pendingKey {
                problem("key '\(key)' has no value", at: frame.pendingKeyPosition)
            }
            deliver(PropertyListNode(.dictionary(PropertyListDictionary(entries: frame.entries)), at: frame.position))
        }
        text.removeAll(keepingCapacity: true)
    }

    private func endScalar(_ kind: PlistElement, at position: SourcePosition) {
        if kind == .key {
            receiveKey(internedKey(), at: position)
        } else if let value = scalarValue(kind, at: position) {
            deliver(PropertyListNode(value, at: position))
        } else {
            discardValue()
        }
        text.removeAll(keepingCapacity: true)
    }

    /// The key in `text` as a String, shared with earlier equal keys: a big catalog repeats a
    /// dozen keys a million times, and keys over 15 bytes would otherwise each allocate.
    private func internedKey() -> String {
        for entry in internedKeys where entry.bytes == text {
            return entry.key
        }
        let key = String(decoding: text, as: UTF8.self)
        if internedKeys.count < 64 { internedKeys.append((text, key)) }
        return key
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
        let isNumeral =
            !literal.isEmpty && literal.drop { $0 == "-" || $0 == "+" }.allSatisfy(\.isASCIIDigit)
            && literal.contains(where: \.isASCIIDigit)
        return isNumeral
            ? "integer \(literal) does not fit in 64 bits"
            : "'\(literal)' is not a valid <integer>"
    }

    private func receiveKey(_ key: String, at position: SourcePosition) {
        let top = stack.count - 1
        guard top >= 0, stack[top].kind == .dictionary else {
            problem("<key> '\(key)' outside a <dict>", at: position)
            return
        }
        if let pending = stack[top].pendingKey {
            problem("key '\(pending)' has no value", at: stack[top].pendingKeyPosition)
        }
        if let first = firstPosition(of: key, inFrameAt: top) {
            problem("duplicate key '\(key)' (first at \(first))", at: position)
            stack[top].pendingKey = nil
            stack[top].dropsNextValue = true
            return
        }
        stack[top].pendingKey = key
        stack[top].pendingKeyPosition = position
    }

    /// Where `key` first appears in the dict frame at `index`, looked up in place (passing the
    /// frame would copy it, with a reference count on each of its arrays).
    private func firstPosition(of key: String, inFrameAt index: Int) -> SourcePosition? {
        if let keyIndex = stack[index].keyIndex { return keyIndex[key].map { stack[index].entries[$0].keyPosition } }
        for entry in stack[index].entries where entry.key == key { return entry.keyPosition }
        return nil
    }

    /// Hands a completed value to its container, mutating the container in place.
    private func deliver(_ node: PropertyListNode) {
        let top = stack.count - 1
        guard top >= 0 else { return }
        switch stack[top].kind {
        case .plist:
            if root == nil {
                root = node
            } else {
                problem("<plist> holds more than one value", at: node.position)
            }
        case .array:
            if stack[top].streamed {
                onStreamedElement(node)
            } else {
                stack[top].items.append(node)
            }
        case .dictionary:
            if let key = stack[top].pendingKey {
                stack[top].entries.append(.init(key: key, keyPosition: stack[top].pendingKeyPosition, value: node))
                if stack[top].keyIndex != nil {
                    stack[top].keyIndex![key] = stack[top].entries.count - 1
                } else if stack[top].entries.count > 12 {
                    stack[top].keyIndex = Dictionary(
                        stack[top].entries.enumerated().map { ($1.key, $0) }, uniquingKeysWith: { first, _ in first })
                }
                stack[top].pendingKey = nil
            } else if stack[top].dropsNextValue {
                stack[top].dropsNextValue = false
            } else {
                problem("\(node.value.kindName) in a <dict> needs a <key> before it", at: node.position)
            }
        case .skipped:
            break
        }
    }

    /// A value that was reported as invalid still uses up its dict key, so that the key is
    /// not also reported as having no value.
    private func discardValue() {
        let top = stack.count - 1
        guard top >= 0, stack[top].kind == .dictionary else { return }
        if stack[top].pendingKey != nil { stack[top].pendingKey = nil } else { stack[top].dropsNextValue = false }
    }
}

func isXMLWhitespace(_ byte: UInt8) -> Bool {
    byte == 0x20 || byte == 0x0A || byte == 0x09 || byte == 0x0D
}

/// `bytes` without XML whitespace at either end.
private func trimmedSlice(_ bytes: [UInt8]) -> ArraySlice<UInt8> {
    var slice = bytes[...]
    while let first = slice.first, isXMLWhitespace(first) { slice = slice.dropFirst() }
    while let last = slice.last, isXMLWhitespace(last) { slice = slice.dropLast() }
    return slice
}

private func trimmed(_ bytes: [UInt8]) -> String {
    String(decoding: trimmedSlice(bytes), as: UTF8.self)
}

/// A decimal integer with optional sign and surrounding whitespace, or nil (including on overflow).
private func parseInteger(_ bytes: [UInt8]) -> Int64? {
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
